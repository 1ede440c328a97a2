"""Random permutations for minibatching and subsampling, fast on XLA's CPU backend.

``jax.random.permutation`` shuffles by sorting random keys, in several rounds of a
two-operand sort. XLA's CPU sort is slow (about 0.2 us per element and round), so
shuffling a 4096-transition batch for 4 epochs cost ~7 ms per PPO update: a fifth of the
whole update on MountainCar (``benchmarks/bench_reference_ppo.py``).

For ``n <= 4096`` one sort of single ``uint32`` keys does it (~1 ms for the same 4 x 4096):
the low ``b = ceil(log2 n)`` bits of a key hold the index, the high ``32 - b >= 20`` bits are
uniform random. Sorting the keys orders the indices by their random part; two indices
whose random parts are equal (probability ``2**-(32 - b)`` per pair, at most ``2**-20``)
keep their original order, so any pair is out of order with probability
``1/2 - 2**-(33 - b)`` instead of exactly 1/2. Larger ``n`` falls back to
``jax.random.permutation``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

MIN_RANDOM_BITS = 20


def index_bits(n: int) -> int:
    """Bits needed to hold an index in ``range(n)``."""
    return max(1, (n - 1).bit_length())


def permutations(key: jax.Array, num: int, n: int) -> jax.Array:
    """``num`` independent random permutations of ``range(n)``, ``[num, n]`` int32."""
    bits = index_bits(n)
    if 32 - bits < MIN_RANDOM_BITS:
        return jax.vmap(lambda k: jax.random.permutation(k, n))(jax.random.split(key, num))
    mask = jnp.uint32((1 << bits) - 1)
    keys = (jax.random.bits(key, (num, n), jnp.uint32) & ~mask) | jnp.arange(n, dtype=jnp.uint32)
    return (jax.lax.sort(keys, dimension=1, is_stable=False) & mask).astype(jnp.int32)


def subsample(key: jax.Array, n: int, k: int) -> jax.Array:
    """``k`` distinct indices drawn uniformly from ``range(n)`` (without replacement), ``[k]``."""
    if not 0 < k <= n:
        raise ValueError(f"cannot draw {k} distinct indices from {n}")
    return permutations(key, 1, n)[0, :k]

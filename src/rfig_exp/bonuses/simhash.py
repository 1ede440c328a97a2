"""SimHash codes of a learned binary code and their count-min sketch keys (#Exploration's hash,
``rfig_exp.bonuses.hashexplo``). ``N`` states, ``k`` hash bits, ``D`` code units."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rfig_exp.bonuses import nets


def simhash_bits(encoder: nets.MLPParams, projection: jax.Array, x: jax.Array, activation: str = "relu"):
    """``x [N, d] -> [N, k]`` int32 bits of ``sgn(A round(b(x)))``, ``sgn(0)`` -> 0.

    ``round(sigmoid(z))`` is computed as ``[z > 0]`` without evaluating the sigmoid (they
    differ only for ``|z|`` below ~1e-7, where float32 ``sigmoid(z)`` rounds to exactly 0.5).
    """
    rounded = (nets.mlp_apply(encoder, x, activation) > 0).astype(jnp.float32)   # [N, D]
    return (rounded @ projection.T > 0).astype(jnp.int32)                        # [N, k]


def row_keys(bits: jax.Array, pow_mod: jax.Array, moduli: jax.Array) -> jax.Array:
    """``bits [N, k] -> [N, num_tables]`` keys ``sum_i bit_i (2^i mod P_t) mod P_t``
    (``pow_mod [num_tables, k]`` int32, ``moduli [num_tables]``), i.e. the code read as a
    binary number, modulo each table's prime."""
    return jnp.sum(bits[:, None, :] * pow_mod[None], axis=-1) % moduli

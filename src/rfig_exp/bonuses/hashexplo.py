"""#Exploration with a learned hash (AE-SimHash; Tang et al. 2017), at the RFIG paper's settings.

An autoencoder ``in -> 256 -> 256 -> D`` (code logits) ``-> 256 -> 256 -> in`` with ReLU and a
sigmoid code layer ``b(s) in [0, 1]^D``. A state's hash is SimHash of its rounded code,
``phi(s) = sgn(A round(b(s))) in {0, 1}^k`` with a fixed ``A [k, D] ~ N(0, 1)`` (``sgn(0)`` ->
bit 0), and its visit count is held in a count-min sketch: ``len(table_sizes)`` tables of
prime sizes ``P_t``, row key ``sum_i phi_i (2^i mod P_t) mod P_t``, estimate = min over tables
(never below the true count).

Per batch of ``N = T * B`` normalised next states ``s'``, with the autoencoder *before* this
batch's update:

1. ``reward``: ``1 / sqrt(max(1, n(phi(s'))))`` with ``n`` the count-min estimate *after*
   counting this batch's own states (the authors' order: increment the table, then read the
   bonus). ``reward`` does not change the state, so it computes these counts "as if
   updated": stored count + occurrences of the same row key within the batch;
2. ``update``: commits exactly those increments, then takes one Adam step (lr 1e-4) on
   reconstruction MSE + ``lambda * mean(min(b^2, (1 - b)^2))``, with uniform noise
   ``U(-a, a)`` injected into the code during training only.

Everything (parameters, Adam moments, the projection ``A`` and the count tables) is one
pytree of arrays, so a run jits, vmaps over seeds and checkpoints as it is. Details,
sources and deviations: ``docs/bonuses/hashexplo.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, NamedTuple

from rfig_exp.bonuses.settings import ABOVE_ZERO, ACTIVATIONS, AT_LEAST_ZERO, BonusSettings
from rfig_exp.config.errors import ConfigError
from rfig_exp.config.settings import static, traced
from rfig_exp.config.validation import POSITIVE_INT, Choice, Widths, require

if TYPE_CHECKING:
    import jax
    import optax

    from rfig_exp.bonuses import nets

HASH_NOISE_AT = ("code", "logits")
INT32_MAX = 2**31 - 1


def is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    f = 3
    while f * f <= n:
        if n % f == 0:
            return False
        f += 2
    return True


def _odd_primes(value: Any, key: str, earlier: Mapping[str, Any]) -> tuple[int, ...]:
    """A non-empty list of odd primes: an even modulus would drop high bits (2^i mod 2^m = 0 for
    i >= m); a prime keeps every bit."""
    try:
        sizes = tuple(value)
    except TypeError:
        raise ConfigError(f"{key}={value!r} must be a non-empty list of odd primes") from None
    require(len(sizes) >= 1 and all(isinstance(p, int) and not isinstance(p, bool) and p > 2 and is_prime(p)
                                    for p in sizes),
            f"{key}={list(sizes)!r} must be a non-empty list of odd primes")
    return sizes


def _keys_fit_int32(values: Mapping[str, Any], prefix: str) -> None:
    """Row keys are summed in int32 before the modulus, and flat indices span all tables."""
    bits, sizes = values["hash_bits"], values["table_sizes"]
    require(bits * max(sizes) <= INT32_MAX,
            f"{prefix}hash_bits={bits} times max({prefix}table_sizes)={max(sizes)} overflows int32 keys")
    require(len(sizes) * max(sizes) <= INT32_MAX,
            f"{prefix}table_sizes={list(sizes)!r}: len * max must fit int32 indices")


@dataclass(frozen=True)
class HashSettings(BonusSettings):
    name: ClassVar[str] = "hashexplo"
    label: ClassVar[str] = "#Explo"
    colour: ClassVar[str] = "#CC79A7"
    role: ClassVar[str] = "baseline"
    order: ClassVar[int] = 3  # the baselines in the paper's order
    small: ClassVar[Mapping[str, Any]] = MappingProxyType(
        {"hidden": (16,), "code_dim": 8, "hash_bits": 8, "table_sizes": (101, 103)})

    hidden: tuple[int, ...] = static((256, 256), Widths(), doc="encoder widths; the decoder mirrors them")
    code_dim: int = static(64, POSITIVE_INT, doc="D, sigmoid units of the code layer b(s)")
    hash_bits: int = static(32, POSITIVE_INT, doc="k, SimHash bits sgn(A round(b(s))), A ~ N(0, 1) of shape [k, D]")
    table_sizes: tuple[int, ...] = static(
        (999983, 1000003, 1000033), _odd_primes, check=_keys_fit_int32,
        doc=("count-min sketch: one table per odd prime P_t; the estimate is the min over tables, never below the true"
             " count"))
    activation: str = static("relu", Choice(ACTIVATIONS), doc="relu | tanh, after every hidden layer (the paper: ReLU)")
    noise_at: str = static(
        "code", Choice(HASH_NOISE_AT),
        doc="code: noise added to the sigmoid output b(s) (Tang et al.) | logits: before the sigmoid")
    lr: float = traced(1e-4, ABOVE_ZERO, doc="autoencoder Adam learning rate")
    adam_eps: float = traced(1e-8, ABOVE_ZERO, doc="Adam epsilon (optax / PyTorch / TF default)")
    noise_scale: float = traced(0.3, AT_LEAST_ZERO,
                                doc="a: uniform noise U(-a, a) on the code while training (Tang et al.: 0.3)")
    bin_penalty: float = traced(
        0.1, AT_LEAST_ZERO,
        doc="lambda of the binarisation penalty lambda * mean(min(b^2, (1 - b)^2)) (the RFIG authors' #Explo; at 10 "
            "the code collapses to one bucket on MinAtar: docs/bonuses/hashexplo.md)")


class HashState(NamedTuple):
    encoder: nets.MLPParams        # in -> hidden -> D code logits
    decoder: nets.MLPParams        # D -> reversed(hidden) -> in
    opt_state: optax.ScaleByAdamState  # Adam moments of (encoder, decoder)
    projection: jax.Array          # [k, D] SimHash matrix A ~ N(0, 1), fixed
    tables: jax.Array              # [num_tables, max(P)] int32 counts; row t uses its first P_t entries


def make(settings: HashSettings, obs_shape, action_space):
    # length: a factory of the bonus's short closures, sharing its static settings and tables by closure.
    import jax
    import jax.numpy as jnp
    import numpy as np

    from rfig_exp.bonuses import nets
    from rfig_exp.bonuses.base import Bonus, flat_states
    from rfig_exp.bonuses.simhash import row_keys, simhash_bits

    del action_space
    obs_ndim = len(obs_shape)
    in_dim = math.prod(obs_shape)
    hidden, code_dim, hash_bits = settings.hidden, settings.code_dim, settings.hash_bits
    activation, noise_at = settings.activation, settings.noise_at
    primes = settings.table_sizes
    num_tables, width = len(primes), max(primes)
    # Row key weights 2^i mod P_t (exact Python integers), and each table's offset in the
    # flattened [num_tables * width] count array.
    pow_mod = jnp.asarray(np.array([[pow(2, i, p) for i in range(hash_bits)] for p in primes], np.int32))
    moduli = jnp.asarray(np.array(primes, np.int32))
    offsets = jnp.asarray(np.arange(num_tables, dtype=np.int32) * width)

    def code_logits(encoder, x):
        return nets.mlp_apply(encoder, x, activation)                   # [N, D]

    def flat_index(state, x):
        """``[N, num_tables]`` positions of each state's counter in ``tables.reshape(-1)``."""
        bits = simhash_bits(state.encoder, state.projection, x, activation)
        return row_keys(bits, pow_mod, moduli) + offsets

    def counts_after(state, idx):
        """Count-min estimate ``[N]`` after adding this batch's own states (not committed)."""
        stored = state.tables.reshape(-1)[idx]                            # [N, num_tables]
        # Occurrences of each key in the batch: tables occupy disjoint index ranges, so one
        # sort of all N * num_tables indices counts every table at once.
        flat = idx.reshape(-1)
        ordered = jnp.sort(flat)
        in_batch = (jnp.searchsorted(ordered, flat, side="right")
                    - jnp.searchsorted(ordered, flat, side="left")).reshape(idx.shape)
        return jnp.min(stored + in_batch.astype(stored.dtype), axis=-1)

    def init(key, warmup_obs, hp: HashSettings):
        del warmup_obs, hp
        k_enc, k_dec, k_proj = jax.random.split(key, 3)
        # ReLU layers with gain sqrt(2); the linear code and reconstruction layers with gain 1.
        encoder = nets.mlp_init(k_enc, (in_dim,) + hidden + (code_dim,), out_gain=1.0)
        decoder = nets.mlp_init(k_dec, (code_dim,) + hidden[::-1] + (in_dim,), out_gain=1.0)
        return HashState(
            encoder=encoder, decoder=decoder, opt_state=nets.adam_init((encoder, decoder)),
            projection=jax.random.normal(k_proj, (hash_bits, code_dim), jnp.float32),
            tables=jnp.zeros((num_tables, width), jnp.int32),
        )

    def reward(state, batch, hp: HashSettings):
        x = flat_states(batch.next_obs, obs_ndim)                          # [N, d]
        n = counts_after(state, flat_index(state, x))
        r = jax.lax.rsqrt(jnp.maximum(n, 1).astype(jnp.float32))
        return r.reshape(batch.terminated.shape), {}

    def ae_loss(params, x, noise, hp: HashSettings):
        encoder, decoder = params
        logits = code_logits(encoder, x)
        b = jax.nn.sigmoid(logits)
        if noise_at == "code":
            code = b + noise                # Tang et al.: noise on the sigmoid activations
        else:
            code = jax.nn.sigmoid(logits + noise)
        recon = nets.mlp_apply(decoder, code, activation)
        reconstruction = jnp.mean(jnp.square(recon - x))
        # The penalty acts on the noise-free code, the one that is rounded and hashed.
        binarisation = jnp.mean(jnp.minimum(jnp.square(b), jnp.square(1.0 - b)))
        return reconstruction + hp.bin_penalty * binarisation, (reconstruction, binarisation)

    def update(state, batch, key, hp: HashSettings):
        x = flat_states(batch.next_obs, obs_ndim)
        # Commit the counts ``reward`` read: the same indices from the same (pre-update) encoder.
        idx = flat_index(state, x)
        tables = state.tables.reshape(-1).at[idx.reshape(-1)].add(1).reshape(state.tables.shape)
        noise = jax.random.uniform(key, (x.shape[0], code_dim), jnp.float32, -1.0, 1.0) * hp.noise_scale
        params = (state.encoder, state.decoder)
        (loss, (reconstruction, binarisation)), grads = jax.value_and_grad(ae_loss, has_aux=True)(
            params, x, noise, hp)
        (encoder, decoder), opt_state = nets.adam_step(params, grads, state.opt_state, hp.lr, hp.adam_eps)
        new_state = state._replace(encoder=encoder, decoder=decoder, opt_state=opt_state, tables=tables)
        # Occupied rows of the first table after this batch: distinct codes seen so far (a lower bound), the
        # signal check's sign of a hash that collapsed.
        occupied = jnp.count_nonzero(tables[0, :primes[0]]).astype(jnp.float32)
        return new_state, {"ae_loss": loss, "reconstruction_loss": reconstruction,
                           "binarisation_loss": binarisation, "occupied_buckets": occupied}

    def describe(state):
        first = state.tables[0, :primes[0]]
        # Occupied rows of the first table: a lower bound on the distinct hash codes seen.
        return {"occupied_buckets": jnp.count_nonzero(first).astype(jnp.float32),
                "counted_states": jnp.sum(first).astype(jnp.float32)}

    return Bonus(settings.name, init, reward, update, describe=describe)

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

The #Explo that the RFIG authors ran (github.com/riiswa/rejax at b16e24a, ``exploration/hash.py``),
the one the paper's figure plots, is a variant of this bonus: the overrides :data:`AUTHORS_VARIANT`.
Its hash is the 16-bit rounded code itself, ``sum_i b_i 2^i``, indexing a direct table of ``2^16``
counts (``hash: code``); its bonus ``1 / sqrt(n + 1)`` reads the counts stored before the batch, which
is counted after the autoencoder step with the updated encoder (``count: before_batch``); it hashes
and trains on ``s`` (``states: obs``), penalises the noisy code and starts from flax's LeCun init.
The defaults are the bonus described above, computed as before these settings existed.

``hash: static`` is #Exploration as Tang et al. describe it for low-dimensional states: SimHash of the
(agent-normalised) state itself, ``phi(s) = sgn(A s)`` with ``A [k, d] ~ N(0, 1)`` fixed at init and no
autoencoder (nothing is trained, so the counts never drift); ``hash_bits`` is the granularity k, which
they chose per domain (docs/bonuses/hashexplo.md lists the values tried here).

``hash: grid`` counts the cell of the (agent-normalised) state in a regular grid of side ``cell_width``,
``floor(s / w)`` per dimension: the plain discretised count, the known working count on a
low-dimensional state (a SimHash through the origin sees only a state's direction, so on a 2-D state its
k hyperplanes make at most 2k angular sectors). Nothing is trained. The cell's integer coordinates,
``c_i + 512`` in ``[0, 1024)``, are read as the digits of one number in base 1024, modulo each prime,
Horner's rule with a reduction after every digit so that no partial sum leaves int32.
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
HASH_FUNCTIONS = ("simhash", "code", "static", "grid")
HASH_COUNTS = ("with_batch", "before_batch")
HASH_STATES = ("next_obs", "obs")
HASH_PENALTY_ON = ("code", "noisy_code")
HASH_INITS = ("he", "lecun")
INT32_MAX = 2**31 - 1
MAX_CODE_BITS = 30  # hash=code: the direct table has 2^m <= 2^30 int32 counters, its keys fit int32
GRID_SPAN = 512     # hash=grid: cells -512..511 per dimension (a wider state is clipped into the edge cells)

# The RFIG authors' #Explo (riiswa/rejax at b16e24a; ../shared/specs/authors-code.md, 2.7) as overrides of
# this bonus's settings: `bonus=hashexplo` plus these (docs/bonuses/hashexplo.md lists them as a command
# line; a test holds the two equal). Their hidden (256, 256), ReLU, lr 1e-4, noise U(-0.3, 0.3) on the
# sigmoid output and penalty 0.1 are the defaults already.
AUTHORS_VARIANT: Mapping[str, Any] = MappingProxyType({
    "code_dim": 16, "hash": "code", "table_sizes": (65536,), "count": "before_batch", "states": "obs",
    "penalty_on": "noisy_code", "weight_init": "lecun",
})


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


def _table_sizes(value: Any, key: str, earlier: Mapping[str, Any]) -> tuple[int, ...]:
    """``hash=simhash``: a non-empty list of odd primes (:func:`_odd_primes`). ``hash=code``: one
    direct table of ``2^m`` counters with ``code_dim <= m <= 30``, so that the code read as a binary
    number, ``sum_i b_i 2^i < 2^code_dim``, is its own row (the modulus never folds two codes)."""
    if earlier.get("hash") != "code":
        return _odd_primes(value, key, earlier)
    try:
        sizes = tuple(value)
    except TypeError:
        sizes = ()
    dim = earlier["code_dim"]
    require(dim <= MAX_CODE_BITS, f"{key}: hash=code needs code_dim <= {MAX_CODE_BITS}, got code_dim={dim}")
    size = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], int) and not isinstance(sizes[0], bool) else 0
    bits = size.bit_length() - 1
    require(size > 0 and size == 1 << bits and dim <= bits <= MAX_CODE_BITS,
            f"{key}={list(sizes) if sizes else value!r}: hash=code needs one table of 2^m counters with "
            f"code_dim={dim} <= m <= {MAX_CODE_BITS} (e.g. [{1 << dim}])")
    return sizes


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
    """Row keys are summed in int32 before the modulus, and flat indices span all tables (a
    ``hash=code`` key is below ``2^code_dim <= 2^30``: ``_table_sizes``)."""
    bits, sizes = values["hash_bits"], values["table_sizes"]
    if values.get("hash") == "grid":  # Horner's rule: acc * 1024 + digit with acc < P
        require(max(sizes) * 2 * GRID_SPAN + 2 * GRID_SPAN <= INT32_MAX,
                f"{prefix}table_sizes={list(sizes)!r}: hash=grid needs every prime below "
                f"{(INT32_MAX - 2 * GRID_SPAN) // (2 * GRID_SPAN)} (its keys are int32)")
    require(values.get("hash") in ("code", "grid") or bits * max(sizes) <= INT32_MAX,
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
    hash: str = static(
        "simhash", Choice(HASH_FUNCTIONS),
        doc="simhash: sgn(A round(b(s))) of hash_bits bits (Tang et al.'s learned hash) | code: the rounded code "
            "itself, sum_i round(b_i) 2^i, as the row of one direct table (the RFIG authors; hash_bits unused) | "
            "static: sgn(A s) of the normalised state itself, no autoencoder (Tang et al. on low-dimensional states; "
            "hash_bits is the granularity k) | grid: the cell floor(s / cell_width) of the normalised state, no "
            "autoencoder (the discretised count; hash_bits unused)")
    hash_bits: int = static(32, POSITIVE_INT,
                            doc="k, SimHash bits sgn(A round(b(s))), A ~ N(0, 1) of shape [k, D] (hash=static: "
                                "sgn(A s), A of shape [k, d])")
    cell_width: float = traced(
        0.25, ABOVE_ZERO,
        doc="hash=grid: the side w of a cell, in units of the normalised state (its running std); unused otherwise")
    table_sizes: tuple[int, ...] = static(
        (999983, 1000003, 1000033), _table_sizes, check=_keys_fit_int32,
        doc=("count-min sketch: one table per odd prime P_t; the estimate is the min over tables, never below the true"
             " count | hash=code: one table of 2^m >= 2^D counters (the RFIG authors: [65536])"))
    count: str = static(
        "with_batch", Choice(HASH_COUNTS),
        doc="with_batch: 1/sqrt(max(1, n)), n counting this batch's own states, hashed by the encoder that scores "
            "them (Tang et al.) | before_batch: 1/sqrt(n + 1), n stored before this batch, which is counted after "
            "the autoencoder step with the updated encoder (the RFIG authors)")
    states: str = static("next_obs", Choice(HASH_STATES),
                         doc="the states hashed, counted and reconstructed: next_obs, s' (this project's bonuses) | "
                             "obs, s (the RFIG authors)")
    activation: str = static("relu", Choice(ACTIVATIONS), doc="relu | tanh, after every hidden layer (the paper: ReLU)")
    weight_init: str = static(
        "he", Choice(HASH_INITS),
        doc="he: truncated normal, variance 2 / fan_in in hidden layers, 1 / fan_in in the code and output layers | "
            "lecun: 1 / fan_in everywhere, flax's default (the RFIG authors); zero biases either way")
    noise_at: str = static(
        "code", Choice(HASH_NOISE_AT),
        doc="code: noise added to the sigmoid output b(s) (Tang et al.) | logits: before the sigmoid")
    penalty_on: str = static(
        "code", Choice(HASH_PENALTY_ON),
        doc="code: the binarisation penalty on the noise-free b(s), the code that is hashed | noisy_code: on the "
            "noisy code the decoder sees (the RFIG authors)")
    lr: float = traced(1e-4, AT_LEAST_ZERO,
                       doc="autoencoder Adam learning rate (0: the random encoder of init, frozen: the learned hash "
                           "without its drift)")
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
    projection: jax.Array          # [k, D] SimHash matrix A ~ N(0, 1), fixed ([0, D] with hash=code: none;
                                   # [k, d] with hash=static, applied to the state itself; [0, D] with
                                   # hash=grid: none)
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
    hidden, code_dim = settings.hidden, settings.code_dim
    activation, noise_at = settings.activation, settings.noise_at
    by_code, before_batch = settings.hash == "code", settings.count == "before_batch"
    by_state = settings.hash == "static"  # SimHash of the state itself: no autoencoder is trained
    by_cell = settings.hash == "grid"     # the state's grid cell: no autoencoder either
    # hash=code: the rounded code's D bits are the key's bits, and the table (2^m >= 2^D) its modulus
    hash_bits = code_dim if by_code else settings.hash_bits
    primes = settings.table_sizes
    num_tables, width = len(primes), max(primes)
    # Row key weights 2^i mod P_t (exact Python integers), and each table's offset in the
    # flattened [num_tables * width] count array.
    pow_mod = jnp.asarray(np.array([[pow(2, i, p) for i in range(hash_bits)] for p in primes], np.int32))
    moduli = jnp.asarray(np.array(primes, np.int32))
    offsets = jnp.asarray(np.arange(num_tables, dtype=np.int32) * width)

    def code_logits(encoder, x):
        return nets.mlp_apply(encoder, x, activation)                   # [N, D]

    base_mod = jnp.asarray(np.array([(2 * GRID_SPAN) % p for p in primes], np.int32))

    def cell_keys(x, width):
        """``x [N, d] -> [N, num_tables]`` keys of each state's grid cell: its digits ``floor(x_i / w) + 512``
        (clipped to ``[0, 1024)``) as one base-1024 number modulo each prime."""
        digits = jnp.clip(jnp.floor(x / width) + GRID_SPAN, 0, 2 * GRID_SPAN - 1).astype(jnp.int32)   # [N, d]
        acc = jnp.zeros((x.shape[0], num_tables), jnp.int32)
        for i in range(in_dim):  # d is static and small where a grid count makes sense
            acc = (acc * base_mod + digits[:, i:i + 1]) % moduli
        return acc

    def flat_index(state, x, hp: HashSettings):
        """``[N, num_tables]`` positions of each state's counter in ``tables.reshape(-1)``."""
        if by_cell:
            return cell_keys(x, hp.cell_width) + offsets
        if by_code:  # binary = (b > 0.5) as logit > 0, as simhash_bits rounds; A:exploration/hash.py:90, 141-156
            bits = (code_logits(state.encoder, x) > 0).astype(jnp.int32)
        elif by_state:
            bits = (x @ state.projection.T > 0).astype(jnp.int32)         # [N, k]
        else:
            bits = simhash_bits(state.encoder, state.projection, x, activation)
        return row_keys(bits, pow_mod, moduli) + offsets

    def states(batch):
        return flat_states(batch.obs if settings.states == "obs" else batch.next_obs, obs_ndim)   # [N, d]

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
        # ReLU layers with gain sqrt(2); the linear code and reconstruction layers with gain 1 (lecun: 1 everywhere).
        gain = 1.0 if settings.weight_init == "lecun" else math.sqrt(2.0)
        encoder = nets.mlp_init(k_enc, (in_dim,) + hidden + (code_dim,), gain=gain, out_gain=1.0)
        decoder = nets.mlp_init(k_dec, (code_dim,) + hidden[::-1] + (in_dim,), gain=gain, out_gain=1.0)
        return HashState(
            encoder=encoder, decoder=decoder, opt_state=nets.adam_init((encoder, decoder)),
            projection=jax.random.normal(
                k_proj, (0 if by_code or by_cell else hash_bits, in_dim if by_state else code_dim), jnp.float32),
            tables=jnp.zeros((num_tables, width), jnp.int32),
        )

    def reward(state, batch, hp: HashSettings):
        x = states(batch)                                                  # [N, d]
        idx = flat_index(state, x, hp)
        if before_batch:  # the counts stored before this batch, 1 / sqrt(n + 1): A:exploration/hash.py:176-179
            n = jnp.min(state.tables.reshape(-1)[idx], axis=-1)
            r = jax.lax.rsqrt((n + 1).astype(jnp.float32))
        else:
            r = jax.lax.rsqrt(jnp.maximum(counts_after(state, idx), 1).astype(jnp.float32))
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
        # The penalty acts on the noise-free code, the one that is rounded and hashed (noisy_code: on the
        # decoder's input, as A:exploration/hash.py:209-210 reads `code_probs` after the noise).
        p = code if settings.penalty_on == "noisy_code" else b
        binarisation = jnp.mean(jnp.minimum(jnp.square(p), jnp.square(1.0 - p)))
        return reconstruction + hp.bin_penalty * binarisation, (reconstruction, binarisation)

    def update(state, batch, key, hp: HashSettings):
        x = states(batch)
        if by_state or by_cell:  # nothing to train: count the batch under the fixed hash
            idx = flat_index(state, x, hp)
            tables = state.tables.reshape(-1).at[idx.reshape(-1)].add(1).reshape(state.tables.shape)
            occupied = jnp.count_nonzero(tables[0, :primes[0]]).astype(jnp.float32)
            return state._replace(tables=tables), {"occupied_buckets": occupied}
        if not before_batch:
            # Commit the counts ``reward`` read: the same indices from the same (pre-update) encoder.
            idx = flat_index(state, x, hp)
            tables = state.tables.reshape(-1).at[idx.reshape(-1)].add(1).reshape(state.tables.shape)
        noise = jax.random.uniform(key, (x.shape[0], code_dim), jnp.float32, -1.0, 1.0) * hp.noise_scale
        params = (state.encoder, state.decoder)
        (loss, (reconstruction, binarisation)), grads = jax.value_and_grad(ae_loss, has_aux=True)(
            params, x, noise, hp)
        (encoder, decoder), opt_state = nets.adam_step(params, grads, state.opt_state, hp.lr, hp.adam_eps)
        if before_batch:
            # The RFIG authors' order: count the batch after the step, hashed by the updated encoder
            # (A:exploration/hash.py:223-236).
            idx = flat_index(state._replace(encoder=encoder), x, hp)
            tables = state.tables.reshape(-1).at[idx.reshape(-1)].add(1).reshape(state.tables.shape)
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

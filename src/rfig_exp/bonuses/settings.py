"""Each bonus's settings, read and checked from the ``bonus`` config node without JAX.

``parse_bonus(node, batch_size)`` checks the bonus's name once and returns that bonus's frozen
settings: its static, hashable choices (shapes, methods: fixed when the bonus is made) and
``hparams``, a NamedTuple of its numeric hyperparameters as Python floats (they become float32
arguments of the compiled function when the bonus is made). Every bonus carries ``beta``, the
intrinsic advantage's weight, which the agent reads. Each error names its key.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from rfig_exp.errors import ConfigError
from rfig_exp.validation import choice, number, positive_int, require, widths

# the activation names the neural bonuses' MLPs know (nets.ACTIVATIONS holds the functions)
ACTIVATIONS = ("relu", "tanh")


def _get(node, key: str) -> Any:
    return node.get(key)  # a missing key reads as None, refused by its own check with its value


def _number(node, key: str) -> float:
    """``bonus.<key>`` as a float (any float, inf and nan too: each bonus checks its range)."""
    return number(_get(node, key), f"bonus.{key}", finite=False)


def _float32(node, key: str) -> float:
    """``bonus.<key>`` rounded to float32, the value the compiled function gets: RFIG checks
    (and derives ``subsample`` from) the rounded value."""
    value = _number(node, key)
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:  # finite beyond float32's range: inf, as float32 would make it
        return math.copysign(math.inf, value)


@dataclass(frozen=True)
class BonusSettings:
    name: ClassVar[str]
    beta: float
    hparams: Any

    @staticmethod
    def parse_beta(node) -> float:
        return number(_get(node, "beta"), "bonus.beta", 0.0)

    @classmethod
    def parse(cls, node, batch_size: int) -> BonusSettings:
        """This bonus's settings from the ``bonus`` config node (each subclass reads its own keys)."""
        raise NotImplementedError


class NoHparams(NamedTuple):
    pass


@dataclass(frozen=True)
class NoneSettings(BonusSettings):
    name: ClassVar[str] = "none"

    @classmethod
    def parse(cls, node, batch_size: int) -> NoneSettings:
        del batch_size
        return cls(beta=cls.parse_beta(node), hparams=NoHparams())


# -- RFIG ------------------------------------------------------------------------------------

INVERSE_METHODS = ("exact", "newton_schulz", "woodbury")
# jax.default_matmul_precision values RFIG's matmuls may run at. On CPU all of them are float32.
# On Ampere/Hopper GPUs "default" is TF32 (10-bit mantissa inputs), under which the Woodbury
# update loses Lambda (measured: a recovery nearly every update); "highest" is true float32;
# "TF32_TF32_F32_X3" is three TF32 passes, close to float32 and faster on tensor cores.
MATMUL_PRECISIONS = ("highest", "TF32_TF32_F32_X3", "F32_F32_F32", "high", "default")
LENGTHSCALE_METHODS = ("valko", "valko_fixed_point", "participation_ratio")


class RFIGHparams(NamedTuple):
    reg: Any
    lengthscale: Any        # NaN with lengthscale=auto
    lengthscale_gamma: Any
    lengthscale_scale: Any
    divergence_tol: Any
    refresh_tol: Any


@dataclass(frozen=True)
class RFIGSettings(BonusSettings):
    name: ClassVar[str] = "rfig"
    num_features: int
    subsample: int          # floor(batch_size * rho) states per update
    inverse: str
    newton_schulz_iters: int
    refresh_every: int
    quad_blocks: int
    auto_lengthscale: bool
    lengthscale_method: str
    lengthscale_samples: int
    matmul_precision: str

    @classmethod
    def parse(cls, node, batch_size: int) -> RFIGSettings:
        beta = cls.parse_beta(node)
        num_features = _get(node, "num_features")
        require(isinstance(num_features, int) and num_features >= 1,
                f"bonus.num_features={num_features!r} must be a positive integer")
        rho = _float32(node, "rho")
        require(0.0 < rho <= 1.0, f"bonus.rho={rho} must be in (0, 1]")
        subsample = math.floor(batch_size * rho)
        require(subsample >= 1,
                f"bonus.rho={rho} keeps floor({batch_size} * rho) = 0 states of a batch of {batch_size}")
        reg = _float32(node, "reg")
        require(reg > 0.0, f"bonus.reg={reg} must be > 0 (Sigma_0 = reg * I must be invertible)")
        inverse = choice(_get(node, "inverse"), "bonus.inverse", INVERSE_METHODS)
        iters = _get(node, "newton_schulz_iters")
        require(isinstance(iters, int) and iters >= 1, f"bonus.newton_schulz_iters={iters!r} must be an integer >= 1")
        refresh_every = _get(node, "refresh_every")
        require(isinstance(refresh_every, int) and not isinstance(refresh_every, bool) and refresh_every >= 0,
                f"bonus.refresh_every={refresh_every!r} must be an integer >= 0 "
                "(0: refresh only when the residual asks)")
        tol = _float32(node, "divergence_tol")
        require(tol > 0.0, f"bonus.divergence_tol={tol} must be > 0")
        refresh_tol = _float32(node, "refresh_tol")
        require(0.0 < refresh_tol <= tol,
                f"bonus.refresh_tol={refresh_tol} must be > 0 and <= bonus.divergence_tol={tol}")
        quad_blocks = _get(node, "quad_blocks")
        require(isinstance(quad_blocks, int) and not isinstance(quad_blocks, bool) and quad_blocks >= 1
                and num_features % quad_blocks == 0,
                f"bonus.quad_blocks={quad_blocks!r} must be a positive integer dividing "
                f"bonus.num_features={num_features}")
        auto = _get(node, "lengthscale") == "auto"
        lengthscale = math.nan if auto else _float32(node, "lengthscale")
        require(auto or lengthscale > 0.0, f"bonus.lengthscale={lengthscale} must be > 0 or 'auto'")
        scale = _float32(node, "lengthscale_scale")
        require(scale > 0.0, f"bonus.lengthscale_scale={scale} must be > 0")
        method = choice(_get(node, "lengthscale_method"), "bonus.lengthscale_method", LENGTHSCALE_METHODS)
        gamma = _float32(node, "lengthscale_gamma")
        require(gamma > 0.0, f"bonus.lengthscale_gamma={gamma} must be > 0")
        precision = choice(_get(node, "matmul_precision"), "bonus.matmul_precision", MATMUL_PRECISIONS)
        samples = _get(node, "lengthscale_samples")
        require(isinstance(samples, int) and samples >= 2,
                f"bonus.lengthscale_samples={samples!r} must be an integer >= 2")
        hparams = RFIGHparams(reg=reg, lengthscale=lengthscale, lengthscale_gamma=gamma, lengthscale_scale=scale,
                              divergence_tol=tol, refresh_tol=refresh_tol)
        return cls(beta=beta, hparams=hparams, num_features=num_features, subsample=subsample, inverse=inverse,
                   newton_schulz_iters=iters, refresh_every=refresh_every, quad_blocks=quad_blocks,
                   auto_lengthscale=auto, lengthscale_method=method, lengthscale_samples=samples,
                   matmul_precision=precision)


# -- RND -------------------------------------------------------------------------------------

class AdamHparams(NamedTuple):
    lr: Any
    adam_eps: Any


def _activation(node) -> str:
    return choice(_get(node, "activation"), "bonus.activation", ACTIVATIONS)


def _above_zero(node, key: str) -> float:
    value = _number(node, key)
    require(math.isfinite(value) and value > 0.0, f"bonus.{key}={value} must be > 0")
    return value


@dataclass(frozen=True)
class RNDSettings(BonusSettings):
    name: ClassVar[str] = "rnd"
    hidden: tuple[int, ...]
    embedding_dim: int
    activation: str
    num_train: int          # floor(batch_size * update_proportion) states per predictor step

    @classmethod
    def parse(cls, node, batch_size: int) -> RNDSettings:
        beta = cls.parse_beta(node)
        hidden = widths(_get(node, "hidden"), "bonus.hidden")
        embedding_dim = positive_int(_get(node, "embedding_dim"), "bonus.embedding_dim")
        activation = _activation(node)
        lr, eps = _above_zero(node, "lr"), _above_zero(node, "adam_eps")
        proportion = _number(node, "update_proportion")
        require(0.0 < proportion <= 1.0, f"bonus.update_proportion={proportion} must be in (0, 1]")
        num_train = math.floor(batch_size * proportion)
        require(num_train >= 1, f"bonus.update_proportion={proportion} keeps floor({batch_size} * "
                                f"update_proportion) = 0 states of a batch of {batch_size}")
        return cls(beta=beta, hparams=AdamHparams(lr=lr, adam_eps=eps), hidden=hidden,
                   embedding_dim=embedding_dim, activation=activation, num_train=num_train)


# -- VIME ------------------------------------------------------------------------------------

VIME_TARGETS = ("next_obs", "delta")


class VIMEHparams(NamedTuple):
    lr: Any
    adam_eps: Any
    step_size: Any
    likelihood_sigma: Any
    prior_sigma: Any
    init_sigma: Any
    clip: Any
    kl_weight: Any          # >= 0; every other one > 0


@dataclass(frozen=True)
class VIMESettings(BonusSettings):
    name: ClassVar[str] = "vime"
    hidden: tuple[int, ...]
    num_samples: int
    target: str

    @classmethod
    def parse(cls, node, batch_size: int) -> VIMESettings:
        del batch_size
        beta = cls.parse_beta(node)
        hidden = widths(_get(node, "hidden"), "bonus.hidden")
        samples = positive_int(_get(node, "num_samples"), "bonus.num_samples")
        target = choice(_get(node, "target"), "bonus.target", VIME_TARGETS)
        values = {}
        for k in VIMEHparams._fields:
            value = values[k] = number(_get(node, k), f"bonus.{k}")
            if k == "kl_weight":
                require(value >= 0.0, f"bonus.{k}={value} must be >= 0")
            else:
                require(value > 0.0, f"bonus.{k}={value} must be > 0")
        return cls(beta=beta, hparams=VIMEHparams(**values), hidden=hidden, num_samples=samples, target=target)


# -- #Exploration ----------------------------------------------------------------------------

HASH_NOISE_AT = ("code", "logits")
INT32_MAX = 2**31 - 1


class HashHparams(NamedTuple):
    lr: Any
    adam_eps: Any
    noise_scale: Any
    bin_penalty: Any


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


@dataclass(frozen=True)
class HashSettings(BonusSettings):
    name: ClassVar[str] = "hashexplo"
    hidden: tuple[int, ...]
    code_dim: int
    hash_bits: int
    table_sizes: tuple[int, ...]
    activation: str
    noise_at: str

    @classmethod
    def parse(cls, node, batch_size: int) -> HashSettings:
        del batch_size
        beta = cls.parse_beta(node)
        hidden = widths(_get(node, "hidden"), "bonus.hidden")
        code_dim = positive_int(_get(node, "code_dim"), "bonus.code_dim")
        hash_bits = positive_int(_get(node, "hash_bits"), "bonus.hash_bits")
        sizes = _get(node, "table_sizes")
        try:
            sizes = tuple(sizes)
        except TypeError:
            raise ConfigError(f"bonus.table_sizes={sizes!r} must be a non-empty list of odd primes") from None
        # An even modulus would drop high bits (2^i mod 2^m = 0 for i >= m); a prime keeps every bit.
        require(len(sizes) >= 1 and all(isinstance(p, int) and not isinstance(p, bool) and p > 2 and is_prime(p)
                                        for p in sizes),
                f"bonus.table_sizes={list(sizes)!r} must be a non-empty list of odd primes")
        # Row keys are summed in int32 before the modulus, and flat indices span all tables.
        require(hash_bits * max(sizes) <= INT32_MAX,
                f"bonus.hash_bits={hash_bits} times max(bonus.table_sizes)={max(sizes)} overflows int32 keys")
        require(len(sizes) * max(sizes) <= INT32_MAX,
                f"bonus.table_sizes={list(sizes)!r}: len * max must fit int32 indices")
        activation = _activation(node)
        noise_at = choice(_get(node, "noise_at"), "bonus.noise_at", HASH_NOISE_AT)
        values = {}
        for key, open_ in (("lr", True), ("adam_eps", True), ("noise_scale", False), ("bin_penalty", False)):
            value = values[key] = _number(node, key)
            ok = math.isfinite(value) and (value > 0.0 if open_ else value >= 0.0)
            require(ok, f"bonus.{key}={value} must be {'>' if open_ else '>='} 0")
        return cls(beta=beta, hparams=HashHparams(**values), hidden=hidden, code_dim=code_dim,
                   hash_bits=hash_bits, table_sizes=sizes, activation=activation, noise_at=noise_at)


SETTINGS: dict[str, type[BonusSettings]] = {
    s.name: s for s in (NoneSettings, RFIGSettings, RNDSettings, VIMESettings, HashSettings)}


def parse_bonus(node, batch_size: int) -> BonusSettings:
    """The ``bonus`` config node's settings for a rollout batch of ``batch_size`` states."""
    name = _get(node, "name")
    if name not in SETTINGS:
        raise ConfigError(f"bonus.name={name!r} is not a known bonus; valid names: {', '.join(sorted(SETTINGS))}")
    return SETTINGS[name].parse(node, batch_size)

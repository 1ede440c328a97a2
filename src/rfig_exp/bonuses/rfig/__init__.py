"""RFIG: random-feature information gain (the paper's Algorithm 1), the method this project is about.

This module declares its settings (read without JAX); the bonus itself is ``bonus.py`` (its
docstring says what it computes), with ``features`` (the random Fourier features),
``precision`` (the inverse upkeep) and ``lengthscale`` (the length-scale heuristics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Mapping

from rfig_exp.bonuses.settings import BonusSettings
from rfig_exp.config.settings import static, traced
from rfig_exp.config.validation import Choice, Count, Interval, require

INVERSE_METHODS = ("exact", "newton_schulz", "woodbury")
# jax.default_matmul_precision values RFIG's matmuls may run at. On CPU all of them are float32.
# On Ampere/Hopper GPUs "default" is TF32 (10-bit mantissa inputs), under which the Woodbury
# update loses Lambda (measured: a recovery nearly every update); "highest" is true float32;
# "TF32_TF32_F32_X3" is three TF32 passes, close to float32 and faster on tensor cores.
MATMUL_PRECISIONS = ("highest", "TF32_TF32_F32_X3", "F32_F32_F32", "high", "default")
LENGTHSCALE_METHODS = ("valko", "valko_fixed_point", "participation_ratio", "linear_valko")
# Lambda_0: the paper's Sigma_0^-1, or the authors' code's 0 (docs/bonuses/rfig.md).
INITIAL_PRECISIONS = ("inverse", "zero")


def _positive(text: str = "must be > 0", **kw: Any) -> Interval:
    """A float32 value above zero (RFIG checks, and derives from, the value it computes with)."""
    return Interval(0.0, text, low_open=True, float32=True, **kw)


def _lengthscale(value: Any, key: str, earlier: Mapping[str, Any]) -> float:
    """A positive length-scale, or NaN for ``auto`` (estimated from the warm-up states)."""
    return math.nan if value == "auto" else _positive("must be > 0 or 'auto'")(value, key, earlier)


def _keeps_a_state(values: Mapping[str, Any], prefix: str) -> None:
    rho, batch_size = values["rho"], values["batch_size"]
    require(math.floor(batch_size * rho) >= 1,
            f"{prefix}rho={rho} keeps floor({batch_size} * rho) = 0 states of a batch of {batch_size}")


@dataclass(frozen=True)
class RFIGSettings(BonusSettings):
    name: ClassVar[str] = "rfig"
    label: ClassVar[str] = "RFIG"
    colour: ClassVar[str] = "#D55E00"
    role: ClassVar[str] = "method"
    order: ClassVar[int] = 1  # before a method of a user's own
    small: ClassVar[Mapping[str, Any]] = MappingProxyType({"num_features": 64, "lengthscale_samples": 32})

    num_features: int = static(1024, Count(1, "must be a positive integer"), doc="D, random Fourier features")
    # subsample ratio: floor(batch_size * rho) states per update enter Sigma
    rho: float = static(0.0625, _positive("must be in (0, 1]", high=1.0), check=_keeps_a_state,
                        doc="subsample ratio: floor(batch * rho) states per update enter Sigma")
    reg: float = traced(1.0, _positive("must be > 0 (Sigma_0 = reg * I must be invertible)"),
                        doc="lambda: Sigma_0 = (reg + prior_scale) * I")
    prior_scale: float = traced(
        0.0, Interval(0.0, "must be >= 0", float32=True),
        doc=("Sigma_0 = (reg + prior_scale) I: 0 is the paper's Sigma_0 = lambda I; the authors' code has num_features "
             "(1024 I, reg added at every update: rnk.py:147-151,270-274)"))
    initial_precision: str = static(
        "inverse", Choice(INITIAL_PRECISIONS),
        doc=("inverse: Lambda_0 = Sigma_0^-1 (the paper) | zero: Lambda_0 = 0, the first rollout's bonus is exactly 0 "
             "(the authors' code, rnk.py:151); apart from prior_scale, which shapes every later bonus"))
    lengthscale: float = traced("auto", _lengthscale,
                                doc="a positive number, or auto: sqrt(d_eff) from the random-policy warm-up states")
    lengthscale_gamma: float = traced(1.0, _positive(), doc="ridge gamma of Valko et al.'s effective dimension")
    lengthscale_scale: float = traced(
        1.0, _positive(),
        doc="multiplies the length-scale (auto or given): a sensitivity sweep around auto")
    divergence_tol: float = traced(
        1e-2, _positive(),
        doc="residual above which the inverse counts as diverged (a recovery); >= refresh_tol")
    refresh_tol: float = traced(
        1e-3, _positive("must be > 0 and <= bonus.divergence_tol={divergence_tol}", high="divergence_tol"),
        doc=("woodbury: an exact inverse once the residual ||Sigma Lambda v - v|| / ||v|| exceeds this (and doubled "
             "since the last)"))
    inverse: str = static("woodbury", Choice(INVERSE_METHODS),
                          doc="exact | newton_schulz | woodbury: how Lambda = Sigma^-1 is kept")
    newton_schulz_iters: int = static(20, Count(1), doc="K, Newton-Schulz iterations per update (the paper's appendix)")
    refresh_every: int = static(
        0, Count(0, "must be an integer >= 0 (0: refresh only when the residual asks)"),
        doc="woodbury: also an exact inverse every this many updates (0: only when refresh_tol asks)")
    quad_blocks: int = static(
        4, Count(1, "must be a positive integer dividing bonus.num_features={num_features}", divides="num_features"),
        doc="phi^T Lambda phi from the upper block triangle of Lambda in this many x this many blocks")
    lengthscale_method: str = static(
        "valko", Choice(LENGTHSCALE_METHODS),
        doc=("valko | valko_fixed_point | participation_ratio | linear_valko (the authors' code: Valko's rule on the "
             "d x d X^T X + gamma I of all warm-up states): the effective dimension behind auto"))
    lengthscale_samples: int = static(1024, Count(2),
                                      doc="warm-up states used for the auto estimate (linear_valko: all of them)")
    matmul_precision: str = static(
        "highest", Choice(MATMUL_PRECISIONS),
        doc=("every RFIG matmul's precision, whatever the process default: highest (float32) | TF32_TF32_F32_X3 | "
             "F32_F32_F32 | high | default"))

    @property
    def subsample(self) -> int:
        """floor(batch_size * rho) states per update."""
        return math.floor(self.batch_size * self.rho)

    @property
    def auto_lengthscale(self) -> bool:
        return math.isnan(self.lengthscale)


def make(settings: RFIGSettings, obs_shape, action_space):
    from rfig_exp.bonuses.rfig.bonus import make_rfig_bonus

    return make_rfig_bonus(settings, obs_shape, action_space)

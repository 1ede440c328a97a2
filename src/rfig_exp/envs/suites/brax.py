"""The sparse Brax locomotion envs (brax 0.14 and the paper's Milestone reward), declared without JAX.

Their options are brax's physics backend and the Milestone reward's two numbers (``docs/brax.md``).
On a CPU, vmapped seeds on brax's default ``generalized`` backend can wedge XLA's CPU runtime for
ever (README, *XLA CPU wedges*; 2 of 3 attempts with 8 seeds, cause not found), so they declare
their seeds unsafe to vmap there unless the backend is one of :data:`VMAP_SAFE_CPU_BACKENDS`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from rfig_exp.config.errors import ConfigError
from rfig_exp.config.settings import setting
from rfig_exp.config.validation import Count
from rfig_exp.envs.settings import DeclaredEnv, EnvSettings

if TYPE_CHECKING:
    from rfig_exp.envs.base import Env

BACKENDS = ("generalized", "positional", "spring", "mjx")
# Backends whose vmapped seeds run on a CPU without the wedge: `spring` trained 8-seed jobs of every
# sparse env without a stall (README, XLA CPU wedges); the wedge was seen with `generalized`.
VMAP_SAFE_CPU_BACKENDS = ("spring",)


def _backend(value: Any, key: str, earlier: Mapping[str, Any]) -> str:
    if value not in BACKENDS:
        raise ConfigError(f"{key}={value!r} must be one of {', '.join(BACKENDS)}")
    return str(value)


def _positive(value: Any, key: str, earlier: Mapping[str, Any]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{key}={value!r} must be a finite number")
    if value <= 0:
        raise ConfigError(f"{key}={value!r} must be > 0")
    return float(value)


@dataclass(frozen=True)
class BraxSettings(EnvSettings):
    """The options of a sparse Brax env (``docs/brax.md``).

    ``backend`` defaults to brax's own default, ``generalized``: the paper does not name a
    backend, so its envs most likely ran on it. ``spring`` trains 1.6-2.2x faster on CPU and
    ``mjx`` is fast for ant only (measured in docs/brax.md).
    """

    suite: ClassVar[str] = "brax"
    section: ClassVar[str | None] = "sparse Brax: `env=sparse_*`"
    backend: str = setting("generalized", _backend,
                           doc="brax's physics: generalized (its default) | positional | spring | mjx (docs/brax.md)")
    episode_length: int = setting(1000, Count(1), doc="steps before truncation (brax's default)")
    milestone_distance: float = setting(
        1.0, _positive, doc="delta: a reward each time the torso passes a new multiple of this x distance")
    reward_scale: float = setting(1.0, _positive, doc="alpha: the reward per milestone")

    @classmethod
    def not_an_option(cls, name: str, suite_id: str, key: str) -> str:
        return (f"env.{key} is not an option of the sparse Brax envs; valid: "
                f"{', '.join('env.' + k for k in sorted(cls.options()))}")

    @classmethod
    def seeds_vmap_on_cpu(cls, options: Mapping[str, Any]) -> bool:
        """Only on a backend of :data:`VMAP_SAFE_CPU_BACKENDS` (``env.backend``, else the default)."""
        return (options.get("backend") or cls.defaults()["backend"]) in VMAP_SAFE_CPU_BACKENDS


def _sparse(body: str, label: str, order: int) -> DeclaredEnv:
    return DeclaredEnv(f"sparse_{body}", body, BraxSettings, f"Sparse-{label}", order)


ENVS = (
    _sparse("ant", "Ant", 3),
    _sparse("halfcheetah", "HalfCheetah", 4),
    _sparse("hopper", "Hopper", 5),
    _sparse("walker2d", "Walker2d", 6),
    _sparse("humanoid", "Humanoid", 7),
)


def make(settings: BraxSettings) -> Env:
    """The env of ``settings``, made by ``envs/brax_suite.py`` (brax and JAX: imported here)."""
    from rfig_exp.envs.brax_suite import make_brax_env

    return make_brax_env(settings)

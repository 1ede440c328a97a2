"""Environment factory keyed by the config name (``env.name``).

Each entry names its suite and the suite's own id; suites import their heavy packages
only when one of their environments is made.
"""

from __future__ import annotations

from rfig_exp.envs.base import BoxSpace, DiscreteSpace, Env, EnvStep
from rfig_exp.errors import ConfigError

# config name -> (suite, suite-specific id)
REGISTRY: dict[str, tuple[str, str]] = {
    "mountaincar": ("gymnax", "MountainCar-v0"),
    "acrobot": ("gymnax", "Acrobot-v1"),
    "cartpole": ("gymnax", "CartPole-v1"),
    "minatar_breakout": ("gymnax", "Breakout-MinAtar"),
    "minatar_asterix": ("gymnax", "Asterix-MinAtar"),
    "minatar_freeway": ("gymnax", "Freeway-MinAtar"),
    "minatar_space_invaders": ("gymnax", "SpaceInvaders-MinAtar"),
}


def _make_gymnax(name: str, suite_id: str) -> Env:
    from rfig_exp.envs.gymnax_suite import make_gymnax_env

    return make_gymnax_env(name, suite_id)


SUITES = {"gymnax": _make_gymnax}


def env_names() -> list[str]:
    return sorted(REGISTRY)


def make_env(name: str) -> Env:
    """Build the environment registered as ``name``; unknown names list the valid ones."""
    if name not in REGISTRY:
        raise ConfigError(f"env.name={name!r} is not a known environment; valid names: {', '.join(env_names())}")
    suite, suite_id = REGISTRY[name]
    return SUITES[suite](name, suite_id)


__all__ = ["BoxSpace", "DiscreteSpace", "Env", "EnvStep", "REGISTRY", "env_names", "make_env"]

"""The environments: names, settings and the factory, keyed by the config name (``env.name``).

Nothing here imports JAX: ``parse_env`` checks an ``env`` config node into its suite's settings
(``rfig_exp.envs.settings``; a bad value raises :class:`ConfigError` naming ``env.<key>``)
before anything compiles; ``make_env`` imports the suite's module, and the suite its heavy
packages (gymnax, brax, ...), only when one of its environments is made. ``Env``, ``EnvStep``,
``BoxSpace``, ``DiscreteSpace`` and ``CoverageGrid`` live in ``rfig_exp.envs.base`` (read from
here on first use).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Mapping

from rfig_exp.envs.settings import SETTINGS, EnvSettings, parse_env

if TYPE_CHECKING:
    from rfig_exp.envs.base import Env

# config name -> (suite, suite-specific id)
REGISTRY: dict[str, tuple[str, str]] = {
    "mountaincar": ("gymnax", "MountainCar-v0"),
    "acrobot": ("gymnax", "Acrobot-v1"),
    "cartpole": ("gymnax", "CartPole-v1"),
    "pendulum": ("gymnax", "Pendulum-v1"),
    "mountaincar_continuous": ("gymnax", "MountainCarContinuous-v0"),
    "minatar_breakout": ("gymnax", "Breakout-MinAtar"),
    "minatar_asterix": ("gymnax", "Asterix-MinAtar"),
    "minatar_freeway": ("gymnax", "Freeway-MinAtar"),
    "minatar_space_invaders": ("gymnax", "SpaceInvaders-MinAtar"),
    "sparse_ant": ("brax", "ant"),
    "sparse_halfcheetah": ("brax", "halfcheetah"),
    "sparse_hopper": ("brax", "hopper"),
    "sparse_walker2d": ("brax", "walker2d"),
    "sparse_humanoid": ("brax", "humanoid"),
    "deepsea": ("gymnax", "DeepSea-bsuite"),
    "pointmaze_umaze": ("pointmaze", "umaze"),
    "pointmaze_open": ("pointmaze", "open"),
    "pointmaze_medium": ("pointmaze", "medium"),
    "pointmaze_large": ("pointmaze", "large"),
    "pointmaze_giant": ("pointmaze", "giant"),
    "pointmaze_custom": ("pointmaze", "custom"),
}

# suite -> (module, factory); a factory is ``make(settings) -> Env``, settings from ``parse_env``
SUITES: dict[str, tuple[str, str]] = {
    "gymnax": ("rfig_exp.envs.gymnax_suite", "make_gymnax_env"),
    "brax": ("rfig_exp.envs.brax_suite", "make_brax_env"),
    "pointmaze": ("rfig_exp.envs.pointmaze", "make_pointmaze_env"),
}
assert set(SUITES) == set(SETTINGS)


def env_names() -> list[str]:
    return sorted(REGISTRY)


def make_env(env: EnvSettings | str | Mapping[str, Any]) -> Env:
    """Build the environment of ``env``: its settings (from ``parse_env``), or a name or an ``env``
    config node (``name`` plus suite options), parsed first. Unknown names list the valid ones."""
    settings = env if isinstance(env, EnvSettings) else parse_env(env)
    module, factory = SUITES[settings.suite]
    return getattr(importlib.import_module(module), factory)(settings)


_BASE = ("BoxSpace", "CoverageGrid", "DiscreteSpace", "Env", "EnvStep")


def __getattr__(name):  # the interface types: from the JAX side, imported when first asked for
    if name in _BASE:
        return getattr(importlib.import_module("rfig_exp.envs.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BoxSpace", "CoverageGrid", "DiscreteSpace", "Env", "EnvSettings", "EnvStep", "REGISTRY", "SUITES",
           "env_names", "make_env", "parse_env"]

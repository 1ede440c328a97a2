"""Environment factory keyed by the config name (``env.name``).

Each entry names its suite and the suite's own id; suites import their heavy packages
(gymnax, brax, ...) only when one of their environments is made. The rest of the ``env``
config node (e.g. ``env.size``, ``env.backend``) is passed to the suite as options, which
the suite validates (a bad value raises :class:`ConfigError` naming ``env.<key>``).
"""

from __future__ import annotations

import importlib
from typing import Any, Mapping

from rfig_exp.envs.base import BoxSpace, CoverageGrid, DiscreteSpace, Env, EnvStep
from rfig_exp.errors import ConfigError

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

# suite -> (module, factory); a factory is ``make(name, suite_id, options) -> Env``
SUITES: dict[str, tuple[str, str]] = {
    "gymnax": ("rfig_exp.envs.gymnax_suite", "make_gymnax_env"),
    "brax": ("rfig_exp.envs.brax_suite", "make_brax_env"),
    "pointmaze": ("rfig_exp.envs.pointmaze", "make_pointmaze_env"),
}


def env_names() -> list[str]:
    return sorted(REGISTRY)


def make_env(cfg: str | Mapping[str, Any]) -> Env:
    """Build the environment named by ``cfg`` (a name, or the ``env`` config node: ``name``
    plus suite options). Unknown names list the valid ones."""
    if isinstance(cfg, str):
        name, options = cfg, {}
    else:
        options = {str(k): v for k, v in dict(cfg).items()}
        name = options.pop("name", None)
    if name not in REGISTRY:
        raise ConfigError(f"env.name={name!r} is not a known environment; valid names: {', '.join(env_names())}")
    suite, suite_id = REGISTRY[name]
    module, factory = SUITES[suite]
    return getattr(importlib.import_module(module), factory)(name, suite_id, options)


__all__ = ["BoxSpace", "CoverageGrid", "DiscreteSpace", "Env", "EnvStep", "REGISTRY", "SUITES", "env_names",
           "make_env"]

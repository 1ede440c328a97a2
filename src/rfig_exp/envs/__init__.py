"""The environments: names, settings and the factory, keyed by the config name (``env.name``).

Nothing here imports JAX: each suite (``rfig_exp/envs/suites/``) declares its envs, their options
and how a report shows them (``rfig_exp.envs.settings``); ``parse_env`` checks an ``env`` config
node into its env's settings (a bad value raises :class:`ConfigError` naming ``env.<key>``) before
anything compiles; ``make_env`` hands the settings to the ``make`` of the module that declares
them, which imports its heavy packages (gymnax, brax, ...) only then. ``Env``, ``EnvStep``,
``BoxSpace``, ``DiscreteSpace`` and ``CoverageGrid`` live in ``rfig_exp.envs.base`` (read from
here on first use).

An env of the user's own module is its YAML in the user's config folder (``hydra.searchpath``)
with ``module: <importable module>`` and the env's options: the module declares one subclass of
:class:`UserEnvSettings` (its options, each ``rfig_exp.config.settings.setting(default, rule)``) and
``make(settings) -> Env`` (``docs/extending.md``), under a name that no built-in env has.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Mapping

from rfig_exp.envs.settings import (
    DeclaredEnv,
    EnvSettings,
    UserEnvSettings,
    declared_envs,
    env_names,
    parse_env,
    parse_user_env,
    user_env_class,
)

if TYPE_CHECKING:
    from rfig_exp.envs.base import Env


def make_env(env: EnvSettings | str | Mapping[str, Any]) -> Env:
    """Build the environment of ``env``: its settings (from ``parse_env``), or a name or an ``env``
    config node (``name`` plus suite options), parsed first. Unknown names list the valid ones.
    The module that declares the settings makes the env (its ``make``), a suite's or the user's."""
    settings = env if isinstance(env, EnvSettings) else parse_env(env)
    return importlib.import_module(type(settings).__module__).make(settings)


_BASE = ("BoxSpace", "CoverageGrid", "DiscreteSpace", "Env", "EnvStep")


def __getattr__(name):  # the interface types: from the JAX side, imported when first asked for
    if name in _BASE:
        return getattr(importlib.import_module("rfig_exp.envs.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BoxSpace", "CoverageGrid", "DeclaredEnv", "DiscreteSpace", "Env", "EnvSettings", "EnvStep",
           "UserEnvSettings", "declared_envs", "env_names", "make_env", "parse_env", "parse_user_env",
           "user_env_class"]

"""The environments: names, settings and the factory, keyed by the config name (``env.name``).

Nothing here imports JAX: ``parse_env`` checks an ``env`` config node into its suite's settings
(``rfig_exp.envs.settings``; a bad value raises :class:`ConfigError` naming ``env.<key>``)
before anything compiles; ``make_env`` imports the suite's module, and the suite its heavy
packages (gymnax, brax, ...), only when one of its environments is made. ``Env``, ``EnvStep``,
``BoxSpace``, ``DiscreteSpace`` and ``CoverageGrid`` live in ``rfig_exp.envs.base`` (read from
here on first use).

An env of the user's own module is its YAML in the user's config folder (``hydra.searchpath``)
with ``module: <importable module>`` and the env's options: the module declares one subclass of
:class:`UserEnvSettings` (its options, each ``rfig_exp.config.settings.setting(default, rule)``) and
``make(settings) -> Env`` (``docs/extending.md``), under a name that no built-in env has.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from rfig_exp.config.errors import ConfigError
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


@dataclass(frozen=True)
class UserEnvSettings(EnvSettings):
    """The settings of an env of the user's own module (``env.module``, its ``suite_id``): the
    subclass's fields, each declared once (``rfig_exp.config.settings.setting(default, rule, doc=...)``),
    are its ``env.*`` options, read and checked by the same parser before anything compiles."""

    suite: ClassVar[str] = "user"

    @classmethod
    def not_an_option(cls, name: str, suite_id: str, key: str) -> str:
        return f"env.{key} is not an option of {name} ({suite_id}); valid: {', '.join(cls.options()) or 'none'}"


@functools.cache
def user_env_class(module: str) -> type[UserEnvSettings]:
    """The settings class that the user's env module ``module`` declares (the module is imported)."""
    where = f"env.module={module}:"
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as err:
        raise ConfigError(f"{where} no module {err.name or module} can be imported (a module on PYTHONPATH, e.g. "
                          "PYTHONPATH=. for one in the working directory)") from None
    except Exception as err:  # a user's module that fails as it is imported
        raise ConfigError(f"{where} importing it raised {type(err).__name__}: {err}") from None
    found = [c for c in vars(imported).values() if isinstance(c, type) and issubclass(c, UserEnvSettings)
             and c.__module__ == module]
    has_make = callable(getattr(imported, "make", None))
    if len(found) != 1 or not has_make:
        raise ConfigError(f"{where} must declare one UserEnvSettings subclass and make(settings) -> Env; found "
                          f"{[c.__name__ for c in found]}{'' if has_make else ' and no make'}")
    return found[0]


def parse_user_env(name: Any, options: Mapping[str, Any]) -> UserEnvSettings:
    """The settings of the user's env ``name`` whose ``env`` node (``name`` aside) is ``options``."""
    from rfig_exp.config import variants

    module = options["module"]
    variants.check_own_name("env", name, module)
    return user_env_class(module).of(name, module, {k: v for k, v in options.items() if k != "module"})


def make_env(env: EnvSettings | str | Mapping[str, Any]) -> Env:
    """Build the environment of ``env``: its settings (from ``parse_env``), or a name or an ``env``
    config node (``name`` plus suite options), parsed first. Unknown names list the valid ones."""
    settings = env if isinstance(env, EnvSettings) else parse_env(env)
    if isinstance(settings, UserEnvSettings):
        return importlib.import_module(type(settings).__module__).make(settings)
    module, factory = SUITES[settings.suite]
    return getattr(importlib.import_module(module), factory)(settings)


_BASE = ("BoxSpace", "CoverageGrid", "DiscreteSpace", "Env", "EnvStep")


def __getattr__(name):  # the interface types: from the JAX side, imported when first asked for
    if name in _BASE:
        return getattr(importlib.import_module("rfig_exp.envs.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BoxSpace", "CoverageGrid", "DiscreteSpace", "Env", "EnvSettings", "EnvStep", "REGISTRY", "SUITES",
           "UserEnvSettings", "env_names", "make_env", "parse_env", "parse_user_env", "user_env_class"]

"""What every env declares, and the registry of envs that the suites' declarations fill. No JAX.

Like a bonus's module, an env suite's module (``rfig_exp/envs/suites/<suite>.py``) declares, at its
top and without JAX:

- its settings, one :class:`EnvSettings` subclass per kind of env (each option once:
  ``rfig_exp.config.settings.setting(default, rule, doc=...)``), read from the ``env`` config node by
  the same parser as every other group; a class's ``section`` titles its table in
  ``docs/configuration.md`` (None: its envs take no option), and ``seeds_vmap_on_cpu`` says
  whether several seeds of its envs may share one process on a CPU;
- its envs, ``ENVS``: a :class:`DeclaredEnv` each, with its config name, the suite's own id of
  it, its settings class, its label and its place in a report's figures;
- ``make(settings) -> Env``, which imports what the env computes with only when it is made.

:func:`declared_envs` finds every suite module of ``rfig_exp.envs.suites`` (a new one is found by
being there) and :func:`parse_env` checks an ``env`` node into its env's frozen settings, each
error naming its ``env.<key>``, before gymnax, brax or a compiler is imported. An env of the user's
own module declares the same (:class:`UserEnvSettings`, ``docs/extending.md``).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, TypeVar

from rfig_exp.config.errors import ConfigError
from rfig_exp.config.folders import check_own_name
from rfig_exp.config.settings import Settings, declared
from rfig_exp.envs import suites

E = TypeVar("E", bound="EnvSettings")


@dataclass(frozen=True)
class EnvSettings(Settings):
    """What every env's settings carry: its config name and its suite's own id of it (given), then
    its declared options (the subclass's settings)."""

    PREFIX: ClassVar[str] = "env."
    suite: ClassVar[str]                 # the suite's name (its module's, under rfig_exp/envs/suites/)
    # the title of its options' table in docs/configuration.md (None: its envs take no option)
    section: ClassVar[str | None] = None
    name: str                            # env.name, a name of declared_envs()
    suite_id: str                        # the suite's id of the env

    @classmethod
    def options(cls) -> tuple[str, ...]:
        """The ``env.*`` keys it reads (besides ``env.name``): its declared settings."""
        return tuple(name for name, _ in declared(cls))

    @classmethod
    def of(cls: type[E], name: str, suite_id: str, options: Mapping[str, Any]) -> E:
        """The settings of env ``name`` from its ``env.*`` options (everything but ``env.name``):
        an unknown option is named, a missing or null one takes its default."""
        unknown = sorted(set(options) - set(cls.options()))
        if unknown:
            raise ConfigError(cls.not_an_option(name, suite_id, unknown[0]))
        given = {k: v for k, v in options.items() if v is not None}
        return cls.parse({**cls.defaults(), **given}, name=name, suite_id=suite_id)

    @classmethod
    def written(cls, name: str, suite_id: str) -> dict[str, Any]:
        """Its options as ``conf/env/<name>.yaml`` writes them: the declared defaults."""
        return cls.defaults()

    @classmethod
    def not_an_option(cls, name: str, suite_id: str, key: str) -> str:
        valid = cls.options()
        return f"env.{key} is not an option of {name}" + (f"; valid: {', '.join(valid)}" if valid else
                                                           " (it takes none)")

    @classmethod
    def seeds_vmap_on_cpu(cls, options: Mapping[str, Any]) -> bool:
        """Whether several vmapped seeds of an env with these ``env.*`` options (those a job sets;
        the rest take their defaults) train safely in one process on a CPU. A sweep without a GPU
        trains the envs that say no one seed per process (``rfig_exp.launch.grouping``)."""
        return True


@dataclass(frozen=True)
class DeclaredEnv:
    """One env as its suite declares it."""

    name: str                       # env.name and its conf/env/<name>.yaml
    suite_id: str                   # the suite's own id of it (gymnax's "MountainCar-v0")
    settings: type[EnvSettings]     # the class of its options
    label: str                      # in figures and tables (the paper's name where it has one)
    order: int | None = None        # its place in a report's figures; None: after those placed, by name
    aliases: tuple[str, ...] = ()   # other names results may give it (MinAtar's bare "breakout")


@functools.cache
def declared_envs() -> dict[str, DeclaredEnv]:
    """Every env that a suite module of ``rfig_exp.envs.suites`` declares (its ``ENVS``), by name.
    Each module is imported by its name, as a bonus's module is: its top imports no JAX."""
    found: dict[str, DeclaredEnv] = {}
    for module in sorted(m.name for m in pkgutil.iter_modules(suites.__path__)):
        for env in importlib.import_module(f"{suites.__name__}.{module}").ENVS:
            if env.name in found:
                raise ValueError(f"env {env.name} is declared twice (rfig_exp.envs.suites.{module})")
            found[env.name] = env
    return found


def env_names() -> list[str]:
    """Every declared env's name, sorted."""
    return sorted(declared_envs())


def settings_class(name: str) -> type[EnvSettings]:
    """The settings class of declared env ``name``."""
    return declared_envs()[name].settings


# -- an env of the user's own module ---------------------------------------------------------------

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
    module = options["module"]
    check_own_name("env", name, module)
    return user_env_class(module).of(name, module, {k: v for k, v in options.items() if k != "module"})


def parse_env(node: str | Mapping[str, Any]) -> EnvSettings:
    """The settings of the env that ``node`` names: a name, or the ``env`` config node (``name``
    plus the suite's options). An unknown name lists the valid ones; an unknown option is named."""
    if isinstance(node, str):
        name, options = node, {}
    else:
        options = {str(k): v for k, v in dict(node).items()}
        name = options.pop("name", None)
    if "module" in options:  # an env of the user's own module
        return parse_user_env(name, options)
    envs = declared_envs()
    if not isinstance(name, str) or name not in envs:
        raise ConfigError(f"env.name={name!r} is not a known environment; valid names: {', '.join(env_names())}")
    return envs[name].settings.of(name, envs[name].suite_id, options)

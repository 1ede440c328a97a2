"""The exploration bonuses: their names, declarations and the factory, keyed by ``bonus.name``.

A bonus ``<name>`` is its ``conf/bonus/<name>.yaml`` (the user-facing defaults, commented) and its
module ``rfig_exp.bonuses.<name>`` (a package for RFIG): one subclass of ``BonusSettings``
(``rfig_exp.bonuses.settings``) declaring its settings and how reports show it, and
``make(settings, obs_shape, action_space) -> Bonus``. Nothing here, nor at the top of a bonus's
module, imports JAX: ``parse_bonus`` checks a ``bonus`` config node into that bonus's settings
before anything compiles, and analysis reads the declarations; ``make_bonus`` makes the bonus.
``Bonus`` and ``BonusBatch`` live in ``rfig_exp.bonuses.base`` (read from here on first use).

A bonus of the user's own module is its YAML in the user's config folder (``hydra.searchpath``)
with ``module: <importable module>``: the module declares the same two things
(``docs/extending.md``), under a name that no built-in bonus has.
"""

from __future__ import annotations

import functools
import importlib

from rfig_exp import variants
from rfig_exp.bonuses.settings import ROLES, BonusSettings
from rfig_exp.errors import ConfigError
from rfig_exp.settings import declared


def bonus_names() -> list[str]:
    """Every bonus, sorted: the files of ``conf/bonus/``."""
    return variants.group_options("bonus")


@functools.cache
def settings_class(name: str, module: str | None = None) -> type[BonusSettings]:
    """The settings class that bonus ``name``'s module declares: ``rfig_exp.bonuses.<name>``, or
    ``module`` for a bonus of the user's own (``bonus.module``). The module is imported; its top
    level imports no JAX."""
    if module is None:
        module_name, where = f"{__name__}.{name}", f"bonus={name} has conf/bonus/{name}.yaml but"
    else:
        module_name, where = module, f"bonus.module={module}:"
    try:
        imported = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if module is None and err.name != module_name:
            raise
        hint = "" if module is None else " (a module on PYTHONPATH, e.g. PYTHONPATH=. for one in the working directory)"
        raise ConfigError(f"{where} no module {err.name or module_name} can be imported{hint}") from None
    except Exception as err:  # a user's module that fails as it is imported
        raise ConfigError(f"{where} importing it raised {type(err).__name__}: {err}") from None
    found = [c for c in vars(imported).values() if isinstance(c, type) and issubclass(c, BonusSettings)
             and c.__module__ == module_name]
    if len(found) != 1 or getattr(found[0], "name", None) != name or getattr(found[0], "role", None) not in ROLES:
        raise ConfigError(f"{module if module is None else where} must declare one BonusSettings subclass with "
                          f"name = {name!r} and a role in {', '.join(ROLES)}; found "
                          f"{[(c.__name__, getattr(c, 'name', None)) for c in found]}")
    if module is not None and not callable(getattr(imported, "make", None)):
        raise ConfigError(f"{where} must define make(settings, obs_shape, action_space) -> Bonus")
    return found[0]


def declared_bonuses() -> dict[str, type[BonusSettings]]:
    """Every bonus's settings class, by name."""
    return {name: settings_class(name) for name in bonus_names()}


def parse_bonus(node, batch_size: int) -> BonusSettings:
    """The ``bonus`` config node's settings for a rollout batch of ``batch_size`` states."""
    name, module = node.get("name"), node.get("module")
    names = bonus_names()
    if module is not None:
        variants.check_own_name("bonus", name, module)
        declared_class = settings_class(str(name), module)
        settings = [key for key, _ in declared(declared_class)]
        extra = sorted(set(map(str, node)) - {"name", "module", *settings})
        if extra:  # a built-in's YAML is held to its declaration by the tests; a user's, here
            raise ConfigError(f"bonus.{extra[0]} is not a setting of {name}; {module} declares {', '.join(settings)}")
        return declared_class.parse(node, batch_size=batch_size)
    if name not in names:
        raise ConfigError(f"bonus.name={name!r} is not a known bonus; valid names: {', '.join(names)}")
    return settings_class(name).parse(node, batch_size=batch_size)


def make_bonus(settings: BonusSettings, obs_shape, action_space):
    """``(Bonus, hparams)`` for ``settings`` (from ``parse_bonus``): the bonus its module makes for
    observations of ``obs_shape`` and ``action_space``, and its hyperparameters as the float32
    scalars the compiled function takes."""
    from rfig_exp.bonuses.base import float32_hparams

    bonus = importlib.import_module(type(settings).__module__).make(settings, obs_shape, action_space)
    return bonus, float32_hparams(settings.hparams)


def __getattr__(name):  # Bonus, BonusBatch: from the JAX side, imported when first asked for
    if name in ("Bonus", "BonusBatch"):
        return getattr(importlib.import_module("rfig_exp.bonuses.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ROLES", "Bonus", "BonusBatch", "BonusSettings", "bonus_names", "declared_bonuses", "make_bonus",
           "parse_bonus", "settings_class"]

"""The exploration bonuses: their names, declarations and the factory, keyed by ``bonus.name``.

A bonus ``<name>`` is its ``conf/bonus/<name>.yaml`` (the user-facing defaults, commented) and its
module ``rfig_exp.bonuses.<name>`` (a package for RFIG): one subclass of ``BonusSettings``
(``rfig_exp.bonuses.settings``) declaring its settings and how reports show it, and
``make(settings, obs_shape, action_space) -> Bonus``. Nothing here, nor at the top of a bonus's
module, imports JAX: ``parse_bonus`` checks a ``bonus`` config node into that bonus's settings
before anything compiles, and analysis reads the declarations; ``make_bonus`` makes the bonus.
``Bonus`` and ``BonusBatch`` live in ``rfig_exp.bonuses.base`` (read from here on first use).
"""

from __future__ import annotations

import functools
import importlib

from rfig_exp import variants
from rfig_exp.bonuses.settings import ROLES, BonusSettings
from rfig_exp.errors import ConfigError


def bonus_names() -> list[str]:
    """Every bonus, sorted: the files of ``conf/bonus/``."""
    return variants.group_options("bonus")


@functools.cache
def settings_class(name: str) -> type[BonusSettings]:
    """The settings class that bonus ``name``'s module declares (the module is imported; it
    imports no JAX)."""
    module_name = f"{__name__}.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name != module_name:
            raise
        raise ConfigError(f"bonus={name} has conf/bonus/{name}.yaml but no module {module_name}") from None
    found = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, BonusSettings)
             and c.__module__ == module_name]
    if len(found) != 1 or found[0].name != name or found[0].role not in ROLES:
        raise ConfigError(f"{module_name} must declare one BonusSettings subclass with name = {name!r} and a role "
                          f"in {', '.join(ROLES)}; found {[(c.__name__, c.name) for c in found]}")
    return found[0]


def declared_bonuses() -> dict[str, type[BonusSettings]]:
    """Every bonus's settings class, by name."""
    return {name: settings_class(name) for name in bonus_names()}


def parse_bonus(node, batch_size: int) -> BonusSettings:
    """The ``bonus`` config node's settings for a rollout batch of ``batch_size`` states."""
    name = node.get("name")
    names = bonus_names()
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

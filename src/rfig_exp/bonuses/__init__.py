"""The exploration bonuses: their names, declarations and the factory, keyed by ``bonus.name``.

A bonus ``<name>`` is its ``conf/bonus/<name>.yaml`` (the user-facing defaults, commented) and its
module ``rfig_exp.bonuses.<name>`` (a package for RFIG): one subclass of ``BonusSettings``
(``rfig_exp.bonuses.settings``) declaring its settings and how reports show it, and
``make(settings, obs_shape, action_space) -> Bonus``. Nothing here, nor at the top of a bonus's
module, imports JAX: ``parse_bonus`` checks a ``bonus`` config node into that bonus's settings
before anything compiles, and analysis reads the declarations; ``make_bonus`` makes the bonus.
``Bonus`` and ``BonusBatch`` live in ``rfig_exp.bonuses.base``, the action spaces in
``rfig_exp.envs.base`` (all four read from here on first use).

The public API for a training loop of one's own (docs/library.md) is :func:`create`: a bonus by
name, with its settings' defaults and any overrides, without Hydra or this project's agent.

A bonus of the user's own module is its YAML in the user's config folder (``hydra.searchpath``)
with ``module: <importable module>``: the module declares the same two things
(``docs/extending.md``), under a name that no built-in bonus has.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Any, Sequence

from rfig_exp.bonuses.settings import ROLES, BonusSettings
from rfig_exp.config import variants
from rfig_exp.config.errors import ConfigError
from rfig_exp.config.settings import declared
from rfig_exp.config.validation import integer


def bonus_names() -> list[str]:
    """Every bonus, sorted: the files of ``conf/bonus/``. Where the package is installed without the
    project's ``conf/`` (a wheel), the modules of this package that declare a bonus instead (the
    same names: a test holds the two lists equal)."""
    if variants.CONF_DIR.is_dir():
        return variants.group_options("bonus")
    return declaring_modules()


def declaring_modules() -> list[str]:
    """The modules of this package that declare a bonus (a ``BonusSettings`` subclass of their own
    name), sorted. Each module is imported to tell it from the helpers beside it (``base``, ``nets``),
    some of which import JAX: the JAX-free config checks read ``conf/bonus/`` instead."""
    def declares(name: str) -> bool:
        module_name = f"{__name__}.{name}"
        module = importlib.import_module(module_name)
        return any(isinstance(c, type) and issubclass(c, BonusSettings) and c.__module__ == module_name
                   and getattr(c, "name", None) == name for c in vars(module).values())

    return sorted(m.name for m in pkgutil.iter_modules(__path__) if declares(m.name))


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
    if module is not None:
        variants.check_own_name("bonus", name, module)
        declared_class = settings_class(str(name), module)
        settings = [key for key, _ in declared(declared_class)]
        extra = sorted(set(map(str, node)) - {"name", "module", *settings})
        if extra:  # a built-in's YAML is held to its declaration by the tests; a user's, here
            raise ConfigError(f"bonus.{extra[0]} is not a setting of {name}; {module} declares {', '.join(settings)}")
        return declared_class.parse(node, batch_size=batch_size)
    return settings_class(_known_bonus(name)).parse(node, batch_size=batch_size)


def _known_bonus(name) -> str:
    """``name`` when it is a bonus of this package; ConfigError listing the valid names otherwise."""
    names = bonus_names()
    if name not in names:
        raise ConfigError(f"bonus.name={name!r} is not a known bonus; valid names: {', '.join(names)}")
    return name


def make_bonus(settings: BonusSettings, obs_shape, action_space):
    """``(Bonus, hparams)`` for ``settings`` (from ``parse_bonus``): the bonus its module makes for
    observations of ``obs_shape`` and ``action_space``, and its hyperparameters as the compiled
    function takes them: ``settings`` with its traced settings as float32 scalars."""
    from rfig_exp.bonuses.base import float32_hparams

    bonus = importlib.import_module(type(settings).__module__).make(settings, obs_shape, action_space)
    return bonus, float32_hparams(settings)


def create(name: str, obs_shape: Sequence[int], action_space: Any, batch_size: int,
           **overrides: Any) -> tuple[Any, Any]:
    """``(Bonus, hparams)`` of bonus ``name`` for a training loop of one's own (docs/library.md).

    ``obs_shape``: one observation's shape (``(2,)`` for MountainCar); ``action_space``: a
    ``DiscreteSpace(num_actions)`` or ``BoxSpace(dim, low, high)`` (``rfig_exp.bonuses`` has both);
    ``batch_size``: the states of one rollout, ``num_steps * num_envs`` (a bonus that keeps a
    fraction of each batch, RFIG's ``rho``, sizes its buffers by it); ``overrides``: the bonus's
    settings by name (``num_features=512``), the rest keep their declared defaults, those of
    ``conf/bonus/<name>.yaml``. ``hparams`` is the bonus's settings object with its numeric
    settings as float32 scalars (a JAX pytree), the last argument of ``init``, ``reward``,
    ``update`` and ``refresh``.

    The settings go through the same checks as a config's (``parse_bonus``), and the bonus is the
    one ``make_bonus`` makes for this project's trainer: ConfigError for an unknown name (listing
    the valid ones), an unknown setting (listing the bonus's own) or a bad value (naming its key,
    ``bonus.<setting>``). ``beta``, the intrinsic advantage's weight, is the agent's (PPO's loss
    reads it), not the bonus's: it is refused here rather than silently ignored.
    """
    from rfig_exp.envs.base import BoxSpace, DiscreteSpace

    cls = settings_class(_known_bonus(name))
    defaults = cls.defaults()
    for key in overrides:
        if key in cls.HPARAMS_ELSEWHERE:
            raise ConfigError(f"bonus.{key} is the agent's setting, not the bonus's: apply it in your own loss")
        if key not in defaults:
            raise ConfigError(f"bonus.{key} is not a setting of bonus {name}; its settings: "
                              f"{', '.join(k for k in defaults if k not in cls.HPARAMS_ELSEWHERE)}")
    batch_size = integer(batch_size, "batch_size", minimum=1)
    shape = tuple(integer(s, "obs_shape", minimum=1) for s in obs_shape)
    if not isinstance(action_space, (DiscreteSpace, BoxSpace)):
        raise TypeError(f"action_space must be rfig_exp.bonuses.DiscreteSpace(num_actions) or "
                        f"BoxSpace(dim, low, high), got {action_space!r}")
    settings = parse_bonus({**defaults, **overrides, "name": name}, batch_size)
    return make_bonus(settings, shape, action_space)


_LAZY = {"Bonus": "rfig_exp.bonuses.base", "BonusBatch": "rfig_exp.bonuses.base",
         "DiscreteSpace": "rfig_exp.envs.base", "BoxSpace": "rfig_exp.envs.base"}


def __getattr__(name):  # from the JAX side, imported when first asked for
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ROLES", "Bonus", "BonusBatch", "BonusSettings", "BoxSpace", "DiscreteSpace", "bonus_names", "create",
           "declared_bonuses", "declaring_modules", "make_bonus", "parse_bonus", "settings_class"]

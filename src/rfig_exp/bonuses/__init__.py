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

A bonus of the user's own module declares the same two things (``docs/extending.md``), under a
name that no built-in bonus has, and is found by that module's name: ``module: <importable module>``
in its YAML (``launch.py``, through the user's config folder on ``hydra.searchpath``), ``module=``
in :func:`create`, or an entry point of the group :data:`ENTRY_POINTS` (``name = module``) in the
user's installed package, which both read.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import pkgutil
from typing import Any

from rfig_exp import warn_without_cpu_flags
from rfig_exp.bonuses.settings import OBS_CLIP, ROLES, BonusSettings
from rfig_exp.config import folders
from rfig_exp.config.errors import ConfigError
from rfig_exp.config.settings import declared
from rfig_exp.config.validation import integer

# The entry-point group of the bonuses of installed packages: ``count = my_package.my_bonus``
# under ``[project.entry-points."rfig_exp.bonuses"]`` of the package's pyproject.toml.
ENTRY_POINTS = "rfig_exp.bonuses"


def bonus_names() -> list[str]:
    """Every bonus, sorted: the files of ``conf/bonus/``. Where the package is installed without the
    project's ``conf/`` (a wheel), the modules of this package that declare a bonus instead (the
    same names: a test holds the two lists equal)."""
    if folders.CONF_DIR.is_dir():
        return folders.group_options("bonus")
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


def installed_bonuses() -> dict[str, str]:
    """The bonuses of installed packages, ``{name: module}``: the entry points of :data:`ENTRY_POINTS`."""
    return {ep.name: ep.value for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)}


def parse_bonus(node, batch_size: int, obs_clip: float = OBS_CLIP) -> BonusSettings:
    """The ``bonus`` config node's settings for a rollout batch of ``batch_size`` states, whose
    observations the agent clips to ``[-obs_clip, obs_clip]`` once normalised (``agent.obs_clip``).
    A name that no built-in bonus has is looked up among the installed ones when the node names no
    ``module``."""
    name, module = node.get("name"), node.get("module")
    if module is None and name not in bonus_names():
        module = installed_bonuses().get(name)
    if module is not None:
        folders.check_own_name("bonus", name, module)
        declared_class = settings_class(str(name), module)
        settings = [key for key, _ in declared(declared_class)]
        extra = sorted(set(map(str, node)) - {"name", "module", *settings})
        if extra:  # a built-in's YAML is held to its declaration by the tests; a user's, here
            raise ConfigError(f"bonus.{extra[0]} is not a setting of {name}; {module} declares {', '.join(settings)}")
        return declared_class.parse(node, batch_size=batch_size, obs_clip=obs_clip)
    return settings_class(_known_bonus(name)).parse(node, batch_size=batch_size, obs_clip=obs_clip)


def _known_bonus(name) -> str:
    """``name`` when it is a bonus of this package; ConfigError listing the valid names otherwise."""
    names = bonus_names()
    if name not in names:
        own = installed_bonuses()
        mine = f"; installed: {', '.join(sorted(own))}" if own else ""
        raise ConfigError(f"bonus.name={name!r} is not a known bonus; valid names: {', '.join(names)}{mine} "
                          f"(a bonus of your own module: module=<its module>)")
    return name


def make_bonus(settings: BonusSettings, obs_shape, action_space):
    """``(Bonus, hparams)`` for ``settings`` (from ``parse_bonus``): the bonus its module makes for
    observations of ``obs_shape`` and ``action_space``, and its hyperparameters as the compiled
    function takes them: ``settings`` with its traced settings as float32 scalars."""
    from rfig_exp.bonuses.base import float32_hparams

    bonus = importlib.import_module(type(settings).__module__).make(settings, obs_shape, action_space)
    return bonus, float32_hparams(settings)


def create(name: str, obs_shape: Any, action_space: Any, batch_size: int, *, module: str | None = None,
           obs_clip: float = OBS_CLIP, **overrides: Any) -> tuple[Any, Any]:
    """``(Bonus, hparams)`` of bonus ``name`` for a training loop of one's own (docs/library.md).

    ``obs_shape``: one observation's shape, as an int (``2``), a tuple (``(10, 10, 4)``; numpy's
    integers too) or a space with a ``shape`` (gymnax's ``Box``); ``action_space``: a
    ``DiscreteSpace(num_actions)`` or ``BoxSpace(dim, low, high)`` (``rfig_exp.bonuses`` has both), or
    gymnax's ``Discrete`` or one-dimensional ``Box``; ``batch_size``: the states of one rollout,
    ``num_steps * num_envs`` (a bonus that keeps a fraction of each batch, RFIG's ``rho``, sizes its
    buffers by it); ``module``: the module of a bonus of one's own (else ``name`` is a built-in
    bonus, or an installed one: :func:`installed_bonuses`); ``obs_clip``: the agent's clip of
    normalised observations, which a bonus may read (``settings.obs_clip``); ``overrides``: the
    bonus's settings by name (``num_features=512``), the rest keep their declared defaults, those of
    ``conf/bonus/<name>.yaml``. ``hparams`` is the bonus's settings object with its numeric
    settings as float32 scalars (a JAX pytree), the last argument of ``init``, ``reward``,
    ``update`` and ``refresh``; its ``beta`` is None (the intrinsic weight is the agent's, below).

    The settings go through the same checks as a config's (``parse_bonus``), and the bonus is the
    one ``make_bonus`` makes for this project's trainer: ConfigError for an unknown name (listing
    the valid ones), an unknown setting (listing the bonus's own), a bad value (naming its key,
    ``bonus.<setting>``) or a bad argument (naming it). ``beta``, the intrinsic advantage's weight, is
    the agent's (PPO's loss reads it), not the bonus's: it is refused here rather than silently ignored
    (``rfig_exp.agents.intrinsic.IntrinsicReward`` applies it).
    """
    warn_without_cpu_flags()
    if module is None and name not in bonus_names():
        module = installed_bonuses().get(name)
    if module is not None:
        folders.check_own_name("bonus", name, module)
    cls = settings_class(_known_bonus(name)) if module is None else settings_class(name, module)
    defaults = cls.defaults()
    for key in overrides:
        if key in cls.HPARAMS_ELSEWHERE:
            raise ConfigError(f"bonus.{key} is the agent's setting, not the bonus's: apply it in your own loss")
        if key not in defaults:
            raise ConfigError(f"bonus.{key} is not a setting of bonus {name}; its settings: "
                              f"{', '.join(k for k in defaults if k not in cls.HPARAMS_ELSEWHERE)}")
    batch_size = positive_integer(batch_size, "batch_size")
    shape, space = observation_shape(obs_shape), action_space_of(action_space)
    node = {**defaults, **{k: _python_scalar(v) for k, v in overrides.items()}, "name": name}
    if module is not None:
        node["module"] = module
    bonus, hparams = make_bonus(parse_bonus(node, batch_size, obs_clip), shape, space)
    # beta is the agent's weight, which create refuses: the settings object says it holds none rather
    # than show the YAML's 0.5 (a static field, so None, which equals itself, keeps jit's cache)
    return bonus, dataclasses.replace(hparams, beta=None)


def positive_integer(value: Any, key: str) -> int:
    """A positive integer, numpy's integers included (``np.int64(2)`` from a space's shape)."""
    return integer(_python_scalar(value), key, minimum=1)


def _python_scalar(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (``np.int64(2)`` -> ``2``); anything else as is."""
    numpy_scalar = getattr(value, "shape", None) == () and hasattr(value, "item")
    if numpy_scalar and not isinstance(value, (bool, int, float, str)):
        return value.item()
    return value


def observation_shape(obs_shape: Any) -> tuple[int, ...]:
    """One observation's shape as a tuple of Python ints, from an int, a sequence of ints or a space
    with a ``shape`` (gymnax's or gymnasium's ``Box``); ConfigError naming ``obs_shape`` otherwise."""
    value = _python_scalar(obs_shape)
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    elif not isinstance(value, (tuple, list)) and isinstance(getattr(value, "shape", None), tuple):
        value = value.shape  # a space; an array has a shape too, but is no shape
    try:
        if isinstance(value, (str, bytes)):
            raise TypeError
        dims = tuple(value)
    except TypeError:
        raise ConfigError(f"obs_shape={obs_shape!r} must be an integer, a tuple of integers or a space with a "
                          "shape (gymnax's Box)") from None
    if not dims:  # a bonus flattens each observation to a vector: a scalar one is obs_shape=1
        raise ConfigError(f"obs_shape={tuple(dims)!r} has no dimension; one observation of a single number is "
                          "obs_shape=1")
    return tuple(positive_integer(d, "obs_shape") for d in dims)


def action_space_of(space: Any) -> Any:
    """``space`` as a ``DiscreteSpace`` or ``BoxSpace`` of ``rfig_exp.envs.base``: one of those, or a
    space with ``n`` (gymnax's ``Discrete``) or with a one-dimensional ``shape`` and the same ``low``
    and ``high`` on every dimension (gymnax's ``Box``); ConfigError naming ``action_space`` otherwise."""
    from rfig_exp.envs.base import BoxSpace, DiscreteSpace

    if isinstance(space, DiscreteSpace):  # checked as the others: DiscreteSpace(0) would make a model of no action
        return DiscreteSpace(positive_integer(space.num_actions, "action_space.num_actions"))
    if isinstance(space, BoxSpace):
        return _box(space.dim, space.low, space.high)
    if hasattr(space, "n"):
        if _python_scalar(getattr(space, "start", 0)) != 0:
            raise ConfigError(f"action_space={space!r} must number its actions from 0 (start={space.start})")
        return DiscreteSpace(positive_integer(space.n, "action_space.n"))
    shape = getattr(space, "shape", None)
    if isinstance(shape, tuple) and hasattr(space, "low") and hasattr(space, "high"):
        if len(shape) != 1:
            raise ConfigError(f"action_space: a Box of shape {shape}; a bonus takes one-dimensional actions")
        return _box(shape[0], _bound(space.low, "low"), _bound(space.high, "high"), "action_space.shape[0]")
    raise ConfigError(f"action_space={space!r} must be rfig_exp.bonuses.DiscreteSpace(num_actions), "
                      "BoxSpace(dim, low, high), or gymnax's Discrete or one-dimensional Box")


def _box(dim: Any, low: Any, high: Any, key: str = "action_space.dim") -> Any:
    """``BoxSpace(dim, low, high)`` with ``dim`` a positive integer and ``low < high``; ConfigError naming
    ``key`` or the bounds otherwise."""
    from rfig_exp.envs.base import BoxSpace

    low, high = float(_python_scalar(low)), float(_python_scalar(high))
    if not low < high:
        raise ConfigError(f"action_space: a Box with low={low} and high={high}; low must be below high")
    return BoxSpace(positive_integer(dim, key), low, high)


def _bound(value: Any, which: str) -> float:
    """A Box's ``low`` or ``high`` as one float: a scalar, or an array of one value repeated."""
    values = {float(v) for v in (value.ravel().tolist() if hasattr(value, "ravel") else [value])}
    if len(values) != 1:
        raise ConfigError(f"action_space: a Box with a different {which} per dimension ({sorted(values)}); "
                          "BoxSpace has one low and one high")
    return values.pop()


_LAZY = {"Bonus": "rfig_exp.bonuses.base", "BonusBatch": "rfig_exp.bonuses.base",
         "DiscreteSpace": "rfig_exp.envs.base", "BoxSpace": "rfig_exp.envs.base"}


def __getattr__(name):  # from the JAX side, imported when first asked for
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ENTRY_POINTS", "OBS_CLIP", "ROLES", "Bonus", "BonusBatch", "BonusSettings", "BoxSpace", "DiscreteSpace",
           "action_space_of", "bonus_names", "create", "declared_bonuses", "declaring_modules", "installed_bonuses",
           "make_bonus", "observation_shape", "parse_bonus", "positive_integer", "settings_class"]

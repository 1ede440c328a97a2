"""Each environment suite's settings, declared once and read from the ``env`` config node without JAX.

Like the agent's and each bonus's, an env's options are declared settings (``rfig_exp.config.settings``:
default, rule, doc) read by the same parser; an option the ``env`` node leaves out, or sets to
null, takes its default. ``parse_env(node)`` checks ``env.name`` once against the registry
(``rfig_exp.envs.REGISTRY``) and returns that env's frozen settings, each error naming its
``env.<key>``. ``make_env(settings)`` then builds the env from them and checks nothing again, so
a bad option is refused by ``config.build_run_spec`` before gymnax, brax or a compiler is
imported. Nothing here imports JAX (PointMaze's layouts need numpy only).
"""

from __future__ import annotations

import functools
import importlib
import math
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, TypeVar

import numpy as np

from rfig_exp.config.errors import ConfigError
from rfig_exp.config.folders import check_own_name
from rfig_exp.config.settings import Settings, declared, setting
from rfig_exp.config.validation import Choice, Count
from rfig_exp.envs.mazes import CUSTOM_EXAMPLE, MAZES, parse_layout

E = TypeVar("E", bound="EnvSettings")

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


@dataclass(frozen=True)
class EnvSettings(Settings):
    """What every env's settings carry: its config name and its suite's own id of it (given), then
    its declared options (the subclass's settings)."""

    PREFIX: ClassVar[str] = "env."
    suite: ClassVar[str]                 # a key of rfig_exp.envs.SUITES
    name: str                            # env.name, a key of rfig_exp.envs.REGISTRY
    suite_id: str                        # the suite's id of the env (REGISTRY[name][1])

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


# -- gymnax (classic control, MinAtar, DeepSea) -------------------------------------------------

DEEPSEA_ID = "DeepSea-bsuite"


@dataclass(frozen=True)
class GymnaxSettings(EnvSettings):
    """gymnax envs take no options, except DeepSea (:class:`DeepSeaSettings`)."""

    suite: ClassVar[str] = "gymnax"


@dataclass(frozen=True)
class DeepSeaSettings(GymnaxSettings):
    """bsuite's DeepSea through gymnax: its board size."""

    size: int = setting(20, Count(2), doc="board size N: N steps per episode, N x N observation")


# -- sparse Brax locomotion ---------------------------------------------------------------------

BACKENDS = ("generalized", "positional", "spring", "mjx")


def _backend(value: Any, key: str, earlier: Mapping[str, Any]) -> str:
    if value not in BACKENDS:
        raise ConfigError(f"{key}={value!r} must be one of {', '.join(BACKENDS)}")
    return str(value)


def _positive(value: Any, key: str, earlier: Mapping[str, Any]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{key}={value!r} must be a finite number")
    if value <= 0:
        raise ConfigError(f"{key}={value!r} must be > 0")
    return float(value)


@dataclass(frozen=True)
class BraxSettings(EnvSettings):
    """The options of a sparse Brax env (``docs/brax.md``).

    ``backend`` defaults to brax's own default, ``generalized``: the paper does not name a
    backend, so its envs most likely ran on it. ``spring`` trains 1.6-2.2x faster on CPU and
    ``mjx`` is fast for ant only (measured in docs/brax.md).
    """

    suite: ClassVar[str] = "brax"
    backend: str = setting("generalized", _backend,
                           doc="brax's physics: generalized (its default) | positional | spring | mjx (docs/brax.md)")
    episode_length: int = setting(1000, Count(1), doc="steps before truncation (brax's default)")
    milestone_distance: float = setting(
        1.0, _positive, doc="delta: a reward each time the torso passes a new multiple of this x distance")
    reward_scale: float = setting(1.0, _positive, doc="alpha: the reward per milestone")

    @classmethod
    def not_an_option(cls, name: str, suite_id: str, key: str) -> str:
        return (f"env.{key} is not an option of the sparse Brax envs; valid: "
                f"{', '.join('env.' + k for k in sorted(cls.options()))}")


# -- PointMaze ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dynamics:
    """Everything that differs between PointMaze's two references (``envs/pointmaze.py``)."""

    mass: float
    damping: float
    clip_after_force: bool
    continuing: bool             # True: reaching the goal pays but never terminates
    start_avoids_goal_cell: bool
    dense: str                   # "neg_distance" | "exp_neg_distance"
    contact: str                 # "average" (pointax) | "max" (a closer stand-in for MuJoCo's contacts)
    step_limits: Mapping[str, int]
    default_limit: int


DYNAMICS: dict[str, Dynamics] = {
    "pointax": Dynamics(mass=1.0, damping=0.0, clip_after_force=True, continuing=False,
                        start_avoids_goal_cell=False, dense="neg_distance", contact="average",
                        step_limits={}, default_limit=1000),
    "mujoco": Dynamics(mass=4.18879, damping=1.0, clip_after_force=False, continuing=True,
                       start_avoids_goal_cell=True, dense="exp_neg_distance", contact="max",
                       step_limits={"umaze": 300, "open": 300, "medium": 600, "large": 800}, default_limit=1000),
}
REWARDS = ("sparse", "dense")
IMPLS = ("ours", "pointax")


def _maze(value: Any, key: str, earlier: Mapping[str, Any]) -> str:
    """The env's own maze (its name fixes it: a null maze reads as that one)."""
    name, maze_id = earlier["name"], earlier["suite_id"]
    maze = maze_id if value is None else value
    if maze != maze_id:
        hint = (f"choose the env instead: env=pointmaze_{maze}" if maze in (*MAZES, "custom")
                else f"known mazes: {', '.join((*MAZES, 'custom'))}")
        raise ConfigError(f"{key}={maze!r} does not match env.name={name} (maze {maze_id!r}); {hint}")
    return str(maze)


def _layout(value: Any, key: str, earlier: Mapping[str, Any]) -> tuple[str, ...] | None:
    """``env=pointmaze_custom``'s layout, checked, as rows of ``"0"``/``"1"`` (None for a named maze)."""
    name = earlier["name"]
    if earlier["maze"] != "custom":
        if value is not None:
            raise ConfigError(f"{key} is only read by env=pointmaze_custom; {name} has its own layout "
                              f"(got {key}={value!r})")
        return None
    if value is None:
        raise ConfigError(f"{key} is required by {name}: rows top to bottom, 1 = wall, e.g. "
                          "['11111', '10001', '10101', '10001', '11111']")
    return tuple("".join("1" if wall else "0" for wall in row) for row in parse_layout(value, key))


def _step_limit(value: Any, key: str, earlier: Mapping[str, Any]) -> int:
    if value is None:
        dynamics = DYNAMICS[earlier["dynamics"]]
        return dynamics.step_limits.get(earlier["maze"], dynamics.default_limit)
    return Count(1)(value, key, earlier)


def _impl_with_its_dynamics(values: Mapping[str, Any], prefix: str) -> None:
    if values["impl"] == "pointax" and values["dynamics"] != "pointax":
        raise ConfigError(f"{prefix}dynamics={values['dynamics']!r} is not available with {prefix}impl=pointax "
                          f"(pointax has its own dynamics); use {prefix}impl=ours")


@dataclass(frozen=True)
class PointMazeSettings(EnvSettings):
    """The options of a PointMaze env (``docs/pointmaze.md``)."""

    suite: ClassVar[str] = "pointmaze"
    maze: str = setting(None, _maze, doc="fixed by the env's name (checked); layouts in src/rfig_exp/envs/mazes.py")
    layout: tuple[str, ...] | None = setting(
        None, _layout, doc="env=pointmaze_custom's layout: rows top to bottom, 1 = wall, 0 = free (no other env's)")
    dynamics: str = setting(
        "pointax", Choice(tuple(DYNAMICS)),
        doc=("pointax: mass 1, no damping, the episode ends at the goal (the paper's) | mujoco: Gymnasium-Robotics "
             "(mass 4.19, damping 1, continuing, its step limits)"))
    max_episode_steps: int = setting(
        None, _step_limit,
        doc=("null: the dynamics' limit for this maze (pointax 1000; mujoco umaze/open 300, medium 600, large 800, "
             "else 1000)"))
    reward: str = setting(
        "sparse", Choice(REWARDS),
        doc="sparse: 1 within 0.45 of the goal | dense: -distance (pointax) or exp(-distance) (mujoco)")
    coverage_cells_per_unit: int = setting(4, Count(1),
                                           doc="coverage metric and heat map: grid cells per maze cell, per axis")
    impl: str = setting("ours", Choice(IMPLS), check=_impl_with_its_dynamics,
                        doc="ours | pointax (the paper's package, only if importable: it is not on PyPI)")

    @classmethod
    def written(cls, name: str, suite_id: str) -> dict[str, Any]:
        """The defaults, with the env's own maze named, and an example layout for pointmaze_custom."""
        return {**cls.defaults(), "maze": suite_id, "layout": CUSTOM_EXAMPLE if suite_id == "custom" else None}

    @property
    def wall_array(self) -> np.ndarray:
        """The maze's walls as ``[H, W]`` bool, rows top to bottom (True = wall)."""
        rows = self.layout if self.layout is not None else MAZES[self.maze]
        return parse_layout(rows, "env.layout" if self.layout is not None else f"mazes.MAZES[{self.maze!r}]")

    @property
    def walls(self) -> tuple[tuple[bool, ...], ...]:
        """:attr:`wall_array` as nested tuples."""
        return tuple(tuple(bool(v) for v in row) for row in self.wall_array)


# -- an env of the user's own module -------------------------------------------------------------

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


# -- the registry's entry point -----------------------------------------------------------------

SETTINGS: dict[str, type[EnvSettings]] = {cls.suite: cls for cls in (GymnaxSettings, BraxSettings,
                                                                      PointMazeSettings)}


def env_names() -> list[str]:
    return sorted(REGISTRY)


def settings_class(suite: str, suite_id: str) -> type[EnvSettings]:
    """The settings class of an env of ``suite`` (DeepSea's own among gymnax's)."""
    return DeepSeaSettings if suite_id == DEEPSEA_ID else SETTINGS[suite]


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
    if not isinstance(name, str) or name not in REGISTRY:
        raise ConfigError(f"env.name={name!r} is not a known environment; valid names: {', '.join(env_names())}")
    suite, suite_id = REGISTRY[name]
    return settings_class(suite, suite_id).of(name, suite_id, options)

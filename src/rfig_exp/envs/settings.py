"""Each environment suite's settings, read and checked from the ``env`` config node without JAX.

``parse_env(node)`` checks ``env.name`` once against the registry (``rfig_exp.envs.REGISTRY``)
and returns that suite's frozen settings: every ``env.*`` option typed, defaults filled in, each
error naming its ``env.<key>``. ``make_env(settings)`` then builds the env from them and checks
nothing again, so a bad option is refused by ``config.build_run_spec`` before gymnax, brax or a
compiler is imported. Nothing here imports JAX (PointMaze's layouts need numpy only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np

from rfig_exp.envs.mazes import MAZES, parse_layout
from rfig_exp.config.errors import ConfigError
from rfig_exp.config.validation import choice


def _int_at_least(value: Any, key: str, low: int) -> int:
    """``env.<key>`` as an integer >= ``low``, written exactly (no float coercion, no bools)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ConfigError(f"env.{key}={value!r} must be an integer >= {low}")
    return int(value)


@dataclass(frozen=True)
class EnvSettings:
    """What every env's settings carry: its config name and its suite's own id of it."""

    suite: ClassVar[str]                 # a key of rfig_exp.envs.SUITES
    OPTIONS: ClassVar[tuple[str, ...]]   # the env.* keys the suite reads (besides env.name)
    name: str                            # env.name, a key of rfig_exp.envs.REGISTRY
    suite_id: str                        # the suite's id of the env (REGISTRY[name][1])

    @classmethod
    def parse(cls, name: str, suite_id: str, options: Mapping[str, Any]) -> EnvSettings:
        """The settings of env ``name`` from its ``env.*`` options (everything but ``env.name``)."""
        raise NotImplementedError


# -- gymnax (classic control, MinAtar, DeepSea) -------------------------------------------------

DEEPSEA_ID = "DeepSea-bsuite"
DEEPSEA_DEFAULT_SIZE = 20


@dataclass(frozen=True)
class GymnaxSettings(EnvSettings):
    """gymnax envs take no options, except DeepSea's board ``size`` (None for the others)."""

    suite: ClassVar[str] = "gymnax"
    OPTIONS: ClassVar[tuple[str, ...]] = ()
    size: int | None = None

    @classmethod
    def parse(cls, name: str, suite_id: str, options: Mapping[str, Any]) -> GymnaxSettings:
        if suite_id != DEEPSEA_ID:
            _reject_unknown(name, options, ())
            return cls(name, suite_id)
        _reject_unknown(name, options, ("size",))
        size = options.get("size")
        return cls(name, suite_id, DEEPSEA_DEFAULT_SIZE if size is None else _int_at_least(size, "size", 2))


def _reject_unknown(name: str, options: Mapping[str, Any], valid: tuple[str, ...]) -> None:
    unknown = sorted(set(options) - set(valid))
    if unknown:
        extra = f"; valid: {', '.join(valid)}" if valid else " (it takes none)"
        raise ConfigError(f"env.{unknown[0]} is not an option of {name}{extra}")


# -- sparse Brax locomotion ---------------------------------------------------------------------

BACKENDS = ("generalized", "positional", "spring", "mjx")


@dataclass(frozen=True)
class BraxSettings(EnvSettings):
    """The options of a sparse Brax env (``docs/brax.md``).

    ``backend`` defaults to brax's own default, ``generalized``: the paper does not name a
    backend, so its envs most likely ran on it. ``spring`` trains 1.6-2.2x faster on CPU and
    ``mjx`` is fast for ant only (measured in docs/brax.md).
    """

    suite: ClassVar[str] = "brax"
    OPTIONS: ClassVar[tuple[str, ...]] = ("backend", "episode_length", "milestone_distance", "reward_scale")
    backend: str = "generalized"
    episode_length: int = 1000
    milestone_distance: float = 1.0   # delta: the x distance between milestones
    reward_scale: float = 1.0         # alpha: the reward per milestone

    @classmethod
    def parse(cls, name: str, suite_id: str, options: Mapping[str, Any]) -> BraxSettings:
        unknown = sorted(set(options) - set(cls.OPTIONS))
        if unknown:
            raise ConfigError(f"env.{unknown[0]} is not an option of the sparse Brax envs; valid: "
                              f"{', '.join('env.' + k for k in sorted(cls.OPTIONS))}")
        values: dict[str, Any] = {}
        if "backend" in options:
            backend = options["backend"]
            if backend not in BACKENDS:
                raise ConfigError(f"env.backend={backend!r} must be one of {', '.join(BACKENDS)}")
            values["backend"] = str(backend)
        if "episode_length" in options:
            values["episode_length"] = _int_at_least(options["episode_length"], "episode_length", 1)
        for key in ("milestone_distance", "reward_scale"):
            if key in options:
                values[key] = _positive(options[key], key)
        return cls(name, suite_id, **values)


def _positive(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"env.{key}={value!r} must be a finite number")
    if value <= 0:
        raise ConfigError(f"env.{key}={value!r} must be > 0")
    return float(value)


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


@dataclass(frozen=True)
class PointMazeSettings(EnvSettings):
    """The options of a PointMaze env (``docs/pointmaze.md``); ``walls`` is the checked layout,
    rows top to bottom, True = wall (a tuple, so that the settings are hashable)."""

    suite: ClassVar[str] = "pointmaze"
    OPTIONS: ClassVar[tuple[str, ...]] = ("maze", "layout", "dynamics", "max_episode_steps", "reward",
                                          "coverage_cells_per_unit", "impl")
    maze: str                         # a name of mazes.MAZES, or "custom"
    walls: tuple[tuple[bool, ...], ...]
    dynamics: str                     # a key of DYNAMICS
    max_episode_steps: int
    reward: str                       # sparse | dense
    coverage_cells_per_unit: int
    impl: str                         # ours | pointax

    @property
    def wall_array(self) -> np.ndarray:
        """``walls`` as ``[H, W]`` bool."""
        return np.array(self.walls, dtype=bool)

    @classmethod
    def parse(cls, name: str, maze_id: str, options: Mapping[str, Any]) -> PointMazeSettings:
        unknown = sorted(set(options) - set(cls.OPTIONS))
        if unknown:
            raise ConfigError(f"env.{unknown[0]} is not an option of {name}; valid: {', '.join(cls.OPTIONS)}")
        maze = options.get("maze") or maze_id
        walls = _walls(name, maze_id, maze, options.get("layout"))
        dynamics = choice(options.get("dynamics") or "pointax", "env.dynamics", tuple(DYNAMICS))
        reward = choice(options.get("reward") or "sparse", "env.reward", REWARDS)
        impl = choice(options.get("impl") or "ours", "env.impl", IMPLS)
        if impl == "pointax" and dynamics != "pointax":
            raise ConfigError(f"env.dynamics={dynamics!r} is not available with env.impl=pointax (pointax has its "
                              "own dynamics); use env.impl=ours")
        if options.get("max_episode_steps") is None:
            dyn = DYNAMICS[dynamics]
            max_steps = dyn.step_limits.get(maze, dyn.default_limit)
        else:
            max_steps = _int_at_least(options["max_episode_steps"], "max_episode_steps", 1)
        cells = options.get("coverage_cells_per_unit")
        cells = 4 if cells is None else _int_at_least(cells, "coverage_cells_per_unit", 1)
        return cls(name, maze_id, maze=maze, walls=tuple(tuple(bool(v) for v in row) for row in walls),
                   dynamics=dynamics, max_episode_steps=max_steps, reward=reward, coverage_cells_per_unit=cells,
                   impl=impl)


def _walls(name: str, maze_id: str, maze: Any, layout: Any) -> np.ndarray:
    """The layout of ``maze``: the named one, or ``env.layout`` for ``pointmaze_custom``."""
    if maze != maze_id:
        hint = (f"choose the env instead: env=pointmaze_{maze}" if maze in (*MAZES, "custom")
                else f"known mazes: {', '.join((*MAZES, 'custom'))}")
        raise ConfigError(f"env.maze={maze!r} does not match env.name={name} (maze {maze_id!r}); {hint}")
    if maze == "custom":
        if layout is None:
            raise ConfigError(f"env.layout is required by {name}: rows top to bottom, 1 = wall, e.g. "
                              "['11111', '10001', '10101', '10001', '11111']")
        return parse_layout(layout, "env.layout")
    if layout is not None:
        raise ConfigError(f"env.layout is only read by env=pointmaze_custom; {name} has its own layout "
                          f"(got env.layout={layout!r})")
    return parse_layout(MAZES[maze], f"mazes.MAZES[{maze!r}]")


# -- the registry's entry point -----------------------------------------------------------------

SETTINGS: dict[str, type[EnvSettings]] = {cls.suite: cls for cls in (GymnaxSettings, BraxSettings,
                                                                      PointMazeSettings)}


def parse_env(node: str | Mapping[str, Any]) -> EnvSettings:
    """The settings of the env that ``node`` names: a name, or the ``env`` config node (``name``
    plus the suite's options). An unknown name lists the valid ones; an unknown option is named."""
    from rfig_exp.envs import REGISTRY, env_names  # the package imports this module first

    if isinstance(node, str):
        name, options = node, {}
    else:
        options = {str(k): v for k, v in dict(node).items()}
        name = options.pop("name", None)
    if "module" in options:  # an env of the user's own module
        from rfig_exp.envs import parse_user_env

        return parse_user_env(name, options)
    if not isinstance(name, str) or name not in REGISTRY:
        raise ConfigError(f"env.name={name!r} is not a known environment; valid names: {', '.join(env_names())}")
    suite, suite_id = REGISTRY[name]
    return SETTINGS[suite].parse(name, suite_id, options)

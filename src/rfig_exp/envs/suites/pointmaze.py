"""The PointMaze envs (our JAX PointMaze with pointax's semantics by default), declared without JAX.

Their options choose the dynamics, the reward, the step limit and, for ``pointmaze_custom``, the
layout (``docs/pointmaze.md``); the layouts are ``envs/mazes.py``'s (numpy only). Each maze is an env
of its own, in a report's figures by size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

import numpy as np

from rfig_exp.config.errors import ConfigError
from rfig_exp.config.settings import setting
from rfig_exp.config.validation import Choice, Count
from rfig_exp.envs.mazes import CUSTOM_EXAMPLE, MAZES, parse_layout
from rfig_exp.envs.settings import DeclaredEnv, EnvSettings

if TYPE_CHECKING:
    from rfig_exp.envs.base import Env

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
    section: ClassVar[str | None] = "PointMaze: `env=pointmaze_*`"
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

    @property
    def physics(self) -> Dynamics:
        """The parameters of its ``dynamics`` (:data:`DYNAMICS`)."""
        return DYNAMICS[self.dynamics]


# by size, in the paper's figures after the Brax envs; the custom layout last
_MAZE_LABELS = {"umaze": "UMaze", "open": "Open", "medium": "Medium", "large": "Large", "giant": "Giant",
                "custom": "Custom"}
ENVS = tuple(DeclaredEnv(f"pointmaze_{maze}", maze, PointMazeSettings, f"PointMaze-{label}", 8 + i)
             for i, (maze, label) in enumerate(_MAZE_LABELS.items()))


def make(settings: PointMazeSettings) -> Env:
    """The env of ``settings``, made by ``envs/pointmaze.py`` (JAX: imported here)."""
    from rfig_exp.envs.pointmaze import make_pointmaze_env

    return make_pointmaze_env(settings)

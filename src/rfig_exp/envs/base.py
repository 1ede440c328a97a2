"""The environment interface the agent sees: one unbatched env, pure functions.

Every suite is adapted to this shape so that the agent never branches on the suite:
``reset(key) -> (obs, state)`` and ``step(key, state, action) -> EnvStep``. Environments
auto-reset; ``EnvStep.final_obs`` is the true observation reached by this step (before any
reset), which the agent needs for bootstrapping on truncation and for the bonus on ``s'``.

Two optional extras, both computed by the env because only it knows its state:

- a :class:`CoverageGrid` (``Env.coverage``) and, per step, ``EnvStep.cell``: the flat
  index of the grid cell of the state the step reached. The agent counts visits per cell
  inside the compiled loop (the ``coverage`` metric, ``visits.npy``).
- ``EnvStep.episode_info``: running per-episode values (e.g. the distance travelled); the
  agent reports their value at each episode's last step, averaged over the episodes that
  finished in a window, as ``env/<name>`` columns of ``metrics.csv``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Optional

import jax
import jax.numpy as jnp


class EnvStep(NamedTuple):
    obs: jax.Array          # next observation, already reset if the episode ended
    state: Any
    reward: jax.Array       # [] float32
    terminated: jax.Array   # [] bool: a terminal state of the MDP (no bootstrap)
    truncated: jax.Array    # [] bool: time limit (bootstrap from final_obs)
    final_obs: jax.Array    # the observation the step reached, before auto-reset
    cell: Any = None        # [] int32 coverage cell of the state reached (envs with a grid), else None
    episode_info: Any = None  # {name: [] float32} running per-episode values, else None


@dataclass(frozen=True)
class DiscreteSpace:
    num_actions: int


@dataclass(frozen=True)
class BoxSpace:
    """Continuous actions in [low, high]^dim."""

    dim: int
    low: float = -1.0
    high: float = 1.0


def random_actions(key: jax.Array, action_space: DiscreteSpace | BoxSpace, n: int) -> jax.Array:
    """``n`` uniform random actions of ``action_space``: ``[n]`` integers, or ``[n, dim]`` in the box
    (the random policy of the observation warm-up)."""
    if isinstance(action_space, DiscreteSpace):
        return jax.random.randint(key, (n,), 0, action_space.num_actions)
    return jax.random.uniform(key, (n, action_space.dim), minval=action_space.low, maxval=action_space.high)


@dataclass(frozen=True)
class CoverageGrid:
    """A fixed 2-D grid over two coordinates of the state, for the coverage metric.

    ``bounds[a] = (lo, hi)`` of axis ``a`` is split into ``shape[a]`` equal cells; values
    outside are clipped into the edge cells. The flat index is row-major over ``shape``
    (``i * shape[1] + j``, ``i`` along ``axes[0]``), which is how ``visits.npy`` is laid out.
    ``maze`` (optional) describes walls for pictures:
    ``{"layout": rows top to bottom (1 = wall), "extent": (xmin, xmax, ymin, ymax)}``.
    """

    axes: tuple[str, str]
    bounds: tuple[tuple[float, float], tuple[float, float]]
    shape: tuple[int, int]
    maze: Optional[Mapping[str, Any]] = None

    @property
    def num_cells(self) -> int:
        return math.prod(self.shape)

    def cell(self, coords: jax.Array) -> jax.Array:
        """``coords [..., 2]`` -> flat cell index ``[...]`` int32."""
        idx = []
        for a in range(2):
            lo, hi = self.bounds[a]
            frac = (coords[..., a] - lo) / (hi - lo)
            idx.append(jnp.clip(jnp.floor(frac * self.shape[a]), 0, self.shape[a] - 1).astype(jnp.int32))
        return idx[0] * self.shape[1] + idx[1]

    def describe(self) -> dict:
        """JSON-ready description, saved as ``summary.json["coverage_grid"]``."""
        maze = None
        if self.maze is not None:
            maze = {"layout": [list(map(int, row)) for row in self.maze["layout"]],
                    "extent": [float(v) for v in self.maze["extent"]]}
        return {"axes": list(self.axes), "bounds": [[float(lo), float(hi)] for lo, hi in self.bounds],
                "shape": [int(s) for s in self.shape], "maze": maze}


@dataclass(frozen=True)
class Env:
    """A ready-to-use environment: static metadata plus pure reset/step functions.

    ``episode_info`` names the keys of ``EnvStep.episode_info`` (empty: the env has none).
    """

    name: str
    obs_shape: tuple[int, ...]
    action_space: DiscreteSpace | BoxSpace
    max_episode_steps: int
    reset: Callable[[jax.Array], tuple[jax.Array, Any]]
    step: Callable[[jax.Array, Any, jax.Array], EnvStep]
    coverage: Optional[CoverageGrid] = None
    episode_info: tuple[str, ...] = ()

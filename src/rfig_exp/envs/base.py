"""The environment interface the agent sees: one unbatched env, pure functions.

Every suite is adapted to this shape so that the agent never branches on the suite:
``reset(key) -> (obs, state)`` and ``step(key, state, action) -> EnvStep``. Environments
auto-reset; ``EnvStep.final_obs`` is the true observation reached by this step (before any
reset), which the agent needs for bootstrapping on truncation and for the bonus on ``s'``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import jax


class EnvStep(NamedTuple):
    obs: jax.Array          # next observation, already reset if the episode ended
    state: Any
    reward: jax.Array       # [] float32
    terminated: jax.Array   # [] bool: a terminal state of the MDP (no bootstrap)
    truncated: jax.Array    # [] bool: time limit (bootstrap from final_obs)
    final_obs: jax.Array    # the observation the step reached, before auto-reset


@dataclass(frozen=True)
class DiscreteSpace:
    num_actions: int


@dataclass(frozen=True)
class BoxSpace:
    """Continuous actions in [low, high]^dim (the Gaussian policy of a later issue)."""

    dim: int
    low: float = -1.0
    high: float = 1.0


@dataclass(frozen=True)
class Env:
    """A ready-to-use environment: static metadata plus pure reset/step functions."""

    name: str
    obs_shape: tuple[int, ...]
    action_space: DiscreteSpace | BoxSpace
    max_episode_steps: int
    reset: Callable[[jax.Array], tuple[jax.Array, Any]]
    step: Callable[[jax.Array, Any, jax.Array], EnvStep]

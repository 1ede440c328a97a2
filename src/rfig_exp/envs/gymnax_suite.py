"""gymnax classic control, MinAtar and bsuite DeepSea behind the :class:`Env` interface.

gymnax 1.0 already separates termination from time-limit truncation and returns the
pre-reset observation as ``info["final_observation"]``; this adapter renames, and maps
gymnax's ``Discrete``/``Box`` action spaces to ours (a Box action arrives already clipped
to its bounds by the agent).

Coverage grids (the ``coverage`` metric and ``visits.npy``), 50 x 50 unless stated, from
the true observation the step reached (``final_obs``):

- ``mountaincar``, ``mountaincar_continuous``: position x velocity over the observation
  bounds (``[min_position, max_position] x [-max_speed, max_speed]`` = [-1.2, 0.6] x [-0.07, 0.07]);
- ``acrobot``: the two joint angles ``atan2(sin, cos)`` over ``[-pi, pi]^2``;
- ``cartpole``: cart position x pole angle over the termination bounds
  (``[-2.4, 2.4] x [-12, 12]`` degrees; a terminal state just beyond them lands in the edge cell);
- ``pendulum``: angle ``atan2(sin, cos)`` over ``[-pi, pi]`` x angular velocity over ``[-8, 8]``;
- ``deepsea``: its ``size x size`` board, (row, column), counting the cell the action is
  taken IN, not the one reached: the state reached by the last step of an episode is
  below the board and gymnax observes it as all zeros, so counting departures counts every
  observable state exactly once per visit (the start cell (0, 0) once per episode);
- MinAtar: none (no low-dimensional coordinates to grid).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Optional

import jax.numpy as jnp

from rfig_exp.envs.base import BoxSpace, CoverageGrid, DiscreteSpace, Env, EnvStep

if TYPE_CHECKING:  # the declaration (envs/suites/gymnax.py) imports this module as it makes an env
    from rfig_exp.envs.suites.gymnax import GymnaxSettings

GRID = 50


def _action_space(space) -> DiscreteSpace | BoxSpace:
    if hasattr(space, "n"):
        return DiscreteSpace(int(space.n))
    low, high = jnp.ravel(jnp.asarray(space.low)), jnp.ravel(jnp.asarray(space.high))
    if not (bool((low == low[0]).all()) and bool((high == high[0]).all())):
        raise NotImplementedError(f"per-dimension action bounds are not supported: {space.low}, {space.high}")
    return BoxSpace(dim=int(space.shape[0]) if space.shape else 1, low=float(low[0]), high=float(high[0]))


def wrap_gymnax(name: str, env, params, coverage: Optional[CoverageGrid] = None,
                cell_fn: Optional[Callable[[Any, Any], Any]] = None,
                terminated_fn: Optional[Callable[[Any, Any, Any], Any]] = None) -> Env:
    """Any gymnax-API env -> :class:`Env`.

    ``cell_fn(final_obs, state_before) -> [] int32`` gives the coverage cell of a step;
    ``terminated_fn(final_obs, terminated, truncated) -> [] bool`` overrides gymnax's
    terminated flag (for envs whose ``done`` mixes in the time limit).
    """
    obs_space = env.observation_space(params)
    action_space = _action_space(env.action_space(params))

    def reset(key):
        obs, state = env.reset(key, params)
        return obs.astype(jnp.float32), state

    def step(key, state, action):
        if isinstance(action_space, BoxSpace) and action.ndim == 0:
            action = action[None]
        obs, next_state, reward, terminated, truncated, info = env.step(key, state, action, params)
        final_obs = info["final_observation"].astype(jnp.float32)
        terminated = jnp.asarray(terminated, bool)
        truncated = jnp.asarray(truncated, bool)
        if terminated_fn is not None:
            done = terminated | truncated
            terminated = jnp.logical_and(done, terminated_fn(final_obs, terminated, truncated))
            truncated = jnp.logical_and(done, ~terminated)
        return EnvStep(
            obs=obs.astype(jnp.float32),
            state=next_state,
            reward=jnp.asarray(reward, jnp.float32).reshape(()),
            terminated=terminated,
            truncated=jnp.logical_and(truncated, ~terminated),
            final_obs=final_obs,
            cell=None if cell_fn is None else cell_fn(final_obs, state),
        )

    return Env(
        name=name,
        obs_shape=tuple(int(s) for s in obs_space.shape),
        action_space=action_space,
        max_episode_steps=int(params.max_steps_in_episode),
        reset=reset,
        step=step,
        coverage=coverage,
    )


def _angle(cos, sin):
    return jnp.arctan2(sin, cos)


def classic_coverage(gymnax_id: str, params) -> tuple[Optional[CoverageGrid], Optional[Callable]]:
    """The coverage grid of a gymnax classic-control env and its ``cell_fn`` (None for others)."""
    pi = math.pi
    if gymnax_id in ("MountainCar-v0", "MountainCarContinuous-v0"):
        grid = CoverageGrid(axes=("position", "velocity"),
                            bounds=((float(params.min_position), float(params.max_position)),
                                    (-float(params.max_speed), float(params.max_speed))), shape=(GRID, GRID))
        return grid, lambda obs, _: grid.cell(obs[:2])
    if gymnax_id == "Acrobot-v1":
        grid = CoverageGrid(axes=("theta1", "theta2"), bounds=((-pi, pi), (-pi, pi)), shape=(GRID, GRID))
        return grid, lambda obs, _: grid.cell(jnp.stack([_angle(obs[0], obs[1]), _angle(obs[2], obs[3])]))
    if gymnax_id == "CartPole-v1":
        x, th = float(params.x_threshold), float(params.theta_threshold_radians)
        grid = CoverageGrid(axes=("cart_position", "pole_angle"), bounds=((-x, x), (-th, th)), shape=(GRID, GRID))
        return grid, lambda obs, _: grid.cell(jnp.stack([obs[0], obs[2]]))
    if gymnax_id == "Pendulum-v1":
        v = float(params.max_speed)
        grid = CoverageGrid(axes=("angle", "angular_velocity"), bounds=((-pi, pi), (-v, v)), shape=(GRID, GRID))
        return grid, lambda obs, _: grid.cell(jnp.stack([_angle(obs[0], obs[1]), obs[2]]))
    return None, None


def make_gymnax_env(settings: GymnaxSettings) -> Env:
    """The gymnax env of ``settings`` (checked by ``parse_env``: only DeepSea has an option, its size)."""
    import gymnax  # lazy: keeps `import rfig_exp` light

    name, gymnax_id = settings.name, settings.suite_id
    if hasattr(settings, "size"):  # DeepSea's own settings (DeepSeaSettings): its board size
        size = settings.size
        # The size is a constructor argument (it fixes the board and the action mapping);
        # the default params then limit an episode to `size` steps, its natural length.
        env, params = gymnax.make(gymnax_id, size=size)
        grid = CoverageGrid(axes=("row", "column"), bounds=((0.0, float(size)), (0.0, float(size))),
                            shape=(size, size))

        def cell_fn(_, state):
            # The cell the action is taken in (module docstring); rows, columns are ints.
            row, col = jnp.clip(state.row, 0, size - 1), jnp.clip(state.column, 0, size - 1)
            return (row * size + col).astype(jnp.int32)

        return wrap_gymnax(name, env, params, coverage=grid, cell_fn=cell_fn)
    env, params = gymnax.make(gymnax_id)
    grid, cell_fn = classic_coverage(gymnax_id, params)
    return wrap_gymnax(name, env, params, coverage=grid, cell_fn=cell_fn)

"""Sparse Brax locomotion: brax 0.14 envs with the paper's Milestone reward.

The paper (appendix "Milestone Reward Wrapper") replaces the dense locomotion reward by

    r_t = alpha * (m_t - m_last)   if m_t > m_last,   else 0,      m_t = floor(d_t / delta)

where ``d_t`` is the torso's x position minus its x position at reset, ``m_last`` the
highest milestone reached so far in the episode (0 at reset, so moving backwards never
pays and coming back over an old milestone does not pay twice), ``delta``
(``milestone_distance``) = 1.0 and ``alpha`` (``reward_scale``) = 1.0.

This module wraps a bare brax ``PipelineEnv`` (no brax training wrappers) and does its own
episode counter and auto-reset, because brax's ``AutoResetWrapper`` restarts every episode
from the *same* initial state of that env slot and folds the time limit into ``done``.
Here:

- ``terminated`` = brax's ``done`` (the robot became unhealthy: a terminal MDP state);
- ``truncated``  = the episode reached ``episode_length`` steps without terminating;
- ``final_obs``  = brax's observation of the state the step reached, before any reset;
- after either, the next observation comes from a fresh ``env.reset`` with a new key.

Torso position: ``pipeline_state.x.pos[0]`` (the first body is the torso in every env
here, the paper's ``position_fn``), except under ``mjx``, where ``x.pos`` is MuJoCo's
``xpos`` from the forward pass *before* the last substep's integration (one substep
stale); there ``q[0]`` is used, which equals the torso x exactly because every root joint
here (a free joint, or the planar ``rootx`` slide) is anchored at the torso's origin.

Nothing here imports brax at module import time: ``import brax`` (and its compile) only
happens when a Brax env is made. The ``env.*`` options are read and checked without JAX in
``envs/suites/brax.py`` (``BraxSettings``).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp

from rfig_exp.config.errors import ConfigError
from rfig_exp.envs.base import BoxSpace, CoverageGrid, Env, EnvStep

if TYPE_CHECKING:  # the declaration (envs/suites/brax.py) imports this module as it makes an env
    from rfig_exp.envs.suites.brax import BraxSettings

# Coverage grid per robot: the second axis is y for the robots that move in the plane
# (ant, humanoid) and the torso height z for the planar ones (halfcheetah, hopper,
# walker2d), whose y is always 0. x cells are one milestone (1.0) wide. halfcheetah gets a
# longer x range: random actions alone carried it 19 units in 1000 steps (docs/brax.md).
# (axes, bounds, shape)
_GRIDS: dict[str, tuple[tuple[str, str], tuple[tuple[float, float], tuple[float, float]], tuple[int, int]]] = {
    "ant": (("x", "y"), ((-10.0, 40.0), (-25.0, 25.0)), (50, 50)),
    "humanoid": (("x", "y"), ((-10.0, 40.0), (-25.0, 25.0)), (50, 50)),
    "halfcheetah": (("x", "z"), ((-10.0, 90.0), (0.0, 2.0)), (100, 20)),
    "hopper": (("x", "z"), ((-10.0, 40.0), (0.0, 2.0)), (50, 20)),
    "walker2d": (("x", "z"), ((-10.0, 40.0), (0.0, 2.0)), (50, 20)),
}


class SparseState(NamedTuple):
    """Per-env state (unbatched; the agent vmaps it)."""

    brax: Any              # brax ``envs.State`` of the current episode
    x0: jax.Array          # [] float32 torso x at the episode's reset
    milestone: jax.Array   # [] float32 highest milestone reached this episode (starts at 0)
    t: jax.Array           # [] int32 steps taken this episode


def milestone_reward(d: jax.Array, last: jax.Array, delta, alpha) -> tuple[jax.Array, jax.Array]:
    """The paper's reward for distance ``d`` (any shape) given the highest milestone so far.

    Returns ``(reward, new_last)``: ``alpha * (m - last)`` and ``m`` where ``m = floor(d /
    delta)`` exceeds ``last``, else ``0`` and ``last``.
    """
    m = jnp.floor(d / delta)
    new = m > last
    return jnp.where(new, alpha * (m - last), 0.0), jnp.where(new, m, last)


def make_brax_env(opts: BraxSettings) -> Env:
    """``sparse_<robot>``: brax env ``opts.suite_id`` with the Milestone reward (see module doc);
    the options were checked by ``parse_env``, before brax is imported."""
    name, brax_id = opts.name, opts.suite_id
    if brax_id not in _GRIDS:
        raise ConfigError(f"env.name={name!r}: no sparse Brax variant of {brax_id!r}")

    with warnings.catch_warnings():
        # brax warns on import that its own pipelines are no longer actively developed.
        warnings.simplefilter("ignore")
        from brax import envs as brax_envs

        env = brax_envs.get_environment(brax_id, backend=opts.backend)

    ctrl = jnp.asarray(env.sys.actuator.ctrl_range)
    low, high = float(ctrl[:, 0].min()), float(ctrl[:, 1].max())
    if not (bool((ctrl[:, 0] == low).all()) and bool((ctrl[:, 1] == high).all())):
        raise NotImplementedError(f"{brax_id}: per-actuator control ranges are not supported")
    action_space = BoxSpace(dim=int(env.action_size), low=low, high=high)
    axes, bounds, shape = _GRIDS[brax_id]
    grid = CoverageGrid(axes=axes, bounds=bounds, shape=shape)
    second = {"y": 1, "z": 2}[axes[1]]
    exact_q = opts.backend == "mjx"
    delta, alpha = opts.milestone_distance, opts.reward_scale
    episode_length = opts.episode_length

    def torso(pipeline_state) -> tuple[jax.Array, jax.Array]:
        """Torso x (for the distance) and the grid coordinates ``[2]`` of a pipeline state."""
        pos = pipeline_state.x.pos[0]
        x = pipeline_state.q[0] if exact_q else pos[0]
        return x, jnp.stack([x, pos[second]])

    def reset(key):
        state = env.reset(key)
        x0, _ = torso(state.pipeline_state)
        zero = jnp.zeros((), jnp.float32)
        return state.obs.astype(jnp.float32), SparseState(state, x0, zero, jnp.zeros((), jnp.int32))

    def step(key, state: SparseState, action):
        action = jnp.broadcast_to(jnp.asarray(action, jnp.float32), (action_space.dim,))
        nxt = env.step(state.brax, action)
        x, coords = torso(nxt.pipeline_state)
        distance = x - state.x0
        reward, milestone = milestone_reward(distance, state.milestone, delta, alpha)
        t = state.t + 1
        terminated = nxt.done > 0
        truncated = jnp.logical_and(t >= episode_length, ~terminated)
        done = jnp.logical_or(terminated, truncated)
        final_obs = nxt.obs.astype(jnp.float32)

        # Both branches are computed (a select under vmap anyway); the reset gets its own key
        # so every episode starts from a fresh random pose, unlike brax's AutoResetWrapper.
        reset_obs, reset_state = reset(key)
        running = SparseState(nxt, state.x0, milestone, t)
        new_state = jax.tree.map(lambda r, c: jnp.where(done, r, c), reset_state, running)
        return EnvStep(
            obs=jnp.where(done, reset_obs, final_obs),
            state=new_state,
            reward=reward.astype(jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_obs=final_obs,
            cell=grid.cell(coords),
            episode_info={"distance": distance.astype(jnp.float32), "milestones": milestone.astype(jnp.float32)},
        )

    # the shape of a reset's observation without running one: brax's observation_size runs a reset
    # op by op, 20 s of small compiles per env on a CPU, paid by preflight and by every Brax job
    obs_dim = int(jax.eval_shape(env.reset, jax.random.PRNGKey(0)).obs.shape[-1])
    return Env(
        name=name,
        obs_shape=(obs_dim,),
        action_space=action_space,
        max_episode_steps=episode_length,
        reset=reset,
        step=step,
        coverage=grid,
        episode_info=("distance", "milestones"),
    )

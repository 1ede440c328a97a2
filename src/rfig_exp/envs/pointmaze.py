"""PointMaze in JAX: a force-actuated ball in a maze of unit wall boxes (``docs/pointmaze.md``).

Written from the documented facts of the two references the paper cites (not from their
code). The default, ``dynamics: pointax``, is the task the paper ran (pointax):

- state ``(x, y, vx, vy)`` and a goal ``(gx, gy)``; observation ``[x, y, vx, vy, gx, gy]``;
- action in ``[-1, 1]^2`` (clipped), force = 100 * action (actuator gear 100);
- one step of dt = 0.01: velocity clipped to ``[-5, 5]``, semi-implicit Euler
  ``v += dt * F / m`` with mass 1 and no damping, velocity clipped again, ``p += dt * v``;
- walls: the ball (radius 0.1 + contact margin 0.002) is pushed out of every wall box among
  the 3 x 3 cells around it, the push-outs averaged over the boxes it touches; on contact
  the velocity becomes the actual displacement / dt, damped by ``(1 - 0.5 dt)``; the
  position is finally clipped to the maze's extent. (At |v| <= 5 a step moves at most
  0.05 per axis, less than the radius, so the ball cannot tunnel through a wall.)
- reward: sparse 1.0 when ``|p - goal| <= 0.45`` (dense: ``-|p - goal|``); the episode
  TERMINATES at the goal; time limit 1,000 steps for every maze;
- reset: goal cell and start cell drawn uniformly and independently among the free cells,
  each plus uniform noise of +-0.25 on both axes; velocity 0.

``dynamics: mujoco`` is Gymnasium-Robotics' ``PointMaze_*-v3`` (MuJoCo): mass 4.18879,
joint damping 1 integrated implicitly as MuJoCo's Euler integrator does
(``v' = (m v + dt F) / (m + dt b)``, which reproduces vx = 0.238, 0.476, 0.713 from rest),
velocity clipped only before the step; a continuing task (the goal pays its reward and
nothing terminates; the goal stays put); dense reward ``exp(-|p - goal|)``; time limits
UMaze/Open 300, Medium 600, Large 800 (Giant and custom layouts: 1,000, our choice); the
start cell is redrawn until its centre is more than 0.5 from the (noisy) goal, which,
since the goal noise is at most 0.25 * sqrt(2) < 0.5 and distinct centres are >= 1 apart,
is exactly "uniform over the free cells other than the goal's cell" - drawn that way here,
without a loop. Walls use the same push-out model, except that the push-outs are combined
by taking the largest per axis instead of their average, so that a ball pressed into a
concave corner leaves it completely, as MuJoCo's simultaneous contacts make it (MuJoCo's
soft contacts are not reproduced; ``docs/pointmaze.md`` says how they differ).

The agent sees one unbatched env: ``reset(key) -> (obs [6], state)`` and
``step(key, state, action [2]) -> EnvStep``; it vmaps them. ``EnvStep.cell`` is the
coverage cell of the ball's position after the step; ``episode_info["success"]`` is 1.0
once the goal was reached in the episode (the success rate of the continuing task).

The ``env.*`` options, the layouts they select and the two dynamics' parameters (``DYNAMICS``)
are read and checked without JAX in ``envs/suites/pointmaze.py`` (``PointMazeSettings``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rfig_exp.config.errors import ConfigError
from rfig_exp.envs.base import BoxSpace, CoverageGrid, Env, EnvStep
from rfig_exp.envs.mazes import cell_centres

if TYPE_CHECKING:  # the declaration (envs/suites/pointmaze.py) imports this module as it makes an env
    from rfig_exp.envs.suites.pointmaze import Dynamics, PointMazeSettings

DT = 0.01
GEAR = 100.0
MAX_SPEED = 5.0
BALL_RADIUS = 0.1
CONTACT_MARGIN = 0.002   # MuJoCo's geom margin in point.xml; pointax keeps it too
GOAL_RADIUS = 0.45
POSITION_NOISE = 0.25
CONTACT_DAMPING = 1.0 - 0.5 * DT
OFFSETS = tuple((di, dj) for di in (-1, 0, 1) for dj in (-1, 0, 1))  # (row, column) of the 3 x 3 neighbours


class PointMazeState(NamedTuple):
    pos: jax.Array       # [2] float32 ball centre (x, y)
    vel: jax.Array       # [2] float32
    goal: jax.Array      # [2] float32
    time: jax.Array      # [] int32 steps taken in this episode
    reached: jax.Array   # [] float32 1.0 once the goal was reached in this episode


def coverage_grid(walls: np.ndarray, cells_per_unit: int) -> CoverageGrid:
    """x-y over the maze's extent, ``cells_per_unit`` cells per maze unit on each axis
    (flat index ``ix * ny + iy``; ``ix`` along x). Wall cells count in the denominator of
    ``coverage``, so its maximum is the free fraction of the maze."""
    h, w = walls.shape
    extent = (-w / 2, w / 2, -h / 2, h / 2)
    return CoverageGrid(axes=("x", "y"), bounds=((-w / 2, w / 2), (-h / 2, h / 2)),
                        shape=(w * cells_per_unit, h * cells_per_unit),
                        maze={"layout": [[int(v) for v in row] for row in walls], "extent": extent})


def _neighbour_masks(walls: np.ndarray) -> np.ndarray:
    """``[H, W]`` int32: bit ``k`` is set when the neighbour at ``OFFSETS[k]`` is a wall
    (outside the layout counts as wall). One gather per step then replaces nine."""
    h, w = walls.shape
    padded = np.ones((h + 2, w + 2), dtype=bool)
    padded[1:-1, 1:-1] = walls
    masks = np.zeros((h, w), dtype=np.int32)
    for k, (di, dj) in enumerate(OFFSETS):
        masks |= padded[1 + di:1 + di + h, 1 + dj:1 + dj + w].astype(np.int32) << k
    return masks


def make_physics(walls: np.ndarray, dyn: Dynamics):
    """``physics(pos [2], vel [2], action [2]) -> (pos, vel, touched)`` for one ball, one step."""
    h, w = walls.shape
    masks = jnp.asarray(_neighbour_masks(walls))
    di = jnp.asarray([o[0] for o in OFFSETS], jnp.int32)
    dj = jnp.asarray([o[1] for o in OFFSETS], jnp.int32)
    bits = jnp.arange(9, dtype=jnp.int32)
    radius = BALL_RADIUS + CONTACT_MARGIN
    lo = jnp.asarray([-w / 2, -h / 2], jnp.float32)
    hi = jnp.asarray([w / 2, h / 2], jnp.float32)
    inv_mass = 1.0 / (dyn.mass + DT * dyn.damping)

    def physics(pos, vel, action):
        action = jnp.clip(action, -1.0, 1.0)
        vel = jnp.clip(vel, -MAX_SPEED, MAX_SPEED)
        # Semi-implicit Euler; with damping b, MuJoCo's Euler integrates it implicitly.
        vel = (dyn.mass * vel + DT * GEAR * action) * inv_mass
        if dyn.clip_after_force:
            vel = jnp.clip(vel, -MAX_SPEED, MAX_SPEED)
        moved = pos + DT * vel

        # Wall boxes among the 3 x 3 cells around the moved centre.
        col = jnp.clip(jnp.floor(moved[0] + w / 2).astype(jnp.int32), 0, w - 1)
        row = jnp.clip(jnp.floor(h / 2 - moved[1]).astype(jnp.int32), 0, h - 1)
        is_wall = ((masks[row, col] >> bits) & 1).astype(bool)                     # [9]
        cx = (col + dj).astype(jnp.float32) + (0.5 - w / 2)
        cy = (h / 2 - 0.5) - (row + di).astype(jnp.float32)
        ex, ey = moved[0] - cx, moved[1] - cy                                        # [9] centre offsets
        # Closest point of each box to the ball centre; its distance decides contact.
        dx = ex - jnp.clip(ex, -0.5, 0.5)
        dy = ey - jnp.clip(ey, -0.5, 0.5)
        d2 = dx * dx + dy * dy
        contact = is_wall & (d2 < radius * radius)
        dist = jnp.sqrt(d2)
        scale = (radius - dist) / jnp.maximum(dist, 1e-12)
        # A centre inside a box (never reached from a legal state, kept for safety): leave
        # through the nearest face.
        inside = d2 == 0.0
        pen_x, pen_y = 0.5 - jnp.abs(ex), 0.5 - jnp.abs(ey)
        along_x = pen_x <= pen_y
        push_x = jnp.where(inside, jnp.where(along_x, jnp.sign(ex) * (pen_x + radius), 0.0), dx * scale)
        push_y = jnp.where(inside, jnp.where(along_x, 0.0, jnp.sign(ey) * (pen_y + radius)), dy * scale)
        push_x = jnp.where(contact, push_x, 0.0)
        push_y = jnp.where(contact, push_y, 0.0)
        touched = contact.any()
        if dyn.contact == "average":
            norm = 1.0 / jnp.maximum(contact.sum(), 1).astype(jnp.float32)
            push = jnp.stack([push_x.sum(), push_y.sum()]) * norm
        else:
            # The largest push-out per axis: a concave corner (two faces and the box between
            # them) is left completely, as MuJoCo's simultaneous contacts leave it.
            push = jnp.stack([push_x[jnp.argmax(jnp.abs(push_x))], push_y[jnp.argmax(jnp.abs(push_y))]])
        resolved = moved + push
        vel = jnp.where(touched, (resolved - pos) * (CONTACT_DAMPING / DT), vel)
        return jnp.clip(resolved, lo, hi), vel, touched

    return physics


def make_pointmaze_env(cfg: PointMazeSettings) -> Env:
    """The PointMaze env of ``cfg`` (checked by ``parse_env``)."""
    name = cfg.name
    if cfg.impl == "pointax":
        return _make_pointax_adapter(name, cfg)
    dyn = cfg.physics
    walls = cfg.wall_array
    physics = make_physics(walls, dyn)
    centres = jnp.asarray(cell_centres(walls), jnp.float32)
    n_free = int(centres.shape[0])
    max_steps = cfg.max_episode_steps
    grid = coverage_grid(walls, cfg.coverage_cells_per_unit)
    sparse = cfg.reward == "sparse"

    def sample_start(key):
        # One PRNG call for the whole reset: on CPU each call is a small loop of kernels.
        u = jax.random.uniform(key, (6,))
        goal_idx = jnp.minimum((u[0] * n_free).astype(jnp.int32), n_free - 1)
        if dyn.start_avoids_goal_cell:
            start_idx = jnp.minimum((u[3] * (n_free - 1)).astype(jnp.int32), n_free - 2)
            start_idx = start_idx + (start_idx >= goal_idx)
        else:
            start_idx = jnp.minimum((u[3] * n_free).astype(jnp.int32), n_free - 1)
        noise = (jnp.stack([u[1], u[2], u[4], u[5]]) * 2.0 - 1.0) * POSITION_NOISE
        goal = centres[goal_idx] + noise[:2]
        pos = centres[start_idx] + noise[2:]
        return PointMazeState(pos=pos, vel=jnp.zeros(2, jnp.float32), goal=goal, time=jnp.zeros((), jnp.int32),
                              reached=jnp.zeros((), jnp.float32))

    def observe(s: PointMazeState):
        return jnp.concatenate([s.pos, s.vel, s.goal])

    def reset(key):
        state = sample_start(key)
        return observe(state), state

    def step(key, state: PointMazeState, action):
        pos, vel, _ = physics(state.pos, state.vel, jnp.broadcast_to(action, (2,)).astype(jnp.float32))
        dist = jnp.sqrt(jnp.sum((pos - state.goal) ** 2))
        at_goal = dist <= GOAL_RADIUS
        if sparse:
            reward = at_goal.astype(jnp.float32)
        else:
            reward = -dist if dyn.dense == "neg_distance" else jnp.exp(-dist)
        time = state.time + 1
        terminated = jnp.logical_and(at_goal, not dyn.continuing)
        truncated = jnp.logical_and(time >= max_steps, ~terminated)
        reached = jnp.maximum(state.reached, at_goal.astype(jnp.float32))
        reached_state = PointMazeState(pos=pos, vel=vel, goal=state.goal, time=time, reached=reached)
        final_obs = observe(reached_state)
        done = terminated | truncated
        fresh = sample_start(key)
        next_state = jax.tree.map(lambda a, b: jnp.where(done, a, b), fresh, reached_state)
        return EnvStep(obs=observe(next_state), state=next_state, reward=reward, terminated=terminated,
                       truncated=truncated, final_obs=final_obs, cell=grid.cell(pos),
                       episode_info={"success": reached})

    return Env(name=name, obs_shape=(6,), action_space=BoxSpace(dim=2, low=-1.0, high=1.0),
               max_episode_steps=max_steps, reset=reset, step=step, coverage=grid, episode_info=("success",))


# pointax's maze ids (its public README: make(maze_id, reward_type=...), make_custom(layout)).
_POINTAX_IDS = {"umaze": "UMaze", "open": "Open", "medium": "Medium", "large": "Large", "giant": "Giant"}


def _make_pointax_adapter(name: str, cfg: PointMazeSettings) -> Env:
    """``env.impl=pointax``: the paper's own PointMaze through its gymnax API, when importable."""
    try:
        import pointax  # noqa: F401  (not on the package index: installed by hand, if at all)
    except ImportError:
        raise ConfigError("env.impl=pointax needs the `pointax` package, which is not importable here (it is not "
                          "on the package index; install it from its repository) - use env.impl=ours") from None
    from rfig_exp.envs.gymnax_suite import wrap_gymnax

    if cfg.maze == "custom":
        env = pointax.make_custom([[int(v) for v in row] for row in cfg.walls], reward_type=cfg.reward)
    else:
        env = pointax.make(_POINTAX_IDS[cfg.maze], reward_type=cfg.reward)
    params = env.default_params
    if hasattr(params, "max_steps_in_episode"):
        params = params.replace(max_steps_in_episode=cfg.max_episode_steps)
    grid = coverage_grid(cfg.wall_array, cfg.coverage_cells_per_unit)

    def terminated_fn(final_obs, terminated, truncated):
        # pointax ends an episode at the goal (continuing_task=False); read it from the
        # observation, so a goal reached on the last step is a termination, not a truncation.
        return jnp.sqrt(jnp.sum((final_obs[:2] - final_obs[4:6]) ** 2)) <= GOAL_RADIUS

    return wrap_gymnax(name, env, params, coverage=grid, cell_fn=lambda obs, state: grid.cell(obs[:2]),
                       terminated_fn=terminated_fn)

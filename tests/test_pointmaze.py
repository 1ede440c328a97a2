"""PointMaze: layouts, physics against a float64 plain-loop reference, walls, goals, resets,
episode ends, option validation, Gymnasium-Robotics agreement (when installed), training."""

import csv
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import compose_config, find_run

from rfig_exp.config.errors import ConfigError
from rfig_exp.envs import make_env
from rfig_exp.envs.mazes import MAZES, cell_centres, parse_layout
from rfig_exp.envs.pointmaze import PointMazeState
from rfig_exp.envs.settings import parse_env

MAZE_NAMES = tuple(MAZES)
BOTH = ("pointax", "mujoco")
R = 0.102  # ball radius 0.1 + contact margin 0.002


class Facts:
    """Each dynamics as documented (not read from the module under test)."""

    def __init__(self, mass, damping, clip_after_force, contact):
        self.mass, self.damping, self.clip_after_force, self.contact = mass, damping, clip_after_force, contact


FACTS = {"pointax": Facts(1.0, 0.0, True, "average"), "mujoco": Facts(4.18879, 1.0, False, "max")}


def env_of(maze="umaze", dynamics="pointax", **options):
    return make_env({"name": f"pointmaze_{maze}", "dynamics": dynamics, **options})


def put(state, pos, goal, vel=(0.0, 0.0)):
    """The env's state with the ball and goal placed by hand (float32, as the env keeps them)."""
    return state._replace(pos=jnp.asarray(pos, jnp.float32), vel=jnp.asarray(vel, jnp.float32),
                          goal=jnp.asarray(goal, jnp.float32), time=jnp.zeros((), jnp.int32))


def wall_boxes(walls):
    """Centres ``[n_walls, 2]`` of the wall cells, computed with a plain loop."""
    h, w = walls.shape
    return np.array([[j + 0.5 - w / 2, h / 2 - (i + 0.5)] for i in range(h) for j in range(w) if walls[i, j]])


def wall_distance(pos, walls):
    """Signed distance ``[N]`` from each centre to the nearest wall box (negative inside), float64."""
    boxes = wall_boxes(walls)
    dx = np.abs(pos[:, None, 0] - boxes[None, :, 0]) - 0.5
    dy = np.abs(pos[:, None, 1] - boxes[None, :, 1]) - 0.5
    outside = np.hypot(np.maximum(dx, 0), np.maximum(dy, 0))
    return np.where((dx < 0) & (dy < 0), np.maximum(dx, dy), outside).min(1)


def reference_step(pos, vel, action, walls, dyn):
    """One physics step in float64 with plain loops over EVERY wall box (the env looks at
    the 3 x 3 neighbourhood only): the documented facts, written independently.
    Returns ``(pos, vel, number of boxes touched)``."""
    h, w = walls.shape
    a = np.clip(action, -1, 1)
    v = np.clip(vel, -5, 5)
    v = (dyn.mass * v + 0.01 * 100 * a) / (dyn.mass + 0.01 * dyn.damping)
    if dyn.clip_after_force:
        v = np.clip(v, -5, 5)
    p = pos + 0.01 * v
    pushes = []
    for c in wall_boxes(walls):
        q = np.clip(p, c - 0.5, c + 0.5)
        d = p - q
        dist = np.linalg.norm(d)
        if dist >= R:
            continue
        if dist > 0:
            pushes.append(d / dist * (R - dist))
        else:
            e = p - c
            pen = 0.5 - np.abs(e)
            axis = 0 if pen[0] <= pen[1] else 1
            push = np.zeros(2)
            push[axis] = np.sign(e[axis]) * (pen[axis] + R)
            pushes.append(push)
    if not pushes:
        return p, v, 0
    pushes = np.array(pushes)
    if dyn.contact == "average":
        push = pushes.mean(0)
    else:
        push = np.array([pushes[np.argmax(np.abs(pushes[:, k])), k] for k in range(2)])
    resolved = p + push
    v = (resolved - pos) / 0.01 * (1 - 0.5 * 0.01)
    return np.clip(resolved, [-w / 2, -h / 2], [w / 2, h / 2]), v, len(pushes)


# ------------------------------------------------------------------ layouts


def test_named_layouts_are_walled_and_match_gymnasium_robotics_geometry():
    sizes = {"umaze": (5, 5, 7), "open": (5, 7, 15), "medium": (8, 8, 26), "large": (9, 12, 46),
             "giant": (12, 16, 86)}
    for name, (h, w, free) in sizes.items():
        walls = parse_layout(MAZES[name])
        assert walls.shape == (h, w) and (~walls).sum() == free, name
        # Cell (i, j) centre: x = (j + 0.5) - W/2, y = H/2 - (i + 0.5), row-major over free cells.
        expected = [[j + 0.5 - w / 2, h / 2 - (i + 0.5)] for i in range(h) for j in range(w) if not walls[i, j]]
        np.testing.assert_allclose(cell_centres(walls), expected)


def test_layouts_equal_gymnasium_robotics_maps():
    maps = pytest.importorskip("gymnasium_robotics.envs.maze.maps")
    for ours, theirs in (("umaze", "U_MAZE"), ("open", "OPEN"), ("medium", "MEDIUM_MAZE"), ("large", "LARGE_MAZE")):
        assert parse_layout(MAZES[ours]).astype(int).tolist() == getattr(maps, theirs), ours


# ------------------------------------------------------------------ physics


def test_first_steps_from_rest_match_the_facts():
    # mujoco: mass 4.18879, damping 1 implicit -> vx = 0.238, 0.476, 0.713 (Gymnasium-Robotics).
    # pointax: mass 1, no damping -> a = 100: vx = 1, 2, 3 and x += 0.01 * vx.
    expected = {"mujoco": [0.238, 0.476, 0.713], "pointax": [1.0, 2.0, 3.0]}
    for dyn, vx in expected.items():
        env = env_of("open", dyn)
        step = jax.jit(env.step)
        s = put(env.reset(jax.random.PRNGKey(0))[1], (0.0, 0.0), (2.0, 1.0))
        xs, vxs = [], []
        for t in range(3):
            out = step(jax.random.PRNGKey(t), s, jnp.array([1.0, 0.0]))
            s = out.state
            xs.append(float(out.final_obs[0]))
            vxs.append(float(out.final_obs[2]))
            assert float(out.final_obs[1]) == 0.0 and float(out.final_obs[3]) == 0.0
        np.testing.assert_allclose(vxs, vx, atol=5e-4)
        np.testing.assert_allclose(xs, np.cumsum(vxs) * 0.01, rtol=1e-5)
    # pointax clips the speed at 5 after the force as well: 5 steps reach it, then it stays.
    env = env_of("open", "pointax")
    step = jax.jit(env.step)
    s = put(env.reset(jax.random.PRNGKey(0))[1], (-2.0, 0.0), (2.0, 1.0))
    for t in range(8):
        out = step(jax.random.PRNGKey(t), s, jnp.array([1.0, -1.0]))
        s = out.state
    np.testing.assert_allclose(np.asarray(out.final_obs[2:4]), [5.0, -5.0])


@pytest.mark.parametrize("dynamics", BOTH)
@pytest.mark.parametrize("maze", ["umaze", "medium"])
def test_physics_matches_a_float64_plain_loop_reference_near_walls(maze, dynamics):
    walls = parse_layout(MAZES[maze])
    h, w = walls.shape
    dyn = FACTS[dynamics]
    env = env_of(maze, dynamics)
    rng = np.random.default_rng(0)
    # Legal states, many of them touching walls: centres in free cells, ball at most
    # slightly inside a wall, speeds up to 6 (beyond the clip), actions beyond the box.
    pos = rng.uniform([-w / 2, -h / 2], [w / 2, h / 2], (40000, 2))
    gap = wall_distance(pos, walls)
    pos = np.concatenate([pos[(gap > 0.06) & (gap < 0.2)][:1200], pos[gap >= 0.2][:300]])
    vel = rng.uniform(-6, 6, pos.shape)
    # Plus balls driven into concave corners (walls on both sides), where the contact rule
    # (average vs largest push-out) matters: touching or nearly touching both faces, moving into them.
    corners = []
    for i, j in zip(*np.nonzero(~walls)):
        for si, sj in ((-1, -1), (-1, 1), (1, -1), (1, 1)):
            if walls[i + si, j] and walls[i, j + sj]:
                corners.append([(j + 0.5 - w / 2) + sj * 0.5, (h / 2 - i - 0.5) - si * 0.5, sj, -si])
    corners = np.array(corners)[rng.integers(0, len(corners), 300)]
    inset = rng.uniform(R - 0.01, R + 0.03, (300, 2))
    pos = np.concatenate([pos, corners[:, :2] - corners[:, 2:] * inset])
    vel = np.concatenate([vel, corners[:, 2:] * rng.uniform(3, 6, (300, 2))])
    act = rng.uniform(-1.5, 1.5, pos.shape)
    _, s0 = env.reset(jax.random.PRNGKey(0))
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (len(pos),) + x.shape), s0)
    states = states._replace(pos=jnp.asarray(pos, jnp.float32), vel=jnp.asarray(vel, jnp.float32),
                             goal=jnp.full((len(pos), 2), 100.0, jnp.float32))
    out = jax.jit(jax.vmap(env.step))(jax.random.split(jax.random.PRNGKey(1), len(pos)), states,
                                       jnp.asarray(act, jnp.float32))
    got = np.asarray(out.final_obs, np.float64)
    steps = [reference_step(p, v, a, walls, dyn) for p, v, a in zip(pos.astype(np.float32).astype(np.float64),
                                                                      vel.astype(np.float32).astype(np.float64),
                                                                      act.astype(np.float32).astype(np.float64))]
    ref = np.array([np.concatenate(r[:2]) for r in steps])
    contacts = np.array([r[2] for r in steps])
    touched = contacts > 0
    assert 0.15 < touched.mean() < 0.9, "the sample should exercise wall contacts and free flight"
    assert (contacts >= 2).sum() > 200, "and balls touching several boxes at once"
    np.testing.assert_allclose(got[:, :2], ref[:, :2], atol=2e-5)
    np.testing.assert_allclose(got[:, 2:4], ref[:, 2:], atol=3e-3)  # displacement / dt in float32
    assert np.abs(got[:, 2:4] - ref[:, 2:])[~touched].max() < 1e-5


def _rollout_positions(env, num_envs, steps, key):
    """Final positions ``[steps * num_envs, 2]``: half the envs act uniformly at random,
    half hold a corner action (+-1, +-1) for 50 steps at a time (pressing into walls and corners)."""
    k_reset, k_rand, k_sign, k_env = jax.random.split(key, 4)

    @jax.jit
    def run():
        _, states = jax.vmap(env.reset)(jax.random.split(k_reset, num_envs))
        rand = jax.random.uniform(k_rand, (steps, num_envs // 2, 2), minval=-1, maxval=1)
        signs = jnp.sign(jax.random.uniform(k_sign, (steps // 50 + 1, num_envs - num_envs // 2, 2),
                                            minval=-1, maxval=1))
        extreme = jnp.repeat(signs, 50, axis=0)[:steps]
        actions = jnp.concatenate([rand, extreme], axis=1)

        def body(s, xs):
            a, k = xs
            out = jax.vmap(env.step)(jax.random.split(k, num_envs), s, a)
            return out.state, out.final_obs[:, :2]

        return jax.lax.scan(body, states, (actions, jax.random.split(k_env, steps)))[1]

    return np.asarray(run(), np.float64).reshape(-1, 2)


@pytest.mark.extended
@pytest.mark.parametrize("dynamics", BOTH)
@pytest.mark.parametrize("maze", MAZE_NAMES)
def test_ball_never_ends_inside_a_wall_or_outside_the_maze(maze, dynamics):
    walls = parse_layout(MAZES[maze])
    h, w = walls.shape
    env = env_of(maze, dynamics, max_episode_steps=100_000)  # no resets: long wall contacts
    pos = _rollout_positions(env, 64, 1000, jax.random.PRNGKey(3))
    assert (np.abs(pos[:, 0]) <= w / 2).all() and (np.abs(pos[:, 1]) <= h / 2).all()
    row = np.floor(h / 2 - pos[:, 1]).astype(int)
    col = np.floor(pos[:, 0] + w / 2).astype(int)
    assert not walls[row, col].any(), "a ball centre ended inside a wall cell"
    gap = wall_distance(pos, walls)
    # pointax averages push-outs, so in a concave corner pressed at full force the ball
    # overlaps the walls by up to half its radius (closest centre seen: 0.0512 from a wall,
    # over 512k steps per maze); the "max" resolution leaves no overlap.
    floor = 0.045 if FACTS[dynamics].contact == "average" else R - 1e-4
    assert gap.min() > floor, gap.min()
    assert (gap < R + 0.01).mean() > 0.05, "the rollouts should spend time against walls"


# ------------------------------------------------------------------ task


def _scripted_umaze(dynamics, steps=400):
    """A PD controller through the U: top-left cell -> top-right -> bottom-right ->
    bottom-left, where the goal is."""
    env = env_of("umaze", dynamics)
    waypoints = jnp.array([[1.0, 1.0], [1.0, -1.0], [-1.0, -1.0]])
    s = put(env.reset(jax.random.PRNGKey(0))[1], (-1.0, 1.0), (-1.0, -1.0))

    def body(carry, k):
        s, i = carry
        wp = waypoints[i]
        a = jnp.clip(3.0 * (wp - s.pos) - 0.6 * s.vel, -1, 1)
        out = env.step(k, s, a)
        near = jnp.linalg.norm(out.final_obs[:2] - wp) < 0.2
        return (out.state, jnp.where(near, jnp.minimum(i + 1, 2), i)), out

    return jax.lax.scan(body, (s, 0), jax.random.split(jax.random.PRNGKey(1), steps))[1]


def test_scripted_path_reaches_the_goal_and_terminates_under_pointax():
    outs = _scripted_umaze("pointax")
    reward = np.asarray(outs.reward)
    first = int(np.argmax(reward > 0))
    dist = np.linalg.norm(np.asarray(outs.final_obs[:, :2]) - [-1.0, -1.0], axis=1)
    assert first > 50 and reward[first] == 1.0 and (reward[:first] == 0).all()
    assert dist[first] <= 0.45 and (dist[:first] > 0.45).all()
    assert bool(outs.terminated[first]) and not bool(outs.truncated[first])
    assert not np.asarray(outs.terminated[:first]).any()
    assert float(outs.episode_info["success"][first]) == 1.0 and float(outs.episode_info["success"][first - 1]) == 0
    # The episode ended: the next observation is a fresh reset (at rest, its own goal).
    np.testing.assert_array_equal(np.asarray(outs.obs[first, 2:4]), [0.0, 0.0])
    np.testing.assert_allclose(np.asarray(outs.final_obs[first, 4:]), [-1.0, -1.0])
    assert int(outs.state.time[first]) == 0


def test_scripted_path_reaches_the_goal_and_continues_under_mujoco():
    outs = _scripted_umaze("mujoco", steps=300)   # UMaze's limit under mujoco: 300 steps
    reward = np.asarray(outs.reward)
    first = int(np.argmax(reward > 0))
    assert first > 50 and reward[first] == 1.0 and (reward[:first] == 0).all()
    assert not np.asarray(outs.terminated).any()
    assert np.flatnonzero(np.asarray(outs.truncated)).tolist() == [299]
    # The goal stays and keeps paying while the ball stays near it.
    assert reward[first:].sum() > 100
    np.testing.assert_allclose(np.asarray(outs.final_obs[:, 4:]), np.tile([-1.0, -1.0], (len(reward), 1)))
    assert float(outs.episode_info["success"][-1]) == 1.0 and int(outs.state.time[-1]) == 0  # reset after 300


def test_dense_rewards_follow_each_reference():
    for dyn, fn in (("pointax", lambda d: -d), ("mujoco", lambda d: np.exp(-d))):
        env = env_of("open", dyn, reward="dense")
        s = put(env.reset(jax.random.PRNGKey(0))[1], (0.0, 0.0), (1.5, -1.0))
        out = env.step(jax.random.PRNGKey(1), s, jnp.array([0.3, 0.7]))
        d = np.linalg.norm(np.asarray(out.final_obs[:2], np.float64) - [1.5, -1.0])
        assert float(out.reward) == pytest.approx(fn(d), rel=1e-5)


def test_time_limit_truncates_with_the_true_final_observation():
    env = env_of("open", "pointax", max_episode_steps=5)
    s = put(env.reset(jax.random.PRNGKey(0))[1], (-2.0, 1.0), (2.0, -1.0))
    outs = []
    step = jax.jit(env.step)
    for t in range(5):
        out = step(jax.random.PRNGKey(t), s, jnp.array([1.0, 0.0]))
        outs.append(out)
        s = out.state
    assert [bool(o.truncated) for o in outs] == [False] * 4 + [True]
    assert not any(bool(o.terminated) for o in outs)
    last = outs[-1]
    # final_obs continues the trajectory (x advanced by 0.05 at vx 5); obs is a fresh start.
    assert float(last.final_obs[0]) == pytest.approx(float(outs[-2].final_obs[0]) + 0.05, abs=1e-5)
    assert float(last.final_obs[2]) == 5.0 and float(last.obs[2]) == 0.0 and int(last.state.time) == 0


def test_goal_reached_on_the_last_step_is_termination_not_truncation():
    env = env_of("open", "pointax", max_episode_steps=1)
    s = put(env.reset(jax.random.PRNGKey(0))[1], (0.0, 0.0), (0.3, 0.0))
    out = env.step(jax.random.PRNGKey(1), s, jnp.array([0.0, 0.0]))
    assert bool(out.terminated) and not bool(out.truncated)
    env = env_of("open", "mujoco", max_episode_steps=1)
    out = env.step(jax.random.PRNGKey(1), s, jnp.array([0.0, 0.0]))
    assert not bool(out.terminated) and bool(out.truncated) and float(out.reward) == 1.0


def test_default_step_limits():
    limits = {"umaze": 300, "open": 300, "medium": 600, "large": 800, "giant": 1000}
    for maze, limit in limits.items():
        assert env_of(maze, "mujoco").max_episode_steps == limit
        assert env_of(maze, "pointax").max_episode_steps == 1000
    assert env_of("umaze", "mujoco", max_episode_steps=77).max_episode_steps == 77


@pytest.mark.parametrize("dynamics", BOTH)
def test_resets_and_goals_are_free_cells_plus_noise(dynamics):
    for maze in ("umaze", "large"):
        walls = parse_layout(MAZES[maze])
        centres = cell_centres(walls)
        n = 20000
        obs, _ = jax.jit(jax.vmap(env_of(maze, dynamics).reset))(jax.random.split(jax.random.PRNGKey(7), n))
        obs = np.asarray(obs, np.float64)
        assert (obs[:, 2:4] == 0).all()
        cells = {}
        for name, xy in (("start", obs[:, :2]), ("goal", obs[:, 4:6])):
            nearest = np.argmin(np.abs(xy[:, None, :] - centres[None]).max(-1), axis=1)
            offset = xy - centres[nearest]
            assert (np.abs(offset) <= 0.25 + 1e-6).all(), name
            # Uniform noise on +-0.25: mean |offset| = 0.125, and it fills the square.
            assert np.abs(offset).mean() == pytest.approx(0.125, abs=0.005) and np.abs(offset).max() > 0.24
            freq = np.bincount(nearest, minlength=len(centres)) / n
            assert np.abs(freq - 1 / len(centres)).max() < 5 * np.sqrt(1 / len(centres) / n), name
            cells[name] = nearest
        same = (cells["start"] == cells["goal"]).mean()
        if dynamics == "mujoco":   # redrawn until more than 0.5 from the goal: never the goal's cell
            assert same == 0.0
        else:                      # independent draws: the goal's cell 1 / n_free of the time
            assert same == pytest.approx(1 / len(centres), abs=5 * np.sqrt(1 / len(centres) / n))


def test_observation_and_interface():
    env = env_of("medium")
    obs, s = env.reset(jax.random.PRNGKey(0))
    assert obs.shape == env.obs_shape == (6,) and obs.dtype == jnp.float32
    assert isinstance(s, PointMazeState)
    out = env.step(jax.random.PRNGKey(1), s, jnp.array([0.5, -0.5]))
    np.testing.assert_array_equal(np.asarray(out.final_obs[:2]), np.asarray(out.state.pos))
    np.testing.assert_array_equal(np.asarray(out.final_obs[4:]), np.asarray(obs[4:]))
    assert out.cell.dtype == jnp.int32 and env.coverage.shape == (32, 32)
    assert env.action_space.dim == 2 and env.action_space.low == -1.0 and env.action_space.high == 1.0
    assert env.episode_info == ("success",)


# ------------------------------------------------------------------ options


@pytest.mark.parametrize("layout, message", [
    (["11111", "1001", "11111"], "not rectangular"),
    (["11111", "10001", "10000", "11111"], "walled"),
    (["11111", "10111", "11111"], "at least two"),
    (["11111", "10x01", "11111"], "cells must be 0"),
    ([], "non-empty"),
    ("11111", "non-empty list"),
    (["111", "101"], "at least 3 x 3"),
])
def test_custom_layout_errors_name_the_key(layout, message):
    with pytest.raises(ConfigError) as err:
        make_env({"name": "pointmaze_custom", "maze": "custom", "layout": layout})
    assert "env.layout" in str(err.value) and message in str(err.value)


def test_custom_layouts_from_strings_lists_and_hydra_ints():
    as_strings = ["111111", "100001", "101101", "111111"]
    as_lists = [[int(c) for c in row] for row in as_strings]
    as_ints = [int(row) for row in as_strings]   # what Hydra makes of env.layout=[111111,100001,...]
    grids = [make_env({"name": "pointmaze_custom", "layout": layout}).coverage.maze["layout"]
             for layout in (as_strings, as_lists, as_ints)]
    assert grids[0] == grids[1] == grids[2] == as_lists
    cfg = compose_config("env=pointmaze_custom", "env.layout=[11111,10001,10101,10001,11111]",
                         "env.dynamics=mujoco")
    env = make_env(cfg.env)
    assert env.coverage.maze["layout"][2] == [1, 0, 1, 0, 1] and env.max_episode_steps == 1000
    with pytest.raises(ConfigError, match="env.layout is required"):
        make_env("pointmaze_custom")


@pytest.mark.parametrize("options, key", [
    ({"dynamics": "brax"}, "env.dynamics"),
    ({"reward": "shaped"}, "env.reward"),
    ({"max_episode_steps": 0}, "env.max_episode_steps"),
    ({"max_episode_steps": 2.5}, "env.max_episode_steps"),
    ({"coverage_cells_per_unit": 0}, "env.coverage_cells_per_unit"),
    ({"impl": "mujoco"}, "env.impl"),
    ({"maze": "large"}, "env.maze"),
    ({"layout": ["111", "101", "111"]}, "env.layout"),
    ({"mass": 2.0}, "env.mass"),
])
def test_bad_options_name_the_key(options, key):
    with pytest.raises(ConfigError) as err:
        make_env({"name": "pointmaze_umaze", **options})
    assert key in str(err.value)


def test_impl_pointax_is_a_clear_config_error_when_not_importable():
    try:
        import pointax  # noqa: F401
        pytest.skip("pointax is importable here")
    except ImportError:
        pass
    with pytest.raises(ConfigError, match="env.impl=pointax"):
        make_env({"name": "pointmaze_umaze", "impl": "pointax"})


def test_settings_are_checked_before_the_env_is_made():
    with pytest.raises(ConfigError, match="env.dynamics='mujoco' is not available with env.impl=pointax"):
        parse_env({"name": "pointmaze_umaze", "impl": "pointax", "dynamics": "mujoco"})  # pointax or not
    settings = parse_env({"name": "pointmaze_custom", "layout": [11111, 10001, 10101, 10001, 11111]})
    assert hash(settings) == hash(parse_env({"name": "pointmaze_custom",
                                             "layout": ["11111", "10001", "10101", "10001", "11111"]}))
    assert settings.max_episode_steps == 1000 and settings.wall_array[2].tolist() == [True, False, True, False, True]
    assert make_env(settings).coverage.maze["layout"][2] == [1, 0, 1, 0, 1]


def test_every_pointmaze_config_composes_and_builds():
    for maze in (*MAZE_NAMES, "custom"):
        cfg = compose_config(f"env=pointmaze_{maze}")
        env = make_env(cfg.env)
        assert env.name == f"pointmaze_{maze}" and env.coverage.maze is not None


# ------------------------------------------------------------------ Gymnasium-Robotics


def _reference_env(name):
    gym = pytest.importorskip("gymnasium")
    gr = pytest.importorskip("gymnasium_robotics")
    gym.register_envs(gr)
    return gym.make(name)


def test_trajectories_match_gymnasium_robotics_in_open_space():
    ref_env = _reference_env("PointMaze_Open-v3")
    ref_env.reset(seed=0)
    point = ref_env.unwrapped.point_env
    env = env_of("open", "mujoco")
    step = jax.jit(env.step)
    rng = np.random.default_rng(0)
    errors, compared = [], 0
    for episode in range(6):
        start = rng.uniform([-1.5, -0.8], [1.5, 0.8])
        actions = rng.uniform(-1, 1, (150, 2)) * (1.0 if episode % 2 else 0.5)
        point.set_state(start.copy(), np.zeros(2))
        s = put(env.reset(jax.random.PRNGKey(0))[1], start, (10.0, 10.0))
        for a in actions:
            ref = ref_env.step(a)[0]["observation"]
            # Compare only away from walls: there MuJoCo's soft contacts and our push-out differ.
            if np.any(np.abs(ref[:2]) > np.array([2.5, 1.5]) - R - 0.05):
                break
            out = step(jax.random.PRNGKey(0), s, jnp.asarray(a, jnp.float32))
            s = out.state
            errors.append(np.abs(np.asarray(out.final_obs[:4], np.float64) - ref))
            compared += 1
    errors = np.array(errors)
    assert compared > 300
    # Float32 against MuJoCo's float64: observed max 1.3e-6 (position) and 2.3e-6 (velocity).
    assert errors[:, :2].max() < 1e-5 and errors[:, 2:].max() < 1e-5, errors.max(0)


def test_reset_and_goal_distributions_match_gymnasium_robotics():
    stats = pytest.importorskip("scipy.stats")
    ref_env = _reference_env("PointMaze_UMaze-v3")
    walls = parse_layout(MAZES["umaze"])
    centres = cell_centres(walls)
    n = 3000
    ref = []
    for i in range(n):
        obs = ref_env.reset(seed=i)[0]
        ref.append(np.concatenate([obs["observation"][:2], obs["desired_goal"]]))
    ref = np.array(ref)
    ours = np.asarray(jax.jit(jax.vmap(env_of("umaze", "mujoco").reset))(
        jax.random.split(jax.random.PRNGKey(0), n))[0], np.float64)[:, [0, 1, 4, 5]]
    for sample in (ref, ours):
        cells = [np.argmin(np.abs(sample[:, None, k:k + 2] - centres[None]).max(-1), axis=1) for k in (0, 2)]
        assert (cells[0] != cells[1]).all()    # the start is never in the goal's cell
    for k, what in enumerate(("start x", "start y", "goal x", "goal y")):
        result = stats.ks_2samp(ref[:, k], ours[:, k])
        assert result.pvalue > 1e-3, (what, result)
    # Start-goal distance distribution (joint structure, not only marginals).
    d_ref = np.linalg.norm(ref[:, :2] - ref[:, 2:], axis=1)
    d_ours = np.linalg.norm(ours[:, :2] - ours[:, 2:], axis=1)
    assert stats.ks_2samp(d_ref, d_ours).pvalue > 1e-3


# ------------------------------------------------------------------ training


def test_tiny_training_run_writes_coverage(tiny_config, tmp_path):
    from rfig_exp.run.experiment import run_experiment

    cfg = tiny_config("env=pointmaze_umaze", "bonus=none", f"results_dir={tmp_path}")
    (summary,) = run_experiment(cfg)
    run = find_run(tmp_path, "pointmaze_umaze", "none")
    with open(run / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    coverage = [float(r["coverage"]) for r in rows]
    assert len(rows) == 2 and 0 < coverage[0] <= coverage[1] <= 7 / 25   # 7 of the 25 maze cells are free
    assert "env/success" in rows[0]
    assert json.loads((run / "summary.json").read_text())["status"] == "complete"
    if (run / "visits.npy").exists():
        visits = np.load(run / "visits.npy")
        assert visits.shape == (20, 20) and visits.sum() == 256

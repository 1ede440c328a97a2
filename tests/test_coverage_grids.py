"""Coverage grids of the gymnax envs, DeepSea and PointMaze: the cell mapping against plain
Python, exact counts on hand-made trajectories, clipping at the bounds, DeepSea's size option."""

import collections
import csv
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import find_run

from rfig_exp.config.errors import ConfigError
from rfig_exp.envs import CoverageGrid, make_env


def plain_cell(coords, bounds, shape):
    """The documented mapping in plain Python: equal cells per axis, clipped into the edge cells,
    flat index ``i * shape[1] + j``."""
    idx = []
    for a in range(2):
        lo, hi = bounds[a]
        k = math.floor((coords[a] - lo) / (hi - lo) * shape[a])
        idx.append(min(max(k, 0), shape[a] - 1))
    return idx[0] * shape[1] + idx[1]


def count_like_the_agent(cells, num_cells):
    """The agent's per-seed visit grid: ``visits.at[cells].add(1)`` inside the scan."""
    return np.asarray(jnp.zeros((num_cells,), jnp.int32).at[jnp.asarray(cells)].add(1))


def test_cell_mapping_exact_counts_and_clipping_on_a_hand_made_trajectory():
    grid = CoverageGrid(axes=("a", "b"), bounds=((-1.0, 1.0), (0.0, 3.0)), shape=(4, 3))
    trajectory = [(-1.0, 0.0), (-0.99, 0.5), (-0.5, 1.0), (-0.5, 1.0), (0.0, 2.999), (0.49, 1.5),
                  (1.0, 3.0),      # the upper bounds belong to the last cells
                  (5.0, -7.0),     # beyond the bounds: clipped into the edge cells
                  (-3.0, 9.0), (0.999, 2.0)]
    cells = np.asarray(grid.cell(jnp.asarray(trajectory, jnp.float32)))
    assert cells.tolist() == [plain_cell(c, grid.bounds, grid.shape) for c in trajectory]
    assert cells.tolist() == [0, 0, 4, 4, 8, 7, 11, 9, 2, 11]   # by hand: (i, j) -> 3 i + j
    visits = count_like_the_agent(cells, grid.num_cells)
    expected = collections.Counter(cells.tolist())
    assert visits.tolist() == [expected.get(c, 0) for c in range(grid.num_cells)]
    assert visits.sum() == len(trajectory) and (visits > 0).mean() == pytest.approx(7 / 12)


def _coords(name, obs):
    """The documented coordinates of each env, computed with numpy from the observation."""
    obs = np.asarray(obs, np.float64)
    if name in ("mountaincar", "mountaincar_continuous"):
        return obs[:, 0], obs[:, 1]
    if name == "acrobot":
        return np.arctan2(obs[:, 1], obs[:, 0]), np.arctan2(obs[:, 3], obs[:, 2])
    if name == "cartpole":
        return obs[:, 0], obs[:, 2]
    if name == "pendulum":
        return np.arctan2(obs[:, 1], obs[:, 0]), obs[:, 2]
    raise KeyError(name)


GRIDS = {
    "mountaincar": (("position", "velocity"), ((-1.2, 0.6), (-0.07, 0.07))),
    "mountaincar_continuous": (("position", "velocity"), ((-1.2, 0.6), (-0.07, 0.07))),
    "acrobot": (("theta1", "theta2"), ((-math.pi, math.pi), (-math.pi, math.pi))),
    "cartpole": (("cart_position", "pole_angle"), ((-2.4, 2.4), (-12 * math.pi / 180, 12 * math.pi / 180))),
    "pendulum": (("angle", "angular_velocity"), ((-math.pi, math.pi), (-8.0, 8.0))),
}


@pytest.mark.parametrize("name", sorted(GRIDS))
def test_classic_control_cells_follow_the_documented_coordinates(name):
    env = make_env(name)
    axes, bounds = GRIDS[name]
    grid = env.coverage
    assert grid.axes == axes and grid.shape == (50, 50) and grid.maze is None
    np.testing.assert_allclose(np.asarray(grid.bounds), bounds, rtol=1e-6)
    n, steps = 16, 300

    @jax.jit
    def rollout(key):
        k_reset, k_act, k_env = jax.random.split(key, 3)
        _, states = jax.vmap(env.reset)(jax.random.split(k_reset, n))
        space = env.action_space
        if hasattr(space, "num_actions"):
            actions = jax.random.randint(k_act, (steps, n), 0, space.num_actions)
        else:
            actions = jax.random.uniform(k_act, (steps, n, space.dim), minval=space.low, maxval=space.high)

        def body(s, xs):
            a, k = xs
            out = jax.vmap(env.step)(jax.random.split(k, n), s, a)
            return out.state, (out.final_obs, out.cell)

        return jax.lax.scan(body, states, (actions, jax.random.split(k_env, steps)))[1]

    final_obs, cells = rollout(jax.random.PRNGKey(0))
    final_obs = np.asarray(final_obs).reshape(steps * n, -1)
    cells = np.asarray(cells).reshape(-1)
    assert cells.dtype == np.int32
    a, b = _coords(name, final_obs)
    expected = np.array([plain_cell((x, y), bounds, (50, 50)) for x, y in zip(a, b)])
    # float32 angles on a cell border may fall either side: allow a handful of such cells.
    assert (cells == expected).mean() > 0.999, (cells != expected).sum()
    assert len(np.unique(cells)) > 20   # a random policy already visits several cells


def test_minatar_has_no_grid():
    env = make_env("minatar_breakout")
    obs, s = env.reset(jax.random.PRNGKey(0))
    out = env.step(jax.random.PRNGKey(1), s, jnp.asarray(0))
    assert env.coverage is None and out.cell is None


def test_gymnax_envs_reject_unknown_options():
    with pytest.raises(ConfigError, match="env.size is not an option of mountaincar"):
        make_env({"name": "mountaincar", "size": 3})
    with pytest.raises(ConfigError, match="env.layout is not an option of deepsea; valid: size"):
        make_env({"name": "deepsea", "layout": []})


# ------------------------------------------------------------------ DeepSea


@pytest.mark.parametrize("bad", [1, 0, -4, 2.5, "10", True])
def test_deepsea_size_is_validated(bad):
    with pytest.raises(ConfigError, match="env.size"):
        make_env({"name": "deepsea", "size": bad})


def test_deepsea_size_option_and_its_grid():
    for size, options in ((20, {}), (20, {"size": None}), (7, {"size": 7})):
        env = make_env({"name": "deepsea", **options})
        assert env.obs_shape == (size, size) and env.max_episode_steps == size
        assert env.coverage.shape == (size, size) and env.coverage.axes == ("row", "column")
        obs, _ = env.reset(jax.random.PRNGKey(0))
        assert obs.shape == (size, size) and float(obs[0, 0]) == 1.0 and float(obs.sum()) == 1.0


def test_deepsea_counts_the_cells_acted_in_exactly():
    size = 6
    env = make_env({"name": "deepsea", "size": size})
    step = jax.jit(env.step)
    obs, s = env.reset(jax.random.PRNGKey(0))
    mapping = np.asarray(s.action_mapping)
    cells, rewards, ends = [], [], []
    # Episode 1: always "right" (the action the hidden mapping calls right), the only way to
    # the treasure; episode 2: always "left", which keeps to column 0.
    for go_right in (True, False):
        for t in range(size):
            row, col = int(s.row), int(s.column)
            action = mapping[row, col] if go_right else 1 - mapping[row, col]
            out = step(jax.random.PRNGKey(t), s, jnp.asarray(action))
            cells.append(int(out.cell))
            rewards.append(float(out.reward))
            ends.append((bool(out.terminated), bool(out.truncated)))
            s = out.state
    diagonal = [r * size + r for r in range(size)]
    column0 = [r * size for r in range(size)]
    assert cells == diagonal + column0
    assert ends == ([(False, False)] * (size - 1) + [(True, False)]) * 2
    assert rewards[size - 1] == pytest.approx(1.0 - 0.01 / size) and max(rewards[size:]) == 0.0
    visits = count_like_the_agent(cells, size * size).reshape(size, size)
    expected = np.zeros((size, size), int)
    expected[np.arange(size), np.arange(size)] += 1
    expected[:, 0] += 1
    np.testing.assert_array_equal(visits, expected)          # (0, 0) twice: once per episode


# ------------------------------------------------------------------ PointMaze


def test_pointmaze_grid_cells_and_counts_on_a_hand_made_trajectory():
    env = make_env({"name": "pointmaze_umaze", "coverage_cells_per_unit": 2})
    grid = env.coverage
    assert grid.axes == ("x", "y") and grid.shape == (10, 10)
    assert grid.bounds == ((-2.5, 2.5), (-2.5, 2.5))
    described = grid.describe()
    assert described["maze"]["extent"] == [-2.5, 2.5, -2.5, 2.5]
    assert described["maze"]["layout"][2] == [1, 1, 1, 0, 1] and described["shape"] == [10, 10]
    # Place the ball by hand and step with no force: it stays, and the cell is its position's.
    step = jax.jit(env.step)
    _, s0 = env.reset(jax.random.PRNGKey(0))
    trajectory = [(-1.2, 1.3), (-1.2, 1.3), (1.0, 1.0), (1.3, -0.2), (-0.9, -1.2), (1.0, 1.0), (-0.6, 1.1)]
    cells = []
    for x, y in trajectory:
        s = s0._replace(pos=jnp.asarray([x, y], jnp.float32), vel=jnp.zeros(2), goal=jnp.asarray([9.0, 9.0]))
        out = step(jax.random.PRNGKey(0), s, jnp.zeros(2))
        np.testing.assert_allclose(np.asarray(out.final_obs[:2]), [x, y], atol=1e-6)
        cells.append(int(out.cell))
    # (x, y) -> (floor((x + 2.5) * 2), floor((y + 2.5) * 2)) -> 10 i + j
    assert cells == [2 * 10 + 7, 27, 7 * 10 + 7, 7 * 10 + 4, 3 * 10 + 2, 77, 3 * 10 + 7]
    visits = count_like_the_agent(cells, grid.num_cells)
    assert visits[27] == 2 and visits[77] == 2 and visits.sum() == 7 and (visits > 0).sum() == 5


@pytest.mark.extended
def test_tiny_deepsea_training_run_writes_coverage(tiny_config, tmp_path):
    from rfig_exp.run.experiment import run_experiment

    size = 8
    cfg = tiny_config("env=deepsea", f"env.size={size}", "bonus=none", f"results_dir={tmp_path}")
    (summary,) = run_experiment(cfg)
    run = find_run(tmp_path, "deepsea", "none")
    with open(run / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    coverage = [float(r["coverage"]) for r in rows]
    # Reachable cells: column <= row, 36 of the 64.
    assert len(rows) == 2 and 0 < coverage[0] <= coverage[1] <= 36 / 64
    assert float(rows[0]["episode_length"]) == size
    if (run / "visits.npy").exists():
        visits = np.load(run / "visits.npy")
        assert visits.shape == (size, size) and visits.sum() == 256
        assert np.triu(visits, 1).sum() == 0 and visits[0, 0] == 256 // size

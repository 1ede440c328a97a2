"""State coverage curves, final-coverage table, visit heat maps (mazes too), env/ columns,
and readable axes for degenerate data."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
from analysis_fixtures import MAZE_EXTENT, MAZE_GRID, MAZE_LAYOUT, MC_GRID, STEPS, T, make_coverage_tree, write_run

from analysis import collect

REPS = 100


@pytest.fixture(scope="module")
def cov_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("cov")
    return root, make_coverage_tree(root)


def _png(path):
    return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_final_coverage_and_mean_visits_match_direct_computation(cov_tree):
    from analysis.makers.coverage import coverage_intervals, final_coverage, mean_visits

    root, truth = cov_tree
    coll = collect(root, "cov")
    for env, grid in (("mountaincar", MC_GRID), ("pointmaze_umaze", MAZE_GRID)):
        g, visits, notes = mean_visits(coll, env)
        assert notes == [] and g["shape"] == grid["shape"] and g["axes"] == grid["axes"]
        for bonus in ("none", "rfig"):
            n, mean = visits[bonus]
            v = truth["visits"][(env, bonus)]
            assert n == v.shape[0]
            np.testing.assert_allclose(mean, v.astype(np.float64).sum(axis=0) / v.shape[0])
            seeds, fc = final_coverage(coll, env, bonus)
            np.testing.assert_allclose(fc, truth["coverage"][(env, bonus)][:, -1])
    assert mean_visits(coll, "acrobot")[0] is None  # no grid: nothing
    assert len(final_coverage(coll, "acrobot", "rfig")[1]) == 0
    cov = coverage_intervals(coll, reps=REPS)
    assert set(cov) == {"mountaincar", "pointmaze_umaze"}
    for env in cov:
        for bonus in ("none", "rfig"):
            iv = cov[env][bonus]["iqm"]
            assert np.isclose(iv.point, scipy.stats.trim_mean(truth["coverage"][(env, bonus)][:, -1], 0.25))
            assert iv.lo <= iv.point <= iv.hi


def test_free_space_mask_against_a_loop():
    from analysis.makers.coverage import free_space_mask

    grid = {"bounds": [[-3.0, 3.0], [-2.5, 2.5]], "shape": [12, 7]}  # overhangs the maze in x, odd cells in y
    mask = free_space_mask(grid, {"layout": MAZE_LAYOUT, "extent": MAZE_EXTENT})
    assert mask.shape == (12, 7)
    for i in range(12):
        for j in range(7):
            x = -3.0 + (i + 0.5) * 6.0 / 12
            y = -2.5 + (j + 0.5) * 5.0 / 7
            col = int(np.floor(x + 2.5))           # 1 x 1 cells starting at xmin = -2.5
            row = int(np.floor(2.5 - y))           # row 0 is the top (ymax)
            want = 0 <= col < 5 and 0 <= row < 5 and MAZE_LAYOUT[row][col] == 0
            assert mask[i, j] == want, (i, j, x, y)
    assert mask.any() and not mask.all()


def test_heat_maps_draw_walls_and_only_free_visited_cells(cov_tree):
    import matplotlib.pyplot as plt

    from analysis.makers.coverage import draw_visit_maps, free_space_mask, mean_visits

    root, truth = cov_tree
    coll = collect(root, "cov")
    grid, visits, _ = mean_visits(coll, "pointmaze_umaze")
    fig = draw_visit_maps(coll, "pointmaze_umaze", grid, visits)
    try:
        axes = [ax for ax in fig.axes if ax.get_visible() and ax.images]
        assert [ax.get_title() for ax in axes] == ["PPO (n=3)", "RFIG (n=3)"]
        free = free_space_mask(grid, grid["maze"])
        for ax, bonus in zip(axes, ("none", "rfig"), strict=True):
            heat, walls = ax.images
            arr = heat.get_array()  # [y, x]: visits transposed
            mean = truth["visits"][("pointmaze_umaze", bonus)].mean(axis=0)
            np.testing.assert_array_equal(np.ma.getmaskarray(arr).T, ~(free & (mean > 0)))
            np.testing.assert_allclose(arr.T[free & (mean > 0)], mean[free & (mean > 0)])
            assert (mean[~free] > 0).any()  # there were visits in wall cells, and they are not drawn
            assert np.array_equal(np.ma.getmaskarray(walls.get_array()), np.asarray(MAZE_LAYOUT) == 0)
            assert tuple(walls.get_extent()) == tuple(MAZE_EXTENT)
            assert ax.get_xlabel() == "x" and ax.get_ylabel() == "y"
            assert type(heat.norm).__name__ == "LogNorm"
    finally:
        plt.close(fig)
    grid, visits, _ = mean_visits(coll, "mountaincar")
    fig = draw_visit_maps(coll, "mountaincar", grid, visits)
    try:
        ax = [a for a in fig.axes if a.images][0]
        assert ax.get_xlabel() == "position" and ax.get_ylabel() == "velocity"
        assert len(ax.images) == 1  # no maze, no walls
        np.testing.assert_allclose(ax.get_xlim(), MC_GRID["bounds"][0])
    finally:
        plt.close(fig)


def test_coverage_report_sections(cov_tree, tmp_path):
    from analysis.maker import ReportOptions
    from analysis.report import build_report

    root, _ = cov_tree
    coll = collect(root, "cov")
    res = build_report(coll, tmp_path, ReportOptions(reps=REPS), strict=True)
    assert res.errors == []
    index = (tmp_path / "index.md").read_text()
    for name in ("coverage", "visits_mountaincar", "visits_pointmaze_umaze", "env_distance", "intrinsic_reward"):
        assert _png(tmp_path / f"{name}.png") and (tmp_path / f"{name}.pdf").is_file(), name
        assert f"({name}.png)" in index, name
    assert not (tmp_path / "visits_acrobot.png").exists()
    for title in ("## State coverage", "## Final state coverage", "## Where each method explored",
                  "## Env metric: distance"):
        assert title in index, title
    table = (tmp_path / "final_coverage.md").read_text()
    assert "MountainCar" in table and "PointMaze-UMaze" in table and "Acrobot" not in table
    assert "maze walls in dark grey" in index


def test_broken_visits_are_reported_not_drawn(tmp_path):
    from analysis.makers.coverage import mean_visits

    r = np.linspace(0, 1, T)
    good = np.ones(MC_GRID["shape"])
    write_run(tmp_path, "v", "mountaincar", "rfig", 0, STEPS, r, visits=good, summary={"coverage_grid": MC_GRID})
    write_run(tmp_path, "v", "mountaincar", "rfig", 1, STEPS, r, visits=np.ones((3, 3)),
              summary={"coverage_grid": MC_GRID})
    write_run(tmp_path, "v", "mountaincar", "rfig", 2, STEPS, r, visits=good * 5, summary={"coverage_grid": MC_GRID})
    coll = collect(tmp_path, "v")
    grid, visits, notes = mean_visits(coll, "mountaincar")
    assert visits["rfig"][0] == 2
    np.testing.assert_allclose(visits["rfig"][1], 3.0)
    assert any("seed 1" in n and "shape (3, 3)" in n for n in notes)


# --------------------------------------------------------------------------- readable axes


def _tick_texts(ax):
    ax.figure.canvas.draw()
    return [t.get_text() for t in ax.get_yticklabels() if t.get_text()]


def test_flat_curves_get_readable_ticks(tmp_path):
    import matplotlib.pyplot as plt

    from analysis.plots import draw_env_curves

    # Every seed stuck at -200 in every window (MountainCar without a bonus), plus a
    # constant with float noise: matplotlib alone labels the latter 0.00 ... 1.00 under a
    # "1e-13+5e-1" offset text.
    for s in range(3):
        write_run(tmp_path, "flat", "mountaincar", "none", s, STEPS, np.full(T, -200.0))
        write_run(tmp_path, "flat", "acrobot", "none", s, STEPS, np.full(T, 0.5) + s * 1e-13)
    coll = collect(tmp_path, "flat")
    fig = draw_env_curves(coll)
    try:
        for ax in [a for a in fig.axes if a.lines]:
            texts = _tick_texts(ax)
            assert len(texts) >= 2 and len(set(texts)) == len(texts), texts
            assert not any("e-1" in t or "e+" in t for t in texts), texts
            assert ax.yaxis.get_offset_text().get_text() == ""
            lo, hi = ax.get_ylim()
            assert hi - lo > 1e-3 and lo < ax.lines[0].get_ydata()[0] < hi
    finally:
        plt.close(fig)


def test_intrinsic_reward_plot_is_log_scale_and_skips_non_positive(tmp_path):
    import matplotlib.pyplot as plt

    from analysis.plots import draw_env_curves

    ir = np.array([0.0, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 1.0, 1.0, 1.0, 1.0])
    for s in range(3):
        write_run(tmp_path, "ir", "acrobot", "rfig", s, STEPS, np.linspace(0, 1, T), extra={"intrinsic_reward": ir})
    coll = collect(tmp_path, "ir")
    fig = draw_env_curves(coll, column="intrinsic_reward", ylabel="bonus", methods=["rfig"], log=True)
    try:
        ax = [a for a in fig.axes if a.lines][0]
        assert ax.get_yscale() == "log"
        y = ax.lines[0].get_ydata()
        assert np.isnan(y[0]) and np.allclose(y[1:], ir[1:])  # the zero is skipped, not clipped
    finally:
        plt.close(fig)


def test_readable_formatter_labels():
    from analysis.plots import ReadableFormatter

    f = ReadableFormatter()
    f.set_locs([-210.0, -205.0, -200.0, -195.0])
    assert [f(v) for v in (-210.0, -205.0, -200.0)] == ["-210", "-205", "-200"]
    f.set_locs([0.3, 0.30000000000000004 + 1e-4, 0.3002])
    assert f(0.3) == "0.3000" and f(0.3002) == "0.3002"
    f.set_locs([0.0, 2e-5, 4e-5])
    assert f(0.0) == "0" and f(2e-5) == "2e-05" and f.get_offset() == ""
    f.set_locs([0.0, 1e6, 2e6])
    assert f(2e6) == "2e+06"

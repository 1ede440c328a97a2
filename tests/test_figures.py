"""What a reader sees in the report's figures: variants told apart, legends
inside the figure, measured points marked, tick labels that never run together."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from analysis_fixtures import STEP, make_sensitivity_tree, write_run

from analysis import collect
from analysis.aggregate import compute_aggregates
from analysis.makers.sensitivity import draw_sensitivity, find_sweeps
from analysis.plots import MARK_POINTS_UP_TO, _overlapping, draw_env_curves, spread_panels, tidy_axis


@pytest.fixture(scope="module")
def sens(tmp_path_factory):
    root = tmp_path_factory.mktemp("sens")
    make_sensitivity_tree(root, values=(0.5, 2.0, 4.0), n_seeds=3)
    return collect(root, "sens")


def _legend_fits(fig) -> bool:
    renderer = fig.canvas.get_renderer()
    return all(leg.get_window_extent(renderer).width <= fig.bbox.width for leg in fig.legends)


def test_variants_of_one_bonus_get_their_own_line_style_and_the_points_are_marked(sens):
    fig = draw_env_curves(sens)
    try:
        ax = fig.axes[0]
        rfig = [line for line in ax.lines if line.get_color() in {sens.colour(m) for m in sens.methods
                                                                  if sens.bonus_of(m) == "rfig"}]
        assert len(rfig) == 4 and len({str(line.get_linestyle()) for line in rfig}) == 4
        assert len(ax.lines[0].get_xdata()) <= MARK_POINTS_UP_TO
        assert all(line.get_marker() == "o" for line in ax.lines)
        assert _legend_fits(fig)
    finally:
        plt.close(fig)


def test_a_long_curve_is_a_plain_line_and_a_long_legend_wraps_inside_the_figure(tmp_path):
    steps = STEP * np.arange(1, 41)
    for k in range(10):  # ten variants with long labels in one narrow panel
        write_run(tmp_path, "many", "mountaincar", "rfig", 0, steps, np.linspace(0, k, 40),
                  overrides={"bonus.lengthscale_scale": 0.25 * (k + 1), "agent.total_timesteps": 999})
    fig = draw_env_curves(collect(tmp_path, "many"))
    try:
        assert all(line.get_marker() in ("", "None") for line in fig.axes[0].lines)
        assert _legend_fits(fig) and fig.legends[0]._ncols < 6
    finally:
        plt.close(fig)


def test_the_sensitivity_legend_names_the_swept_key(sens):
    sweeps = find_sweeps(sens)
    fig = draw_sensitivity(sens, compute_aggregates(sens, reps=20), "bonus.lengthscale", sweeps["bonus.lengthscale"])
    try:
        texts = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
        assert texts == ["RFIG, lengthscale swept"]
    finally:
        plt.close(fig)


def test_interval_plot_tick_labels_never_run_together():
    """Ticks 0.872 0.880 ... in a narrow panel, and 0.96/0.60 at the edges of neighbours."""
    from rliable import plot_utils

    pts = {"A": np.array([0.97, 0.89, 0.95, 0.03]), "B": np.array([0.9, 0.88, 0.72, 0.3])}
    ivs = {"A": np.array([[0.94, 0.87, 0.9, 0.0], [1.0, 0.90, 0.99, 0.06]]),
           "B": np.array([[0.80, 0.87, 0.6, 0.2], [1.0, 0.89, 0.8, 0.45]])}
    fig, axes = plot_utils.plot_interval_estimates(
        pts, ivs, metric_names=["IQM", "Median", "Mean", "Optimality gap"], algorithms=["A", "B"],
        colors={"A": "#D55E00", "B": "#555555"}, xlabel="score", subfigure_width=3.2, row_height=0.45)
    try:
        for k, ax in enumerate(axes):
            tidy_axis(ax, [v for a in pts for v in (pts[a][k], *ivs[a][:, k])], "x")
        assert _overlapping(fig, list(axes))  # the case is real before the fix
        width = fig.get_figwidth()
        spread_panels(fig, axes)
        assert not _overlapping(fig, list(axes))
        assert width <= fig.get_figwidth() < 1.5 * width
    finally:
        plt.close(fig)

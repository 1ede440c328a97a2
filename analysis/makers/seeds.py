"""What the reporting literature asks of a careful comparison beyond an aggregate with its
interval (Agarwal et al. 2021; Patterson et al. 2024): every seed's own curve beside the IQM, so a
reader sees the spread the interval summarises (one bad seed, two modes), and rliable's
performance profiles, the whole distribution of normalised final scores rather than one statistic.

Makers: ``seed_curves`` (one panel per env x method: a thin line per seed, the IQM over them,
rows sharing a y axis) and ``performance_profiles`` (the fraction of runs whose normalised final
score exceeds tau, with 95% stratified-bootstrap bands, over the envs of the cross-env aggregates)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, MaxNLocator

from ..aggregate import Aggregates, _take_runs, iqm
from ..bootstrap import bootstrap, stream_seed
from ..carried import carried_marks, carried_note
from ..collect import Collection
from ..maker import ReportContext, Section
from ..names import env_label
from ..plots import _DPI, _figure_md, _save, _steps_fmt, tidy_axis

TAU_POINTS = 101  # thresholds of a performance profile
# The per-seed figure has a panel per env x method (60 on the paper's grid): at the reports' 150 dpi
# its PNG is 1.7 MB; at this one about 0.8 MB, the lines still apart.
SEED_CURVES_DPI = 90
# That dpi keeps the paper grid's file small; a figure of a few panels (a sweep's one env) is saved at
# the other figures' dpi instead, so its labels are not a few pixels tall (one env and two methods
# came out 478 x 203 px). Where the figure is still narrower than MIN_WIDTH_PX, its panels grow (up
# to PANEL_GROWTH times) and its dpi rises until it is that wide.
FEW_PANELS = 16
MIN_WIDTH_PX = 1000
MAX_PIXELS = 4e6  # about twice the paper grid's
PANEL_GROWTH = 1.5
PANEL_IN = (2.2, 1.55)  # a panel's width and height (inches) on the paper's grid
MARGIN_IN = (0.8, 0.6)


def seed_curves_layout(n_envs: int, n_methods: int) -> tuple[tuple[float, float], int]:
    """(figure size in inches, dpi) of the per-seed figure: the paper grid's panel size at
    SEED_CURVES_DPI (the report's dpi for at most FEW_PANELS panels), with bigger panels and a
    higher dpi where that is narrower than MIN_WIDTH_PX."""
    (pw, ph), (mw, mh) = PANEL_IN, MARGIN_IN
    dpi = _DPI if n_envs * n_methods <= FEW_PANELS else SEED_CURVES_DPI
    width = pw * n_methods + mw
    if width * dpi >= MIN_WIDTH_PX:
        return (width, ph * n_envs + mh), dpi
    grow = min(PANEL_GROWTH, (MIN_WIDTH_PX / dpi - mw) / (pw * n_methods))
    width = pw * grow * n_methods + mw
    height = ph * grow * n_envs + mh
    # The saved figure is cropped to its contents (bbox_inches="tight"): 5% to spare. A tall
    # one-method column is kept under MAX_PIXELS rather than made 1000 px wide.
    dpi = max(dpi, int(np.ceil(1.05 * MIN_WIDTH_PX / width)))
    dpi = max(SEED_CURVES_DPI, min(dpi, int(np.sqrt(MAX_PIXELS / (width * height)))))
    return (width, height), dpi


# --------------------------------------------------------------------------- per-seed curves


def draw_seed_curves(coll: Collection, marks: dict[str, str] | None = None):
    """One row per env, one column per method: each used run's return curve as a thin line, the
    IQM over them as a thick one; a row shares its y axis. None when nothing is drawn."""
    envs = [e for e in coll.envs if any(len(coll.env_data[e].returns(m)[0]) for m in coll.methods)]
    methods = [m for m in coll.methods if any(len(coll.env_data[e].returns(m)[0]) for e in envs)]
    if not envs or not methods:
        return None
    fig, axes = plt.subplots(len(envs), len(methods), figsize=seed_curves_layout(len(envs), len(methods))[0],
                             squeeze=False, sharey="row", layout="constrained")
    n_usual = {m: Counter(len(coll.env_data[e].returns(m)[0]) for e in envs).most_common(1)[0][0] for m in methods}
    for i, env in enumerate(envs):
        ed = coll.env_data[env]
        drawn = []
        for j, m in enumerate(methods):
            ax = axes[i, j]
            seeds, values = ed.returns(m)
            colour = coll.colour(m)
            for row in values:
                ax.plot(ed.steps, row, color=colour, linewidth=0.5, alpha=0.45)
            if len(seeds):
                ax.plot(ed.steps, iqm(values, axis=0), color="black", linewidth=1.4)
                drawn.append(values.ravel())
            # n in the column's title; a panel says its own only where it has another
            usual = n_usual[m]
            ax.set_title(f"{coll.label(m)} (n={usual})" if i == 0 else "", fontsize=8)
            if len(seeds) != usual:
                ax.text(0.98, 0.04, f"n={len(seeds)}", transform=ax.transAxes, ha="right", fontsize=7)
            ax.xaxis.set_major_locator(MaxNLocator(3))
            ax.xaxis.set_major_formatter(FuncFormatter(_steps_fmt))
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.2, linewidth=0.5)
            ax.spines[["top", "right"]].set_visible(False)
            if i < len(envs) - 1:
                ax.tick_params(labelbottom=False)
        tidy_axis(axes[i, 0], np.concatenate(drawn) if drawn else [], "y")
        label = env_label(env).replace(" (", "\n(")  # a task's options on a line of their own
        axes[i, 0].set_ylabel(f"{label}{' ' + marks[env] if marks and env in marks else ''}", fontsize=8)
    fig.supxlabel("Environment steps", fontsize=9)
    return fig


def seed_curves_dpi(fig) -> int:
    """The dpi a figure of draw_seed_curves is saved at (seed_curves_layout, from its grid)."""
    n_envs, n_methods = fig.axes[0].get_subplotspec().get_gridspec().get_geometry()
    return seed_curves_layout(n_envs, n_methods)[1]


def seed_curves_maker(ctx: ReportContext, out_dir: Path):
    coll = ctx.data
    marks = carried_marks(coll, ctx.options.last_k)
    fig = draw_seed_curves(coll, marks)
    if fig is None:
        return None
    files = _save(fig, out_dir / "seed_curves", dpi=seed_curves_dpi(fig))
    note = carried_note(coll, ctx.options.last_k, "last window")
    caption = ("*Every seed's episode return (thin lines, the method's colour) beside the interquartile mean over "
               "them (black): one row per env, sharing its y axis, one column per method (n = seeds). Windows where "
               "no episode finished carry the previous window's return" + (f"; {note}" if note else ".") + "*")
    return Section("Learning curves, seed by seed", _figure_md(files, out_dir, "per-seed curves", caption), files)


# --------------------------------------------------------------------------- performance profiles


def normalised_scores(agg: Aggregates) -> dict[str, np.ndarray]:
    """method -> (runs, envs) normalised final scores over the cross-env aggregates' envs, the same
    matrix the aggregate intervals resample (the lowest ``runs_per_method`` seeds of each env)."""
    out = {}
    for b in agg.agg_methods:
        n = agg.runs_per_method.get(b)
        if not n or not agg.agg_envs:
            continue
        out[b] = np.stack([agg.normalisation.apply(e, _take_runs(agg.scores[e][b], n)[1]) for e in agg.agg_envs],
                          axis=1)
    return out


def performance_profiles(scores: dict[str, np.ndarray], tau: np.ndarray, reps: int, seed: int = 0):
    """rliable's run-score distributions: method -> fraction of runs (over every env and run) whose
    score exceeds each tau, with stratified-bootstrap 95% intervals (``(2, len(tau))``). The same
    numbers as ``rliable.library.create_performance_profile`` (score distributions), vectorised."""
    def profile(x: np.ndarray) -> np.ndarray:
        return (x.reshape(-1, 1) > tau[None, :]).mean(axis=0)

    points, intervals = bootstrap(scores, profile, reps, seed)
    return {b: np.asarray(points[b]) for b in scores}, {b: np.asarray(intervals[b]) for b in scores}


def plot_performance_profiles(agg: Aggregates, coll: Collection, base: Path) -> list[Path]:
    """The profiles of every aggregated method on one axis, rliable's plot."""
    from rliable import plot_utils

    scores = normalised_scores(agg)
    if not scores:
        return []
    every = np.concatenate([s.ravel() for s in scores.values()])
    tau = np.linspace(min(0.0, float(every.min())), max(1.0, float(every.max())), TAU_POINTS)
    points, intervals = performance_profiles(scores, tau, agg.reps, stream_seed(agg.seed, "profiles"))
    labels = {b: coll.label(b) for b in scores}
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    plot_utils.plot_performance_profiles(
        {labels[b]: points[b] for b in scores}, tau, {labels[b]: intervals[b] for b in scores}, ax=ax,
        colors={labels[b]: coll.colour(b) for b in scores}, linestyles={labels[b]: coll.linestyle(b) for b in scores},
        xlabel=r"Normalised final score ($\tau$)", ylabel=r"Fraction of runs with score > $\tau$",
        labelsize="large", ticklabelsize="medium")
    ax.legend(frameon=False, fontsize=9, loc="lower left")
    ax.set_title(f"Across {len(agg.agg_envs)} env(s)", fontsize=11)
    return _save(fig, base)


def performance_profiles_maker(ctx: ReportContext, out_dir: Path):
    agg = ctx.aggregates
    files = plot_performance_profiles(agg, ctx.data, out_dir / "performance_profiles")
    if not files:
        return None
    runs = ", ".join(f"{ctx.data.label(b)} {n}" for b, n in agg.runs_per_method.items())
    caption = (f"*Performance profiles (rliable's score distributions): the fraction of runs, over "
               f"{len(agg.agg_envs)} env(s) and the runs per env of the aggregates ({runs}), whose normalised final "
               f"score exceeds tau; bands: 95% stratified-bootstrap intervals over runs ({agg.reps} reps). A curve "
               "above another everywhere is better at every threshold; curves that cross trade a better typical run "
               f"for a worse tail. Normalisation: {agg.normalisation.description}.*")
    return Section("Performance profiles", _figure_md(files, out_dir, "performance profiles", caption), files)

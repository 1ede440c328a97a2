"""Figures (PNG + PDF). Labels and colours come from the Collection
(analysis.methods), so a method has one label and one colour in every figure."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # reports are written on headless machines; never open a window

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.legend_handler import HandlerTuple  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import (  # noqa: E402
    Formatter,
    FuncFormatter,
    MaxNLocator,  # noqa: E402
)

from .aggregate import OVERALL_METRICS, Aggregates, curve_stats, poi_label  # noqa: E402
from .collect import Collection  # noqa: E402
from .maker import ReportContext, Section  # noqa: E402
from .names import env_label  # noqa: E402
from .runs import RETURN_COLUMN  # noqa: E402

FORMATS = ("png", "pdf")
_DPI = 150
# A curve of this few evaluation points gets a marker at each one: between them the line is
# only an interpolation, and a bare polyline hides where the measurements are.
MARK_POINTS_UP_TO = 12


def point_marker(n_points: int) -> str:
    return "o" if n_points <= MARK_POINTS_UP_TO else ""


def fit_legend(fig, handles, labels, max_cols: int, rows_allowed: int = 2, **kwargs):
    """``fig.legend`` with as many columns (at most ``max_cols``) as fit the figure's width: a
    wider legend would widen the saved figure (bbox_inches="tight") around empty space. The
    figure's height allows for ``rows_allowed`` rows of legend; it grows by any rows beyond, so
    that a long legend leaves the panels their size (constrained layout would shrink them)."""
    renderer = fig.canvas.get_renderer()
    if len(labels) > 12:
        kwargs["fontsize"] = min(kwargs.get("fontsize", 10), 8.5)
    for ncol in range(max(1, min(max_cols, len(labels))), 0, -1):
        legend = fig.legend(handles, labels, ncol=ncol, **kwargs)
        if ncol == 1 or legend.get_window_extent(renderer).width <= fig.bbox.width:
            break
        legend.remove()
    rows = math.ceil(len(labels) / ncol)
    if rows > rows_allowed:
        height = legend.get_window_extent(renderer).height / fig.dpi
        fig.set_figheight(fig.get_figheight() + height * (rows - rows_allowed) / rows)
    return legend


def spread_panels(fig, axes, max_tries: int = 8) -> None:
    """Tick labels of side-by-side panels that never run into each other: fewer ticks where a
    panel's own labels touch, then wider gaps between panels (the figure widened to keep each
    panel's width) where neighbours' labels do. rliable's interval plot leaves gaps of 0.11 of a
    panel, so "1.00" and "0.87" of two panels read "1.000.87"."""
    axes = list(np.atleast_1d(axes))
    for ax in axes:
        for bins in (3, 2):
            if not _overlapping(fig, [ax]):
                break
            ax.xaxis.set_major_locator(MaxNLocator(bins))
    n, wspace = len(axes), fig.subplotpars.wspace
    for _ in range(max_tries):
        if not _overlapping(fig, axes, across=True):
            return
        wider = wspace * 1.5 + 0.1
        fig.set_figwidth(fig.get_figwidth() * (n + (n - 1) * wider) / (n + (n - 1) * wspace))
        fig.subplots_adjust(wspace=wider)
        wspace = wider


def _overlapping(fig, axes, across: bool = False) -> bool:
    """Whether two visible x tick labels of ``axes`` overlap or come within 2 px (``across``:
    only labels of different axes are compared)."""
    renderer = fig.canvas.get_renderer()
    boxes = [(i, label.get_window_extent(renderer).padded(1.0)) for i, ax in enumerate(axes)
             for label in ax.get_xticklabels() if label.get_visible() and label.get_text()
             and min(ax.get_xlim()) <= label.get_position()[0] <= max(ax.get_xlim())]  # drawn ticks only
    return any(a.overlaps(b) for k, (i, a) in enumerate(boxes) for j, b in boxes[k + 1:] if not across or i != j)


def _steps_fmt(x, _pos=None) -> str:
    if abs(x) >= 1e6:
        return f"{x / 1e6:.3g}M"
    if abs(x) >= 1e3:
        return f"{x / 1e3:.3g}k"
    return f"{x:.3g}"


def _save(fig, base: Path, dpi: int = _DPI) -> list[Path]:
    base.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in FORMATS:
        p = base.with_suffix("." + ext)
        # No creation date in a PDF: a figure redrawn from unchanged data is byte-identical.
        fig.savefig(p, dpi=dpi, bbox_inches="tight", metadata={"CreationDate": None} if ext == "pdf" else None)
        paths.append(p)
    plt.close(fig)
    return paths


def _seed_count_label(counts: list[int]) -> str:
    lo, hi = min(counts), max(counts)
    return f"n={lo}" if lo == hi else f"n={lo}-{hi}"


class ReadableFormatter(Formatter):
    """Tick labels that need no offset text: each label is the tick's own value,
    with as many digits as the tick spacing needs (so close ticks stay
    distinct) and scientific notation only for very large or small numbers."""

    def __init__(self):
        self._ticks = np.zeros(0)

    def set_locs(self, locs):
        self._ticks = np.asarray(locs, float)

    def __call__(self, x, pos=None):
        locs = self._ticks[np.isfinite(self._ticks)]
        diffs = np.diff(np.sort(locs)) if len(locs) > 1 else np.zeros(0)
        diffs = diffs[diffs > 0]
        step = float(diffs.min()) if len(diffs) else (abs(x) or 1.0)
        if abs(x) < step * 1e-6:
            return "0"
        mag = float(np.max(np.abs(locs))) if len(locs) else abs(x)
        if mag >= 1e6 or mag < 1e-3:
            digits = max(0, int(math.floor(math.log10(mag))) - int(math.floor(math.log10(step))))
            return f"{x:.{min(digits, 8)}e}"
        decimals = max(0, -int(math.floor(math.log10(step) + 1e-9)))
        # Ticks such as 0.2, 0.35, 0.5 need two decimals although their spacing needs one:
        # add digits until every tick's label is its exact value.
        while decimals < 8 and np.any(np.abs(np.round(locs, decimals) - locs) > step * 1e-6):
            decimals += 1
        return f"{x:.{decimals}f}"

    def get_offset(self) -> str:
        return ""


def min_span_limits(lo: float, hi: float, min_span: float,
                    bounds: tuple[float, float] | None = None) -> tuple[float, float] | None:
    """Axis limits at least ``min_span`` wide around data in [lo, hi], kept inside ``bounds`` (a
    metric's natural range, e.g. (0, 1) for a fraction) by shifting rather than cutting; None when
    the data already span that much (autoscaling is then honest). A metric that moves by 0.006 is
    drawn as flat as it is, not on an axis of 0.400-0.406 that makes it look as if it varied."""
    if hi - lo >= min_span:
        return None
    a = 0.5 * (lo + hi) - 0.5 * min_span
    b = a + min_span
    if bounds is not None:
        shift = max(bounds[0] - a, 0.0) - max(b - bounds[1], 0.0)
        a, b = max(a + shift, bounds[0]), min(b + shift, bounds[1])
    return a, b


def tidy_axis(ax, values, axis: str = "y", log: bool = False, min_span: float | None = None,
              bounds: tuple[float, float] | None = None) -> None:
    """Readable ticks on a value axis. values: the data drawn on it (any shape).

    A degenerate range (every finite value equal up to 1e-9 relative, e.g. a
    flat curve or all seeds at -200) gets limits of +-5% around the value (+-1
    at zero; x/1.5..x*1.5 on a log axis) instead of matplotlib's tiny
    autoscaled span whose labels need a 1e-16 offset; linear axes get
    ReadableFormatter (never an offset text). ``min_span`` (linear axes): the
    axis spans at least this much, inside ``bounds`` (:func:`min_span_limits`)."""
    v = np.asarray(values, float).ravel()
    v = v[np.isfinite(v) & ((v > 0) if log else True)]
    set_lim = ax.set_ylim if axis == "y" else ax.set_xlim
    if v.size and min_span and not log:
        limits = min_span_limits(float(v.min()), float(v.max()), min_span, bounds)
        if limits is not None:
            set_lim(*limits)
            v = v[:0]  # the limits are set: no degenerate-range rule on top
    if v.size:
        lo, hi = float(v.min()), float(v.max())
        c = 0.5 * (lo + hi)
        if hi - lo <= 1e-9 * max(1.0, abs(c)):
            if log:
                set_lim(c / 1.5, c * 1.5)
            else:
                pad = 0.05 * abs(c) if c != 0 else 1.0
                set_lim(c - pad, c + pad)
    if not log:
        getattr(ax, f"{axis}axis").set_major_formatter(ReadableFormatter())


def _panel_grid(n: int) -> tuple[int, int]:
    # 4 columns as in the paper's 3 x 4 grid; 3 when that fills the rows better.
    ncols = n if n <= 4 else (3 if n in (5, 6, 9) else 4)
    return ncols, math.ceil(n / ncols)


def curve_zorder(coll: Collection, method: str) -> int:
    """The z-order of a method's curve and band: the proposed method (the primary method of a bonus of
    role method, analysis.names) on top of every other, so that it reads first; its variants stay
    with the rest."""
    return 3 if coll.bonus_of(method) == method and coll.names.role(method) == "method" else 2


def draw_env_curves(coll: Collection, column: str = RETURN_COLUMN, ylabel: str = "Episode return",
                    methods: list[str] | None = None, log: bool = False, min_span: float | None = None,
                    bounds: tuple[float, float] | None = None, marks: dict[str, str] | None = None):
    """The figure of plot_env_curves, not saved (None if nothing to plot).

    log: logarithmic y axis; non-positive values of the IQM and of the band
    are skipped (not drawn) rather than clipped. min_span, bounds: each
    panel's y axis spans at least min_span inside bounds (tidy_axis). marks:
    env -> a mark appended to its panel's title (explained by the caption)."""
    methods = methods or coll.methods
    panels = []
    for env in coll.envs:
        ed = coll.env_data[env]
        lines = {}
        for b in methods:
            seeds, v = ed.returns(b) if column == RETURN_COLUMN else coll.column(env, b, column)
            if not len(seeds):
                continue
            st = curve_stats(v)
            if log:
                st = {k: (np.where(a > 0, a, np.nan) if k != "n" else a) for k, a in st.items()}
            if np.isfinite(st["iqm"]).any():
                lines[b] = (len(seeds), st)
        if lines:
            panels.append((env, ed.steps, lines))
    if not panels:
        return None
    ncols, nrows = _panel_grid(len(panels))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols + 0.6, 2.6 * nrows + 0.9),
                             squeeze=False, layout="constrained")
    counts: dict[str, list[int]] = {}
    for ax, (env, steps, lines) in zip(axes.flat, panels, strict=False):
        drawn = []
        for b, (n, st) in lines.items():
            counts.setdefault(b, []).append(n)
            c = coll.colour(b)
            z = curve_zorder(coll, b)
            ax.fill_between(steps, st["p25"], st["p75"], color=c, alpha=0.18, linewidth=0, zorder=z)
            ax.plot(steps, st["iqm"], color=c, linewidth=1.7, zorder=z + 0.5, linestyle=coll.linestyle(b),
                    marker=point_marker(len(steps)), markersize=3.5)
            drawn += [st["iqm"], st["p25"], st["p75"]]
        if log:
            ax.set_yscale("log")
        ax.set_title(env_label(env), fontsize=11)
        ax.xaxis.set_major_formatter(FuncFormatter(_steps_fmt))
        ax.xaxis.set_major_locator(MaxNLocator(4))
        if not log:
            ax.yaxis.set_major_locator(MaxNLocator(5))
        tidy_axis(ax, drawn, "y", log=log, min_span=min_span, bounds=bounds)
        if marks and env in marks:
            ax.set_title(f"{env_label(env)} {marks[env]}", fontsize=11)
        ax.tick_params(labelsize=8.5)
        ax.grid(alpha=0.25, linewidth=0.6)
        ax.spines[["top", "right"]].set_visible(False)
        if len(steps) > 1:
            ax.set_xlim(steps[0], steps[-1])
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    # x label on the lowest visible panel of each column (a figure-level
    # supxlabel would collide with the legend underneath).
    for col in range(ncols):
        visible = [axes[r, col] for r in range(nrows) if r * ncols + col < len(panels)]
        if visible:
            visible[-1].set_xlabel("Environment steps", fontsize=10)
    fig.supylabel(ylabel, fontsize=11)
    shown = [b for b in methods if b in counts]
    marker = point_marker(len(panels[0][1]))
    handles = [(Patch(facecolor=coll.colour(b), alpha=0.18, linewidth=0),
                Line2D([], [], color=coll.colour(b), linewidth=2.2, linestyle=coll.linestyle(b), marker=marker,
                       markersize=3.5)) for b in shown]
    labels = [f"{coll.label(b)} ({_seed_count_label(counts[b])})" for b in shown]
    fit_legend(fig, handles, labels, 4 if len(shown) > 6 else 6, loc="outside lower center", frameon=False,
               fontsize=10, handler_map={tuple: HandlerTuple(ndivide=1)}, handlelength=3.0)
    return fig


def plot_env_curves(coll: Collection, base: Path, column: str = RETURN_COLUMN, ylabel: str = "Episode return",
                    methods: list[str] | None = None, log: bool = False, min_span: float | None = None,
                    bounds: tuple[float, float] | None = None, marks: dict[str, str] | None = None) -> list[Path]:
    """One panel per env (4 columns, paper order): per method, the IQM over
    seeds at each eval point and the 25-75th percentile band. Runs counted are
    those with RunCurve.used. Returns the files written ([] if nothing to plot)."""
    fig = draw_env_curves(coll, column, ylabel, methods, log, min_span, bounds, marks)
    return _save(fig, base) if fig is not None else []


# The aggregate panels that read on one scale (a normalised score): they share an x axis. The
# optimality gap (1 - mean of min(score, 1)) reads the other way; it gets an axis of the same width.
SHARED_SCORE_METRICS = ("IQM", "Median", "Mean")


def shared_width_limits(ranges: list[tuple[float, float]], groups: list[list[int]],
                        pad: float = 0.05) -> list[tuple[float, float]]:
    """Axis limits per panel, panels of one group (indices into ``ranges``) on the same limits and
    every panel as wide as the widest group's data (plus ``pad`` of it each side): a difference
    is as long in one panel as in another, and compared panels read against one scale."""
    spans = []
    for group in groups:
        spans.append((min(ranges[i][0] for i in group), max(ranges[i][1] for i in group)))
    width = max(hi - lo for lo, hi in spans) * (1 + 2 * pad) or 1e-3
    out: list[tuple[float, float]] = [(0.0, 0.0)] * len(ranges)
    for group, (lo, hi) in zip(groups, spans, strict=True):
        centre = 0.5 * (lo + hi)
        for i in group:
            out[i] = (centre - width / 2, centre + width / 2)
    return out


def plot_aggregate_intervals(agg: Aggregates, base: Path, coll: Collection) -> list[Path]:
    """rliable interval plot: IQM / median / mean / optimality gap of normalised
    final scores across envs, with stratified-bootstrap CIs; the score panels on
    one x axis, the gap's as wide (:func:`shared_width_limits`)."""
    drawn = draw_aggregate_intervals(agg, coll)
    return _save(drawn[0], base) if drawn else []


def draw_aggregate_intervals(agg: Aggregates, coll: Collection):
    """The figure of plot_aggregate_intervals and its axes, not saved (None if nothing to plot)."""
    from rliable import plot_utils

    methods = [b for b in agg.agg_methods if b in agg.overall]
    if not methods:
        return None
    labels = [coll.label(b) for b in methods]
    pts = {coll.label(b): np.array([agg.overall[b][m].point for m in OVERALL_METRICS]) for b in methods}
    ivs = {coll.label(b): np.array([[agg.overall[b][m].lo for m in OVERALL_METRICS],
                                      [agg.overall[b][m].hi for m in OVERALL_METRICS]]) for b in methods}
    norm = agg.normalisation
    xlabel = "Normalised final score (" + ("min-max" if norm.kind == "minmax" else f"{norm.reference} = 1") + ")"
    fig, axes = plot_utils.plot_interval_estimates(
        pts, ivs, metric_names=list(OVERALL_METRICS), algorithms=labels,
        colors={coll.label(b): coll.colour(b) for b in methods}, xlabel=xlabel,
        subfigure_width=3.2, row_height=0.45,
        # the label sits at a figure fraction: keep it ~0.6 in below the axes whatever the height
        xlabel_y_coordinate=-0.6 / (0.45 * len(methods)))
    ranges = [(min(min(pts[lab][k], ivs[lab][0, k]) for lab in pts), max(max(pts[lab][k], ivs[lab][1, k])
                                                                        for lab in pts))
              for k in range(len(OVERALL_METRICS))]
    shared = [k for k, m in enumerate(OVERALL_METRICS) if m in SHARED_SCORE_METRICS]
    groups = [shared] + [[k] for k in range(len(OVERALL_METRICS)) if k not in shared]
    limits = shared_width_limits(ranges, groups)
    for k, ax in enumerate(np.atleast_1d(axes)):
        ax.set_xlim(*limits[k])
        ax.xaxis.set_major_locator(MaxNLocator(4))
        tidy_axis(ax, [], "x")
    spread_panels(fig, axes)
    return fig, axes


def plot_aggregate_curve(agg: Aggregates, base: Path, coll: Collection) -> list[Path]:
    """rliable sample-efficiency curve: IQM of normalised returns across envs
    and runs at each eval point, with pointwise bootstrap CIs."""
    from rliable import plot_utils

    methods = [b for b in agg.agg_methods if b in agg.curves]
    if not methods or len(agg.curve_x) == 0:
        return []
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    plot_utils.plot_sample_efficiency_curve(
        agg.curve_x, {coll.label(b): agg.curves[b][0] for b in methods},
        {coll.label(b): np.stack(agg.curves[b][1:]) for b in methods},
        algorithms=[coll.label(b) for b in methods],
        colors={coll.label(b): coll.colour(b) for b in methods},
        xlabel=agg.curve_xlabel, ylabel="IQM normalised return", ax=ax, labelsize="large",
        ticklabelsize="medium", marker=point_marker(len(agg.curve_x)), linewidth=2)
    styles = {coll.label(b): coll.linestyle(b) for b in methods}
    for line in ax.get_lines():
        line.set_linestyle(styles.get(line.get_label(), "-"))
    if agg.curve_xlabel.startswith("Environment"):
        ax.xaxis.set_major_formatter(FuncFormatter(_steps_fmt))
    tidy_axis(ax, [a for b in methods for a in agg.curves[b]], "y")
    ax.legend(frameon=False, fontsize=10, loc="best")
    ax.set_title(f"Across {len(agg.agg_envs)} env(s)", fontsize=11)
    return _save(fig, base)


def plot_probability_of_improvement(agg: Aggregates, base: Path, coll: Collection) -> list[Path]:
    """rliable P(X > Y) with bootstrap CIs, one bar per (X, Y): X the proposed method (of role method),
    Y each other method."""
    from rliable import plot_utils

    if not agg.poi:
        return []
    est = {f"{coll.label(x)},{coll.label(y)}": iv.point for x, y, iv, _ in agg.poi}
    ivs = {f"{coll.label(x)},{coll.label(y)}": np.array([iv.lo, iv.hi]) for x, y, iv, _ in agg.poi}
    fig, ax = plt.subplots(figsize=(4.6, 0.55 * len(est) + 1.2))
    plot_utils.plot_probability_of_improvement(
        est, ivs, ax=ax, colors=[coll.colour(y) for _, y, _, _ in agg.poi], xticks=[0.0, 0.25, 0.5, 0.75, 1.0],
        ticklabelsize="medium", labelsize="medium", left_ylabel="X", right_ylabel="Y", xlabel="P(X > Y)")
    ax.set_xlim(0, 1)
    ax.axvline(0.5, color="k", linestyle=":", linewidth=1, alpha=0.6)
    return _save(fig, base)


# --------------------------------------------------------------------------- registered makers


def _figure_md(files: list[Path], out_dir: Path, alt: str, caption: str) -> str:
    """The PNG with its caption. The PDF written beside it (same name) is not linked: the published
    reports commit their PNGs only (.gitignore), and a link to a file that is not there is broken."""
    png = next(p for p in files if p.suffix == ".png")
    return f"![{alt}]({png.relative_to(out_dir).as_posix()})\n\n{caption}".rstrip()


def curves_maker(ctx: ReportContext, out_dir: Path):
    from .carried import carried_marks, carried_note

    marks = carried_marks(ctx.data, ctx.options.last_k)
    files = plot_env_curves(ctx.data, out_dir / "curves", marks=marks)
    if not files:
        return None
    note = carried_note(ctx.data, ctx.options.last_k, "last window")
    caption = ("*Episode return per env: solid line = interquartile mean over seeds, band = 25th-75th percentiles "
               "(over seeds, at each evaluation point; n = seeds per method). Windows where no episode finished "
               "carry the previous window's return" + (f"; {note}" if note else ".") + "*")
    if ctx.data.include_incomplete:
        caption += " *Includes partial curves of incomplete runs.*"
    return Section("Learning curves", _figure_md(files, out_dir, "learning curves", caption), files)


def aggregate_intervals_maker(ctx: ReportContext, out_dir: Path):
    agg = ctx.aggregates
    files = plot_aggregate_intervals(agg, out_dir / "aggregate_scores", ctx.data)
    if not files:
        return None
    envs = ", ".join(map(env_label, agg.agg_envs))
    caption = (f"*Normalised final scores across {len(agg.agg_envs)} env(s) ({envs}): "
               f"point estimate (black tick) and 95% stratified-bootstrap CI ({agg.reps} reps, over runs). "
               "IQM, median and mean share one x axis; the optimality gap's axis is as wide, so a difference is "
               "as long in every panel. Lower optimality gap is better.*")
    return Section("Aggregate final scores", _figure_md(files, out_dir, "aggregate scores", caption), files)


def aggregate_curve_maker(ctx: ReportContext, out_dir: Path):
    agg = ctx.aggregates
    files = plot_aggregate_curve(agg, out_dir / "aggregate_curve", ctx.data)
    if not files:
        return None
    caption = (f"*IQM of normalised returns across envs and runs at each evaluation point, with pointwise 95% "
               f"stratified-bootstrap CIs ({agg.reps} reps, {len(agg.curve_x)} points).*")
    return Section("Aggregate learning curve", _figure_md(files, out_dir, "aggregate curve", caption), files)


def poi_maker(ctx: ReportContext, out_dir: Path):
    agg = ctx.aggregates
    files = plot_probability_of_improvement(agg, out_dir / "probability_of_improvement", ctx.data)
    if not files:
        return None
    caption = (f"*Probability that a run of {poi_label(ctx.data, agg.poi)} beats a run of the baseline on a random "
               "env (Mann-Whitney U / (n_x n_y), averaged over envs), 95% stratified independent bootstrap CIs "
               f"({agg.reps} reps).*")
    return Section("Probability of improvement", _figure_md(files, out_dir, "probability of improvement", caption),
                   files)


def intrinsic_maker(ctx: ReportContext, out_dir: Path):
    coll = ctx.data
    column = "intrinsic_reward"
    with_bonus = [b for b in coll.methods if coll.names.role(coll.bonus_of(b)) != "reference"]
    has = any(c.run.metrics is not None and column in c.run.metrics.columns
              for c in coll.curves() if c.run.method in with_bonus)
    if not with_bonus or not has:
        return None
    files = plot_env_curves(coll, out_dir / "intrinsic_reward", column=column, ylabel="Mean raw intrinsic reward",
                            methods=with_bonus, log=True)
    if not files:
        return None
    caption = ("*Mean raw (unnormalised) exploration bonus per evaluation window: IQM over seeds, "
               "25-75th percentile band; log scale (bonuses of different methods differ by orders of magnitude), "
               "non-positive values are not drawn.*")
    return Section("Intrinsic reward", _figure_md(files, out_dir, "intrinsic reward", caption), files)

"""State coverage: how much of an env's coverage grid each method reached, and where.

Reads, per run, the ``coverage`` column of metrics.csv (fraction of the grid's
cells visited so far, per window), ``visits.npy`` (final visit counts,
``[n0, n1]``: index i along ``coverage_grid.axes[0]``, j along ``axes[1]``)
and ``summary.json["coverage_grid"]``::

    {"axes": [name0, name1], "bounds": [[lo0, hi0], [lo1, hi1]], "shape": [n0, n1],
     "maze": null | {"layout": [[1, 1, 1], [1, 0, 1], ...], "extent": [xmin, xmax, ymin, ymax]}}

(maze layout rows top to bottom, 1 = wall; for a maze, axes[0] is x and
axes[1] is y). Envs without a grid have none of these and get nothing here.

Makers: coverage curves (IQM over seeds, 25-75th percentile band), a
final-coverage table (IQM over seeds with a 95% stratified-bootstrap CI),
visit heat maps (one figure per env, one panel per method, visits averaged
over seeds on a log colour scale, walls drawn for mazes) and curves of any
``env/<name>`` column (e.g. distance travelled, milestones reached).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap, LogNorm

from rfig_exp.results import contract as results
from rfig_exp.results.contract import RunSummary

from ..aggregate import Interval, _per_env_func
from ..bootstrap import bootstrap, stream_seed
from ..collect import Collection
from ..maker import ReportContext, Section
from ..markdown import Cell, render_latex, render_markdown
from ..names import env_label
from ..plots import _figure_md, _panel_grid, _save, plot_env_curves
from ..tables import MIN_SEEDS_FOR_CI, _write, few_seeds_note, separated_best

COVERAGE_COLUMN = "coverage"
ENV_PREFIX = "env/"
WALL_COLOUR = "#3b3b3b"
UNVISITED_COLOUR = "#f0f0f0"
# Coverage is a fraction of the grid, in [0, 1]: a panel's axis spans at least this much of it, so
# a coverage that moves by less (PointMaze-Medium's 0.398-0.406) looks as flat as it is.
COVERAGE_MIN_SPAN = 0.05


def has_column(coll: Collection, column: str, envs=None) -> bool:
    return any(c.run.metrics is not None and column in c.run.metrics.columns
               for c in coll.curves() if c.used and (envs is None or c.run.env in envs))


# --------------------------------------------------------------------------- coverage curves and table


def final_coverage(coll: Collection, env: str, method: str) -> tuple[np.ndarray, np.ndarray]:
    """(seeds (S,), final coverage (S,)) of the scored runs: each run's last
    finite ``coverage`` value (coverage only grows, so the last window is the
    run's total). Runs without a finite value are left out."""
    seeds, vals = coll.column(env, method, COVERAGE_COLUMN, scored=True)
    out_s, out_v = [], []
    for s, row in zip(seeds, vals, strict=True):
        finite = row[np.isfinite(row)]
        if finite.size:
            out_s.append(int(s))
            out_v.append(float(finite[-1]))
    return np.asarray(out_s, np.int64), np.asarray(out_v, float)


def coverage_intervals(coll: Collection, reps: int, seed: int = 0) -> dict[str, dict[str, dict]]:
    """env -> method -> {"n", "iqm": Interval} of final coverage over seeds."""
    out: dict[str, dict[str, dict]] = {}
    for env in coll.envs:
        finals = {m: final_coverage(coll, env, m)[1] for m in coll.methods}
        finals = {m: v for m, v in finals.items() if len(v)}
        if not finals:
            continue
        pts, ivs = bootstrap({m: v[:, None] for m, v in finals.items()}, _per_env_func, reps,
                             stream_seed(seed, "coverage", env))
        out[env] = {m: {"n": len(v), "iqm": Interval(float(pts[m][1]), float(ivs[m][0, 1]), float(ivs[m][1, 1]))}
                    for m, v in finals.items()}
    return out


def coverage_curves_maker(ctx: ReportContext, out_dir: Path):
    coll = ctx.data
    if not has_column(coll, COVERAGE_COLUMN):
        return None
    files = plot_env_curves(coll, out_dir / "coverage", column=COVERAGE_COLUMN,
                            ylabel="State coverage (fraction of cells)", min_span=COVERAGE_MIN_SPAN, bounds=(0.0, 1.0))
    if not files:
        return None
    caption = ("*Fraction of the env's coverage-grid cells visited so far, per evaluation window: IQM over seeds, "
               "band = 25th-75th percentiles (envs without a coverage grid are not shown). Each panel's y axis "
               f"spans at least {COVERAGE_MIN_SPAN:g} of the [0, 1] range, so a coverage that changes by less is "
               "drawn as flat as it is.*")
    return Section("State coverage", _figure_md(files, out_dir, "state coverage", caption), files)


def final_coverage_maker(ctx: ReportContext, out_dir: Path):
    coll = ctx.data
    if not has_column(coll, COVERAGE_COLUMN):
        return None
    cov = coverage_intervals(coll, ctx.options.reps, ctx.options.seed)
    methods = [m for m in coll.methods if any(m in cov.get(e, {}) for e in coll.envs)]
    envs = [e for e in coll.envs if e in cov]
    if not methods:
        return None
    header = ["Env"] + [coll.label(m) for m in methods]
    rows, ns = [], []
    for e in envs:
        cells = cov[e]
        best = separated_best({m: cells[m]["iqm"] for m in cells}, counts={m: cells[m]["n"] for m in cells})
        row: list[Cell | str] = [env_label(e)]
        for m in methods:
            if m not in cells:
                row.append(Cell("—"))
                continue
            iv, n = cells[m]["iqm"], cells[m]["n"]
            ns.append(n)
            row.append(Cell(f"{iv.point:.3f} [{iv.lo:.3f}, {iv.hi:.3f}] (n={n})", bold=m == best))
        rows.append(row)
    caption = (f"Final state coverage (fraction of grid cells visited by the end of a run): IQM over seeds "
               f"[95% stratified-bootstrap CI, {ctx.options.reps} reps]. Bold: best IQM whose CI overlaps no other "
               "method's CI in that env.")
    if ns and min(ns) < MIN_SEEDS_FOR_CI:
        caption += " " + few_seeds_note(min(ns))
    md = render_markdown(header, rows)
    files = _write(out_dir, "final_coverage", md, render_latex(header, rows, caption, "tab:final_coverage"))
    return Section("Final state coverage",
                   f"{caption}\n\n{md}\n[Markdown](final_coverage.md) | [LaTeX](final_coverage.tex)", files)


# --------------------------------------------------------------------------- visit heat maps


def _grid_of(summary: RunSummary | None) -> dict | None:
    g = summary.coverage_grid if summary else None
    if not isinstance(g, dict):
        return None
    try:
        shape = [int(n) for n in g["shape"]]
        bounds = [[float(lo), float(hi)] for lo, hi in g["bounds"]]
        axes = [str(a) for a in g["axes"]]
    except (KeyError, TypeError, ValueError):
        return None
    if len(shape) != 2 or len(bounds) != 2 or len(axes) != 2:
        return None
    return {"axes": axes, "bounds": bounds, "shape": shape, "maze": g.get("maze")}


def mean_visits(coll: Collection, env: str):
    """Visit counts of the scored runs of ``env``, averaged over seeds per method.

    Returns (grid, {method: (n seeds, mean visits [n0, n1] float64)}, notes)
    with grid the coverage_grid most runs share (None when no run has one);
    runs without visits.npy, with another grid, or with a visits.npy of the
    wrong shape are left out and named in notes.
    """
    notes: list[str] = []
    grids = {}
    for m in coll.methods:
        for c in coll.env_data[env].curves.get(m, []):
            if c.scored:
                g = _grid_of(c.run.summary)
                if g is not None and (c.run.path / results.VISITS).is_file():
                    grids[(m, c.seed)] = g
    if not grids:
        return None, {}, notes
    counts = Counter(json.dumps(g, sort_keys=True) for g in grids.values())
    grid = json.loads(counts.most_common(1)[0][0])
    ref = json.dumps(grid, sort_keys=True)
    out = {}
    for m in coll.methods:
        stack = []
        for c in coll.env_data[env].curves.get(m, []):
            if not c.scored or (m, c.seed) not in grids:
                continue
            who = f"{coll.label(m)} seed {c.seed}"
            if json.dumps(grids[(m, c.seed)], sort_keys=True) != ref:
                notes.append(f"{who}: another coverage_grid than the other runs; left out")
                continue
            try:
                v = np.load(c.run.path / results.VISITS, allow_pickle=False)
            except (OSError, ValueError) as exc:
                notes.append(f"{who}: visits.npy unreadable ({type(exc).__name__}); left out")
                continue
            if v.shape != tuple(grid["shape"]):
                notes.append(f"{who}: visits.npy has shape {v.shape}, the grid says {tuple(grid['shape'])}; left out")
                continue
            stack.append(np.asarray(v, np.float64))
        if stack:
            out[m] = (len(stack), np.mean(stack, axis=0))
    return grid, out, notes


def cell_centres(grid: dict) -> tuple[np.ndarray, np.ndarray]:
    """Centres of the grid cells along axes[0] (n0,) and axes[1] (n1,)."""
    (lo0, hi0), (lo1, hi1) = grid["bounds"]
    n0, n1 = grid["shape"]
    return (lo0 + (np.arange(n0) + 0.5) * (hi0 - lo0) / n0, lo1 + (np.arange(n1) + 0.5) * (hi1 - lo1) / n1)


def free_space_mask(grid: dict, maze: dict) -> np.ndarray:
    """[n0, n1] bool: True where the cell centre (x = axes[0], y = axes[1]) lies
    in a free maze cell; False in walls and outside the maze extent."""
    layout = np.asarray(maze["layout"], int)
    xmin, xmax, ymin, ymax = (float(v) for v in maze["extent"])
    rows, cols = layout.shape
    cx, cy = cell_centres(grid)
    col = np.floor((cx - xmin) / (xmax - xmin) * cols).astype(int)          # [n0]
    row = np.floor((ymax - cy) / (ymax - ymin) * rows).astype(int)          # [n1], rows count from the top
    inside = (col[:, None] >= 0) & (col[:, None] < cols) & (row[None, :] >= 0) & (row[None, :] < rows)
    free = np.zeros(inside.shape, bool)
    ci = np.clip(col, 0, cols - 1)[:, None]
    ri = np.clip(row, 0, rows - 1)[None, :]
    free[inside] = (layout[ri, ci] == 0)[inside]
    return free


def draw_visit_maps(coll: Collection, env: str, grid: dict, visits: dict):
    """One panel per method: mean visits on a shared log colour scale; zero
    visits (and, in a maze, walls) are not coloured. Returns the figure."""
    maze = grid.get("maze")
    free = free_space_mask(grid, maze) if maze else np.ones(tuple(grid["shape"]), bool)
    methods = [m for m in coll.methods if m in visits]
    shown = {m: np.ma.masked_where(~free | ~(visits[m][1] > 0), visits[m][1]) for m in methods}
    positive = np.concatenate([v.compressed() for v in shown.values()] or [np.zeros(0)])
    vmin = float(positive.min()) if positive.size else 1.0
    vmax = float(positive.max()) if positive.size else 10.0
    if vmax <= vmin:
        vmax = vmin * 10
    norm = LogNorm(vmin=vmin, vmax=vmax)
    (lo0, hi0), (lo1, hi1) = grid["bounds"]
    ncols, nrows = _panel_grid(len(methods))
    width = 3.2 if maze is None else 3.2 * min(2.0, max(0.6, (hi0 - lo0) / max(hi1 - lo1, 1e-9)))
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols + 1.2, 3.0 * nrows + 0.6), squeeze=False,
                             layout="constrained")
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_bad(alpha=0.0)  # masked cells let the "unvisited" background show
    im = None
    for ax, m in zip(axes.flat, methods, strict=False):
        ax.set_facecolor(UNVISITED_COLOUR)
        # visits[i, j]: i along axes[0] (x), j along axes[1] (y); imshow wants [row = y, column = x].
        im = ax.imshow(shown[m].T, origin="lower", extent=(lo0, hi0, lo1, hi1), cmap=cmap, norm=norm,
                       interpolation="nearest", aspect="equal" if maze else "auto", zorder=1)
        if maze:
            layout = np.asarray(maze["layout"], float)
            ax.imshow(np.ma.masked_where(layout == 0, layout), origin="upper", extent=tuple(maze["extent"]),
                      cmap=ListedColormap([WALL_COLOUR]), interpolation="nearest", aspect="equal", zorder=2)
            xmin, xmax, ymin, ymax = maze["extent"]
            ax.set_xlim(xmin, xmax)
            ax.set_ylim(ymin, ymax)
        else:
            ax.set_xlim(lo0, hi0)
            ax.set_ylim(lo1, hi1)
        ax.set_title(f"{coll.label(m)} (n={visits[m][0]})", fontsize=10, color=coll.colour(m))
        ax.set_xlabel(grid["axes"][0], fontsize=9)
        ax.set_ylabel(grid["axes"][1], fontsize=9)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(methods):]:
        ax.set_visible(False)
    if im is not None:
        fig.colorbar(im, ax=list(axes.flat)[:len(methods)], label="Visits per cell, mean over seeds (log)",
                     shrink=0.9)
    fig.suptitle(env_label(env), fontsize=12)
    return fig


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name)


def visit_maps_maker(ctx: ReportContext, out_dir: Path):
    coll = ctx.data
    parts, files, notes = [], [], []
    for env in coll.envs:
        grid, visits, env_notes = mean_visits(coll, env)
        notes += [f"{env_label(env)}: {n}" for n in env_notes]
        if grid is None or not visits:
            continue
        fig = draw_visit_maps(coll, env, grid, visits)
        written = _save(fig, out_dir / f"visits_{_slug(env)}")
        files += written
        kind = "maze walls in dark grey; " if grid.get("maze") else ""
        caption = (f"*{env_label(env)}: visits per cell of the {grid['shape'][0]} x {grid['shape'][1]} coverage grid "
                   f"({grid['axes'][0]} x {grid['axes'][1]}), summed over each run and averaged over seeds (n per "
                   f"panel); log colour scale shared by the panels; {kind}unvisited cells in light grey.*")
        parts.append(_figure_md(written, out_dir, f"visits {env}", caption))
    if not parts:
        return None
    text = "\n\n".join(parts)
    if notes:
        text += "\n\nNotes:\n" + "\n".join(f"- {n}" for n in notes)
    return Section("Where each method explored (visit heat maps)", text, files)


# --------------------------------------------------------------------------- env/<name> columns


def env_columns(coll: Collection) -> list[str]:
    """``env/<name>`` columns present in any used run, in first-seen order."""
    seen: list[str] = []
    for c in coll.curves():
        if c.used and c.run.metrics is not None:
            seen += [col for col in c.run.metrics.columns if col.startswith(ENV_PREFIX) and col not in seen]
    return seen


def env_metrics_maker(ctx: ReportContext, out_dir: Path):
    coll = ctx.data
    sections = []
    for col in env_columns(coll):
        name = col[len(ENV_PREFIX):]
        files = plot_env_curves(coll, out_dir / f"env_{_slug(name)}", column=col, ylabel=name.replace("_", " "))
        if not files:
            continue
        caption = (f"*`{col}` (reported by the env) per evaluation window: IQM over seeds, 25-75th percentile "
                   "band; only envs that report it.*")
        sections.append(Section(f"Env metric: {name}", _figure_md(files, out_dir, col, caption), files))
    return sections or None

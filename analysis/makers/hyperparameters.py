"""Hyperparameter view: for each bonus whose methods differ in their hyperparameters (a sweep's
``agent.lr=1e-3,3e-4 bonus.beta=0.1,1``), its final score per setting, and, when exactly two keys
vary, per pair of settings as a grid (rows one key, columns the other) with a heat map.

The score of a setting in an env is the IQM of its runs' final scores with its 95% stratified-
bootstrap CI over seeds: the numbers of the IQM final-score table (``Aggregates.per_env``). A
setting's value of a key it does not override (a sweep's default value, which the launcher leaves
out of the variant's name) is read from its runs' resolved config.yaml and marked "(default)".
Nothing is drawn for a report whose methods differ in no hyperparameter (one setting per bonus).
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ..collect import Collection
from ..maker import ReportContext, Section
from ..markdown import DASH, Cell, render_latex, render_markdown
from ..methods import _canon, as_number, format_value, short_names
from ..names import env_label
from ..plots import _figure_md, _panel_grid, _save
from ..tables import MIN_SEEDS_FOR_CI, _decimals, _write, few_seeds_note, separated_best
from .sensitivity import config_values

DEFAULT_MARK = " (default)"


class Settings:
    """The settings of one bonus: ``keys`` (the dotted keys that differ between its methods, in
    order), ``methods`` (its method keys, in report order), ``value[method][key]`` (None where
    the key's value is unknown) and ``default`` ((method, key) pairs read from config.yaml, not
    from the variant's overrides)."""

    def __init__(self, coll: Collection, bonus: str):
        self.bonus = bonus
        infos = [coll.method_info[m] for m in coll.methods if coll.bonus_of(m) == bonus and m in coll.method_info]
        self.methods = [m.key for m in infos]
        keys = sorted({k for m in infos for k, _ in m.overrides})
        config = {m.key: config_values(coll, m.key, keys) for m in infos}
        self.value: dict[str, dict] = {}
        self.default: set[tuple[str, str]] = set()
        for m in infos:
            own = m.overrides_dict
            self.value[m.key] = {k: own[k] if k in own else config[m.key].get(k) for k in keys}
            self.default |= {(m.key, k) for k in keys if k not in own}
        self.keys = [k for k in keys if len({_canon(self.value[m][k]) for m in self.methods}) > 1]
        self.short = short_names(self.keys)
        # Rows in the order of the settings' values (the report's order puts a default value last).
        rank = {k: {_canon(v): i for i, v in enumerate(self.levels(k))} for k in self.keys}
        self.methods.sort(key=lambda m: tuple(rank[k][_canon(self.value[m][k])] for k in self.keys))

    def text(self, method: str, key: str) -> str:
        v = self.value[method][key]
        return (DASH if v is None else format_value(v)) + (DEFAULT_MARK if (method, key) in self.default else "")

    def levels(self, key: str) -> list:
        """The distinct values of ``key``, numbers by value first, then the others by text."""
        seen: dict[str, object] = {}
        for m in self.methods:
            seen.setdefault(_canon(self.value[m][key]), self.value[m][key])

        def order(v):
            num = as_number(v)
            return (0, num, "") if num is not None else (1, 0.0, format_value(v))
        return sorted(seen.values(), key=order)


def swept_bonuses(coll: Collection) -> list[Settings]:
    """The bonuses (report order) with at least two methods that differ in some hyperparameter."""
    out, done = [], set()
    for m in coll.methods:
        b = coll.bonus_of(m)
        if b in done:
            continue
        done.add(b)
        s = Settings(coll, b)
        if len(s.methods) >= 2 and s.keys:
            out.append(s)
    return out


def _score(cells: dict, method: str, d: int) -> str:
    iv = cells[method]["iqm"]
    return f"{iv.point:.{d}f} [{iv.lo:.{d}f}, {iv.hi:.{d}f}] (n={cells[method]['n']})"


def settings_table(coll: Collection, agg, s: Settings):
    """Rows = settings, columns = the varied keys then each env's IQM [lo, hi] (n); bold: the
    best setting of an env whose CI overlaps no other setting's there (tables.separated_best).
    Returns (header, rows, fewest seeds of a cell)."""
    envs = [e for e in coll.envs if any(m in agg.per_env.get(e, {}) for m in s.methods)]
    header = ["Method"] + [s.short[k] for k in s.keys] + [env_label(e) for e in envs]
    rows: list[list[Cell | str]] = [[coll.label(m), *(s.text(m, k) for k in s.keys)] for m in s.methods]
    ns = []
    for e in envs:
        cells = agg.per_env[e]
        here = [m for m in s.methods if m in cells]
        ns += [cells[m]["n"] for m in here]
        d = _decimals([cells[m]["iqm"].point for m in here] + [cells[m]["iqm"].hi for m in here])
        best = separated_best({m: cells[m]["iqm"] for m in here}, counts={m: cells[m]["n"] for m in here})
        for row, m in zip(rows, s.methods, strict=True):
            row.append(Cell(_score(cells, m, d), bold=m == best) if m in cells else Cell(DASH))
    return header, rows, min(ns, default=0)


def _cell_of(s: Settings, a: str, b: str, va, vb) -> str | None:
    """The method of the setting (a=va, b=vb), or None (several: the grid would hide one)."""
    hit = [m for m in s.methods if _canon(s.value[m][a]) == _canon(va) and _canon(s.value[m][b]) == _canon(vb)]
    return hit[0] if len(hit) == 1 else None


def grid_tables(coll: Collection, agg, s: Settings) -> list[tuple[str, list[str], list[list[Cell | str]]]]:
    """With exactly two keys varied: per env, (env, header, rows) of the grid: a row per value of
    the first key, a column per value of the second, cell = IQM [lo, hi] (n) (— where not run)."""
    a, b = s.keys
    out = []
    for e in coll.envs:
        cells = agg.per_env.get(e, {})
        if not any(m in cells for m in s.methods):
            continue
        d = _decimals([cells[m]["iqm"].point for m in s.methods if m in cells]
                      + [cells[m]["iqm"].hi for m in s.methods if m in cells])
        header = [f"{s.short[a]} \\ {s.short[b]}"] + [format_value(v) for v in s.levels(b)]
        rows: list[list[Cell | str]] = []
        for va in s.levels(a):
            row: list[Cell | str] = [format_value(va)]
            for vb in s.levels(b):
                m = _cell_of(s, a, b, va, vb)
                row.append(_score(cells, m, d) if m is not None and m in cells else DASH)
            rows.append(row)
        out.append((e, header, rows))
    return out


def draw_heat_maps(coll: Collection, agg, s: Settings):
    """One panel per env: the IQM final score of each (first key, second key) setting, its value
    and CI written in the cell, each panel on its own colour scale. None when nothing is drawn."""
    a, b = s.keys
    la, lb = s.levels(a), s.levels(b)
    placed = {_cell_of(s, a, b, va, vb) for va in la for vb in lb} - {None}
    panels = [e for e in coll.envs if any(m in agg.per_env.get(e, {}) for m in placed)]
    if not panels:
        return None
    ncols, nrows = _panel_grid(len(panels))
    pw, ph = 1.25 * len(lb) + 1.9, 0.62 * len(la) + 1.3
    fig, axes = plt.subplots(nrows, ncols, figsize=(pw * ncols, ph * nrows), squeeze=False, layout="constrained")
    for ax, e in zip(axes.flat, panels, strict=False):
        cells = agg.per_env[e]
        z = np.full((len(la), len(lb)), np.nan)
        text = {}
        d = _decimals([cells[m]["iqm"].hi for m in s.methods if m in cells])
        for i, va in enumerate(la):
            for j, vb in enumerate(lb):
                m = _cell_of(s, a, b, va, vb)
                if m is not None and m in cells:
                    iv = cells[m]["iqm"]
                    z[i, j] = iv.point
                    text[(i, j)] = f"{iv.point:.{d}f}\n[{iv.lo:.{d}f}, {iv.hi:.{d}f}]"
        lo, hi = float(np.nanmin(z)), float(np.nanmax(z))
        if hi - lo <= 1e-9 * max(1.0, abs(lo)):  # every setting scored alike: one colour, a readable scale
            pad = 0.05 * abs(lo) or 1.0
            lo, hi = lo - pad, hi + pad
        im = ax.imshow(np.ma.masked_invalid(z), cmap="viridis", vmin=lo, vmax=hi, aspect="auto")
        for (i, j), t in text.items():
            light = (z[i, j] - lo) / (hi - lo) < 0.6  # white text on viridis's dark end
            ax.text(j, i, t, ha="center", va="center", fontsize=7.5, color="white" if light else "black")
        ax.set_xticks(range(len(lb)), [format_value(v) for v in lb])
        ax.set_yticks(range(len(la)), [format_value(v) for v in la])
        ax.set_xlabel(s.short[b], fontsize=9)
        ax.set_ylabel(s.short[a], fontsize=9)
        ax.tick_params(labelsize=8)
        ax.set_title(env_label(e), fontsize=10)
        fig.colorbar(im, ax=ax, shrink=0.9).ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(f"{coll.names.label(s.bonus)}: IQM final score (95% CI) per setting", fontsize=10)
    return fig


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text)


def hyperparameters_maker(ctx: ReportContext, out_dir: Path):
    coll, agg = ctx.data, ctx.aggregates
    sections = []
    for s in swept_bonuses(coll):
        label = coll.names.label(s.bonus)
        name = f"hyperparameters_{_slug(s.bonus)}"
        keys = ", ".join(f"`{k}`" for k in s.keys)
        header, rows, n_min = settings_table(coll, agg, s)
        if len(header) == 1 + len(s.keys):  # no setting of this bonus has a final score anywhere
            continue
        caption = (f"{label}'s final score per setting of {keys}: IQM over seeds of each run's final score with its "
                   f"95% stratified-bootstrap CI ({agg.reps} reps), n = seeds. A value marked \"(default)\" is not "
                   "in the variant's overrides: it is read from its runs' config.yaml. Bold: the best setting of an "
                   "env whose CI overlaps no other setting's there.")
        if 0 < n_min < MIN_SEEDS_FOR_CI:
            caption += " " + few_seeds_note(n_min)
        align = "l" * (1 + len(s.keys)) + "r" * (len(header) - 1 - len(s.keys))
        md = render_markdown(header, rows, align=align)
        files = _write(out_dir, name, md, render_latex(header, rows, caption, f"tab:{name}", align=align))
        text = f"{caption}\n\n{md}\n[Markdown]({name}.md) | [LaTeX]({name}.tex)"
        if len(s.keys) == 2:
            grids = grid_tables(coll, agg, s)
            grid_md = "\n".join(f"**{env_label(e)}** (rows: `{s.keys[0]}`, columns: `{s.keys[1]}`; IQM [95% CI] "
                                f"(n)):\n\n{render_markdown(h, r)}" for e, h, r in grids)
            (out_dir / f"{name}_grid.md").write_text(grid_md)
            files.append(out_dir / f"{name}_grid.md")
            text += f"\n\n**Per pair of settings.**\n\n{grid_md}"
            fig = draw_heat_maps(coll, agg, s)
            if fig is not None:
                figs = _save(fig, out_dir / f"{name}_grid")
                files += figs
                text += "\n" + _figure_md(figs, out_dir, f"{label} per pair of settings",
                                          "*The grid's IQM final scores, each env on its own colour scale; the "
                                          "CI is written under each value.*")
        elif len(s.keys) > 2:
            text += (f"\n\n{len(s.keys)} keys vary together, so no two-key grid is drawn (it needs exactly two); "
                     "the table above has every setting.")
        sections.append(Section(f"Hyperparameters of {label}", text, files))
    return sections or None

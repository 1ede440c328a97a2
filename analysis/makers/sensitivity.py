"""Sensitivity figure: final score against a swept hyperparameter.

Drawn for every bonus whose selected methods vary exactly one numeric key
(analysis.methods.swept_key; e.g. ``bonus.lengthscale=0.5,1,2``, with or
without the base variant, whose value is read from its resolved config.yaml).
One figure per swept key, one panel per env (paper order), one line per bonus
that sweeps it: the IQM of the final scores over seeds with its 95%
stratified-bootstrap CI (the same numbers as the IQM final-score table). The
x axis is logarithmic when the values are positive and span a factor of 10 or
more. A table with the same numbers goes next to each figure.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ..collect import Collection
from ..maker import ReportContext, Section
from ..markdown import Cell, render_latex, render_markdown
from ..methods import format_value, swept_key
from ..names import env_label
from ..plots import _figure_md, _panel_grid, _save, fit_legend, tidy_axis
from ..tables import MIN_SEEDS_FOR_CI, _write, few_seeds_note

LOG_SPAN = 10.0


def _lookup(config: dict | None, dotted: str):
    node = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def config_values(coll: Collection, method: str, keys) -> dict:
    """{dotted key: value} of ``method``'s resolved config (first run that has a
    config.yaml); keys the config lacks are left out."""
    for r in coll.runs_of(method):
        if r.config:
            return {k: v for k in keys if (v := _lookup(r.config, k)) is not None}
    return {}


def find_sweeps(coll: Collection) -> dict[str, dict[str, dict[str, float]]]:
    """Swept key -> bonus -> {method key: value}, for every bonus that sweeps
    exactly one numeric key over at least two values."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    bonuses = []
    for m in coll.methods:
        b = coll.bonus_of(m)
        if b not in bonuses:
            bonuses.append(b)
    for bonus in bonuses:
        ms = [coll.method_info[m] for m in coll.methods if coll.bonus_of(m) == bonus and m in coll.method_info]
        keys = {k for m in ms for k, _ in m.overrides}
        found = swept_key(ms, {m.key: config_values(coll, m.key, keys) for m in ms})
        if found:
            key, values = found
            out.setdefault(key, {})[bonus] = values
    return out


def use_log_x(values) -> bool:
    v = np.asarray([x for x in values if x is not None], float)
    return bool(len(v) and np.all(v > 0) and v.max() / v.min() >= LOG_SPAN)


def sensitivity_points(agg, env: str, values: dict[str, float]):
    """(x (P,), iqm (P,), lo (P,), hi (P,), n (P,)) sorted by x, over the methods
    of ``values`` that have final scores in ``env``."""
    cells = agg.per_env.get(env, {})
    pts = sorted((x, cells[m]) for m, x in values.items() if m in cells)
    if not pts:
        return tuple(np.zeros(0) for _ in range(5))
    x = np.array([p[0] for p in pts], float)
    iv = [p[1]["iqm"] for p in pts]
    return (x, np.array([i.point for i in iv]), np.array([i.lo for i in iv]), np.array([i.hi for i in iv]),
            np.array([p[1]["n"] for p in pts]))


def draw_sensitivity(coll: Collection, agg, key: str, by_bonus: dict[str, dict[str, float]]):
    """The figure (None when no env has two points)."""
    panels = []
    for env in coll.envs:
        lines = {b: sensitivity_points(agg, env, vals) for b, vals in by_bonus.items()}
        lines = {b: ln for b, ln in lines.items() if len(ln[0]) >= 2}
        if lines:
            panels.append((env, lines))
    if not panels:
        return None
    all_x = sorted({x for vals in by_bonus.values() for x in vals.values()})
    log = use_log_x(all_x)
    ncols, nrows = _panel_grid(len(panels))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols + 0.6, 2.6 * nrows + 0.9), squeeze=False,
                             layout="constrained")
    for ax, (env, lines) in zip(axes.flat, panels, strict=False):
        drawn = []
        for b, (x, y, lo, hi, _n) in lines.items():
            c = coll.names.colour(b)
            ax.fill_between(x, lo, hi, color=c, alpha=0.15, linewidth=0)
            ax.errorbar(x, y, yerr=[y - lo, hi - y], color=c, marker="o", markersize=4, linewidth=1.6, capsize=3)
            drawn += [y, lo, hi]
        if log:
            ax.set_xscale("log")
        ax.set_xticks(all_x)
        ax.set_xticklabels([format_value(v) for v in all_x])
        ax.xaxis.set_minor_locator(plt.NullLocator())
        tidy_axis(ax, drawn, "y")
        ax.set_title(env_label(env), fontsize=11)
        ax.tick_params(labelsize=8.5)
        ax.grid(alpha=0.25, linewidth=0.6)
        ax.spines[["top", "right"]].set_visible(False)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.supxlabel(key + (" (log scale)" if log else ""), fontsize=11)
    fig.supylabel("Final score (IQM, 95% CI)", fontsize=11)
    bonuses = [b for b in by_bonus if any(b in lines for _, lines in panels)]
    handles = [plt.Line2D([], [], color=coll.names.colour(b), marker="o", linewidth=1.6) for b in bonuses]
    fit_legend(fig, handles, [sweep_label(coll.names.label(b), key) for b in bonuses], len(bonuses),
               loc="outside upper center", frameon=False, fontsize=10)
    return fig


def sweep_label(label: str, key: str) -> str:
    """A legend entry that says what was swept (a bonus's label alone, "RFIG", did not)."""
    return f"{label}, {key.rsplit('.', 1)[-1]} swept"


def _slug(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", key)


def sensitivity_table(coll: Collection, agg, key: str, by_bonus: dict[str, dict[str, float]]):
    """Rows = (env, bonus), columns = swept values; cell = IQM [lo, hi] (n)."""
    all_x = sorted({x for vals in by_bonus.values() for x in vals.values()})
    header = ["Env", "Bonus"] + [f"{key.rsplit('.', 1)[-1]}={format_value(x)}" for x in all_x]
    rows, n_min = [], None
    for env in coll.envs:
        for b, vals in by_bonus.items():
            x, y, lo, hi, n = sensitivity_points(agg, env, vals)
            if not len(x):
                continue
            n_min = int(n.min()) if n_min is None else min(n_min, int(n.min()))
            at = {float(xx): (yy, ll, hh, nn) for xx, yy, ll, hh, nn in zip(x, y, lo, hi, n, strict=True)}
            row: list[Cell | str] = [env_label(env), coll.names.label(b)]
            for v in all_x:
                if v in at:
                    yy, ll, hh, nn = at[v]
                    row.append(f"{yy:.4g} [{ll:.4g}, {hh:.4g}] (n={nn})")
                else:
                    row.append("—")
            rows.append(row)
    return header, rows, n_min or 0


def sensitivity_maker(ctx: ReportContext, out_dir: Path):
    coll = ctx.data
    sweeps = find_sweeps(coll)
    if not sweeps:
        return None
    agg = ctx.aggregates
    sections = []
    for key, by_bonus in sweeps.items():
        fig = draw_sensitivity(coll, agg, key, by_bonus)
        if fig is None:
            continue
        name = f"sensitivity_{_slug(key)}"
        files = _save(fig, out_dir / name)
        header, rows, n_min = sensitivity_table(coll, agg, key, by_bonus)
        sweep_text = "; ".join(f"{coll.names.label(b)}: {', '.join(format_value(v) for v in sorted(vals.values()))}"
                               for b, vals in by_bonus.items())
        log = use_log_x([v for vals in by_bonus.values() for v in vals.values()])
        caption = (f"*Final score against `{key}` ({sweep_text}): IQM over seeds of each run's final score, "
                   f"95% stratified-bootstrap CI ({agg.reps} reps); the default value is read from the base run's "
                   "config.yaml" + ("; log x axis (values span a factor of 10 or more)" if log else "") + ".*")
        left_out = [coll.label(m) for b, vals in by_bonus.items() for m in coll.methods
                    if coll.bonus_of(m) == b and m not in vals]
        if left_out:
            caption += f" *Left out (its value of `{key}` is not a number): {', '.join(left_out)}.*"
        if 0 < n_min < MIN_SEEDS_FOR_CI:
            caption += f" *{few_seeds_note(n_min)}*"
        md = render_markdown(header, rows, align="ll" + "r" * (len(header) - 2))
        files += _write(out_dir, name, md, render_latex(header, rows, caption.replace("*", ""), f"tab:{name}",
                                                         align="ll" + "r" * (len(header) - 2)))
        sections.append(Section(f"Sensitivity to {key}",
                                _figure_md([f for f in files if f.suffix in (".png", ".pdf")], out_dir,
                                           f"sensitivity to {key}", caption) + f"\n\n{md}", files))
    return sections or None


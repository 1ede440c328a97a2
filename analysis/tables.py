"""Tables (Markdown + LaTeX) and the data-coverage / issues section.

LaTeX tables use booktabs; the method-comparison table also needs
``\\usepackage{pifont}\\newcommand{\\cmark}{\\ding{51}}\\newcommand{\\xmark}{\\ding{55}}``
(as in the paper).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from .aggregate import OVERALL_METRICS, Aggregates, poi_label
from .carried import MARK, carried_note, final_carried
from .collect import Collection, return_measurement_md, runs_table
from .maker import ReportContext, Section
from .markdown import DASH, Cell, render_latex, render_markdown
from .names import env_label, env_sort_key


def _decimals(values) -> int:
    vals = [abs(v) for v in values if v is not None and math.isfinite(v)]
    m = max(vals, default=0.0)
    if m >= 1000:
        return 0
    if m >= 100:
        return 1
    if m >= 1:
        return 2
    return 3


def _write(out_dir: Path, name: str, md: str, tex: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.md", out_dir / f"{name}.tex"]
    paths[0].write_text(md)
    paths[1].write_text(tex)
    return paths


# --------------------------------------------------------------------------- final scores


MIN_SEEDS_FOR_CI = 3


def separated_best(intervals: dict, higher_is_better: bool = True, counts: dict | None = None,
                   min_n: int = MIN_SEEDS_FOR_CI):
    """The key whose interval lies entirely beyond every other's, or None.

    intervals: key -> Interval (point, lo, hi). The winner is the best point
    estimate, and only if its CI does not overlap any other CI (lo > every
    other hi; for lower-is-better, hi < every other lo). None with fewer than
    two keys, or when any compared cell has fewer than ``min_n`` runs
    (``counts``: key -> runs) since such intervals are not meaningful.
    """
    keys = [k for k, iv in intervals.items() if np.isfinite(iv.point)]
    if len(keys) < 2:
        return None
    if counts is not None and any(counts.get(k, 0) < min_n for k in keys):
        return None
    sign = 1.0 if higher_is_better else -1.0
    best = max(keys, key=lambda k: sign * intervals[k].point)
    iv = intervals[best]
    others = [intervals[k] for k in keys if k != best]
    if higher_is_better:
        return best if all(iv.lo > o.hi for o in others) else None
    return best if all(iv.hi < o.lo for o in others) else None


def few_seeds_note(n_min: int) -> str:
    return (f"With fewer than {MIN_SEEDS_FOR_CI} seeds (here as few as {n_min}) the bootstrap intervals are not "
            "meaningful (a resample of 1-2 runs can only reproduce those runs): read them as the range of the "
            "seeds, not as a confidence interval; no entry is marked best.")


def usual_seeds(ns) -> int:
    """The number of seeds most cells of a score table have (0 for none): the table marks the others."""
    ns = list(ns)
    return Counter(ns).most_common(1)[0][0] if ns else 0


def final_score_table(agg: Aggregates, methods: list[str], envs: list[str], stat: str = "mean",
                      coll: Collection | None = None, carried: dict | None = None):
    """Rows = envs, columns = methods. stat "mean": mean ± half-width of the
    95% bootstrap CI; stat "iqm": IQM [lo, hi]. Bold: the best point estimate
    of an env, only when its CI does not overlap any other method's CI there
    (separated_best). ``carried``: env -> method -> (runs, n) whose final score
    is carried forward (analysis.carried.final_carried); those cells get its
    mark. Returns (header, rows, usual n, smallest n)."""
    label = coll.label if coll is not None else (lambda b: b)
    header = ["Env"] + [label(b) for b in methods]
    ns = [agg.per_env[e][b]["n"] for e in envs for b in methods if b in agg.per_env.get(e, {})]
    usual_n = usual_seeds(ns)
    rows = []
    for e in envs:
        cells_for = agg.per_env.get(e, {})
        d = _decimals([cells_for[b][stat].point for b in methods if b in cells_for]
                      + [cells_for[b][stat].hi for b in methods if b in cells_for])
        here = [b for b in methods if b in cells_for]
        best = separated_best({b: cells_for[b][stat] for b in here}, counts={b: cells_for[b]["n"] for b in here})
        row: list[Cell | str] = [env_label(e)]
        for b in methods:
            if b not in cells_for:
                row.append(Cell(DASH))
                continue
            iv = cells_for[b][stat]
            text = (f"{iv.point:.{d}f} ± {iv.half_width:.{d}f}" if stat == "mean"
                    else f"{iv.point:.{d}f} [{iv.lo:.{d}f}, {iv.hi:.{d}f}]")
            if cells_for[b]["n"] != usual_n:
                text += f" (n={cells_for[b]['n']})"
            if b in (carried or {}).get(e, {}):
                text += f" {MARK}"
            row.append(Cell(text, bold=b == best))
        rows.append(row)
    return header, rows, usual_n, min(ns, default=0)


def final_scores_maker(ctx: ReportContext, out_dir: Path):
    agg, coll = ctx.aggregates, ctx.data
    methods = [b for b in coll.methods if any(b in agg.per_env.get(e, {}) for e in coll.envs)]
    envs = [e for e in coll.envs if agg.per_env.get(e)]
    if not methods:
        return None
    k = agg.last_k
    what = "the last evaluation window" if k == 1 else f"the mean of the last {k} evaluation windows"
    files, parts = [], []
    carried = final_carried(coll, k)
    note = carried_note(coll, k)
    for stat, name, title in (("mean", "final_scores", "Mean"), ("iqm", "final_scores_iqm", "IQM")):
        header, rows, n, n_min = final_score_table(agg, methods, envs, stat, coll, carried)
        ci = "± half-width of its" if stat == "mean" else "with its"
        caption = (f"{title} final score per env (final score of a run = {what}) {ci} 95% stratified-bootstrap "
                   f"percentile CI over seeds ({agg.reps} reps); n={n} seeds unless marked. Bold: best {title} "
                   "whose CI overlaps no other method's CI in that env.")
        if n_min < MIN_SEEDS_FOR_CI:
            caption += " " + few_seeds_note(n_min)
        # The mark's note goes under the table itself: the 32-seed report and the README show the table alone.
        md = render_markdown(header, rows) + (f"\n{note}\n" if note else "")
        files += _write(out_dir, name, md, render_latex(header, rows, caption + (f" {note}" if note else ""),
                                                        f"tab:{name}"))
        parts.append(f"**{title} final scores.** {caption}\n\n{md}\n[Markdown]({name}.md) | [LaTeX]({name}.tex)")
    return Section("Final scores per env", "\n\n".join(parts), files)


# --------------------------------------------------------------------------- cross-env aggregates


def aggregate_table_maker(ctx: ReportContext, out_dir: Path):
    agg, coll = ctx.aggregates, ctx.data
    methods = [b for b in agg.agg_methods if b in agg.overall]
    notes = "".join(f"\n- {n}" for n in agg.notes)
    if not methods:
        return Section("Aggregate metrics", "No cross-env aggregates could be computed." +
                       (f"\n\nNotes:{notes}" if notes else ""))
    header = ["Method", "Runs/env"] + list(OVERALL_METRICS)
    best = {m: separated_best({b: agg.overall[b][m] for b in methods}, higher_is_better=m != "Optimality gap",
                              counts=agg.runs_per_method) for m in OVERALL_METRICS}
    rows = []
    for b in methods:
        row: list[Cell | str] = [coll.label(b), str(agg.runs_per_method[b])]
        for m in OVERALL_METRICS:
            iv = agg.overall[b][m]
            row.append(Cell(f"{iv.point:.3f} [{iv.lo:.3f}, {iv.hi:.3f}]", bold=b == best[m]))
        rows.append(row)
    caption = (f"Aggregate normalised final scores over {len(agg.agg_envs)} env(s) "
               f"({', '.join(env_label(e) for e in agg.agg_envs)}): point estimate [95% stratified-bootstrap CI, "
               f"{agg.reps} reps over runs]. Normalisation: {agg.normalisation.description}. "
               "Optimality gap: lower is better (threshold 1). Bold: best value whose CI overlaps no other "
               "method's.")
    n_min = min(agg.runs_per_method[b] for b in methods)
    if n_min < MIN_SEEDS_FOR_CI:
        caption += " " + few_seeds_note(n_min)
    md = render_markdown(header, rows)
    files = _write(out_dir, "aggregate_metrics", md, render_latex(header, rows, caption, "tab:aggregate_metrics"))
    text = f"{caption}\n\n{md}\n[Markdown](aggregate_metrics.md) | [LaTeX](aggregate_metrics.tex)"
    if agg.poi:
        ph = ["Comparison", "P(X > Y) [95% CI]", "Envs"]
        prow = [[f"P({coll.label(x)} > {coll.label(y)})", f"{iv.point:.3f} [{iv.lo:.3f}, {iv.hi:.3f}]", str(n)]
                for x, y, iv, n in agg.poi]
        pmd = render_markdown(ph, prow)
        title = f"Probability of improvement of {poi_label(coll, agg.poi)} over each other method"
        files += _write(out_dir, "probability_of_improvement", pmd,
                        render_latex(ph, prow, f"{title} (final scores, {agg.reps} bootstrap reps).",
                                     "tab:probability_of_improvement"))
        text += f"\n\n**Probability of improvement** (final scores):\n\n{pmd}"
    if notes:
        text += f"\n\nNotes:{notes}"
    return Section("Aggregate metrics", text, files)


# --------------------------------------------------------------------------- method comparison


def _num(x: float, fmt: str) -> str:
    return format(x, fmt) if x is not None and math.isfinite(x) else DASH


@dataclass(frozen=True)
class Described:
    """What a published table says of each bonus, shown beside the measured columns of the
    comparison of methods (a campaign's: the paper's Table 1, campaign.repro.paper_table)."""

    columns: tuple[str, ...]               # their headers
    cells: Mapping[str, tuple[str, ...]]   # bonus -> its cells, one per column
    unknown: tuple[str, ...]               # the cells of a bonus the table does not describe
    listed: tuple[str, ...]                # the bonuses it lists, in its order: a row each, measured or not
    source: str                            # the caption's words for where the columns come from


def method_comparison_maker(ctx: ReportContext, out_dir: Path):
    """The methods with their measured seed spread, then the throughput per device."""
    return method_comparison(ctx, out_dir)


def method_comparison(ctx: ReportContext, out_dir: Path, described: Described | None = None) -> Section:
    """The comparison of methods, with ``described``'s columns before the measured ones."""
    coll, agg = ctx.data, ctx.aggregates
    bonuses = coll.names.of_role("reference", {coll.bonus_of(m) for m in coll.methods})
    bonuses += [b for b in (described.listed if described else ()) if b not in bonuses]
    bonuses += [b for b in coll.names.sort({coll.bonus_of(m) for m in coll.methods}) if b not in bonuses]
    # A row per method of each bonus, its primary first; a bonus the described table lists
    # without runs here gets one row. (A bonus with variants and no primary method once got a
    # row of its own too, labelled as one of its variants could be: two rows of one name.)
    rows_for = []
    for bonus in bonuses:
        rows_for += [m for m in coll.methods if coll.bonus_of(m) == bonus] or [bonus]
    columns = described.columns if described else ()
    header = ["Method", *columns, "Seed spread (IQR)"]
    rows = []
    for b in rows_for:
        cells = described.cells.get(coll.bonus_of(b), described.unknown) if described else ()
        # No bold here: in this report bold means "best, CI clear of every other".
        rows.append([Cell(coll.label(b)), *cells, _num(agg.spread.get(b, float("nan")), ".3f")])
    measured = ("the median over envs of the interquartile range of normalised final scores across seeds (lower = "
                f"less seed-sensitive). {DASH} = not measured here.")
    caption = (f"Comparison of exploration methods. {described.source}; seed spread is measured in this experiment: "
               if described else "Comparison of exploration methods. Seed spread is measured in this experiment: ")
    caption += measured + _unmeasured_spread(coll, agg)
    md = render_markdown(header, rows, align="l" * (1 + len(columns)) + "r")
    files = _write(out_dir, "method_comparison", md, render_latex(header, rows, caption, "tab:method_comparison",
                                                                  align="l" + "c" * len(columns) + "r"))
    speed_md, speed_files = _throughput_table(ctx, out_dir)
    return Section("Comparison of exploration methods",
                   f"{caption}\n\n{md}\n[Markdown](method_comparison.md) | [LaTeX](method_comparison.tex)"
                   + speed_md, files + speed_files)


def _unmeasured_spread(coll: Collection, agg: Aggregates) -> str:
    """Why a method of this report has no seed spread ('' when every one has)."""
    missing = [m for m in coll.methods if not math.isfinite(agg.spread.get(m, float("nan")))]
    if not missing:
        return ""
    if not any(agg.normalisation.usable(e) for e in coll.envs):
        return (" Here no env's scores can be normalised (the notes of the aggregate metrics say why), so no "
                "spread is measured.")
    return (f" No spread for {', '.join(coll.label(m) for m in missing)}: fewer than two final scores in every env "
            "whose scores can be normalised.")


def _throughput_table(ctx: ReportContext, out_dir: Path) -> tuple[str, list[Path]]:
    """Env steps/s and compile time per device, each method against PPO on the same device only
    (a GPU's rate and a CPU core's are not one quantity): markdown and the files written."""
    from .devices import speed_by_device

    coll = ctx.data
    speed = speed_by_device(coll, ctx.options.run_devices)
    if not speed:
        return "", []
    ppo = coll.names.role_label("reference", {coll.bonus_of(m) for m in coll.methods})  # the reference's label
    header = ["Device", "Method", "Envs", "Runs", "Env steps/s", f"× {ppo} (same env and device)", "Compile (s)"]
    rows = [[dev, coll.label(m), str(s["envs"]), str(s["runs"]), _num(s["sps"], ",.0f"), _num(s["rel"], ".2f"),
             _num(s["compile"], ".1f")] for dev, per in speed.items() for m, s in per.items()]
    caption = ("Throughput per device, never pooled across devices: median env steps/s over a method's complete runs "
               "on that device (summary.json; a process's vmapped seeds together; its envs pooled, and methods may "
               f"have run other envs there: compare them by × {ppo}), × {ppo} = median over envs of (steps/s / {ppo}'s "
               "steps/s in the same env on the same device), median compile time. "
               f"{DASH}: no {ppo} run on the method's envs on that device. Other work may have shared the machine.")
    md = render_markdown(header, rows, align="llrrrrr")
    files = _write(out_dir, "throughput_by_device", md,
                   render_latex(header, rows, caption, "tab:throughput_by_device", align="llrrrrr"))
    return (f"\n\n**Throughput per device.** {caption}\n\n{md}\n[Markdown](throughput_by_device.md) | "
            "[LaTeX](throughput_by_device.tex)"), files


# --------------------------------------------------------------------------- data coverage and issues


def coverage_table(coll: Collection, last_k: int = 1):
    """Rows = envs, columns = methods; cell = "scored / expected": seeds with a
    final score / seeds expected (every seed seen anywhere in the selection).
    Bold when something is short. Returns (header, rows)."""
    rt = runs_table(coll, last_k)
    expected = len({r.seed for r in coll.runs if r.env in coll.env_data and r.method in coll.methods})
    header = ["Env"] + [coll.label(b) for b in coll.methods]
    rows = []
    for e in coll.envs:
        row: list[Cell | str] = [env_label(e)]
        for b in coll.methods:
            sub = rt[(rt.env == e) & (rt.method == b)] if len(rt) else rt
            scored = int(sub.scored.sum()) if len(sub) else 0
            row.append(Cell(f"{scored}/{expected}", bold=scored < expected))
        rows.append(row)
    return header, rows


def _issue_method(coll: Collection, bonus, variant) -> str:
    if not isinstance(bonus, str):
        return variant if isinstance(variant, str) else DASH
    key = coll.method_key(bonus, variant if isinstance(variant, str) else None)
    if key is not None:
        return coll.label(key)
    return coll.names.label(bonus) + (f" [{variant}]" if isinstance(variant, str) and variant != "base" else "")


def data_maker(ctx: ReportContext, out_dir: Path):
    coll = ctx.data
    rt = runs_table(coll, ctx.options.last_k)
    out_dir.mkdir(parents=True, exist_ok=True)
    issues = pd.DataFrame([vars(i) for i in coll.issues],
                          columns=["severity", "kind", "env", "bonus", "variant", "seed", "detail", "handling"])
    if len(issues):
        issues["_o"] = issues.severity.map({"error": 0, "warning": 1, "info": 2})
        issues["_e"] = issues.env.map(lambda e: env_sort_key(e) if isinstance(e, str) else (999,))
        issues = issues.sort_values(["_o", "_e", "bonus", "seed"], na_position="first").drop(columns=["_o", "_e"])
    issues.to_csv(out_dir / "issues.csv", index=False)
    rt.to_csv(out_dir / "runs.csv", index=False)

    n = len(rt)
    counts = Counter(rt.status) if n else Counter()
    lines = [f"{n} run directories in the selection: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
             + f"; {int(rt.scored.sum()) if n else 0} with a final score."]
    header, rows = coverage_table(coll, ctx.options.last_k)
    lines.append("\n**Seeds per cell** (seeds with a final score / seeds expected, i.e. every seed seen in the "
                 "selection; bold = short):\n")
    lines.append(render_markdown(header, rows))
    shown = issues[issues.severity != "info"] if len(issues) else issues
    if len(shown):
        cap = 200
        tab = [[Cell(r.severity, bold=r.severity == "error"), r.kind,
                env_label(r.env) if isinstance(r.env, str) else DASH,
                _issue_method(coll, r.bonus, r.variant),
                str(int(r.seed)) if pd.notna(r.seed) else DASH, r.detail.replace("|", "/"), r.handling]
               for r in shown.head(cap).itertuples()]
        lines.append(f"\n**Problems** ({len(shown)}; all in [issues.csv](issues.csv)):\n")
        lines.append(render_markdown(["Severity", "Kind", "Env", "Method", "Seed", "Detail", "Handling"], tab,
                                     align="lllllll"))
        if len(shown) > cap:
            lines.append(f"... {len(shown) - cap} more in issues.csv")
    else:
        lines.append("\nNo missing, incomplete or failed runs.")
    info = issues[issues.severity == "info"] if len(issues) else issues
    if len(info):
        filled = int(rt.filled_windows.sum())
        lines.append(f"\nInfo: {filled} evaluation window(s) in {int((rt.filled_windows > 0).sum())} run(s) finished "
                     "no episode and carry the previous window's return; "
                     f"{len(info)} info notes in issues.csv.")
    lines.append("\n**How the return is measured.** " + return_measurement_md(coll))
    lines.append("\nPer-run status, final score and throughput: [runs.csv](runs.csv).")
    return Section("Data: seeds found, missing and failed runs", "\n".join(lines),
                   [out_dir / "issues.csv", out_dir / "runs.csv"])


# --------------------------------------------------------------------------- machine-readable exports


def _iv(iv) -> dict:
    return {"point": iv.point, "lo": iv.lo, "hi": iv.hi}


def exports_maker(ctx: ReportContext, out_dir: Path):
    agg, coll = ctx.aggregates, ctx.data
    rows = []
    for e, by in agg.scores.items():
        for b, (seeds, vals) in by.items():
            nv = agg.normalisation.apply(e, vals) if agg.normalisation.usable(e) else np.full(len(vals), np.nan)
            m = coll.method_info.get(b)
            rows += [{"env": e, "method": b, "label": coll.label(b), "bonus": coll.bonus_of(b),
                      "variant": m.variant if m else "base", "seed": int(s), "final_score": float(v),
                      "normalised": float(n)}
                     for s, v, n in zip(seeds, vals, nv, strict=True)]
    pd.DataFrame(rows, columns=["env", "method", "label", "bonus", "variant", "seed", "final_score",
                                "normalised"]).to_csv(out_dir / "final_scores.csv", index=False)
    blob = {
        "experiment": coll.experiment, "last_k": agg.last_k, "reps": agg.reps, "seed": agg.seed,
        "methods": {k: {"label": m.label, "bonus": m.bonus, "variant": m.variant, "overrides": m.overrides_dict,
                        "colour": m.colour, "primary": m.primary} for k, m in coll.method_info.items()},
        "common_overrides": coll.common_overrides,
        "normalisation": {"kind": agg.normalisation.kind, "description": agg.normalisation.description,
                          "lo": agg.normalisation.lo, "hi": agg.normalisation.hi,
                          "excluded": agg.normalisation.excluded},
        "per_env": {e: {b: {"n": d["n"], **{k: _iv(d[k]) for k in ("mean", "iqm", "median")}} for b, d in by.items()}
                    for e, by in agg.per_env.items()},
        "aggregate_envs": agg.agg_envs, "runs_per_method": agg.runs_per_method,
        "overall": {b: {m: _iv(iv) for m, iv in d.items()} for b, d in agg.overall.items()},
        "probability_of_improvement": [{"x": x, "y": y, **_iv(iv), "envs": n} for x, y, iv, n in agg.poi],
        "curve": {"x": agg.curve_x.tolist(), "xlabel": agg.curve_xlabel,
                  "methods": {b: {"point": p.tolist(), "lo": lo.tolist(), "hi": hi.tolist()}
                              for b, (p, lo, hi) in agg.curves.items()}},
        "seed_spread": agg.spread, "notes": agg.notes,
    }
    (out_dir / "aggregates.json").write_text(json.dumps(blob, indent=1, default=float, allow_nan=True))
    files = [out_dir / "final_scores.csv", out_dir / "aggregates.json"]
    return Section("Data files", "Per-run final scores: [final_scores.csv](final_scores.csv); every estimate and CI: "
                                 "[aggregates.json](aggregates.json); per-run status: [runs.csv](runs.csv); "
                                 "problems: [issues.csv](issues.csv).", files)

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

import numpy as np
import pandas as pd

from .aggregate import OVERALL_METRICS, Aggregates
from .collect import Collection, runs_table
from .names import QUALITATIVE, env_label, env_sort_key, method_label, sort_methods
from .registry import ReportContext, Section, register_maker

DASH = "—"


@dataclass
class Cell:
    text: str
    bold: bool = False


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


def _tex_escape(s: str) -> str:
    out = []
    for ch in s:
        if ch in "&%$#_{}":
            out.append("\\" + ch)
        elif ch == "~":
            out.append(r"\textasciitilde{}")
        elif ch == "^":
            out.append(r"\textasciicircum{}")
        elif ch == "\\":
            out.append(r"\textbackslash{}")
        else:
            out.append(ch)
    s = "".join(out)
    return (s.replace("±", r"$\pm$").replace(DASH, "--").replace("✓", r"\cmark").replace("✗", r"\xmark")
            .replace("×", r"$\times$"))


def render_markdown(header: list[str], rows: list[list[Cell | str]], align: str | None = None) -> str:
    """Pipe table; align: one of l/c/r per column (default: first l, rest r)."""
    align = align or "l" + "r" * (len(header) - 1)
    sep = {"l": ":---", "c": ":---:", "r": "---:"}
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep[a] for a in align) + " |"]
    for row in rows:
        cells = [c if isinstance(c, Cell) else Cell(str(c)) for c in row]
        lines.append("| " + " | ".join(f"**{c.text}**" if c.bold and c.text else c.text for c in cells) + " |")
    return "\n".join(lines) + "\n"


def render_latex(header: list[str], rows: list[list[Cell | str]], caption: str, label: str,
                 align: str | None = None) -> str:
    align = align or "l" + "r" * (len(header) - 1)
    out = [r"\begin{table}[h]", r"\centering", r"\begin{tabular}{" + align + "}", r"\toprule",
           " & ".join(r"\textbf{" + _tex_escape(h) + "}" for h in header) + r" \\", r"\midrule"]
    for row in rows:
        cells = [c if isinstance(c, Cell) else Cell(str(c)) for c in row]
        out.append(" & ".join(r"\textbf{" + _tex_escape(c.text) + "}" if c.bold and c.text else _tex_escape(c.text)
                              for c in cells) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}", r"\caption{" + _tex_escape(caption) + "}", r"\label{" + label + "}",
            r"\end{table}"]
    return "\n".join(out) + "\n"


def _write(out_dir: Path, name: str, md: str, tex: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.md", out_dir / f"{name}.tex"]
    paths[0].write_text(md)
    paths[1].write_text(tex)
    return paths


# --------------------------------------------------------------------------- final scores


def final_score_table(agg: Aggregates, methods: list[str], envs: list[str], stat: str = "mean"):
    """Rows = envs, columns = methods. stat "mean": mean ± half-width of the
    95% bootstrap CI; stat "iqm": IQM [lo, hi]. The best point estimate per
    env is bold. Returns (header, rows)."""
    header = ["Env"] + [method_label(b) for b in methods]
    ns = [agg.per_env[e][b]["n"] for e in envs for b in methods if b in agg.per_env.get(e, {})]
    usual_n = Counter(ns).most_common(1)[0][0] if ns else 0
    rows = []
    for e in envs:
        cells_for = agg.per_env.get(e, {})
        d = _decimals([cells_for[b][stat].point for b in methods if b in cells_for]
                      + [cells_for[b][stat].hi for b in methods if b in cells_for])
        best = max((cells_for[b][stat].point for b in methods if b in cells_for), default=None)
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
            row.append(Cell(text, bold=best is not None and np.isclose(iv.point, best, rtol=0, atol=0.5 * 10 ** -d)))
        rows.append(row)
    return header, rows, usual_n


@register_maker("final_scores", order=30)
def final_scores_maker(ctx: ReportContext, out_dir: Path):
    agg, coll = ctx.aggregates, ctx.data
    methods = [b for b in coll.methods if any(b in agg.per_env.get(e, {}) for e in coll.envs)]
    envs = [e for e in coll.envs if agg.per_env.get(e)]
    if not methods:
        return None
    k = agg.last_k
    what = "the last evaluation window" if k == 1 else f"the mean of the last {k} evaluation windows"
    files, parts = [], []
    for stat, name, title in (("mean", "final_scores", "Mean"), ("iqm", "final_scores_iqm", "IQM")):
        header, rows, n = final_score_table(agg, methods, envs, stat)
        ci = "± half-width of its" if stat == "mean" else "with its"
        caption = (f"{title} final score per env (final score of a run = {what}) {ci} 95% stratified-bootstrap "
                   f"percentile CI over seeds ({agg.reps} reps); n={n} seeds unless marked; best {title} in bold.")
        md = render_markdown(header, rows)
        files += _write(out_dir, name, md, render_latex(header, rows, caption, f"tab:{name}"))
        parts.append(f"**{title} final scores.** {caption}\n\n{md}\n[Markdown]({name}.md) | [LaTeX]({name}.tex)")
    return Section("Final scores per env", "\n\n".join(parts), files)


# --------------------------------------------------------------------------- cross-env aggregates


@register_maker("aggregate_table", order=45)
def aggregate_table_maker(ctx: ReportContext, out_dir: Path):
    agg = ctx.aggregates
    methods = [b for b in agg.agg_methods if b in agg.overall]
    notes = "".join(f"\n- {n}" for n in agg.notes)
    if not methods:
        return Section("Aggregate metrics", "No cross-env aggregates could be computed." +
                       (f"\n\nNotes:{notes}" if notes else ""))
    header = ["Method", "Runs/env"] + list(OVERALL_METRICS)
    best = {m: (min if m == "Optimality gap" else max)(agg.overall[b][m].point for b in methods)
            for m in OVERALL_METRICS}
    rows = []
    for b in methods:
        row: list[Cell | str] = [method_label(b), str(agg.runs_per_method[b])]
        for m in OVERALL_METRICS:
            iv = agg.overall[b][m]
            row.append(Cell(f"{iv.point:.3f} [{iv.lo:.3f}, {iv.hi:.3f}]", bold=np.isclose(iv.point, best[m],
                                                                                         rtol=0, atol=5e-4)))
        rows.append(row)
    caption = (f"Aggregate normalised final scores over {len(agg.agg_envs)} env(s) "
               f"({', '.join(env_label(e) for e in agg.agg_envs)}): point estimate [95% stratified-bootstrap CI, "
               f"{agg.reps} reps over runs]. Normalisation: {agg.normalisation.description}. "
               "Optimality gap: lower is better (threshold 1).")
    md = render_markdown(header, rows)
    files = _write(out_dir, "aggregate_metrics", md, render_latex(header, rows, caption, "tab:aggregate_metrics"))
    text = f"{caption}\n\n{md}\n[Markdown](aggregate_metrics.md) | [LaTeX](aggregate_metrics.tex)"
    if agg.poi:
        ph = ["Comparison", "P(X > Y) [95% CI]", "Envs"]
        prow = [[f"P({method_label(x)} > {method_label(y)})", f"{iv.point:.3f} [{iv.lo:.3f}, {iv.hi:.3f}]", str(n)]
                for x, y, iv, n in agg.poi]
        pmd = render_markdown(ph, prow)
        files += _write(out_dir, "probability_of_improvement", pmd,
                        render_latex(ph, prow, "Probability of improvement of RFIG over each baseline "
                                               f"(final scores, {agg.reps} bootstrap reps).",
                                     "tab:probability_of_improvement"))
        text += f"\n\n**Probability of improvement** (final scores):\n\n{pmd}"
    if notes:
        text += f"\n\nNotes:{notes}"
    return Section("Aggregate metrics", text, files)


# --------------------------------------------------------------------------- method comparison (paper Table 1)


def _speed_stats(coll: Collection) -> dict[str, dict[str, float]]:
    """bonus -> {"sps": median env steps/s, "rel": median over envs of (sps / PPO's sps), "compile": median s}."""
    per: dict[tuple[str, str], list[dict]] = {}
    for r in coll.runs:
        if r.complete and r.summary and r.env in coll.env_data and r.bonus in coll.methods:
            per.setdefault((r.env, r.bonus), []).append(r.summary)

    def med(key, sums):
        vals = [float(s[key]) for s in sums if isinstance(s.get(key), (int, float)) and math.isfinite(s[key])]
        return float(np.median(vals)) if vals else float("nan")

    out = {}
    for b in coll.methods:
        sums = [s for (e, bb), ss in per.items() if bb == b for s in ss]
        rel = []
        for e in coll.envs:
            if (e, b) in per and (e, "none") in per:
                mine, ppo = med("env_steps_per_second", per[(e, b)]), med("env_steps_per_second", per[(e, "none")])
                if math.isfinite(mine) and math.isfinite(ppo) and ppo > 0:
                    rel.append(mine / ppo)
        out[b] = {"sps": med("env_steps_per_second", sums), "compile": med("compile_time_s", sums),
                  "rel": float(np.median(rel)) if rel else float("nan")}
    return out


def _num(x: float, fmt: str) -> str:
    return format(x, fmt) if x is not None and math.isfinite(x) else DASH


@register_maker("method_comparison", order=70)
def method_comparison_maker(ctx: ReportContext, out_dir: Path):
    coll, agg = ctx.data, ctx.aggregates
    speed = _speed_stats(coll)
    rows_for = [b for b in ("none",) if b in coll.methods] + ["rnd", "vime", "hashexplo", "rfig"]
    rows_for += [b for b in sort_methods(coll.methods) if b not in rows_for]
    header = ["Method", "Principle", "Representation", "Computation", "Sensitivity (paper)",
              "Env steps/s", "× PPO", "Compile (s)", "Seed spread (IQR)"]
    rows = []
    for b in rows_for:
        q = QUALITATIVE.get(b, {"principle": "?", "representation": None, "computation": "?", "sensitivity": "?"})
        rep = {True: "✓", False: "✗", None: DASH}[q["representation"]]
        s = speed.get(b, {})
        nan = float("nan")
        rows.append([Cell(method_label(b), bold=b == "rfig"), q["principle"], rep, q["computation"],
                     q["sensitivity"], _num(s.get("sps", nan), ",.0f"), _num(s.get("rel", nan), ".2f"),
                     _num(s.get("compile", nan), ".1f"), _num(agg.spread.get(b, nan), ".3f")])
    caption = ("Comparison of exploration methods. Principle, Representation (does the method learn one), "
               "Computation and Sensitivity are the paper's Table 1; the last four columns are measured in this "
               "experiment: median env steps/s and compile time over complete runs (summary.json), × PPO = median "
               "over envs of (steps/s / PPO's steps/s in the same env), seed spread = median over envs of the "
               "interquartile range of normalised final scores across seeds (lower = less seed-sensitive). "
               f"{DASH} = not measured here.")
    md = render_markdown(header, rows, align="lllll" + "r" * 4)
    files = _write(out_dir, "method_comparison", md,
                   render_latex(header, rows, caption, "tab:method_comparison", align="lcccc" + "r" * 4))
    return Section("Comparison of exploration methods",
                   f"{caption}\n\n{md}\n[Markdown](method_comparison.md) | [LaTeX](method_comparison.tex)", files)


# --------------------------------------------------------------------------- data coverage and issues


def coverage_table(coll: Collection, last_k: int = 1):
    """Rows = envs, columns = methods; cell = "scored / expected": seeds with a
    final score / seeds expected (every seed seen anywhere in the selection).
    Bold when something is short. Returns (header, rows)."""
    rt = runs_table(coll, last_k)
    expected = len({r.seed for r in coll.runs if r.env in coll.env_data and r.bonus in coll.methods})
    header = ["Env"] + [method_label(b) for b in coll.methods]
    rows = []
    for e in coll.envs:
        row: list[Cell | str] = [env_label(e)]
        for b in coll.methods:
            sub = rt[(rt.env == e) & (rt.bonus == b)] if len(rt) else rt
            scored = int(sub.scored.sum()) if len(sub) else 0
            row.append(Cell(f"{scored}/{expected}", bold=scored < expected))
        rows.append(row)
    return header, rows


@register_maker("data", order=10)
def data_maker(ctx: ReportContext, out_dir: Path):
    coll = ctx.data
    rt = runs_table(coll, ctx.options.last_k)
    out_dir.mkdir(parents=True, exist_ok=True)
    issues = pd.DataFrame([vars(i) for i in coll.issues],
                          columns=["severity", "kind", "env", "bonus", "seed", "detail", "handling"])
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
    lines.append("\n**Coverage** (seeds with a final score / seeds expected, i.e. every seed seen in the selection; "
                 "bold = short):\n")
    lines.append(render_markdown(header, rows))
    shown = issues[issues.severity != "info"] if len(issues) else issues
    if len(shown):
        cap = 200
        tab = [[Cell(r.severity, bold=r.severity == "error"), r.kind,
                env_label(r.env) if isinstance(r.env, str) else DASH,
                method_label(r.bonus) if isinstance(r.bonus, str) else DASH,
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
    lines.append("\nPer-run status, final score and throughput: [runs.csv](runs.csv).")
    return Section("Data: coverage, missing and failed runs", "\n".join(lines),
                   [out_dir / "issues.csv", out_dir / "runs.csv"])


# --------------------------------------------------------------------------- machine-readable exports


def _iv(iv) -> dict:
    return {"point": iv.point, "lo": iv.lo, "hi": iv.hi}


@register_maker("exports", order=90)
def exports_maker(ctx: ReportContext, out_dir: Path):
    agg, coll = ctx.aggregates, ctx.data
    rows = []
    for e, by in agg.scores.items():
        for b, (seeds, vals) in by.items():
            nv = agg.normalisation.apply(e, vals) if agg.normalisation.usable(e) else np.full(len(vals), np.nan)
            rows += [{"env": e, "bonus": b, "seed": int(s), "final_score": float(v), "normalised": float(n)}
                     for s, v, n in zip(seeds, vals, nv, strict=True)]
    pd.DataFrame(rows, columns=["env", "bonus", "seed", "final_score", "normalised"]).to_csv(
        out_dir / "final_scores.csv", index=False)
    blob = {
        "experiment": coll.experiment, "last_k": agg.last_k, "reps": agg.reps, "seed": agg.seed,
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

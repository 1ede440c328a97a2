"""The sections of the reproduction report (campaign.repro) that are more than a standard
report: throughput and wall time per stage, DeepSea scaling, measured sensitivity, P(RFIG > PPO)
panel by panel, the controlled timing benchmark, the backend check and the theory figure.
Nothing here imports JAX."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from analysis.aggregate import fast_iqm  # noqa: E402
from analysis.bootstrap import bootstrap, stream_seed  # noqa: E402
from analysis.collect import Collection, collect, final_scores, find_experiments  # noqa: E402
from analysis.maker import ReportOptions  # noqa: E402
from analysis.markdown import render_markdown  # noqa: E402
from analysis.names import env_label, method_colour, method_label, sort_methods, split_task  # noqa: E402
from analysis.plots import _save  # noqa: E402
from analysis.report import build_report  # noqa: E402
from campaign.claims import verdicts as V  # noqa: E402
from campaign.claims.claims import SUCCESS_RULES, solved_fractions, wilson  # noqa: E402
from campaign.claims.sensitivity_claims import sensitivity_knobs  # noqa: E402
from rfig_exp.config.variants import format_value  # noqa: E402

from .progress import Progress  # noqa: E402

SENS = "sensitivity"


NOT_RECORDED = "machine not recorded"


def speed(coll: Collection) -> dict[str, dict[str, dict[str, float]]]:
    """device -> env -> bonus -> median env steps/s of the primary methods' complete runs (one per
    process), the device as each run's summary records it (``cpu``, or the accelerator's kind;
    :data:`NOT_RECORDED` for runs older than that field): a GPU's rate and a CPU core's are not
    one quantity, so they are never pooled or divided by each other."""
    per: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in coll.runs:
        sps = r.summary.env_steps_per_second if r.summary else None
        if r.complete and r.method == r.bonus and sps:
            per[r.summary.device or NOT_RECORDED][r.env][r.bonus].append(sps)
    return {dev: {e: {b: float(np.median(v)) for b, v in d.items()} for e, d in envs.items()}
            for dev, envs in per.items()}


def speed_md(speed: dict[str, dict[str, dict[str, float]]], coll: Collection) -> str:
    """One table per device (the CPU first, then each accelerator, then runs that record none),
    each method's rate beside PPO's on the same device only."""
    order = sorted(speed, key=lambda dev: (dev != "cpu", dev == NOT_RECORDED, dev))
    bonuses = sort_methods({b for dev in speed.values() for d in dev.values() for b in d})
    out = []
    for dev in order:
        rows = []
        for e in coll.envs:
            d = speed[dev].get(e)
            if not d:
                continue
            row = [env_label(e)]
            for b in bonuses:
                ratio = f" ({d[b] / d['none']:.2f}x)" if "none" in d and b != "none" and b in d else ""
                row.append(f"{d[b]:,.0f}{ratio}" if b in d else "—")
            rows.append(row)
        title = {"cpu": "On the CPU", NOT_RECORDED: "Runs that record no machine"}.get(dev, f"On {dev}")
        out += [f"**{title}**:", "", render_markdown(["Env"] + [method_label(b) for b in bonuses], rows)]
    return "\n".join(out) if out else "No run records its throughput."


def deepsea_scaling(coll: Collection, out: Path) -> tuple[str, list[Path]]:
    """Fraction of seeds that solve DeepSea (final return > 0.5) against the size, per bonus."""
    sizes = {}
    for e in coll.envs:
        base, opts = split_task(e)
        if base != "deepsea":
            continue
        size = 20
        for part in opts.split(","):
            if part.startswith("size="):
                size = int(float(part.split("=", 1)[1]))
        sizes[size] = e
    if not sizes:
        return "No DeepSea runs.", []
    solved = solved_fractions(coll)
    methods = [m for m in coll.methods if any(m in solved.get(e, {}) for e in sizes.values())]
    fig, ax = plt.subplots(figsize=(5.6, 3.6), layout="constrained")
    xs = sorted(sizes)
    jitter = {m: (i - (len(methods) - 1) / 2) * 0.35 for i, m in enumerate(methods)}
    for m in methods:
        pts = [(x, *solved[sizes[x]][m]) for x in xs if m in solved.get(sizes[x], {})]
        if not pts:
            continue
        x = np.array([p[0] for p in pts], float) + jitter[m]
        frac = np.array([p[1] / p[2] for p in pts])
        ci = np.array([wilson(p[1], p[2]) for p in pts])
        ax.errorbar(x, frac, yerr=[frac - ci[:, 0], ci[:, 1] - frac], color=coll.colour(m), marker="o",
                    capsize=3, linewidth=1.6, label=coll.label(m))
    ax.set_xlabel("DeepSea size N (N x N grid, N steps per episode)")
    ax.set_ylabel("Fraction of seeds solved")
    ax.set_xticks(xs)
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.25)
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(frameon=False, fontsize=9, loc="best")
    files = _save(fig, out / "deepsea_scaling")
    header = ["Size"] + [coll.label(m) for m in methods]
    rows = []
    for x in xs:
        row = [str(x)]
        for m in methods:
            k, n = solved.get(sizes[x], {}).get(m, (0, 0))
            lo, hi = wilson(k, n)
            row.append(f"{k}/{n} [{lo:.2f}, {hi:.2f}]" if n else "—")
        rows.append(row)
    md = (f"![DeepSea scaling](deepsea_scaling.png)\n\n*Seeds that solve DeepSea ({SUCCESS_RULES['deepsea'][1]}) at "
          "the end of the budget, per size and bonus, with Wilson 95% intervals (points shifted sideways to stay "
          "apart).*\n\n" + render_markdown(header, rows))
    depth = deepsea_depth(coll, sizes, methods)
    md += ("\n\n**How soon, and at what cost.** Per size and bonus: the median env steps (over the seeds that "
           "solve it) to the first window whose return is above the rule's threshold, then the training "
           "throughput (env steps/s over the 8 vmapped seeds of the job) and the job's wall time.\n\n"
           + render_markdown(["Size"] + [coll.label(m) for m in methods],
                             [[str(x)] + [_depth_cell(depth.get((x, m))) for m in methods] for x in xs])
           + "\n\n" + rfig_against_hashexplo(depth, xs))
    return md, files


def first_solved_steps(coll: Collection, env: str, method: str, threshold: float) -> list[float]:
    """Per scored run of ``method`` on ``env`` that ends solved, the env steps of its first window
    whose return is above ``threshold``."""
    steps = coll.env_data[env].steps
    out = []
    for c in coll.env_data[env].curves.get(method, []):
        if not c.scored or not len(c.values) or not c.values[-1] > threshold:
            continue
        above = np.nonzero(np.nan_to_num(c.values, nan=-np.inf) > threshold)[0]
        out.append(float(steps[above[0]]))
    return out


def deepsea_depth(coll: Collection, sizes: dict[int, str], methods: list[str]) -> dict[tuple[int, str], dict]:
    """(size, method) -> solved seeds, scored seeds, median steps to the first solved window, and
    the job's throughput and wall time (medians over its runs' summaries)."""
    solved = solved_fractions(coll)
    threshold = SUCCESS_RULES["deepsea"][2]
    out = {}
    for size, env in sizes.items():
        for m in methods:
            k, n = solved.get(env, {}).get(m, (0, 0))
            if not n:
                continue
            firsts = first_solved_steps(coll, env, m, threshold)
            runs = [r for r in coll.runs if r.env == env and r.method == m and r.complete and r.summary]
            sps = [r.summary.env_steps_per_second for r in runs if r.summary.env_steps_per_second]
            wall = [r.summary.wall_time_s for r in runs if r.summary.wall_time_s]
            out[(size, m)] = {"solved": k, "n": n, "first": float(np.median(firsts)) if firsts else None,
                              "sps": float(np.median(sps)) if sps else None,
                              "wall_min": float(np.median(wall)) / 60 if wall else None}
    return out


def _depth_cell(d: dict | None) -> str:
    if not d:
        return "—"
    first = f"{d['first'] / 1e3:,.0f}k steps" if d["first"] is not None else "never"
    cost = f"{d['sps']:,.0f}/s" if d["sps"] else "?"
    wall = f", {d['wall_min']:.1f} min" if d["wall_min"] else ""
    return f"{d['solved']}/{d['n']}: {first}; {cost}{wall}"


def rfig_against_hashexplo(depth: dict[tuple[int, str], dict], sizes: list[int]) -> str:
    """Where RFIG and #Explo part ways on DeepSea, in numbers: the first size at which their solved
    fractions' Wilson intervals separate, else that they do not; with each size's counts, steps to
    the treasure and throughput."""
    pairs = [(x, depth.get((x, "rfig")), depth.get((x, "hashexplo"))) for x in sizes]
    pairs = [(x, a, b) for x, a, b in pairs if a and b]
    if not pairs:
        return "RFIG and #Explo are not both measured at any size."
    apart = None
    for x, a, b in pairs:
        (alo, ahi), (blo, bhi) = wilson(a["solved"], a["n"]), wilson(b["solved"], b["n"])
        if ahi < blo or bhi < alo:
            apart = (x, "RFIG" if a["solved"] / a["n"] > b["solved"] / b["n"] else "#Explo")
            break
    per = "; ".join(
        f"size {x}: RFIG {a['solved']}/{a['n']}"
        + (f" (first at {a['first'] / 1e3:,.0f}k steps)" if a["first"] is not None else "")
        + f", #Explo {b['solved']}/{b['n']}"
        + (f" (first at {b['first'] / 1e3:,.0f}k steps)" if b["first"] is not None else "")
        + (f", RFIG at {a['sps'] / b['sps']:.2f}x #Explo's throughput" if a["sps"] and b["sps"] else "")
        for x, a, b in pairs)
    if apart:
        head = (f"**RFIG and #Explo part ways at size {apart[0]}**: there {apart[1]} solves more seeds, the Wilson "
                "intervals of the two fractions no longer overlapping.")
    else:
        head = (f"**RFIG and #Explo do not part ways up to size {pairs[-1][0]} at this n**: at every size measured, "
                "the Wilson intervals of their solved fractions overlap.")
    return f"{head} Per size: {per}."


@dataclass
class _SensitivityRun:
    """What the panels share: final scores, their per-env bounds, the bootstrap's settings and
    what the panels found (the spread per bonus, a table row per knob x env)."""

    coll: Collection
    scores: dict
    lo: dict[str, float]
    hi: dict[str, float]
    reps: int
    seed: int
    saturated: list[str] = field(default_factory=list)  # rule 3: drawn, left out of the ranges
    spread: dict[str, dict] = field(default_factory=dict)
    rows: list = field(default_factory=list)


def _sensitivity_panel(ax, s: _SensitivityRun, bonus: str, knob: str, values: dict, default_key: str | None) -> None:
    """One bonus x knob: normalised IQM (95% CI) against the knob's value, a line per env."""
    coll, scores, lo, hi = s.coll, s.scores, s.lo, s.hi
    markers = ["o", "s", "^", "D"]
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    order = sorted(values, key=lambda v: (float(v) if numeric else str(v)))
    for j, e in enumerate(coll.envs):
        if e not in lo or hi[e] <= lo[e]:
            continue
        pts = []
        for v in order:
            mk = values[v]
            if mk not in scores.get(e, {}):
                continue
            sd = {"x": (np.asarray(scores[e][mk][1]) - lo[e])[:, None] / (hi[e] - lo[e])}
            p, iv = bootstrap(sd, lambda x: np.array([fast_iqm(x)]), s.reps,
                              stream_seed(s.seed, "sensitivity", e, mk))
            pts.append((v, float(p["x"][0]), float(iv["x"][0, 0]), float(iv["x"][1, 0])))
        if len(pts) < 2:
            continue
        xpos = [float(v) if numeric else order.index(v) for v, *_ in pts]
        y = np.array([p[1] for p in pts])
        err = np.array([[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]])
        ax.errorbar(xpos, y, yerr=err, marker=markers[j % len(markers)], color=method_colour(bonus),
                    alpha=1.0 if j == 0 else 0.55, linestyle="-" if j == 0 else "--", capsize=2.5,
                    label=env_label(e))
        rng = float(y.max() - y.min())
        if e not in s.saturated:
            s.spread.setdefault(bonus, {"ranges": [], "knobs": set()})
            s.spread[bonus]["ranges"].append(rng)
            s.spread[bonus]["knobs"].add(knob)
        best = pts[int(np.argmax(y))][0]
        s.rows.append([method_label(bonus), knob.split(".")[-1], env_label(e),
                       ", ".join(f"{format_value(v)}: {yv:.2f}" for v, yv, *_ in pts),
                       f"{rng:.2f}", format_value(best)])
    default_value = next((v for v, mk in values.items() if mk == default_key), None)
    if default_value is not None:
        ax.axvline(float(default_value) if numeric else order.index(default_value), color="0.6",
                   linestyle=":", linewidth=1)
    if numeric and min(float(v) for v in order) > 0 and max(float(v) for v in order) / min(
            float(v) for v in order) >= 10:
        from matplotlib.ticker import NullFormatter

        ax.set_xscale("log")
        ax.set_xticks([float(v) for v in order], [format_value(v) for v in order], fontsize=7)
        ax.xaxis.set_minor_formatter(NullFormatter())
    if not numeric:
        ax.set_xticks(range(len(order)), [str(v).replace("_", "\n") for v in order], fontsize=7)
    ax.set_title(f"{method_label(bonus)}: {knob.split('.')[-1]}", fontsize=10)
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.25)
    ax.tick_params(labelsize=8)
    ax.spines[["top", "right"]].set_visible(False)


def sensitivity(coll: Collection, out: Path, reps: int, seed: int) -> tuple[str, dict[str, dict], list[Path]]:
    """One knob at a time: IQM final score (min-max normalised per env over every run of the
    experiment) against the knob's value, per bonus x knob x env, and one spread number per
    bonus: the mean over its knobs and envs of (largest - smallest IQM across the knob's values)."""
    scores = final_scores(coll)
    lo, hi = {}, {}
    for e in coll.envs:
        vals = np.concatenate([v for _, v in scores[e].values()]) if scores.get(e) else np.zeros(0)
        if vals.size:
            lo[e], hi[e] = float(vals.min()), float(vals.max())
    knobs, defaults = sensitivity_knobs(coll)
    panels = [(b, k) for b in sort_methods(knobs) for k in sorted(knobs[b])]
    if not panels:
        return "No sensitivity runs.", {}, []
    ncols = 4
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 2.5 * nrows + 0.6), squeeze=False,
                             layout="constrained")
    saturated = [e for e in coll.envs if len(scores.get(e, {})) >= 2
                 and V.saturated({m: v for m, (_, v) in scores[e].items()})]
    state = _SensitivityRun(coll, scores, lo, hi, reps, seed, saturated)
    for ax, (bonus, knob) in zip(axes.flat, panels, strict=False):
        _sensitivity_panel(ax, state, bonus, knob, knobs[bonus][knob], defaults.get(bonus))
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels) or 1, frameon=False, fontsize=9)
    fig.supylabel("IQM final score (min-max per env)", fontsize=10)
    files = _save(fig, out / "sensitivity")
    summary = {b: {"mean_range": float(np.mean(s["ranges"])), "max_range": float(np.max(s["ranges"])),
                   "panels": len(s["ranges"]), "knobs": sorted(s["knobs"])} for b, s in state.spread.items()}
    return _sensitivity_md(summary, state.rows, saturated), summary, files


def _sensitivity_md(summary: dict[str, dict], rows: list, saturated: list[str]) -> str:
    md_rows = [[method_label(b), f"{summary[b]['mean_range']:.2f}", f"{summary[b]['max_range']:.2f}",
                ", ".join(k.split(".")[-1] for k in summary[b]["knobs"]), str(summary[b]["panels"])]
               for b in sort_methods(summary)]
    return ("![sensitivity](sensitivity.png)\n\n*IQM final score against each knob (one at a time, the others at "
            "their defaults; dotted line: the default), min-max normalised per env over every run of the sensitivity "
            "experiment, 95% bootstrap CIs over seeds.*\n\n"
            + render_markdown(["Method", "Sensitivity: mean IQM range", "largest range", "knobs", "knob x env panels"],
                              md_rows)
            + "\n*IQM range = largest minus smallest normalised IQM final score across a knob's values, in one env; "
              "0 = the knob does not matter, 1 = it decides between the worst and the best run of the env."
            + (f" {', '.join(map(env_label, saturated))}: every run of every variant at one score, so it does not "
               "discriminate (rules.md, rule 3) and is left out of the ranges." if saturated else "") + "*\n\n"
            "<details><summary>Every knob, value by value</summary>\n\n"
            + render_markdown(["Method", "Knob", "Env", "normalised IQM per value", "range", "best value"], rows,
                              align="llllrl") + "\n</details>\n")


def sensitivity_source_md(campaign: str, data: str, runs: int | None, progress: Progress | None = None) -> str:
    """The first words of a grid's sensitivity section where a campaign of its own (``campaign``, its
    data folder ``data``) makes the grid's sensitivity runs: which runs they are, or while that
    campaign has none (``runs`` None), that it has none yet and which claims are left unjudged, so the
    report never drops those claims without saying so. ``progress``: how far the campaign has come;
    while it is not whole, the section says its verdicts are interim and on what."""
    how = f"`CAMPAIGN={campaign} campaign/scripts/repro.sh`, docs/reproduction.md"
    if runs is None:
        return (f"**The 32-seed sensitivity campaign (`{campaign}`) has no runs yet** (`{data}` holds none; {how}), "
                "so Table 1's sensitivity ordering (RFIG low) and the claim that beta does not change the "
                "comparison between bonuses are not judged in this report; their verdicts at 8 seeds are in "
                "docs/results/repro/index.md.")
    if progress is not None and not progress.whole:
        return (f"**The 32-seed sensitivity campaign (`{campaign}`) is still running** ({progress.text()}; "
                f"`python -m campaign.repro.stages list --campaign {campaign} --left {data}` lists the rest): its "
                f"{runs} runs in `{data}` ({how}), not this grid's data, so the verdicts of its two claims above "
                "are interim, on these runs alone, not on the four panels at 32 seeds it is for.\n\n")
    return (f"*From the 32-seed sensitivity campaign (`{campaign}`): its {runs} runs in `{data}` ({how}), not "
            "this grid's data; the claims above judge them.*\n\n")


def sensitivity_part(root: Path, experiment: str, out: Path, opts: ReportOptions, data: str | None = None,
                     progress: Progress | None = None) -> tuple[Collection | None, str, dict[str, dict]]:
    """The sensitivity runs of ``experiment`` in the results tree ``root``: their collection (None
    without any), the report's section (their standard report in ``out/sensitivity``) and its summary.
    ``data``: the data folder of the campaign of their own that made them (:func:`sensitivity_source_md`
    first, which also says when it has none, or how far it has come: ``progress``); None: the grid's own
    data, no section without any."""
    if experiment not in find_experiments(root):
        return None, sensitivity_source_md(experiment, data, None) if data else "", {}
    sens = collect(root, experiment)
    build_report(sens, out / "sensitivity", opts, only=["data", "curves", "final_scores"])
    md, summary, _ = sensitivity(sens, out, min(opts.reps, 500), opts.seed)
    return sens, (sensitivity_source_md(experiment, data, len(sens.runs), progress) if data else "") + md, summary


def theory_section(data_dir: Path, out: Path) -> str:
    """The theory figure and its slope table, redrawn from ``data/theory.csv``
    (made by ``python campaign/scripts/theory_figure.py``)."""
    csv = data_dir / "theory.csv"
    if not csv.is_file():
        return "No theory data (run `python campaign/scripts/theory_figure.py`)."
    from campaign.claims.theory_plot import exponent_table, plot_theory, read_theory_csv

    rows = read_theory_csv(csv)
    plot_theory(rows, out / "theory.png")
    table = exponent_table(rows)
    md_rows = []
    for t in table:
        lam = f"n x lambda0 = {t['lam']:g}" if t["lam_rule"] == "n*lambda0" else f"fixed {t['lam']:g} (RFIG)"
        ratio = t["prop42"] / t["max_err"] if t["max_err"] > 0 else float("nan")
        md_rows.append([lam, str(t["d"]), str(t["n"]), f"{t['slope_mean']:.2f}", f"{t['slope_max']:.2f}",
                        f"{t['mean_ig']:.2g}", f"{t['mean_err']:.2g}", f"{t['max_err']:.2g}", f"{t['prop42']:.2g}",
                        f"{t['prop43']:.2g}", f"{ratio:.3g}"])
    slopes = [t["slope_mean"] for t in table if t["lam_rule"] == "n*lambda0"]
    fixed = [t["slope_mean"] for t in table if t["lam_rule"] != "n*lambda0"]
    holds = all(t["prop42"] >= t["max_err"] for t in table)
    return ("![theory](theory.png)\n\n*Mean and largest |IG_RFF - IG_GP| over query points against the number of "
            "random features D (float64, 5 feature draws), with Prop. 4.2's bound (the measured kernel error put "
            "into it) and Prop. 4.3's (the kernel error it guarantees at delta = 0.05), "
            "`campaign/scripts/theory_figure.py`.*\n\n"
            f"Measured: under the paper's assumption lambda = n lambda0 the mean error falls like "
            f"D^{min(slopes):.2f}..D^{max(slopes):.2f}, the bound's own D^-1/2 rate; with RFIG's fixed lambda = 1 "
            f"it falls faster (D^{min(fixed):.2f}..D^{max(fixed):.2f}) but the bounds, which then need "
            "lambda0 = 1/n, grow like n^2 and say nothing (10^2 to 10^5 nats against an information gain below "
            f"0.35). Prop. 4.2 {'holds in every setting' if holds else 'is VIOLATED in some setting'} "
            "(last column: bound / largest error at D = 1024).\n\n"
            + render_markdown(["lambda", "d", "n", "slope mean err", "slope max err", "IG (exact)", "mean err",
                               "max err", "Prop. 4.2", "Prop. 4.3", "4.2 / max err"], md_rows))


def poi_figure(claims_panels, out: Path) -> tuple[str, list[Path]]:
    """P(RFIG > PPO) with its 95% interval, one row per panel (the paper's, then those beyond it),
    and the aggregate over the paper's discriminating panels with and without the others: the
    headline claim at a glance. ``claims_panels``: campaign.claims.claims.panels_of(main, paper envs)."""
    from campaign.claims.claims import poi_by_panel

    p = claims_panels
    rows: list[tuple[str, V.PoiDist, str]] = []
    per = poi_by_panel(p, "rfig", "none", p.paper + p.beyond)
    for e in p.paper + p.beyond:
        if e in per:
            rows.append((env_label(e) + ("" if e in p.paper else " (beyond the paper)"), per[e],
                         "saturated" if p.saturated(e, "rfig", "none") else ("paper" if e in p.paper else "beyond")))
    if not rows:
        return "", []
    aggregates = []
    for label, envs in (("mean over the paper's panels", p.discriminating(p.paper, "rfig", "none")),
                        ("mean with the envs beyond the paper", p.discriminating(p.paper + p.beyond, "rfig", "none"))):
        if envs:
            d = V.poi_over_panels({e: p.runs(e, "rfig") for e in envs}, {e: p.runs(e, "none") for e in envs})
            aggregates.append((f"{label} ({len(envs)})", d))
    if len(aggregates) == 2 and aggregates[0][1].point == aggregates[1][1].point:
        aggregates = aggregates[:1]
    every = rows + [(label, d, "aggregate") for label, d in aggregates]
    fig, ax = plt.subplots(figsize=(6.4, 0.34 * len(every) + 1.0), layout="constrained")
    colours = {"paper": "#1f77b4", "beyond": "#7f7f7f", "saturated": "#c7c7c7", "aggregate": "#d62728"}
    for i, (_label, d, kind) in enumerate(every):
        y = len(every) - 1 - i
        lo, hi = d.interval()
        ax.errorbar([d.point], [y], xerr=[[d.point - lo], [hi - d.point]], fmt="D" if kind == "aggregate" else "o",
                    color=colours[kind], capsize=3, markersize=5)
    ax.axvline(0.5, color="0.4", linestyle=":", linewidth=1)
    ax.set_yticks(range(len(every)), [label + (" (does not discriminate)" if kind == "saturated" else "")
                                      for label, _, kind in reversed(every)], fontsize=8)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel("P(RFIG > PPO), final score (95% interval over seeds, DeLong variance)", fontsize=9)
    ax.spines[["top", "right"]].set_visible(False)
    files = _save(fig, out / "poi_rfig_ppo")
    table = render_markdown(["Panel", "P(RFIG > PPO) [95% CI]"],
                            [[label + (" (does not discriminate)" if kind == "saturated" else ""),
                              f"{d.point:.2f} [{d.interval()[0]:.2f}, {d.interval()[1]:.2f}]"]
                             for label, d, kind in every], align="lr")
    return ("![P(RFIG > PPO) per panel](poi_rfig_ppo.png)\n\n*One row per panel: the probability that a run of "
            f"RFIG ends above a run of PPO (0.5: no difference). {_poi_legend(every)}*\n\n"
            "<details><summary>The numbers</summary>\n\n" + table + "\n</details>\n", files)


def _poi_legend(rows: list) -> str:
    """The colours of the P(RFIG > PPO) figure, naming only what it draws (the aggregate with the
    envs beyond the paper is left out when it equals the paper's own, or when there are none)."""
    kinds = {kind for _, _, kind in rows}
    parts = [text for kind, text in (("paper", "blue: the paper's panels"), ("beyond", "grey: beyond the paper"),
                                     ("saturated", "light grey: a panel where every method sits at one score "
                                                   "(it does not discriminate and is in no aggregate)"))
             if kind in kinds]
    aggregates = [label for label, _, kind in rows if kind == "aggregate"]
    if aggregates:
        parts.append("red: the aggregate behind the claim, the per-panel probabilities' mean (panels counted in "
                     "brackets): " + " and ".join(aggregates))
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "."


def backend_section(tree: Path, main: Collection, reps: int, seed: int) -> str:
    """Sparse-HalfCheetah on brax's generalized backend (experiment ``backend``) beside the main
    grid's spring runs: P(RFIG > PPO) on each, and whether the verdict of that panel turns."""
    from analysis.collect import collect
    from campaign.claims.claims import panels_of, poi_by_panel

    if not (tree / "backend").is_dir():
        return ""
    other = collect(tree, "backend")
    rows = []
    for label, coll in (("spring (the main grid)", main), ("generalized (brax's default)", other)):
        p = panels_of(coll, ["sparse_halfcheetah"])
        envs = [e for e in p.paper if e.startswith("sparse_halfcheetah")]
        per = poi_by_panel(p, "rfig", "none", envs)
        for e, d in per.items():
            lo, hi = d.interval()
            ppo, rfig = (float(V.iqm_rows(p.runs(e, m)[None])[0]) for m in ("none", "rfig"))
            rows.append([label, f"{ppo:.1f}", f"{rfig:.1f}", f"{d.point:.2f} [{lo:.2f}, {hi:.2f}]",
                         V.judge_dist(d, 0.5).text, f"{d.n}-{d.n_max}" if d.n_max not in (None, d.n) else str(d.n)])
    if not rows:
        return ""
    return ("Brax's `spring` backend is another physics, not only a faster one: the same check of RFIG against PPO "
            "on Sparse-HalfCheetah, seeds 0-7, on both backends (`python -m campaign.repro.stages commands "
            "backend-halfcheetah`).\n\n" + render_markdown(
                ["Backend", "PPO IQM", "RFIG IQM", "P(RFIG > PPO) [95% CI]", "verdict (rules.md)", "seeds"], rows,
                align="lrrrll"))

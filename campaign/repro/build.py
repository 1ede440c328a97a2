"""The reproduction report (``docs/results/repro/``): the paper's figure and table from our own
runs, every claim with a verdict, DeepSea scaling, measured sensitivity and the theory figure.

    python -m campaign.repro restore --results RESULTS --data docs/results/repro/data
    python -m campaign.repro export --results RESULTS --data docs/results/repro/data
    python -m campaign.repro merge --from OTHER_DATA --data docs/results/repro/data
    python -m campaign.repro build --data docs/results/repro/data --out docs/results/repro

``restore`` puts the committed complete runs into a results tree, so a sweep there runs only
what the data lacks. ``export`` adds the compact per-run data (campaign.repro.data) of the
experiments ``repro`` (the main grid, sparse Brax on another backend and the DeepSea sizes, all in
one experiment: an ``env.*`` override names a task, e.g. ``deepsea[size=30]``) and
``sensitivity`` to the data folder; ``merge`` adds the runs of another data folder (an export
made on another machine). A run that arrives twice is kept once if identical and refused if not.
``build`` rebuilds a results tree from that data in a temporary folder and writes the report from
it with the same code that reads live results (analysis.collect), so ``make figures`` on a fresh
clone rebuilds the committed report from the committed data alone. ``meta.json`` beside the
data says how the data was made (commands, commit, machine, wall time, the estimate made
before the runs); the report quotes it. Nothing here imports JAX.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from pathlib import Path

from analysis.aggregate import compute_aggregates
from analysis.collect import AnalysisError, Collection, collect, find_experiments, return_measurement_md
from analysis.devices import device_confound_md, devices_from_data
from analysis.maker import ReportOptions
from analysis.markdown import render_markdown
from analysis.names import env_label, method_label, split_task
from analysis.report import build_report
from analysis.tables import usual_seeds
from campaign.claims import verdicts
from campaign.claims.claims import beyond_paper_claims, claims_table, comparisons_table, panels_of
from campaign.claims.held_out import held_out_of, held_out_seeds, on_held_out, seeds_text
from campaign.claims.resampling import quick_verdicts_warning
from campaign.claims.rule_history import history_md

from .baselines import BaselinesSection, baselines_section, degenerate_cells
from .cells import compare_claims, forecasts_md, missing_cells, missing_md, origins_md
from .data import RUNS_JSON, read_data, rebuild_tree, write_tree
from .made_by import stage_costs, stage_coverage, stage_rows
from .paper_table import REPORT_MAKERS
from .progress import Progress, campaign_progress, interim_sensitivity
from .reproducible import audit_reruns, audit_reruns_md, reproducibility_md
from .sections import (
    SENS,
    backend_section,
    deepsea_scaling,
    poi_figure,
    sensitivity_part,
    speed,
    speed_md,
    theory_section,
)
from .stage_parts import MAIN
from .stages import CAMPAIGN_DATA, SENS32, SIGNAL, preset_envs
from .timing import read_timing, scoped_timing, timing_section

# The sweep presets whose cells each grid's report expects (the rest: campaign.repro.cells).
EXPECTED_PRESETS = {"repro": ["repro", "repro_minatar", "repro_brax", "deepsea_scaling"],
                    "paper32": ["paper32", "paper32_brax"]}
# Another report whose verdicts a grid's claims table shows beside its own.
_DOCS = Path(__file__).resolve().parents[2] / "docs/results"
COMPARE_WITH = {"paper32": [(_DOCS / "repro/claims.json", "8 seeds on the CPU (docs/results/repro)"),
                            (_DOCS / "paper32/claims-before-2026-11-28.json",
                             "32 seeds before 2026-11-28 (the rules then, VIME at its old defaults)")]}
# The 8-seed report's forecasts of the seeds its undecided claims needed, as they were before rule 4
# changed (its claims.json at 42f25de), set against what the 32-seed grid showed.
# Where a grid's controlled timing benchmark lives when its own data has none: the benchmark times
# single runs of the paper's settings on one machine, whatever the number of seeds a grid holds.
TIMING_FROM = {"paper32": _DOCS / "repro/data"}
FORECASTS = {"paper32": (_DOCS / "repro/claims-before-2026-11-28.json", "8 seeds (before 2026-11-28)")}
# A grid whose sensitivity runs are a campaign of their own (its data folder: CAMPAIGN_DATA): the 32-seed
# report judges Table 1's sensitivity ordering and the beta claim on the sensitivity32 campaign's runs.
SENSITIVITY_FROM = {"paper32": SENS32}
# The experiment (and its data) whose runs test the input-space signal check (campaign.claims.novelty_calibration).
NOVELTY_FROM = {"paper32": ("novelty", _DOCS / "novelty/data")}
MAIN_VARIANTS = ("base", "env.backend=spring")  # the main grid: defaults, and sparse Brax on spring
STANDARD_SECTIONS = ["data", "curves", "seed_curves", "final_scores", "aggregate_table", "aggregate_intervals",
                     "aggregate_curve", "probability_of_improvement", "performance_profiles", "method_comparison",
                     "coverage_curves", "visit_maps", "final_coverage", "intrinsic_reward", "env_metrics", "exports"]
CURVES = "main/curves.png"


CLAIM_HEADER = ["The paper says (Section 5, Table 1)", "Measured as", "Value [95% CI]", "Verdict (rules.md)"]


def _claims_md(claims, compared: list[tuple[Path, str]] | None = None, first: str = CLAIM_HEADER[0],
               held: str = "") -> str:
    """The claims table: each verdict with its deciding interval, its second test (rule 12), its
    verdict on the held-out seeds (rule 11; ``held``: those seeds in words, no column when empty) and
    each panel on its own (rules 6 and 10); with ``compared``, the other reports' verdicts after them,
    else how each was measured and its details."""
    head = ["Second test (rule 12)", *([f"Verdict on seeds {held} alone (rule 11)"] if held else []),
            "Each panel on its own (rules 6, 10)"]

    def extra(c) -> list[str]:
        return [c.second or "—", *([c.held_out or "—"] if held else []), c.panels or "—"]

    beside = compare_claims(claims, compared) if compared else None
    if beside is not None:
        labels = [label for path, label in compared or [] if Path(path).is_file()]
        rows = [row[:4] + extra(c) + row[4:] for row, c in zip(beside, claims)]
        return render_markdown(["The paper says", "Value [95% CI]", "Verdict (rules.md)", "Deciding interval", *head,
                                *[f"Verdict at {label}" for label in labels]], rows,
                               align="l" * (4 + len(head) + len(labels)))
    rows = [[c.claim, c.measure, c.value, f"**{c.verdict}**", c.deciding or "—", *extra(c), c.detail] for c in claims]
    return render_markdown([first, *CLAIM_HEADER[1:], "Deciding interval", *head, "Details"], rows,
                           align="l" * (6 + len(head)))


def _provenance_md(meta: dict, costs: dict[tuple[str, str], dict], coverage: dict[str, int],
                   envs: list[str]) -> str:
    """Who made which stage (commit, machine, when), its estimated and measured cost, then each
    campaign's commands and notes, and the reductions from the paper."""
    # The "after" estimate (make estimate once the stage's measured rows are in the throughput
    # table) exists only where a campaign recorded one; without any, its two columns stay out.
    after = any((est or {}).get("after") for camp in meta.get("campaigns", [])
                for est in (camp.get("stages") or {}).values())
    header = ["Stage", "runs", "in the data", "commit", "machine", "finished", "estimated before (min)",
              "measured (min)", "measured / before", "estimated after (min)", "measured / after"]
    rows = stage_rows(meta, costs, coverage)
    keep = len(header) if after else len(header) - 2
    lines = ["**Made by** (each run records the commit, machine and jax version that made it; measured = the sum of "
             "the stage's job wall times, one CPU core each (a GPU row: its jobs' wall times summed, though "
             "several ran at once); estimated = `make estimate` from the committed throughput "
             "table before the runs" + (", and after adding the rows they measured" if after else "") +
             "; in the data = the stage's runs the data holds from any machine, a GPU's included, of all it "
             "makes; a stage that made only part of its runs itself has no finish time and no ratio; a stage "
             "that made none names no machine; ‡: a job of the stage was cut and resumed from its checkpoint, "
             "counted as the training time of all its attempts plus its last compile, so the earlier attempts' "
             "compile and start-up are missing):", "",
             render_markdown(header[:keep], [r[:keep] for r in rows], align="lrrllllrrrr"[:keep])]
    for camp in meta.get("campaigns", []):
        commits = camp.get("commits") or [camp.get("commit")]
        lines += ["", f"**{camp.get('label', commits[0])}** ({'commits' if len(commits) > 1 else 'commit'} "
                      f"{', '.join(map(str, commits))}, {camp.get('machine')}; {_campaign_span(camp)}):", ""]
        if camp.get("commands"):
            lines += ["<details><summary>commands</summary>", "", *[f"- `{c}`" for c in camp["commands"]], "",
                      "</details>", ""]
        lines += [f"- {n}" for n in camp.get("notes", [])]
        if camp.get("estimate_note"):
            lines.append(f"- {camp['estimate_note']}")
        if camp.get("not_run"):
            lines.append(f"- Not run in this campaign ({len(camp['not_run'])} jobs; a later one may have made them): "
                         + "; ".join(f"`{j}`" for j in camp["not_run"]))
    lines += ["", "**Reductions from the paper:**", "", f"- {coverage_of_the_paper(envs)}",
              *[f"- {r}" for r in meta.get("reductions", [])]]
    return "\n".join(lines)


def coverage_of_the_paper(envs: list[str]) -> str:
    """Which of the paper's envs (``conf/sweep/paper.yaml``) the main grid has, in one line."""

    paper = preset_envs("paper")
    have = {split_task(e)[0] for e in envs}
    missing = [env_label(e) for e in paper if e not in have]
    extra = sorted({env_label(e) for e in have if e not in paper})
    return (f"{len(paper) - len(missing)} of the paper's {len(paper)} envs"
            + (f" (not yet: {', '.join(missing)})" if missing else " (all of them)")
            + (f"; also {', '.join(extra)}, which the paper's figure does not have" if extra else "") + ".")


def _as_of(meta: dict, stored: dict) -> str:
    """The data's time, not the build's, so that a rebuild from unchanged data writes the same bytes:
    the last campaign's end, or while a campaign still runs, the end of the newest run in the data."""
    ends = [c["finished"] for c in meta.get("campaigns", []) if c.get("finished")]
    running = [c for c in meta.get("campaigns", []) if c.get("started") and not c.get("finished")]
    runs = [r.record.get("summary", {}).get("finished_at") for r in stored.values()]
    newest = max((t for t in runs if t), default=None)
    if running and newest:
        return f"{newest} (the newest run's end; a campaign still adds runs, data/meta.json)"
    if ends:
        return f"{max(ends)} (the runs' end, data/meta.json)"
    return f"{newest} (the newest run's end)" if newest else "unknown"


def _campaign_span(camp: dict) -> str:
    """When a campaign ran, in words: its start and end, or that it is still running."""
    started, finished, wall = camp.get("started"), camp.get("finished"), camp.get("wall_time")
    if finished:
        return f"{started or 'start not recorded'} to {finished}" + (f", {wall}" if wall else "")
    return f"from {started}, still running" if started else "times not recorded"


def build(data_dir: Path, out: Path, reps: int = 2000, seed: int = 0, experiment: str = MAIN,
          verdict_reps: int = verdicts.REPS, sensitivity: Path | None = None) -> Path:
    """Write ``out/index.md`` and its figures from the compact data in ``data_dir`` (the main
    grid is ``experiment``: ``repro`` on CPU, ``paper32`` for the GPU preset). ``reps``: the figures'
    resamples; ``verdict_reps``: the verdicts' (rule 5's ``REPS``; fewer, and the index says so).
    ``sensitivity``: for a grid of :data:`SENSITIVITY_FROM`, that campaign's data (default: its folder)."""
    out.mkdir(parents=True, exist_ok=True)
    meta = json.loads((data_dir / "meta.json").read_text()) if (data_dir / "meta.json").is_file() else {}
    stored = read_data(data_dir)
    sens_from = SENSITIVITY_FROM.get(experiment)
    sens_dir = sensitivity or (_DOCS.parents[1] / CAMPAIGN_DATA[sens_from] if sens_from else None)
    with tempfile.TemporaryDirectory() as tmp:
        tree, sens_tree = write_tree(stored, Path(tmp) / "results"), Path(tmp) / "sensitivity-results"
        if experiment not in find_experiments(tree):
            raise AnalysisError(f"no {experiment!r} experiment in {data_dir}")
        sens_stored = read_data(sens_dir) if sens_dir is not None else {}
        if sens_dir is not None:  # its runs (none yet: an empty tree) in a tree of their own
            write_tree(sens_stored, sens_tree).mkdir(parents=True, exist_ok=True)
        name, novelty_dir = NOVELTY_FROM.get(experiment, ("", None))
        novelty = (collect(rebuild_tree(novelty_dir, Path(tmp) / "novelty-results"), name)
                   if novelty_dir is not None and (novelty_dir / RUNS_JSON).is_file() else None)
        progress = campaign_progress(sens_stored, sens_from) if sens_dir is not None and sens_from else None
        parts = _reports(tree, out, experiment, ReportOptions(reps=reps, seed=seed, as_of=_as_of(meta, stored),
                                                              run_devices=devices_from_data(stored)),
                         data_dir, verdict_reps, sens_tree if sens_dir is not None else None, novelty, progress)
        # The rebuilt trees live in a temporary folder: name them by what they are, not where they were.
        for path in out.rglob("*"):
            if path.suffix in (".md", ".csv", ".json", ".tex") and path.is_file():
                text = path.read_text()
                if str(tmp) in text:
                    path.write_text(text.replace(str(tree), "data (rebuilt results tree)").replace(
                        str(sens_tree), "sensitivity data (rebuilt results tree)"))
    index = out / "index.md"
    parts["audit_md"], audit_table = audit_reruns_md(audit_reruns(stored, experiment))
    parts["provenance"] = (_provenance_md(meta, stage_costs(stored), stage_coverage(stored), parts["main"].envs)
                           + "\n\n" + reproducibility_md(stored) + (f"\n\n{audit_table}" if audit_table else ""))
    presets = EXPECTED_PRESETS.get(experiment, [experiment])
    short = missing_cells(stored, experiment, presets)
    parts["missing"], parts["filling"] = missing_md(short, presets), bool(short)
    parts["origins"] = origins_md(stored, experiment)
    parts["compared"] = COMPARE_WITH.get(experiment)
    parts["warnings"] = meta.get("warnings", []) + quick_verdicts_warning(verdict_reps)
    parts["experiment"] = experiment
    (out / "rules.md").write_text(rules_md())
    index.write_text(_index_md(parts, theory_section(data_dir, out) if (data_dir / "theory.csv").is_file() else "",
                               out))
    # The short form the README shows between its markers (update_readme).
    table = (out / "main" / "final_scores_iqm.md")
    claims = parts["claims"]
    judged = _claims_md(claims, parts["compared"], held=parts["held"]) if parts["compared"] else render_markdown(
        ["The paper says", "Value [95% CI]", "Verdict (rules.md)", "Deciding interval"],
        [[c.claim, c.value, f"**{c.verdict}**", c.deciding or "—"] for c in claims], align="llll")
    rules = f"{out.as_posix()}/rules.md"
    (out / "summary.md").write_text(
        f"![learning curves]({out.as_posix()}/{CURVES})\n\n"
        + (table.read_text() if table.is_file() else "")
        + f"\n*Our IQM final scores with 95% intervals over seeds, {parts['usual_n']} seeds per cell unless marked "
          f"(the paper shows curves only). Below, the paper's "
          f"claims on its own {len(preset_envs('paper'))} panels, judged by the rule book ([{rules}]({rules}): its "
          f"rules, and when each was fixed against which data had been read).*\n\n"
        + (f"{parts['baselines'].fixed_md}\n\n" if parts["baselines"].fixed_md else "") + judged)
    (out / "claims.json").write_text(json.dumps([c.__dict__ for c in claims], indent=1))
    (out / "sensitivity.json").write_text(json.dumps(parts["sens_summary"], indent=1, sort_keys=True))
    return index


def _reports(tree: Path, out: Path, experiment: str, opts: ReportOptions, data_dir: Path,
             verdict_reps: int = verdicts.REPS, sens_tree: Path | None = None,
             novelty: Collection | None = None, sens_progress: Progress | None = None) -> dict:
    """The standard reports of the main grid, the DeepSea sizes and the sensitivity runs (``sens_tree``'s
    for a grid of :data:`SENSITIVITY_FROM`), the claims judged by the rule book (at ``verdict_reps``
    resamples), and what the index takes from them; ``novelty``: the runs that test the signal check's
    input-space part on known answers (:data:`NOVELTY_FROM`); ``sens_progress``: how far the campaign that
    made ``sens_tree``'s runs has come (its claims' verdicts are interim until it is whole)."""
    reps, seed = opts.reps, opts.seed
    have = find_experiments(tree)
    paper = preset_envs("paper")
    main = collect(tree, experiment, variants=list(MAIN_VARIANTS))
    build_report(main, out / "main", opts, only=STANDARD_SECTIONS, makers=REPORT_MAKERS)  # with the paper's Table 1
    agg = compute_aggregates(main, reps=reps, seed=seed)
    measured_speed = speed(main)

    deep_md, deep_runs = "", []
    if any(r.env_folder == "deepsea" for r in main.runs) or (tree / experiment / "deepsea").is_dir():
        deep = collect(tree, experiment, envs=["deepsea"])
        build_report(deep, out / "deepsea", opts, only=["data", "curves", "final_scores", "coverage_curves",
                                                        "visit_maps", "final_coverage"])
        deep_md, _ = deepsea_scaling(deep, out)
        deep_runs = deep.runs

    sens_exp = SENSITIVITY_FROM.get(experiment, SENS)
    sens, sens_md, sens_summary = sensitivity_part(sens_tree or tree, sens_exp, out, opts,
                                                   CAMPAIGN_DATA[sens_exp] if sens_tree else None, sens_progress)
    sens_runs = sens.runs if sens is not None and sens_tree is None else []  # the runs of data/ only
    timing_dir = data_dir if read_timing(data_dir) is not None else TIMING_FROM.get(experiment, data_dir)
    audit = collect(tree, SIGNAL) if SIGNAL in have else None
    broken = degenerate_cells(main, audit)  # no verdict uses a bonus the signal check finds degenerate
    timing = read_timing(timing_dir)

    def judged(c: Collection, late: bool) -> list:  # rule 11: the same rules on the held-out seeds when late
        return claims_table(c, agg, paper, reps=verdict_reps, seed=seed, timing=None if late else timing,
                            sens=held_out_of(sens) if late else sens, degenerate=broken)

    claims = interim_sensitivity(scoped_timing(on_held_out(judged, main), timing_dir, measured_speed),
                                 sens_progress, sens_exp)
    # every variant of the grid (VIME's runs at its old defaults too) for the signal check
    working = baselines_section(collect(tree, experiment), main, panels_of(main, paper), audit, novelty)
    poi_md, _ = poi_figure(panels_of(main, paper), out)
    seen, unique = set(), []
    for r in main.runs + deep_runs + sens_runs:
        if r.path not in seen:
            seen.add(r.path)
            unique.append(r)
    return {"main": main, "claims": claims, "held": seeds_text(held_out_seeds(main)),
            "comparisons": on_held_out(lambda c, _: comparisons_table(c, paper, verdict_reps, seed, broken), main),
            "beyond": on_held_out(lambda c, _: beyond_paper_claims(c, paper, verdict_reps, seed), main),
            "poi_md": poi_md, "speed": measured_speed,
            "deep_md": deep_md, "sens_md": sens_md, "sens_summary": sens_summary, "runs": unique, "baselines": working,
            "sens_pending": bool(sens_md) and sens is None,
            "devices_md": device_confound_md(main, opts.run_devices),
            "timing_md": timing_section(timing_dir), "backend_md": backend_section(tree, main, reps, seed),
            "usual_n": usual_seeds(cell["n"] for per in agg.per_env.values() for cell in per.values())}


def _index_md(parts: dict, theory_md: str, out: Path) -> str:
    """The report in a reader's order: the figure, the claims, the scores, whether every method
    works, how it was measured, then who made what."""
    main = parts["main"]
    problems = [i for i in main.issues if i.severity == "error"]
    n_seeds = sorted({c.seed for c in main.curves() if c.scored})
    scores = out / "main" / "final_scores_iqm.md"
    lines = [
        "# Reproduction: the paper's figure and table from our own runs",
        "",
        f"*Built by `python -m campaign.repro build` (`make figures`) from the per-run data in `data/` "
        f"({len(parts['runs'])} runs). Every number below is computed from that data; none is typed in. Who made "
        "each run, on which machine and at which commit: *Provenance*, at the end.*",
        "",
        *[f"> **Read this first.** {w}\n" for w in parts.get("warnings", [])],
        "## Learning curves (the paper's figure)",
        "",
        f"![learning curves]({CURVES})",
        "",
        f"*Episode return, interquartile mean over {len(n_seeds)} seeds with the 25-75th percentile band, every "
        "bonus at the paper's settings (`conf/`). Full standard report: [main/index.md](main/index.md).*",
        "",
    ]
    if parts.get("filling"):
        lines += ["## Cells still missing", "", parts["missing"], ""]
    lines += _claims_sections(parts)
    lines += [
        "## Final scores per panel (ours: the paper shows curves and no score table)",
        "",
        scores.read_text() if scores.is_file() else "",
        f"*IQM final score (return of the last window) with its 95% stratified-bootstrap CI over seeds, "
        f"{parts['usual_n']} seeds per cell unless marked; bold: the best whose CI overlaps no other.*",
        "",
        "## RFIG against PPO, panel by panel",
        "",
        parts["poi_md"],
        "",
        *_baselines_md(parts["baselines"], parts.get("audit_md", "")),
        "## How the return is measured",
        "",
        return_measurement_md(main),
        "",
        "## Throughput of the campaign's jobs (env steps/s over the vmapped seeds of each job, median per cell, "
        "one table per device: a GPU's rate and a CPU core's are never pooled; the machines are in the table "
        "below; not evidence for the timing claim: other work shared the machine)",
        "",
        speed_md(parts["speed"], main),
        "",
        parts["devices_md"],
        "",
    ]
    if parts["deep_md"]:
        lines += ["## Deep exploration: DeepSea scaling (beyond the paper)", "", parts["deep_md"], "",
                  "Curves, visit heat maps and coverage per size: [deepsea/index.md](deepsea/index.md).", ""]
    if parts["sens_md"]:
        lines += ["## Sensitivity, measured", "", parts["sens_md"], "",
                  *([] if parts["sens_pending"] else ["Per-variant curves and tables: "
                                                      "[sensitivity/index.md](sensitivity/index.md).", ""])]
    if theory_md:
        lines += ["## Theory: RFF information gain against the exact GP", "", theory_md, ""]
    lines += ["## Provenance: who made each run", "", parts["provenance"], "",
              "<details><summary>Which commit, machine and jax version made each cell</summary>", "",
              parts["origins"], "", "</details>", ""]
    if not parts.get("filling"):
        lines += ["## Cells still missing", "", parts["missing"], ""]
    lines += ["## Data problems", "", _problems_md(problems), ""]
    return "\n".join(lines)


def _baselines_md(section: BaselinesSection, audit_md: str = "") -> list[str]:
    """Is every method a working one: the signal check (and whether the signal audit's reruns are
    the grid's own runs: ``audit_md``), VIME before and after, the control."""
    lines = ["## Working baselines: does every bonus carry a signal?", "",
             *([section.fixed_md, ""] if section.fixed_md else []), section.signal_md, "",
             *(["**The check on known answers in each bonus's input space**, from whole runs that record it:", "",
                section.novelty_md, ""] if section.novelty_md else []),
             *([section.degenerate_md, ""] if section.degenerate_md else []),
             *([section.coverage_md, ""] if section.coverage_md else []),
             *([audit_md, ""] if audit_md else []),
             "**VIME before and after its fix** (posterior std 0.05 and the reference's KL ratio):", "",
             section.vime_md, "",
             *(["**Final scores before and after each fix**:", "", section.scores_md] if section.scores_md else [])]
    if section.control_md:
        lines += ["## Every bonus against the control as well as PPO", "", section.control_md, ""]
    return lines


def _claims_sections(parts: dict) -> list[str]:
    """The claims of the paper judged by the rule book, then what is measured beside them."""
    lines = [
        f"## The paper's claims, judged on its {len(preset_envs('paper'))} panels",
        "",
        "Each claim is quoted from the paper (Section 5 and Table 1) and judged by the rules in [rules.md](rules.md), "
        "each tested on synthetic scores (`tests/test_verdicts.py`): the paper's own panels only, panels where every "
        "method sits at one score (or, for a comparison, near one: rule 3b) left out, an interval entirely on one "
        "side for *supported* or *contradicted* (the *deciding interval* column names it: its level, its Bonferroni "
        "correction where several comparisons share a claim, and the Monte-Carlo error of its ends), *no effect "
        "larger than d = 0.2* where an effect claim's interval lies inside the parity band, and otherwise "
        "*undecided* with the seeds at which an effect of the measured size would have 80% power. Not every rule "
        "was fixed before the data was read: seeds 0-7 (the 8-seed reproduction) had been read, and judged, when "
        "the rule book was written, and rules changed after the 32-seed grid was complete; rules.md gives the "
        "history. Beside each verdict: the *second test*, without a normal approximation, which must agree for the "
        "verdict to stand (rule 12); the verdict by the same rules on the seeds not read when the rule book was "
        "first written, where there are any (rule 11); each panel on its own, in bold a pooled verdict's panel whose "
        "own interval says what the pooled one does not (rule 10); last, the verdicts at 8 seeds and under the "
        "rules before 2026-11-28."
        + (" The grid is still filling (its missing cells are listed above), so these verdicts are interim: read "
           "again at each stage's export, one whose interval lies near its threshold can turn as seeds arrive (no "
           "correction is made for the repeated looks), and the grid's answer is its verdicts once every cell holds "
           "all its seeds." if parts.get("filling") else ""),
        "",
        _claims_md(parts["claims"], parts.get("compared"), held=parts.get("held", "")),
        "",
        f"*Margins (rule 8): MARGIN = {verdicts.MARGIN:g} of a panel's range of normalised scores (the competitive "
        f"claim; each panel's MARGIN in seed SDs is in its details), POI_MARGIN = {verdicts.POI_MARGIN:g} on the "
        "probability scale (Cohen's d = 0.2: the non-inferiority of RFIG to RND, and rule 9's parity band); rule 3b's "
        "near tie: "
        f"{verdicts.NEAR_BAND:.0%} of a panel's range of final scores.*",
        "",
        *([parts["sens_md"], ""] if parts.get("sens_pending") else []),
    ]
    earlier = FORECASTS.get(parts["experiment"])
    forecast = forecasts_md(parts["claims"], *earlier) if earlier else ""
    if forecast:
        lines += ["**What the 8-seed forecasts said, and what the seeds showed:**", "", forecast, ""]
    if parts.get("compared"):
        lines += ["<details><summary>How each claim was measured, and the numbers behind it</summary>", "",
                  _claims_md(parts["claims"], held=parts.get("held", "")), "", "</details>", ""]
    if parts["comparisons"]:
        lines += ["## RFIG against each NN baseline (measurements, not claims of the paper)", "",
                  _claims_md(parts["comparisons"], first="Comparison", held=parts.get("held", "")), ""]
    if parts["beyond"]:
        lines += ["## Beyond the paper: the same comparison on the envs the paper did not run", "",
                  "These never enter a verdict above (rules.md, rule 1).", "",
                  _claims_md(parts["beyond"], first="Comparison", held=parts.get("held", "")), ""]
    if parts["timing_md"]:
        lines += ["## Execution time, from a controlled benchmark", "", parts["timing_md"], ""]
    if parts["backend_md"]:
        lines += ["## Does brax's backend matter? Sparse-HalfCheetah on `generalized`", "", parts["backend_md"], ""]
    return lines


def _problems_md(problems) -> str:
    """Errors of the main grid, one line per (kind, env, method, detail) with its seeds."""
    if not problems:
        return "None: every run of the main grid is complete."
    groups: dict[tuple, list] = defaultdict(list)
    for i in problems:
        groups[(i.kind, i.env or "", method_label(i.bonus) if i.bonus else "", i.variant or "", i.detail,
                i.handling)].append(i.seed)
    lines = []
    for (kind, env, bonus, variant, detail, handling), seeds in groups.items():
        who = " ".join(x for x in (env_label(env) if env else "", bonus, "" if variant in ("", "base") else variant)
                       if x)
        shown = [s for s in seeds if s is not None]
        lines.append(f"- {kind}: {who}" + (f", seeds {', '.join(map(str, sorted(shown)))}" if shown else "")
                     + f": {detail} ({handling})")
    return "\n".join(lines)


def rules_md() -> str:
    """The rule book (campaign.claims.verdicts' docstring) as the page the reports link to, and its history."""
    text = (verdicts.__doc__ or "").strip()
    head, _, body = text.partition("\n\n")
    return (f"# How a claim of the paper gets its verdict\n\n*{head}* (`campaign/claims/verdicts.py`; each rule is "
            "tested on synthetic scores with a known answer in `tests/test_verdicts.py`.)\n\n" + body
            + "\n\n## When each rule was fixed, and what had been read (`campaign/claims/rule_history.py`)\n\n"
            + history_md())

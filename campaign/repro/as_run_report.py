"""The as-run report (``docs/results/paper32_as_run/``): the paper's claims judged on the grid as
its authors' code ran it (campaign ``paper32_as_run``), beside their verdicts under our protocol.

    python -m campaign.repro build --experiment paper32_as_run --data docs/results/paper32_as_run/data \
        --out docs/results/paper32_as_run

Each run's method is derived from what made it (campaign.repro.as_run_methods: its overrides against
the campaign's own stage commands); a run of no method is listed, never mixed in. The runs are scored
by the protocol's 128 evaluation episodes, as the authors plotted them (campaign.repro.as_run_view).
The claims are the 32-seed report's (campaign.claims.claims: the same definitions, the same rule book),
judged on the panels the data holds; each says which of the panels it needs are not run yet, and no
verdict speaks for a panel that is missing. Beside each: the verdict of the committed 32-seed report
under our protocol (docs/results/paper32/claims.json). Nothing here imports JAX.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

from analysis.aggregate import compute_aggregates
from analysis.collect import AnalysisError, Collection, collect
from analysis.devices import devices_from_data
from analysis.maker import ReportOptions
from analysis.names import env_label
from analysis.report import build_report
from campaign.claims import verdicts
from campaign.claims.claims import claims_table
from campaign.claims.held_out import on_held_out
from campaign.claims.resampling import quick_verdicts_warning

from . import as_run_tables as T
from .ablation_tables import ABLATION_DATA, ablation_scores, ablation_section_md, attribution
from .as_run_methods import OWN_LABEL, OWN_VARIANT, sort_runs
from .as_run_view import report_runs
from .baselines import degenerate_cells
from .build import _as_of, rules_md
from .data import StoredRun, read_data, rebuild_tree, write_data
from .stage_parts import AS_RUN, preset_envs

_DOCS = Path(__file__).resolve().parents[2] / "docs/results"
AS_WRITTEN = _DOCS / "paper32/claims.json"  # the 32-seed report under our protocol: the other way
SECTIONS = ["data", "curves", "seed_curves", "final_scores", "aggregate_table", "aggregate_intervals",
            "probability_of_improvement", "method_comparison", "coverage_curves", "final_coverage",
            "intrinsic_reward", "env_metrics", "exports"]
SCORE_WORDS = ("(episode return, mean over the episodes that finished in the window)",
               "(the mean return of the 128 evaluation episodes after the window: `eval/episode_return`, the score "
               "the authors' code plots)")


def _tree(runs: dict[tuple, StoredRun], where: Path) -> Path:
    """``runs`` written as a data folder under ``where`` and rebuilt as a results tree there."""
    write_data(runs, where / "data")
    return rebuild_tree(where / "data", where / "results")


def _labelled(coll: Collection) -> Collection:
    """The collection with our own-settings methods labelled as ours (``VIME (ours; as-run protocol)``)
    and the preset's by their bonus alone."""
    info = {}
    for key, m in coll.method_info.items():
        label = OWN_LABEL.format(coll.names.label(m.bonus)) if m.variant == OWN_VARIANT else coll.names.label(m.bonus)
        info[key] = replace(m, label=label)
    return replace(coll, method_info=info)


def judge(grid: Collection, reps: int, seed: int, broken: dict | None = None,
          verdict_reps: int = verdicts.REPS) -> list:
    """The paper's claims on ``grid`` (the preset's six methods) by the rule book, as the 32-seed
    report judges them: rule 2's scale, the signal check's degenerate cells (``broken``: computed
    when not given), rule 11 on late seeds. No timing (the benchmark times our protocol's settings)
    and no sensitivity runs."""
    paper = preset_envs("paper")
    agg = compute_aggregates(grid, reps=reps, seed=seed)
    broken = degenerate_cells(grid) if broken is None else broken
    return on_held_out(lambda c, _late: claims_table(c, agg, paper, reps=verdict_reps, seed=seed,
                                                        degenerate=broken), grid)


def build_as_run(data_dir: Path, out: Path, reps: int = 2000, seed: int = 0, experiment: str = AS_RUN,
                 as_written: Path = AS_WRITTEN, verdict_reps: int = verdicts.REPS,
                 ablation: Path | None = ABLATION_DATA) -> Path:
    """Write ``out/index.md``, ``claims.json``, ``summary.md``, ``rules.md`` and the standard report of
    every method (``out/main``) from the as-run data in ``data_dir``, with each difference alone read
    from the ablation's data in ``ablation`` (None or a missing folder: no ablation run yet)."""
    data_dir, out = Path(data_dir), Path(out)
    stored = {k: r for k, r in read_data(data_dir).items() if k[0] == experiment}
    ablated = ablation_scores(read_data(ablation) if ablation is not None and Path(ablation).is_dir() else {},
                              stored)
    if not stored:
        raise AnalysisError(f"no {experiment!r} runs in {data_dir}")
    assigned, refused = sort_runs(stored, experiment)
    complete = {k: d for k, d in assigned.items() if stored[k].complete}
    incomplete = [(k, "not complete") for k in assigned if k not in complete]
    runs, unscored = report_runs(stored, complete, "eval")
    train_runs, _ = report_runs(stored, {k: complete[k] for k in complete if k not in dict(unscored)}, "train")
    if not runs:
        raise AnalysisError(f"no run of {data_dir} is of a method of the as-run grid: "
                            + "; ".join(f"{'/'.join(map(str, k))}: {why}" for k, why in refused[:5]))
    out.mkdir(parents=True, exist_ok=True)
    opts = ReportOptions(reps=reps, seed=seed, as_of=_as_of({}, stored), run_devices=devices_from_data(runs))
    with tempfile.TemporaryDirectory() as tmp:
        tree = _tree(runs, Path(tmp) / "eval")
        every = _labelled(collect(tree, experiment))
        grid = _labelled(collect(tree, experiment, variants=["base"]))
        train_tree = _tree(train_runs, Path(tmp) / "train")
        train = _labelled(collect(train_tree, experiment))
        train_grid = _labelled(collect(train_tree, experiment, variants=["base"]))
        build_report(every, out / "main", opts, only=SECTIONS)
        for path in (out / "main").rglob("*"):
            if path.suffix in (".md", ".csv", ".json", ".tex") and path.is_file():
                text = path.read_text()
                if str(tree) in text or SCORE_WORDS[0] in text:
                    path.write_text(text.replace(str(tree), "data (rebuilt results tree)")
                                    .replace(*SCORE_WORDS))
        broken = degenerate_cells(grid)
        present = T.present_panels(grid)
        rows = T.annotated(judge(grid, reps, seed, broken, verdict_reps), present, T.seeds_of(grid))
        by_train = T.annotated(judge(train_grid, reps, seed, degenerate_cells(train_grid), verdict_reps),
                               T.present_panels(train_grid), T.seeds_of(train_grid))
        scores = "\n\n".join([T.score_check_md(every, train), T.score_verdicts_md(rows, by_train)])
        moved_by = {r.claim.claim: attribution(ablated, r.claim.claim, r.needs) for r in rows}
        parts = {"every": every, "grid": grid, "claims": rows, "present": present,
                 "both": T.both_ways(rows, as_written, moved_by), "ablation": ablation_section_md(ablated),
                 "scores": scores, "degenerate": T.degenerate_md(grid, broken),
                 "methods": T.methods_md(stored, assigned), "panels": T.panels_md(stored, assigned),
                 "left": T.left_out_md(refused + incomplete + unscored),
                 "protocol": T.protocol_md(assigned), "as_of": opts.as_of, "n_runs": len(runs),
                 "verdict_reps": verdict_reps}
    (out / "rules.md").write_text(rules_md())
    (out / "claims.json").write_text(json.dumps([r.as_json() for r in rows], indent=1))
    summary = _summary_md(parts)
    (out / "summary.md").write_text(summary)
    index = out / "index.md"
    index.write_text(_index_md(parts, out, summary))
    return index


def _summary_md(parts: dict) -> str:
    """The headline: the both-ways table."""
    present = parts["present"]
    return (f"*The paper's claims judged on the grid as its authors' code ran it ({len(present)} of "
            f"{len(preset_envs('paper'))} panels so far: {', '.join(map(env_label, present)) or 'none'}), beside "
            "their verdicts under our protocol at 32 seeds (`docs/results/paper32/`).*\n\n"
            + parts["both"] + "\n")


def _index_md(parts: dict, out: Path, summary: str) -> str:
    scores = out / "main" / "final_scores_iqm.md"
    return "\n".join([
        "# The paper as its authors ran it: the claims judged both ways",
        "",
        f"*Built by `python -m campaign.repro build --experiment {AS_RUN} --data docs/results/{AS_RUN}/data --out "
        f"docs/results/{AS_RUN}` (`make figures-paper`) from the per-run data in `data/` ({parts['n_runs']} runs; "
        f"as of {parts['as_of']}). Every number below is computed from that data; none is typed in. The protocol "
        "and its differences from the paper's text: [docs/fidelity.md](../../fidelity.md); the 32-seed report "
        "under our protocol: [docs/results/paper32](../paper32/index.md).*",
        "",
        *[f"> **Read this first.** {w}\n" for w in quick_verdicts_warning(parts["verdict_reps"])],
        "## The claims both ways",
        "",
        summary,
        "*As the paper was run: the verdict by the rule book ([rules.md](rules.md)) on the as-run runs of the panels "
        "the data holds, with the seeds per method and the panels judged; a claim whose panels are not run yet "
        "says so by name and is given no verdict from them (a pooled claim is judged on the panels present, an "
        "interim verdict until every panel is in). As the paper was written: the committed 32-seed report under "
        "our protocol. Agree: the same verdict (*so far* while the as-run panels are incomplete).*",
        "",
        "## Each difference alone",
        "",
        parts["ablation"],
        "",
        "## Which score the claims use",
        "",
        parts["scores"],
        "",
        "## The claims as the paper was run, in full",
        "",
        T.claims_md(parts["claims"]),
        "",
        f"*Margins (rule 8): MARGIN = {verdicts.MARGIN:g}, POI_MARGIN = {verdicts.POI_MARGIN:g}; rule 3b's near tie: "
        f"{verdicts.NEAR_BAND:.0%} of a panel's range of final scores.*",
        "",
        "## Bonuses the signal check finds degenerate",
        "",
        parts["degenerate"],
        "",
        "## Final scores per panel",
        "",
        scores.read_text() if scores.is_file() else "",
        "*IQM final score (the evaluation episodes' mean return after the last window) with its 95% stratified-"
        "bootstrap CI over seeds; bold: the best whose CI overlaps no other. Full standard report of every method, "
        "curves included: [main/index.md](main/index.md).*",
        "",
        "## The methods, and what made each",
        "",
        parts["methods"],
        "",
        parts["protocol"],
        "",
        "## Panels in the data",
        "",
        parts["panels"],
        "",
        "## Runs left out",
        "",
        parts["left"],
        "",
    ])


__all__ = ["AS_WRITTEN", "build_as_run", "judge"]

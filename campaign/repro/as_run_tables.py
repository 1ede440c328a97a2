"""The tables of the as-run report (campaign.repro.as_run_report): each claim with the panels it needs
that are not run yet, the both-ways table, the score check, the methods and what made them, the
panels in the data and the runs left out. Nothing here imports JAX."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from analysis.aggregate import iqm
from analysis.collect import Collection, final_scores
from analysis.markdown import Cell, render_markdown
from analysis.methods import format_overrides
from analysis.names import BASELINES, BUILT_IN, CONTROLS, env_label, method_label, split_task
from campaign.claims import verdicts as V
from campaign.claims.claim_rows import Claim
from campaign.claims.peaks import PEAKS
from campaign.presets import SEARCHPATH
from rfig_exp.results.status import seed_ranges

from .as_run_methods import Declared
from .protocol_stages import AS_RUN_ORDER
from .stage_parts import AS_RUN, preset_envs

TIMING_WORDS = "no significant execution time differences"  # the claim the controlled benchmark judges
NOT_YET = "not yet run"
CLAIMED = ("none", "rfig", *BASELINES)  # the methods the paper's claims compare (the control in none)
TIMING_VERDICT = ("not measured under this protocol: the controlled timing benchmark "
                  "(benchmarks/bench_timing_claim.py) times our protocol's settings, and nothing times the "
                  "authors' (their code beside ours, per run: docs/fidelity.md)")


@dataclass
class AsRunClaim:
    """A claim judged on the as-run data, with the panels it needs (None: no panel, the benchmark's),
    those of them the data holds and those not run yet, and the seeds per method behind it."""

    claim: Claim
    needs: list[str] | None
    judged: list[str]
    missing: list[str]
    seeds: str
    status: str  # "judged", "interim" (some panels not run yet), NOT_YET, or V.NOT_MEASURED

    def as_json(self) -> dict:
        return {**self.claim.__dict__, "status": self.status, "panels_needed": self.needs,
                "panels_judged": self.judged, "not_yet_run": self.missing, "seeds": self.seeds}

    def where(self) -> str:
        """The seeds and panels behind the verdict, in words."""
        if self.status in (NOT_YET, V.NOT_MEASURED):
            return ""
        panels = (", ".join(map(env_label, self.judged)) if len(self.judged) == 1
                  else f"{len(self.judged)} of {len(self.needs or [])} panels")
        return f"{self.seeds}; {panels}"


def needed_panels(claim: str) -> list[str] | None:
    """The paper's panels a claim needs: a peak claim its panel, the timing claim none (None), every
    other claim (pooled, or on every panel) all 12."""
    for _, env, words in PEAKS:
        if claim == words:
            return [env]
    if claim.startswith(TIMING_WORDS):
        return None
    return list(preset_envs("paper"))


def present_panels(grid: Collection) -> list[str]:
    """The paper's panels (env names) on which the grid holds at least one scored run."""
    paper = preset_envs("paper")
    have = {split_task(e)[0] for e in grid.envs if any(c.scored for m in grid.methods
                                                        for c in grid.env_data[e].curves.get(m, []))}
    return [e for e in paper if e in have]


def seeds_of(grid: Collection) -> dict[str, dict[str, int]]:
    """panel -> method -> scored seeds, the control's aside."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for e in grid.envs:
        for m in grid.methods:
            if grid.bonus_of(m) in CONTROLS:
                continue
            n = sum(c.scored for c in grid.env_data[e].curves.get(m, []))
            if n:
                out[split_task(e)[0]][m] = n
    return out


def _seeds_text(counts: Sequence[int]) -> str:
    if not counts:
        return "no seeds"
    lo, hi = min(counts), max(counts)
    return f"n = {lo}" if lo == hi else f"n = {lo} to {hi}"


def annotated(claims: Sequence[Claim], present: Sequence[str],
              seeds: Mapping[str, Mapping[str, int]]) -> list[AsRunClaim]:
    """Each claim with the panels it needs that are not run yet: a claim none of whose panels is in
    the data gets no verdict (``not yet run: ...``), one with some has its verdict on those it has,
    interim, and says which are still to come; the timing claim is not measured under this protocol."""
    out = []
    for c in claims:
        needs = needed_panels(c.claim)
        if needs is None:
            blank = dataclasses.replace(c, verdict=TIMING_VERDICT, kind=V.NOT_MEASURED, value="—", deciding="",
                                        second="", panels="", held_out="", held_out_kind="")
            out.append(AsRunClaim(blank, None, [], [], "", V.NOT_MEASURED))
            continue
        judged = [e for e in needs if e in present]
        missing = [e for e in needs if e not in present]
        names = ", ".join(map(env_label, missing))
        partly = [f"{env_label(e)} without {', '.join(map(method_label, lack))}" for e in judged
                  if (lack := [m for m in CLAIMED if m not in seeds.get(e, {})])]
        counts = [n for e in judged for n in seeds.get(e, {}).values()]
        if not judged:
            blank = dataclasses.replace(c, verdict=f"{NOT_YET}: {names}", kind=NOT_YET, value="—", deciding="",
                                        second="", panels="", held_out="", held_out_kind="")
            out.append(AsRunClaim(blank, needs, [], missing, "", NOT_YET))
            continue
        if missing or partly:
            c = c.interim("; ".join(([f"{NOT_YET}: {names}"] if missing else [])
                                    + ([f"partly run: {'; '.join(partly)}"] if partly else [])))
        out.append(AsRunClaim(c, needs, judged, missing, _seeds_text(counts),
                              "interim" if missing or partly else "judged"))
    return out


def _agree(row: AsRunClaim | None, written: dict) -> str:
    if row is None or row.status in (NOT_YET, V.NOT_MEASURED):
        return "not yet"
    theirs, ours = written.get("kind", ""), row.claim.kind
    same = (row.claim.standing_verdict == written["verdict"]) if "old rule" in (theirs, ours) \
        else ours == theirs
    return ("so far " if row.status == "interim" else "") + ("yes" if same else "**no**")


def both_ways(rows: Sequence[AsRunClaim], as_written: Path, moved_by: Mapping[str, str] | None = None) -> str:
    """Claim | verdict as the paper was run | as it was written (the committed 32-seed report) | agree
    | what each difference alone does to its comparisons (``moved_by``: claim -> text; the column
    only with it): every claim of ``as_written`` once, in its order, then any claim only the as-run
    report has."""
    written = json.loads(Path(as_written).read_text()) if Path(as_written).is_file() else []
    by_claim = {r.claim.claim: r for r in rows}
    extra = (lambda claim: [moved_by.get(claim, "—")]) if moved_by is not None else (lambda claim: [])
    table: list[list[Cell | str]] = []
    for w in written:
        r = by_claim.get(w["claim"])
        run = f"**{r.claim.verdict}**" + (f" ({r.where()})" if r.where() else "") if r else "—"
        table.append([w["claim"], run, f"**{w['verdict']}**", _agree(r, w), *extra(w["claim"])])
    seen = {w["claim"] for w in written}
    for r in rows:
        if r.claim.claim not in seen:
            table.append([r.claim.claim, f"**{r.claim.verdict}**", "—", "—", *extra(r.claim.claim)])
    header = ["The paper says", "As the paper was run (the as-run protocol; seeds, panels)",
              "As the paper was written (our protocol, 32 seeds)", "Agree?"]
    if moved_by is not None:
        header.append("Each difference alone (the settings that move its comparisons; the ablation, 16 seeds)")
    return render_markdown(header, table, align="l" * len(header))


def claims_md(rows: Sequence[AsRunClaim]) -> str:
    """Every claim in full: how it was measured, its value, verdict, the panels still to run, the
    deciding interval, the second test, each panel and the details."""
    table: list[list[Cell | str]] = [[r.claim.claim, r.claim.measure, r.claim.value, f"**{r.claim.verdict}**",
              ", ".join(map(env_label, r.missing)) or "—", r.claim.deciding or "—", r.claim.second or "—",
              r.claim.panels or "—", r.claim.detail or "—"] for r in rows]
    return render_markdown(["The paper says", "Measured as", "Value [95% CI]", "Verdict (rules.md)",
                            "Panels not yet run", "Deciding interval", "Second test (rule 12)",
                            "Each panel on its own (rules 6, 10)", "Details"], table, align="l" * 9)


def _iqms(coll: Collection) -> dict[tuple[str, str], float]:
    return {(e, m): float(iqm(np.asarray(v, float))) for e, per in final_scores(coll).items()
            for m, (_, v) in per.items()}


def score_check_md(every: Collection, train: Collection) -> str:
    """Why the claims use the evaluation episodes, and each cell's IQM final score both ways."""
    ev, tr = _iqms(every), _iqms(train)

    def cell(e: str, m: str) -> str:
        return f"{ev[(e, m)]:.3g} / {tr[(e, m)]:.3g}" if (e, m) in ev and (e, m) in tr else "—"

    rows: list[list[Cell | str]] = [[env_label(e), *[cell(e, m) for m in every.methods]] for e in every.envs]
    return ("Under `protocol=as_run` every run evaluates 128 fresh episodes per seed with its sampled policy at step "
            "0 and after every window of 24,576 steps (`agent.eval_episodes`; the authors' `algorithm.py:41-44`, "
            "`evaluate.py:19-84`), and the authors' figure plots that mean. The claims here therefore use it: rule 2's "
            "final score is the mean return of the evaluation episodes after the last window (`eval/episode_return`), "
            "a curve's points and areas the same at every window (the step-0 evaluation is not a window and not in "
            "them). An evaluation episode runs from a reset to its end, so no first window is left out for survivor "
            "bias as the training episodes' are. The seeds-solved claim's success rule is unchanged: on MountainCar "
            "and Acrobot the return, so the evaluation's; on the PointMazes the env's goal flag `env/success`, which "
            "only the training episodes record (the evaluation return of a PointMaze is itself its episodes' success "
            "fraction: the sparse reward is 1 at the goal, where an episode ends). Each cell's IQM final score, "
            "evaluation / training episodes:\n\n"
            + render_markdown(["Env", *[every.label(m) for m in every.methods]], rows,
                              align="l" + "r" * len(every.methods)))


def score_verdicts_md(rows: Sequence[AsRunClaim], by_train: Sequence[AsRunClaim]) -> str:
    """Each judged claim's verdict on the evaluation score beside its verdict on the training
    episodes' return (the same rules, the same runs): how much the choice of score decides."""
    train = {r.claim.claim: r for r in by_train}
    table: list[list[Cell | str]] = []
    for r in rows:
        t = train.get(r.claim.claim)
        if r.status in (NOT_YET, V.NOT_MEASURED) or t is None:
            continue
        same = "yes" if t.claim.kind == r.claim.kind else "**no**"
        table.append([r.claim.claim, f"{r.claim.kind} ({r.claim.value})", f"{t.claim.kind} ({t.claim.value})", same])
    if not table:
        return ""
    return ("The same claims on the training episodes' return instead (the score of our protocol), on the same "
            "runs, by the same rules: a verdict that turns with the score is one the protocol's evaluation decides.\n\n"
            + render_markdown(["The paper says", "On the evaluation episodes (used)", "On the training episodes",
                               "Same?"], table, align="llll"))


def degenerate_md(grid: Collection, cells: Mapping[tuple[str, str], tuple[str, ...]]) -> str:
    """The cells the signal check (campaign.claims.signal) finds degenerate: no comparison uses them
    (rule 6)."""
    if not cells:
        return "None: every bonus carries a signal on every panel in the data."
    rows: list[list[Cell | str]] = [[env_label(e), grid.label(m), "; ".join(why)]
                                    for (e, m), why in sorted(cells.items())]
    return ("The signal check of the rule book (`campaign/claims/signal.py`, on each run's recorded bonus "
            "statistics) finds these cells degenerate, so no comparison of a claim uses them (rule 6): a claim "
            "that needs one is at best undecided. The authors' VIME pays one number per rollout (`bonus_per=batch`, "
            "their B3: docs/fidelity.md), constant within a batch by construction.\n\n"
            + render_markdown(["Panel", "Method", "Why (the signal check)"], rows, align="lll"))


def _command_words(line: str) -> str:
    words = [w for w in line.split() if w != SEARCHPATH and not w.startswith(("env=", "seed=", "num_seeds="))]
    return " ".join(words)


def methods_md(stored: Mapping[tuple, object], assigned: Mapping[tuple, Declared]) -> str:
    """Each method: its label, the stage command that makes it (the panel and seeds aside), its runs,
    and the variant folders of the data they are in (a folder name tells no method apart)."""
    groups: dict[str, list[tuple]] = defaultdict(list)
    made: dict[str, Declared] = {}
    for key, d in assigned.items():
        groups[d.key].append(key)
        made.setdefault(d.key, d)
    rows: list[list[Cell | str]] = []
    for k in sorted(groups, key=lambda k: (BUILT_IN.sort_key(made[k].bonus), made[k].own)):
        d, keys = made[k], groups[k]
        folders = sorted({key[3] for key in keys})
        rows.append([d.label, d.bonus, f"`{_command_words(d.command)}`", str(len(keys)),
                     "; ".join(f"`{f}`" for f in folders)])
    return ("Each run's method is derived from its `variant_overrides`: the campaign's stage commands "
            "(`campaign/repro/protocol_stages.py`: `as_run_stages`, `own_bonus_overrides`) are composed as launch.py "
            "composes them, and a run is the method whose command gives exactly its overrides "
            "(`campaign/repro/as_run_methods.py`). VIME and #Explo are the authors' variants, the methods the "
            "paper's claims name; our VIME under the same protocol is a method of its own and enters no claim.\n\n"
            + render_markdown(["Method", "Bonus", "Made by (`launch.py -m` with the panel and seeds)", "Runs",
                               "Variant folder(s) in the data"], rows, align="lllrl"))


def protocol_md(assigned: Mapping[tuple, Declared]) -> str:
    """The overrides every method of every panel in the data shares (the protocol's), and those that
    differ from panel to panel."""
    decl = {(d.env, d.key): d.overrides_dict for d in assigned.values()}
    if not decl:
        return ""
    items = list(decl.values())
    common = {k: v for k, v in items[0].items() if all(k in o and o[k] == v for o in items[1:])}
    per_panel: dict[str, dict] = defaultdict(dict)
    for (env, _), ov in decl.items():
        shared = {k: v for k, v in ov.items() if k not in common and not k.startswith("bonus.")}
        per_panel[env].update(shared)
    lines = ["**The protocol** (`protocol=as_run`: `conf/protocol/`), the overrides every method shares on every "
             f"panel in the data: `{format_overrides(common)}`."]
    extra = [f"{env_label(e)}: `{format_overrides(ov)}`" for e, ov in per_panel.items() if ov]
    if extra:
        lines.append("On some panels besides: " + "; ".join(extra) + ".")
    return " ".join(lines)


def panels_md(stored: Mapping[tuple, object], assigned: Mapping[tuple, Declared]) -> str:
    """Each of the grid's panels: the seeds of each method in the data, or not yet run."""
    seeds: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    labels = {}
    for key, d in assigned.items():
        if getattr(stored[key], "complete", False):
            seeds[d.env][d.key].append(key[4])
            labels[d.key] = d.label
    rows: list[list[Cell | str]] = []
    for env in AS_RUN_ORDER:
        per = seeds.get(env)
        if not per:
            rows.append([env_label(env), NOT_YET])
            continue
        by_range: dict[str, list[str]] = defaultdict(list)
        for k in sorted(per, key=lambda k: (BUILT_IN.sort_key(k.split("/")[0]), k)):
            by_range[seed_ranges(sorted(per[k]))].append(labels[k])
        rows.append([env_label(env), "; ".join(f"seeds {r}: {', '.join(ms)}" for r, ms in by_range.items())])
    return render_markdown(["Panel", f"complete runs in the data (sweep={AS_RUN}, 32 seeds a method)"], rows,
                           align="ll")


def left_out_md(left: Sequence[tuple[tuple, str]]) -> str:
    """The runs of the experiment the report does not use, each with why."""
    if not left:
        return "None: every run of the data is complete and of a method of the as-run grid."
    return "\n".join(f"- `{'/'.join(map(str, k))}`: {why}" for k, why in left)


__all__ = ["AsRunClaim", "annotated", "both_ways", "claims_md", "left_out_md", "methods_md", "needed_panels",
           "panels_md", "present_panels", "protocol_md", "score_check_md", "seeds_of"]

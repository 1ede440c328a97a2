"""Each difference of the authors' code alone (campaign ``as_run_ablation``), read for the as-run report:
which difference moves which comparison.

The ablation starts from the paper's text (``abl-paper-<panel>``: ``protocol=paper``, 16 seeds, every
run evaluating 128 fresh episodes per window) and switches one difference of
``campaign.repro.protocol_stages.ABLATION_DIFFERENCES`` on at a time, for the bonuses it changes. A
bonus a difference does not change keeps its as-written runs under that difference (PPO under
``mix``, say). Beside them the as-run grid's runs of the same panel (every difference together: the
row ``as run``). Every score is the final evaluation score (the mean return of the evaluation episodes
after the last window), as the as-run report scores its runs.

A comparison (subject X against Y on one panel) is P(X > Y) (rule 7); a setting moves it when the
change of P(X > Y) from the as-written runs (``campaign.claims.resampling.poi_change``: DeLong, the
two sets of runs independent, which overstates the variance where Y's runs are the same in both)
excludes 0 at the Bonferroni level over the settings of that panel. These are readings that name
what moved a verdict, not verdicts of the rule book. Nothing here imports JAX.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from analysis.markdown import Cell, render_markdown
from analysis.names import env_label, method_label
from campaign.claims.constants import LEVEL
from campaign.claims.resampling import PoiDist, iqm_rows, poi_change, poi_delong

from .as_run_methods import sort_runs
from .protocol_stages import (
    ABLATION_DIFFERENCES,
    ABLATION_ORDER,
    ABLATION_SEEDS,
    AS_WRITTEN,
    ablation_difference,
    ablation_stages,
    planned_differences,
)
from .stage_parts import ABLATION, AS_RUN, panel_name

ABLATION_DATA = Path(__file__).resolve().parents[2] / "docs/results/as_run_ablation/data"
AS_RUN_ROW = "as run"
BONUSES = ("none", "rfig", "rnd", "vime", "hashexplo")
SETTING_WORDS = {AS_WRITTEN: "as written (the paper's text)", AS_RUN_ROW: "as run (every difference together)"}

# The comparisons behind each claim of the as-run report: (the claim's first words, subject, others).
# No others: the subject's own score against its as-written runs. The timing claim has none.
CLAIM_COMPARISONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("PPO+RFIG ... outperforming vanilla PPO", "rfig", ("none",)),
    ("RFIG is competitive with NN-based methods", "rfig", ("rnd", "vime", "hashexplo")),
    ("RFIG maintains stable performance", "rfig", ()),
    ("RFIG competitively matches or exceeds RND", "rfig", ("rnd",)),
    ("RFIG achieves peak performance in", "rfig", ("none", "rnd", "vime", "hashexplo")),
    ("VIME excels in", "vime", ("none", "rfig", "rnd", "hashexplo")),
)


def final_eval_score(rows: str) -> float | None:
    """The last finite ``eval/episode_return`` of a run's metrics rows (CSV text); None without one."""
    if not rows:
        return None
    df = pd.read_csv(io.StringIO(rows))
    if "eval/episode_return" not in df.columns:
        return None
    values = df["eval/episode_return"].to_numpy(float)
    finite = values[np.isfinite(values)]
    return float(finite[-1]) if len(finite) else None


def _overrides(record: Mapping) -> dict | None:
    found = record.get("variant_overrides")
    return (record.get("summary") or {}).get("variant_overrides") if found is None else found


@dataclass(frozen=True)
class AblationScores:
    """Final evaluation scores: (env, bonus, setting) -> seed -> score. ``setting``: ``paper`` (as
    written), a difference of ``ABLATION_DIFFERENCES`` or ``as run``; ``left_out``: runs of the
    ablation that are incomplete, unscored or of no difference, with why."""

    scores: dict[tuple[str, str, str], dict[int, float]]
    left_out: list[tuple[tuple, str]] = field(default_factory=list)

    @property
    def envs(self) -> list[str]:
        """The panels with as-written runs, in the ablation's order."""
        have = {e for e, _, s in self.scores if s == AS_WRITTEN}
        return [e for e in ABLATION_ORDER if e in have]

    def settings(self, env: str) -> list[str]:
        """As written, the differences with runs on ``env`` in the ablation's order, then ``as run``."""
        have = {s for e, _, s in self.scores if e == env}
        return [s for s in (AS_WRITTEN, *ABLATION_DIFFERENCES, AS_RUN_ROW) if s in have]

    def runs(self, env: str, bonus: str, setting: str) -> np.ndarray | None:
        """``bonus``'s final scores on ``env`` under ``setting``: its as-written runs where the
        difference does not change ``bonus``; None where there are none."""
        if setting not in (AS_WRITTEN, AS_RUN_ROW) and bonus not in ABLATION_DIFFERENCES[setting][2]:
            setting = AS_WRITTEN
        found = self.scores.get((env, bonus, setting))
        return np.array([found[s] for s in sorted(found)], float) if found else None

    def changes(self, env: str, bonus: str, setting: str) -> bool:
        """Whether ``setting`` has runs of its own for ``bonus`` on ``env``."""
        return setting != AS_WRITTEN and (env, bonus, setting) in self.scores and (
            setting == AS_RUN_ROW or bonus in ABLATION_DIFFERENCES[setting][2])


def ablation_scores(stored: Mapping[tuple, object], as_run: Mapping[tuple, object] | None = None) -> AblationScores:
    """The final evaluation scores of the complete ablation runs in ``stored`` (StoredRun by run key)
    by the difference each switched on, and of the as-run grid's runs (its preset's methods, not our
    own-settings VIME) in ``as_run`` as the row ``as run``."""
    scores: dict[tuple[str, str, str], dict[int, float]] = {}
    left: list[tuple[tuple, str]] = []

    def put(key: tuple, run, setting: str) -> None:
        if not run.complete:
            left.append((key, "not complete"))
            return
        final = final_eval_score(run.rows)
        if final is None:
            left.append((key, "it records no evaluation episodes (eval/episode_return)"))
            return
        rec = run.record
        scores.setdefault((rec["env"], rec["bonus"], setting), {})[int(rec["seed"])] = final

    for key, run in sorted(stored.items()):
        if key[0] != ABLATION:
            continue
        overrides = _overrides(run.record)
        setting = None if overrides is None else ablation_difference(run.record["env"], run.record["bonus"], overrides)
        if setting is None:
            left.append((key, "its overrides switch on no single difference"))
        else:
            put(key, run, setting)
    ablated = {e for e, _, s in scores if s == AS_WRITTEN}
    assigned, _ = sort_runs(as_run or {}, AS_RUN)
    for key, made in assigned.items():
        if not made.own and key[1] in ablated and key[2] in BONUSES:
            put(key, as_run[key], AS_RUN_ROW)
    return AblationScores(scores, left)


def bonferroni(level: float, m: int) -> float:
    """The two-sided level that holds ``level`` over ``m`` intervals together."""
    return 1 - (1 - level) / max(m, 1)


def comparison_change(a: AblationScores, env: str, subject: str, other: str | None, setting: str) -> PoiDist | None:
    """The change of P(subject > other) on ``env`` from as written to ``setting`` (other None: P(the
    subject under ``setting`` > its as-written runs) - 1/2); None where a side has no runs."""
    x, x0 = a.runs(env, subject, setting), a.runs(env, subject, AS_WRITTEN)
    if x is None or x0 is None:
        return None
    if other is None:
        p, var = poi_delong(x, x0)
        return PoiDist(p - 0.5, math.sqrt(var), min(len(x), len(x0)), 2.0, max(len(x), len(x0)), lower=-0.5)
    y, y0 = a.runs(env, other, setting), a.runs(env, other, AS_WRITTEN)
    if y is None or y0 is None:
        return None
    return poi_change({env: x}, {env: y}, {env: x0}, {env: y0})


def _signed(d: PoiDist, level: float) -> str:
    if d.se == 0.0:  # every pair ordered one way: DeLong's interval has no width, so none is printed
        return f"{d.point:+.2f} (every pair one way)"
    lo, hi = d.interval(level)
    return f"{d.point:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def _poi_cell(x: np.ndarray, y: np.ndarray, level: float) -> str:
    """P(X > Y) with its DeLong interval; where every pair of runs is ordered one way (P = 0 or 1)
    that interval has no width, so the exact two-sided Mann-Whitney p stands in its place."""
    p, var = poi_delong(x, y)
    if var == 0.0 and p in (0.0, 1.0):
        from scipy.stats import mannwhitneyu

        exact = mannwhitneyu(x, y, alternative="two-sided", method="exact").pvalue
        return f"{p:.2f} (every pair one way; exact p {exact:.1g})"
    lo, hi = PoiDist(p, math.sqrt(var), min(len(x), len(y))).interval(level)
    return f"{p:.2f} [{lo:.2f}, {hi:.2f}]"


def moves(d: PoiDist, level: float) -> bool:
    lo, hi = d.interval(level)
    return lo > 0 or hi < 0


def _claim_comparisons(claim: str) -> tuple[str, tuple[str, ...]] | None:
    for words, subject, others in CLAIM_COMPARISONS:
        if claim.startswith(words):
            return subject, others
    return None


def attribution(a: AblationScores, claim: str, panels: Sequence[str] | None, level: float = LEVEL) -> str:
    """What each difference alone does to a claim's comparisons on the ablated panels among
    ``panels`` (the claim's): the settings that move one, with the change and its 95% interval;
    '—' for a claim without comparisons (the timing claim)."""
    found = _claim_comparisons(claim)
    if found is None or panels is None:
        return "—"
    subject, others = found
    ablated = [e for e in a.envs if e in panels]
    if not ablated:
        return "not ablated yet"
    parts, unmeasured = [], 0
    for env in ablated:
        settings = [s for s in a.settings(env) if s != AS_WRITTEN]
        strict = bonferroni(level, len(settings))
        moved, measured = [], 0
        for s in settings:
            changes = [(o, comparison_change(a, env, subject, o, s)) for o in (others or (None,))]
            measured += any(d is not None for _, d in changes)
            for o, d in changes:
                if d is not None and moves(d, strict):
                    against = f" against {method_label(o)}" if o else f" ({method_label(subject)}'s own score)"
                    moved.append(f"{s}{against} {_signed(d, level)}")
        if not measured:  # a panel whose runs so far make none of the claim's comparisons (a stage half-run)
            unmeasured += 1
            continue
        planned = planned_differences(env)
        have = [d for d in planned if stage_whole(a, env, d)]
        some = "" if len(have) == len(planned) else f" ({len(have)} of {len(planned)} differences run so far)"
        parts.append(f"{env_label(env)}: " + ("; ".join(moved) if moved else "no setting moves it") + some)
    if not parts:
        return "not ablated yet"
    rest = len([p for p in panels if p not in ablated]) + unmeasured
    return " · ".join(parts) + (f" ({rest} panel{'s' if rest != 1 else ''} not ablated yet)" if rest else "")


def _iqm(x: np.ndarray | None) -> str:
    return "—" if x is None else f"{float(iqm_rows(x[None])[0]):.3g} (n={len(x)})"


def panel_table_md(a: AblationScores, env: str, level: float = LEVEL) -> str:
    """One panel: per setting, each bonus's IQM final score where the setting changes it ('·': its
    as-written runs), and P(RFIG > PPO) with its change from as written (bold: moved at the
    Bonferroni level over the panel's settings)."""
    settings = a.settings(env)
    strict = bonferroni(level, len(settings) - 1)
    rows: list[list[Cell | str]] = []
    for s in settings:
        cells: list[Cell | str] = [SETTING_WORDS.get(s, f"`{s}`")]
        for b in BONUSES:
            cells.append(_iqm(a.runs(env, b, s)) if s == AS_WRITTEN or a.changes(env, b, s) else "·")
        x, y = a.runs(env, "rfig", s), a.runs(env, "none", s)
        if x is None or y is None:
            cells += ["—", "—"]
        elif s != AS_WRITTEN and not (a.changes(env, "rfig", s) or a.changes(env, "none", s)):
            cells += ["·", "·"]
        else:
            cells.append(_poi_cell(x, y, level))
            d = None if s == AS_WRITTEN else comparison_change(a, env, "rfig", "none", s)
            cells.append("—" if d is None else Cell(_signed(d, level), bold=moves(d, strict)))
        rows.append(cells)
    return render_markdown(["Setting", *map(method_label, BONUSES), "P(RFIG > PPO) [95%]", "change from as written"],
                           rows, align="l" + "r" * (len(BONUSES) + 2))


def stage_whole(a: AblationScores, env: str, setting: str) -> bool:
    """Whether ``setting``'s stage on ``env`` is whole in the data: every bonus it runs (as written: all
    of :data:`BONUSES`; a difference: those it changes) has :data:`ABLATION_SEEDS` scored seeds, so a
    stage stopped after some of its bonuses is not."""
    runs = BONUSES if setting == AS_WRITTEN else ABLATION_DIFFERENCES[setting][2]
    return all(len(a.scores.get((env, b, setting), {})) >= ABLATION_SEEDS for b in runs)


def stages_left(a: AblationScores) -> list[str]:
    """The ablation's stages not whole in the data (:func:`stage_whole`), in its order."""
    whole = {f"abl-{s}-{panel_name(e)}" for e in ABLATION_ORDER for s in (AS_WRITTEN, *ABLATION_DIFFERENCES)
             if stage_whole(a, e, s)}
    return [st.name for st in ablation_stages() if st.name not in whole]


# The defects of the authors' code (docs/fidelity.md) and the ablation setting that switches each on
# alone: (the setting, the bonus whose own score it changes, what the setting holds).
DEFECTS: tuple[tuple[str, str, str], ...] = (
    ("vime", "vime", "their VIME: one KL per rollout for every transition, another env's observation as the "
                     "next one (a roll of the flattened batch), no KL term in its training"),
    ("details", "none", "the warm-up whose states never advance, with time limits as terminal, no observation "
                        "clip, separate networks and LeCun initialisation (one stage; PPO's own score)"),
)


def defects_md(a: AblationScores, level: float = LEVEL) -> str:
    """Each defect of :data:`DEFECTS` with its measured effect on every ablated panel that has its
    stage: the bonus's IQM final score as written and with the defect, and P(with > as written) - 1/2
    with its DeLong interval; the panels without the stage named."""
    lines = []
    for setting, bonus, what in DEFECTS:
        found, missing = [], []
        for env in a.envs:
            if not a.changes(env, bonus, setting):
                missing.append(env_label(env))
                continue
            x, x0 = a.runs(env, bonus, setting), a.runs(env, bonus, AS_WRITTEN)
            d = comparison_change(a, env, bonus, None, setting)
            if x is None or x0 is None or d is None:
                missing.append(env_label(env))
                continue
            found.append(f"{env_label(env)}: {method_label(bonus)} {_iqm(x0)} as written, {_iqm(x)} with it, "
                         f"P(with > as written) - 1/2 {_signed(d, level)}")
        said = "; ".join(found) if found else "not measured yet"
        rest = f" (not yet on {', '.join(missing)})" if found and missing else ""
        lines.append(f"- `{setting}`, {what}: {said}{rest}.")
    return "**The defects of their code, each measured alone** (the stage that switches it on):\n\n" + "\n".join(lines)


def ablation_section_md(a: AblationScores, level: float = LEVEL) -> str:
    """The as-run report's section on each difference alone: a table per ablated panel and the stages
    still to run."""
    left = stages_left(a)
    head = ("From the paper's text, one difference of the authors' code switched on at a time "
            "(`python -m campaign.repro.stages list --campaign as_run_ablation --estimate`; the differences: "
            f"docs/fidelity.md), {ABLATION_SEEDS} seeds, scored by the final evaluation score; `as run` is the "
            "as-run grid's runs of the panel. IQM final score per bonus where the setting changes it (`·`: the "
            "bonus keeps its as-written runs; in the last two columns: a setting that changes neither); "
            "P(RFIG > PPO) with its DeLong 95% interval (where every pair of runs is ordered one way that interval "
            "has no width, and the exact two-sided Mann-Whitney p is given instead), and its change from as "
            "written, bold where the change's "
            "interval at the Bonferroni level over the panel's settings excludes 0 (a reading that names what "
            "moves a comparison, not a verdict).")
    if not a.envs:
        return head + f"\n\nNo stage of the ablation is in the data yet ({len(left)} stages to run)."
    tables = [f"**{env_label(e)}**\n\n" + panel_table_md(a, e, level) for e in a.envs]
    tail = (f"{len(left)} of {len(ablation_stages())} stages still to run (the first: "
            f"{', '.join(left[:4])}{', ...' if len(left) > 4 else ''})." if left else "Every stage is in.")
    return "\n\n".join([head, *tables, defects_md(a, level), tail])


__all__ = ["ABLATION_DATA", "AS_RUN_ROW", "AS_WRITTEN", "AblationScores", "CLAIM_COMPARISONS", "ablation_scores",
           "ablation_section_md", "attribution", "bonferroni", "comparison_change", "DEFECTS", "defects_md",
           "final_eval_score", "moves",
           "panel_table_md", "stage_whole", "stages_left"]

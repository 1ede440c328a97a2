"""The rule book's history as it happened: when each rule was fixed or changed, in which commit, and
which data had been read by then.

The reports used to say their rules were "fixed before the data was read". That held for seeds 8-31
of the 32-seed grid and not for seeds 0-7: the 8-seed reproduction (a quarter of the 32-seed data)
had been read, and judged with earlier criteria, when the rule book was written, and one rule was
replaced on it. Each :class:`RuleChange` says what changed and what had been seen; ``constants``
holds the rule book's constants (``campaign.claims.verdicts.RULE_CONSTANTS``) as they stood after the
change (empty before the rule book had any), and ``tests/test_verdicts.py`` fails when the module's
constants differ from the last entry's: a constant cannot change without a dated entry here.
``rules.md`` beside each report renders this history after the rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class RuleChange:
    when: str                         # UTC, ISO 8601, to the minute (the commit's time)
    commit: str
    change: str                       # what was fixed or changed, and what it replaced
    seen: str                         # which data had been read (and judged) when it was made
    constants: Mapping[str, Any] = field(default_factory=dict)


_BOOK_2026_11_27 = {"LEVEL": 0.95, "SATURATION_SHARE": 0.9, "MARGIN": 0.10, "POI_MARGIN": 0.056,
                    "TIME_BAND": (0.8, 1.25), "NO_EFFECT": 0.01, "REPS": 2000}

_BOOK_2026_11_28 = {**_BOOK_2026_11_27, "REPS": 20000, "NEAR_BAND": 0.05, "POWER": 0.8, "MC_GUARD": 3.0,
                    "MC_BATCHES": 10}

_BOOK_2026_12_02 = {**_BOOK_2026_11_28, "PERM_DRAWS": 100000, "HELD_OUT_FROM": 8}

RULE_HISTORY: tuple[RuleChange, ...] = (
    RuleChange(
        "2026-11-26T13:47Z", "99f1c63",
        "First verdicts, each claim with a criterion of its own in analysis/claims.py and no rule book. Among "
        "them: *no catastrophic failure* meant that on no panel RFIG's IQM interval lay entirely below PPO's, or "
        "below every baseline's.",
        "The 8-seed reproduction as it was being made, panel by panel."),
    RuleChange(
        "2026-11-27T15:07Z", "2d6df37",
        "The rule book (this module's rules 1-8): the paper's 12 panels only; saturated panels left out; "
        "supported / contradicted / undecided from 95% bootstrap intervals with the seeds that would resolve it; "
        "intersection-union and Bonferroni for every-panel claims; the pooled Mantel-Haenszel odds ratio for "
        "solved seeds; the non-inferiority margins MARGIN and POI_MARGIN. One rule was replaced on data already "
        "read: a catastrophic failure became RFIG below half of PPO (F = IQM(RFIG) - IQM(PPO) / 2 < 0), where "
        "the 8-seed report (4f9fda8, 2026-11-27T09:12Z) had judged *no catastrophic failure* **not supported** "
        "under the old criterion (RFIG's interval below PPO's on Sparse-HalfCheetah).",
        "All of seeds 0-7 of the 12 panels (the 8-seed reproduction: a quarter of the 32-seed data), judged with "
        "the earlier criteria. Not seen: seeds 8-31 (the 32-seed campaign started at 14:57Z and had made no run).",
        _BOOK_2026_11_27),
    RuleChange(
        "2026-11-27T16:58Z", "d8811f6",
        "The beta claim judges saturation (rule 3) over the beta variants it compares, and an undecided ranking "
        "says why. No constant changed.",
        "The 8-seed data and its beta sweep (beta 0.25 and 1 for RND, VIME and #Explo).",
        _BOOK_2026_11_27),
    RuleChange(
        "2026-11-28T01:21Z", "3135dc0",
        "A statistic over runs of different sizes (a grid still filling) reads 'n = k to m' and its seeds to "
        "resolve are a lower bound. Wording only; no threshold changed.",
        "The 32-seed grid while it filled (seeds 8-23 of most panels).",
        _BOOK_2026_11_27),
    RuleChange(
        "2026-11-28T10:59Z", "3027eb3",
        "After an outside referee's reading of the complete 32-seed report (issue 41): rule 3b (a comparison where "
        "90% of each method's runs lie within 5% of the panel's range of one value is near-saturated and does not "
        "discriminate); rule 4's seeds to resolve are those with 80% power, from the comparison that decides; rule "
        "5's resamples raised from 2,000 to 20,000, an interval end within 3 Monte-Carlo standard errors of a "
        "threshold touches it, a probability of improvement gets its analytic DeLong interval instead of the "
        "bootstrap's (at 2,000 resamples, the Bonferroni end that decided Sparse-HalfCheetah's peak claim moved "
        "by 0.01 between bootstrap seeds, across the threshold), and every verdict shows the interval that "
        "decided it; rule 7's pooled values show "
        "the interval with the panels resampled beside the panels-fixed one; rule 8 states why two margins; rule "
        "9 (new) tests an undecided effect claim for equivalence within 0.5 ± POI_MARGIN. The report shows each "
        "claim's verdict under the rules before this change (the committed 32-seed claims of 42f25de) beside the "
        "new one, and the replaced catastrophic-failure rule's verdict on the same data.",
        "Every verdict of the complete 32-seed grid (seeds 0-31 of the 12 panels, VIME then at its old defaults), "
        "and the referee's recomputation of them.",
        _BOOK_2026_11_28),
    RuleChange(
        "2026-11-28T13:22Z", "0e2278d",
        "Rules 3 and 3b are judged on the runs of the methods a comparison compares, where they had been judged "
        "on every method of the panel: rule 3 on all of them, rule 3b on the panel's range over all of them. "
        "Found when VIME's rerun and the noise control entered the data (issue 40): their runs below RFIG's and "
        "PPO's made PointMaze-UMaze no longer saturated and widened rule 3b's scale, so a comparison of RFIG with "
        "PPO, whose runs had not changed, moved (the area-under-the-curve claim from 'no effect larger than "
        "d = 0.2' over 11 panels to undecided over 10). A comparison's panel set must not depend on a third "
        "method's runs; with this change the verdicts of RFIG against PPO are those of the report before the "
        "reruns. No constant changed.",
        "Every verdict of the 32-seed grid with VIME's rerun and the noise control on five panels (MountainCar, "
        "Acrobot, PointMaze-UMaze, PointMaze-Medium, Breakout), and the report built from it before this change.",
        _BOOK_2026_11_28),
    RuleChange(
        "2026-11-28T13:33Z", "cdb3098",
        "Rule 6: a panel where a method the claim needs has no runs yet is named, not silently dropped, and while "
        "there is one a claim on every panel is at best undecided. The competitive claim had read 'supported, "
        "shown on 4 of 4 panels' with VIME's rerun on 5 of the 12 panels; it now reads undecided until the rerun "
        "covers them. Every comparison also names the panels rules 3 and 3b leave out. No constant changed.",
        "The same data as the change before.",
        _BOOK_2026_11_28),
    RuleChange(
        "2026-11-28T14:36Z", "4bd28e5",
        "Rule 6: a panel where the signal check (its rule fixed earlier the same day) finds a compared bonus "
        "degenerate is named and not judged, as one without that bonus's runs is, so no verdict uses a bonus that "
        "does not work there. No constant changed.",
        "The signal audit's MountainCar stage (RND, #Explo and RFIG, seeds 0-7): #Explo blind to visits, the first "
        "degenerate cell of a paper method; its effect on the claims had not been read when this was fixed.",
        _BOOK_2026_11_28),
    RuleChange(
        "2026-11-28T20:01Z", "d6f4b1f",
        "Rule 6 for the competitive claim (RFIG against the best of the NN baselines): a panel where a baseline has "
        "no runs yet, or is degenerate by the signal check, is judged against the baselines that work there and "
        "named, the claim at best undecided while any panel is (4bd28e5 had left such a panel out; a baseline "
        "without runs anywhere was already dropped from every panel, 'so far without #Explo'). A baseline added "
        "later can only raise the best, so a contradiction found on the others stands. Found when #Explo's fixed "
        "runs reached one panel, MountainCar, where the check finds them blind to visits: every panel then lacked "
        "#Explo or had it degenerate, and the claim left the report. No constant changed.",
        "The 32-seed grid with #Explo's fixed runs on MountainCar (seeds 0-23) and none elsewhere; a report built "
        "from it had lost the claim's row. The claim's verdicts under this change had not been read.",
        _BOOK_2026_11_28),
    RuleChange(
        "2026-11-29T01:53Z", "2c79097",
        "Rule 2's scale as the rule states it: the worst and best windows of the five methods' runs on a panel. "
        "The code had fitted it on every method of the grid, so since the noise control joined (2026-11-28) its "
        "windows had set an end of the range on MountainCar (best window -107.9, the five's -108.2), "
        "PointMaze-UMaze (worst 0.14, the five's 0.25) and SpaceInvaders (best 111.0, the five's 109.6); the "
        "rule's text no longer says 'as the report's aggregates are' (those keep every method). No constant "
        "changed.",
        "The 32-seed grid with the fixed VIME and the control on 11 panels and #Explo's fixed runs on the 8 "
        "non-Brax ones; the report built from it had been read. Found reading why the competitive claim's margin "
        "on Sparse-Ant moved (0.93 to 1.6 seed SDs): that one was the fixed VIME's best window (150), one of the "
        "five methods, which the rule counts; the control's share was found checking every panel's range.",
        _BOOK_2026_11_28),
    RuleChange(
        "2026-12-02T04:32Z", "uncommitted",
        "Rules 10-12 (new), so that no verdict says more than its evidence. Rule 10: beside a verdict pooled over "
        "panels, each panel's own value and interval, a panel marked (and named in the verdict's words) where its "
        "Bonferroni interval over the pooled panels lies on a side of the threshold the pooled verdict does not "
        "state; no verdict changes by it. Rule 11: every verdict again on seeds 8-31 alone (HELD_OUT_FROM = 8), "
        "the seeds not read when the rule book was first written, in a column beside the verdict on every seed; "
        "no verdict changes by it. Rule 12: a verdict that DeLong's or the Robins-Breslow-Greenland interval "
        "decides stands only when a test without the normal approximation agrees: against 0.5 an exact "
        "permutation test (PERM_DRAWS = 100,000 relabellings drawn where panels' sizes differ), against a "
        "non-inferiority threshold or the parity band the stratified bootstrap, for the odds ratio the exact "
        "conditional test; else undecided. With it 'RFIG achieves peak performance in ... sparse-halfcheetah' "
        "moved from contradicted to undecided: P(RFIG > PPO)'s Bonferroni DeLong interval [0.155, 0.496] lies "
        "below 0.5, its exact permutation p = 0.0080 is above the Bonferroni tail 0.00625.",
        "Every verdict of the complete 32-seed grid (seeds 0-31 of the 12 panels, every baseline's rerun in) and "
        "the report built from it, and a recomputation from the committed data that found what these rules now "
        "show: panels differing both ways under 'no effect larger than d = 0.2' (Sparse-Hopper, Breakout, "
        "Asterix), that pooled interval on seeds 8-31 alone ([0.476, 0.572], undecided), and a permutation p of "
        "0.0084 (drawn) on Sparse-HalfCheetah against 0.00625.",
        _BOOK_2026_12_02),
)


def history_md() -> str:
    """The history as the rules page shows it: one row per change."""
    lines = ["| When (UTC) | Commit | What was fixed or changed | Data that had been read |",
             "| :--- | :--- | :--- | :--- |"]
    lines += [f"| {c.when} | {c.commit} | {c.change} | {c.seen} |" for c in RULE_HISTORY]
    return "\n".join(lines) + "\n"


__all__ = ["RULE_HISTORY", "RuleChange", "history_md"]

"""The rule book's history as it happened: when each rule was fixed or changed, in which commit, and
which data had been read by then.

The reports used to say their rules were "fixed before the data was read". That held for seeds 8-31
of the 32-seed grid and not for seeds 0-7: the 8-seed reproduction (a quarter of the 32-seed data)
had been read, and judged with earlier criteria, when the rule book was written, and one rule was
replaced on it. Each :class:`RuleChange` says what changed and what had been seen; ``constants``
holds the rule book's constants (``campaign.claims.verdicts.RULE_CONSTANTS``) as they stood after the
change (empty before the rule book had any), and ``tests/test_verdicts.py`` fails when the module's
constants differ from the last entry's: a constant cannot change without a dated entry here.
``signal_constants`` does the same for the signal check's rule (``campaign.claims.constants.SIGNAL_CONSTANTS``),
locked by ``tests/test_signal_calibration.py``.
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
    # the signal check's constants (campaign.claims.constants.SIGNAL_CONSTANTS) as they stood after the
    # change (empty before the check had a rule); tests/test_signal_calibration.py locks them as
    # tests/test_verdicts.py locks ``constants``
    signal_constants: Mapping[str, Any] = field(default_factory=dict)


_BOOK_2026_11_27 = {"LEVEL": 0.95, "SATURATION_SHARE": 0.9, "MARGIN": 0.10, "POI_MARGIN": 0.056,
                    "TIME_BAND": (0.8, 1.25), "NO_EFFECT": 0.01, "REPS": 2000}

_BOOK_2026_11_28 = {**_BOOK_2026_11_27, "REPS": 20000, "NEAR_BAND": 0.05, "POWER": 0.8, "MC_GUARD": 3.0,
                    "MC_BATCHES": 10}

_BOOK_2026_12_02 = {**_BOOK_2026_11_28, "PERM_DRAWS": 100000, "HELD_OUT_FROM": 8}

_SIGNAL_2026_11_28 = {"SIGNAL_AT_MAX": 0.5, "SIGNAL_PARTLY_AT_MAX": 0.05, "SIGNAL_CONSTANT_CV": 0.01,
                      "SIGNAL_LEVEL": 0.95}

_SIGNAL_2026_12_02 = {**_SIGNAL_2026_11_28, "SIGNAL_DISTANCE_MARGIN": 0.05}

_SIGNAL_2026_12_04 = {**_SIGNAL_2026_12_02, "SIGNAL_NOVELTY_MARGIN": 0.0}

_SIGNAL_2026_12_06 = {**_SIGNAL_2026_12_04, "SIGNAL_NOVELTY_DISTANCE_PANELS": ("mountaincar",)}

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
        "2026-11-28T10:06Z", "6afc77c",
        "The signal check (campaign/claims/signal.py, then analysis/signal.py): a panel x bonus cell is degenerate "
        "when its median run has at least half its transitions at the batch maximum (SIGNAL_AT_MAX, 'at its "
        "clip'), a coefficient of variation below SIGNAL_CONSTANT_CV (constant), or, on a panel with a coverage "
        "grid, a SIGNAL_LEVEL t-interval of its mean rank correlation with visits that does not lie below 0 "
        "(blind to visits). Entered here 2026-12-02: the history had recorded the check only through rule 6.",
        "No run carrying the signal statistics (first recorded by a189559, 09:53Z the same day; the signal "
        "audit's first stage entered the data at 14:01Z), as the module then stated. The complete 32-seed grid's "
        "scores and verdicts had been read.",
        _BOOK_2026_11_27, _SIGNAL_2026_11_28),
    RuleChange(
        "2026-11-28T10:59Z", "3027eb3",
        "After a reading of the complete 32-seed report: rule 3b (a comparison where "
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
        "and their recomputation from the data with independent code.",
        _BOOK_2026_11_28, _SIGNAL_2026_11_28),
    RuleChange(
        "2026-11-28T13:22Z", "0e2278d",
        "Rules 3 and 3b are judged on the runs of the methods a comparison compares, where they had been judged "
        "on every method of the panel: rule 3 on all of them, rule 3b on the panel's range over all of them. "
        "Found when VIME's rerun and the noise control entered the data: their runs below RFIG's and "
        "PPO's made PointMaze-UMaze no longer saturated and widened rule 3b's scale, so a comparison of RFIG with "
        "PPO, whose runs had not changed, moved (the area-under-the-curve claim from 'no effect larger than "
        "d = 0.2' over 11 panels to undecided over 10). A comparison's panel set must not depend on a third "
        "method's runs; with this change the verdicts of RFIG against PPO are those of the report before the "
        "reruns. No constant changed.",
        "Every verdict of the 32-seed grid with VIME's rerun and the noise control on five panels (MountainCar, "
        "Acrobot, PointMaze-UMaze, PointMaze-Medium, Breakout), and the report built from it before this change.",
        _BOOK_2026_11_28, _SIGNAL_2026_11_28),
    RuleChange(
        "2026-11-28T13:33Z", "cdb3098",
        "Rule 6: a panel where a method the claim needs has no runs yet is named, not silently dropped, and while "
        "there is one a claim on every panel is at best undecided. The competitive claim had read 'supported, "
        "shown on 4 of 4 panels' with VIME's rerun on 5 of the 12 panels; it now reads undecided until the rerun "
        "covers them. Every comparison also names the panels rules 3 and 3b leave out. No constant changed.",
        "The same data as the change before.",
        _BOOK_2026_11_28, _SIGNAL_2026_11_28),
    RuleChange(
        "2026-11-28T14:36Z", "4bd28e5",
        "Rule 6: a panel where the signal check (its rule fixed earlier the same day) finds a compared bonus "
        "degenerate is named and not judged, as one without that bonus's runs is, so no verdict uses a bonus that "
        "does not work there. No constant changed.",
        "The signal audit's MountainCar stage (RND, #Explo and RFIG, seeds 0-7): #Explo blind to visits, the first "
        "degenerate cell of a paper method; its effect on the claims had not been read when this was fixed.",
        _BOOK_2026_11_28, _SIGNAL_2026_11_28),
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
        _BOOK_2026_11_28, _SIGNAL_2026_11_28),
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
        _BOOK_2026_11_28, _SIGNAL_2026_11_28),
    RuleChange(
        "2026-12-02T04:32Z", "1d95b83",
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
        _BOOK_2026_12_02, _SIGNAL_2026_11_28),
    RuleChange(
        "2026-12-02T07:25Z", "dc5e0a3",
        "The signal check revised: tested on known answers, it could not tell a working bonus from a broken "
        "one: a score that learns nothing (a state's standardised distance from the visit-weighted mean cell) "
        "falls with visits "
        "on every grid panel, and passed the 2026-11-28 rule there (campaign/claims/signal_calibration.py: the "
        "known answers on the committed runs' visit maps). New cause on a panel with a coverage grid, **no better "
        "than a distance score**: the SIGNAL_LEVEL t-interval of the mean over runs of the bonus's rank correlation "
        "minus that of the distance score on the same run's visits (computed offline from each run's final visit "
        "map: no committed run records it) does not lie below -SIGNAL_DISTANCE_MARGIN (0.05). With it the check "
        "rejects the distance score, a constant and noise and passes a count bonus on all 8 grid panels; the old "
        "rule passed the distance score on all 8. The batch-maximum cause keeps its threshold and is named for "
        "what it is on a count bonus (#Explo has no clip: its maximum is a bucket's first visit). The new cause "
        "decides only where the coverage grid is the whole state the bonus sees (WHOLE_STATE_GRIDS: MountainCar, "
        "DeepSea); on the other grid panels the grid is a projection (Acrobot's angles, PointMaze's position, "
        "Brax's torso coordinates) on which the distance score is computed while the bonuses see 11-27 "
        "dimensions, so there the comparison is reported as a note, not a cause: applied there, it would have "
        "made RFIG degenerate on 6 of the 8 grid panels and #Explo on all 8, on a test the known answers do "
        "not validate for a bonus whose input is not the grid. Newly degenerate at the defaults: RFIG and VIME "
        "on MountainCar (rule 6 leaves comparisons with them there unjudged). The 2026-11-28 entry (6afc77c) "
        "is the rule it replaces; the report shows each cell's verdict under it where they differ.",
        "The complete committed 32-seed data (seeds 0-31 of the 12 panels, every baseline's rerun and the signal "
        "audit in), its report and signal table; a recomputation of the distance score's rank "
        "correlation from the committed visits.npz; the known answers on those maps; and, before "
        "SIGNAL_DISTANCE_MARGIN was fixed, every real cell's difference from its runs' distance reference, so "
        "which cells the margin excludes was known when it was set (at 0 instead of 0.05, RFIG and VIME on "
        "MountainCar would pass: upper ends -0.04 and -0.01). The verdicts under the revised rule had not been "
        "read (no report rebuilt with it).",
        _BOOK_2026_12_02, _SIGNAL_2026_12_02),
    RuleChange(
        "2026-12-02T14:00Z", "1bac734",
        "Rule 6 for the method a claim is about: the signal check removes a compared method that does not work "
        "there, never the claim's own subject, which is judged as it runs on a panel where it is degenerate, the "
        "panel named (the revised check had made RFIG degenerate on MountainCar and so taken that panel out of "
        "RFIG's own claims: a method excused from a panel it fails on). Rule 4's seeds to resolve an estimate "
        "against a claim of several comparisons are counted at the Bonferroni level that would contradict it, as "
        "that level decides (they were counted at 95%: Breakout's peak claim said about 140 seeds). No constant "
        "changed.",
        "The complete committed 32-seed data and its report built before the revised signal check; the revised "
        "check's table (RFIG and VIME degenerate on MountainCar); the as-run report on 5 panels at 8 seeds. The "
        "32-seed verdicts under either change had not been read (no report rebuilt with them).",
        _BOOK_2026_12_02, _SIGNAL_2026_12_02),
    RuleChange(
        "2026-12-03T17:46Z", "e8915fd",
        "The signal check extended to novelty in each bonus's own input space, where visits are a projection or "
        "absent: where a cell's runs record signal/novelty_rank_corr (the rank correlation of the raw bonus with "
        "a state's distance to its 10th nearest of a uniform reservoir of earlier states, in the normalised "
        "observations the bonus is given) and signal/distance_novelty_rank_corr (the same for a state's "
        "standardised distance from the reservoir's mean), two causes on every panel: **blind to novelty** (the "
        "SIGNAL_LEVEL t-interval of the mean does not lie above 0) and **no better than a distance score in its "
        "input space** (that of the mean difference from the distance score's does not lie above "
        "+SIGNAL_DISTANCE_MARGIN). No constant changed; the visits parts are unchanged.",
        "No run recording these statistics existed (the trainer records them from this commit on); the known "
        "answers of tests/test_signal.py (a synthetic two-room stream: a cell count, the distance score, a "
        "constant, noise) had been run. Every committed verdict is unchanged: no committed run carries them.",
        _BOOK_2026_12_02, _SIGNAL_2026_12_02),
    RuleChange(
        "2026-12-04T02:21Z", "16f0a5e",
        "The beta claim made an equivalence test: supported only when, for every pair of bonuses and every beta "
        "swept, the change of P(A > B) from the default beta has its 95% interval inside ± POI_MARGIN (DeLong's "
        "variances of the two betas' runs added; checked by the stratified bootstrap, rule 12); contradicted by a "
        "pair resolved both ways (as before) or by a change whose Bonferroni interval lies outside the band. It "
        "replaced \"supported when no resolved pair reverses\", which a few seeds satisfy without evidence that "
        "beta changes nothing. Intervals against a band say whether they lie inside, outside or across its edge "
        "(the execution-time claim's too). No constant changed.",
        "The 8-seed sensitivity runs (MountainCar, PointMaze-UMaze, 500k steps) and the repro report's beta "
        "verdict on them (undecided; P(#Explo > RFIG) 0.53, 0.45, 0.31 at beta 0.25, 0.5, 1). No 32-seed "
        "sensitivity run existed.",
        _BOOK_2026_12_02, _SIGNAL_2026_12_02),
    RuleChange(
        "2026-12-04T13:30Z", "c5df9e4",
        "The input-space comparison with the distance score gets a margin of its own, SIGNAL_NOVELTY_MARGIN = 0: "
        "the mean difference's SIGNAL_LEVEL interval must lie above 0, where it had to lie above +0.05 (the "
        "grid's SIGNAL_DISTANCE_MARGIN, carried over unvalidated on 2026-12-03). Its known answer on a real panel "
        "failed at 0.05: a grid count of MountainCar's normalised state (#Explo with hash=grid, the known working "
        "count there; the static SimHash meant for it sees only a 2-D state's direction) has a rank correlation "
        "with novelty of +0.76 to +0.79 and lies above the distance score by +0.028 [+0.009, +0.046], +0.055 "
        "[+0.037, +0.073] and +0.072 [+0.041, +0.103] at cell widths 0.5, 0.25 and 0.1 (8 seeds each), so the "
        "part rejected what it must pass at every width. At 0 it passes all three; the distance score (a "
        "difference of 0 by construction), a constant and noise are still rejected. The visits parts and their "
        "margin are unchanged.",
        "The novelty experiment on MountainCar (seeds 0-7, 1M steps; docs/results/novelty/data): every bonus at "
        "its defaults, the static SimHash and the three grid counts, with each cell's difference from the distance "
        "score read before the margin was set: RFIG +0.014 [+0.007, +0.022] (passes at 0, not at 0.05), RND +0.010 "
        "[-0.001, +0.021] and VIME -0.165 (fail at either). No committed report's verdict changes: no run of the "
        "12-panel grids records the statistics.",
        _BOOK_2026_12_02, _SIGNAL_2026_12_04),
    RuleChange(
        "2026-12-06T19:14Z", "e430c15",
        "The input-space comparison with the distance score is a cause only on the panels where its known answers "
        "get their verdicts, SIGNAL_NOVELTY_DISTANCE_PANELS = (mountaincar,), and reported, not a cause, elsewhere "
        "(as the visits comparison is on a projected grid); blind to novelty stays a cause on every panel. On "
        "Acrobot a grid count of the normalised state, the known working count, lies below the distance score by "
        "-0.126 [-0.145, -0.106], -0.079 [-0.086, -0.072] and -0.121 [-0.129, -0.113] at cell widths 0.25, 0.5 "
        "and 1 (the distance from the mean of Acrobot's normalised state ranks novelty at +0.91 by itself); on "
        "PointMaze-Medium by -0.608, -0.476 and -0.046 [-0.112, +0.020] (at 0.25 half of its transitions are "
        "first visits). So at any margin the comparison rejected what it must pass there; a panel joins the list "
        "when its known answers pass (tests/test_signal_calibration.py checks the list against the committed "
        "novelty data). No other constant changed.",
        "The novelty experiment's Acrobot and PointMaze-Medium runs (seeds 0-7, 1M steps; every bonus at its "
        "defaults and the grid counts at three widths), every row read before the change: RFIG +0.043 [+0.040, "
        "+0.045] and +0.125 [+0.101, +0.149] above the distance score, RND +0.009 [+0.003, +0.015] and +0.066 "
        "[+0.038, +0.095], VIME -0.106 and -0.064, #Explo -0.626 and -0.655; noise blind to novelty on both. The "
        "as-written grids' runs do not record the statistics, so their reports do not move. The as-run grid's "
        "runs do, and its report under the 2026-12-04 rule (064fe1c) had been read, though what the change "
        "would do to it was not looked at before: five cells stop being degenerate (#Explo on Acrobot and "
        "PointMaze-Medium, RFIG and RND on Asterix, RND on Freeway), and its interim verdict on RFIG against RND "
        "moves from undecided, 0.52 [0.41, 0.63] over 4 panels, to supported, 0.62 [0.52, 0.71] over 6; "
        "'competitive with NN-based methods' stays undecided (shown on 5 of 6 panels, was 3 of 4).",
        _BOOK_2026_12_02, _SIGNAL_2026_12_06),
)


def history_md() -> str:
    """The history as the rules page shows it: one row per change."""
    lines = ["| When (UTC) | Commit | What was fixed or changed | Data that had been read |",
             "| :--- | :--- | :--- | :--- |"]
    lines += [f"| {c.when} | {c.commit} | {c.change} | {c.seen} |" for c in RULE_HISTORY]
    return "\n".join(lines) + "\n"


__all__ = ["RULE_HISTORY", "RuleChange", "history_md"]

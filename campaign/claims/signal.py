"""The signal check: does a bonus's reward tell the agent anything on a panel? One rule applied to
every bonus on every panel, first fixed 2026-11-28 (before any run carrying these statistics had
been read) and revised 2026-12-02 after the committed 32-seed data had been read
(``campaign/claims/rule_history.py``; the constants in ``campaign/claims/constants.py``).

Each run records, per window, statistics of its raw intrinsic reward over each batch
(``rfig_exp.agents.signal``): the fraction of transitions at the batch's maximum, the coefficient
of variation, and on panels with a coverage grid the rank correlation with the visit count of the
next state's cell. A run's value is the mean over its windows; a cell (panel x bonus) is judged on
its runs:

- **at its clip** (a count bonus: **at its batch maximum**): the median run has at least
  :attr:`SignalRule.at_clip` (one half) of its transitions at the batch maximum. A clip that binds
  puts them there (an informative continuous bonus has one transition in ``T B`` there); half a
  batch at one value cannot be ranked. A count bonus (:data:`COUNT_BONUSES`) has no clip: its
  maximum is a bucket's first visit (or, for a collapsed code, the one bucket of the whole batch),
  and the cause says so. Between :attr:`SignalRule.partly_at_clip` and one half it is noted.
- **constant**: the median run's coefficient of variation is below :attr:`SignalRule.constant_cv`
  (1%): every transition's reward within about 1% of the batch mean.
- **blind to visits** (panels with a coverage grid): the two-sided :attr:`SignalRule.level`
  t-interval of the mean rank correlation over runs does not lie below 0.
- **no better than a distance score** (panels with a coverage grid; 2026-12-02): the
  :attr:`SignalRule.level` t-interval of the mean over runs of ``rho_run - rho_dist,run`` does not
  lie below ``-distance_margin``, where ``rho_dist,run`` is the rank correlation with visits of a
  score that learns nothing, a state's standardised distance from the visit-weighted mean cell
  (``rfig_exp.agents.signal.distance_score``), on that run's visits. A bonus that learns nothing
  falls with visits too (rarely visited cells lie far from where the agent mostly is), so a
  correlation below 0 alone does not tell a working bonus from a broken one:
  ``campaign/claims/signal_calibration.py`` shows the 2026-11-28 rule passing the distance score
  itself on every grid panel of the committed data. No committed run records ``rho_dist`` during
  training, so it is computed offline from each run's final visit map (``references``); a cell
  without maps is compared with 0 only, and says so. Panels without a grid (MinAtar) cannot be
  judged on visits, which the table says.

- **in its own input space** (runs that record ``signal/novelty_rank_corr``; 2026-12-03, before
  any run recording it had been read): the trainer measures each state's novelty as the bonus sees
  it, its distance to the ``k``-th nearest of a uniform reservoir of earlier states in the
  normalised observations (``rfig_exp.agents.signal.novelty_step``), with the rank correlation of
  a score that learns nothing, the standardised distance from the reservoir's mean, beside it.
  **Blind to novelty**: the :attr:`SignalRule.level` t-interval of the mean rank correlation with
  novelty does not lie above 0. **No better than a distance score in its input space**: the
  interval of the mean of ``rho_nov,run - rho_dist,run`` does not lie above ``novelty_margin`` (0).
  Both are causes on every panel, grid or not: the input space is the whole state the bonus sees.
  The margin was the grid's, +0.05 (2026-12-03), until its known answer on a real panel
  (2026-12-04): a grid count of MountainCar's normalised state, the known working count there, lies
  above the distance score by +0.03 to +0.07 at cell widths 0.1, 0.25 and 0.5 (lower ends +0.009 to
  +0.041), so a margin of 0.05 rejected what it must pass; with 0 it passes at every width, and
  the distance score, a constant and noise are still rejected. Its known answers on two more panels
  (2026-12-06) failed at any margin: on Acrobot a grid count lies below the distance score by 0.08
  to 0.13 at cell widths 0.25, 0.5 and 1 (the distance from the mean of its normalised state already
  ranks novelty at +0.91), on PointMaze-Medium by 0.05 to 0.61. So that comparison is a cause only
  on the panels where the known working count clears it (:attr:`SignalRule.novelty_distance_panels`,
  MountainCar), and reported elsewhere; *blind to novelty* stays a cause on every panel.

A cell with any of these is **degenerate**: a verdict that compares against it is not a
comparison with a working method. The statistics cannot be computed for runs made before they
were recorded: such a cell is "not measured". Pure functions of a :class:`Collection` (and the
references, which ``signal_calibration`` computes from the runs' visit maps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np
from scipy import stats

from analysis.collect import Collection
from analysis.names import CONTROLS, split_task

from .constants import (
    SIGNAL_AT_MAX,
    SIGNAL_CONSTANT_CV,
    SIGNAL_DISTANCE_MARGIN,
    SIGNAL_LEVEL,
    SIGNAL_NOVELTY_DISTANCE_PANELS,
    SIGNAL_NOVELTY_MARGIN,
    SIGNAL_PARTLY_AT_MAX,
)

AT_MAX, CV, RANK = "signal/at_max_fraction", "signal/cv", "signal/visit_rank_corr"
NOVELTY, NOVELTY_REFERENCE = "signal/novelty_rank_corr", "signal/distance_novelty_rank_corr"
COVERAGE = "coverage"  # recorded by every run of an env with a coverage grid
RULE_FIXED, RULE_REVISED, RULE_NOVELTY, RULE_NOVELTY_MARGIN = "2026-11-28", "2026-12-02", "2026-12-03", "2026-12-04"
RULE_NOVELTY_PANELS = "2026-12-06"
# bonuses whose reward is a function of a count: their batch maximum is a first visit, not a clip
COUNT_BONUSES = frozenset({"hashexplo"})
# Panels whose coverage grid holds the whole state a bonus sees (MountainCar: position and velocity;
# DeepSea: row and column of its one-hot grid). Elsewhere the grid is a projection (Acrobot's two
# angles of six observations, PointMaze's position without velocity, Brax's torso coordinates of
# 11-27): the distance score there is computed on the grid's own coordinates, which a bonus seeing
# the whole state is not, so its comparison is reported, not a cause; novelty measured in each
# bonus's own input space is what would judge them, and no committed run records it.
WHOLE_STATE_GRIDS = frozenset({"mountaincar", "deepsea"})
# (env, bonus, variant, seed) -> the distance score's rank correlation with visits on that run's visits
References = Mapping[tuple[str, str, str, int], float]


@dataclass(frozen=True)
class SignalRule:
    at_clip: float = SIGNAL_AT_MAX                # median run's fraction at the batch maximum: at or above, degenerate
    partly_at_clip: float = SIGNAL_PARTLY_AT_MAX  # at or above (and below at_clip): noted
    constant_cv: float = SIGNAL_CONSTANT_CV       # median run's coefficient of variation: below, degenerate
    level: float = SIGNAL_LEVEL                   # the t-intervals over runs
    # the mean difference from the distance score's rank correlation must lie below -distance_margin;
    # None: the 2026-11-28 rule, which compared the rank correlation with 0 only
    distance_margin: float | None = SIGNAL_DISTANCE_MARGIN
    fixed: str = RULE_REVISED
    # the rank correlation with novelty in the bonus's input space is judged (added RULE_NOVELTY, before any run
    # recording it had been read; the visits parts keep their date, ``fixed``); False: not judged
    novelty: bool = True
    # the mean difference from the distance score's rank correlation with novelty must lie above +novelty_margin
    # (RULE_NOVELTY_MARGIN; from RULE_NOVELTY until then it was distance_margin, 0.05)
    novelty_margin: float = SIGNAL_NOVELTY_MARGIN
    # the panels (env names, options aside) where that comparison is a cause, those where its known answers
    # get their verdicts (RULE_NOVELTY_PANELS); elsewhere it is reported, not a cause. None: a cause on every
    # panel, as from RULE_NOVELTY until then
    novelty_distance_panels: frozenset[str] | None = frozenset(SIGNAL_NOVELTY_DISTANCE_PANELS)

    def novelty_distance_decides(self, env: str) -> bool:
        """Whether the input-space comparison with the distance score is a cause on ``env``."""
        return self.novelty_distance_panels is None or split_task(env)[0] in self.novelty_distance_panels


RULE = SignalRule()
# the input-space comparison as a cause on every panel: at the margin of 2026-12-04, and as first fixed
NOVELTY_RULE_2026_12_04 = SignalRule(novelty_distance_panels=None)
NOVELTY_RULE_2026_12_03 = SignalRule(novelty_margin=SIGNAL_DISTANCE_MARGIN, novelty_distance_panels=None)
OLD_RULE = SignalRule(0.5, 0.05, 0.01, 0.95, None, RULE_FIXED, False)   # as fixed 2026-11-28 (rule_history.py)


@dataclass(frozen=True)
class CellSignal:
    """The check of one cell: its runs' statistics (each run's mean over windows) and the verdict."""

    env: str
    method: str
    runs: int                                   # runs that carry the statistics
    at_max: float                               # median over runs
    cv: float                                   # median over runs
    rank: float | None                          # mean over runs; None without a coverage grid
    rank_interval: tuple[float, float] | None
    verdict: str                                # "ok", "degenerate" or "not measured"
    causes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    has_grid: bool = True                       # the panel has a coverage grid (its runs record coverage)
    control: bool = False                       # the bonus is the control, blind by design
    # what the method is, whatever its key in this collection (a bonus's only variant takes the bonus's key)
    bonus: str = ""
    variant: str = "base"
    reference: float | None = None              # mean over the paired runs of the distance score's rank correlation
    difference: tuple[float, float, float] | None = None   # mean, interval of rank - reference over the paired runs
    before: str = ""                            # the verdict under the 2026-11-28 rule
    novelty: float | None = None                # mean over runs of the rank correlation with novelty (its input space)
    novelty_reference: float | None = None      # the same for the distance score, over the same runs
    novelty_difference: tuple[float, float, float] | None = None  # mean, interval of novelty - its reference


def t_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """The two-sided ``level`` t-interval of the mean of ``values`` (at least two)."""
    n = len(values)
    half = stats.t.ppf(0.5 + level / 2, n - 1) * float(np.std(values, ddof=1)) / math.sqrt(n)
    mean = float(np.mean(values))
    return mean - half, mean + half


def distance_comparison(rank: np.ndarray, reference: np.ndarray | None,
                        level: float) -> tuple[float, tuple[float, float, float]] | None:
    """``(mean reference, (mean, low, high) of rank - reference)`` over the runs where both are
    finite (paired by run); None with fewer than two such runs."""
    if reference is None:
        return None
    both = np.isfinite(rank) & np.isfinite(reference)
    if both.sum() < 2:
        return None
    diff = rank[both] - reference[both]
    return float(np.mean(reference[both])), (float(np.mean(diff)), *t_interval(diff, level))


def _at_max_cause(top: float, count: bool) -> str:
    if count:
        return (f"at its batch maximum ({top:.2f} of transitions; a count bonus's maximum is a bucket's first visit, "
                f"or one bucket for the whole batch, not a clip)")
    return f"at its clip ({top:.2f} of transitions at the batch maximum)"


def _visits_causes(rank: np.ndarray, reference: np.ndarray | None, rule: SignalRule,
                   causes: list[str], notes: list[str], projected: bool = False) -> tuple[float, float] | None:
    """The visits part of the rule (at least two runs), its causes and notes appended; the rank
    correlation's interval."""
    interval = t_interval(rank, rule.level)
    if interval[1] >= 0:
        causes.append(f"blind to visits (rank correlation {np.mean(rank):+.2f} "
                      f"[{interval[0]:+.2f}, {interval[1]:+.2f}])")
        return interval
    if rule.distance_margin is None:
        return interval
    compared = distance_comparison(rank, reference, rule.level)
    if compared is None:
        notes.append("no distance reference (no visit maps): compared with 0 only")
    elif compared[1][2] >= -rule.distance_margin:
        ref, (d, lo, hi) = compared
        what = (f"no better than a distance score (rank correlation {np.mean(rank):+.2f}, the distance "
                f"score's {ref:+.2f}: difference {d:+.2f} [{lo:+.2f}, {hi:+.2f}], not below "
                f"-{rule.distance_margin:g})")
        if projected:
            notes.append(f"{what}, on a grid that is a projection of the bonus's input: reported, not a cause")
        else:
            causes.append(what)
    return interval


def _novelty_causes(novelty: np.ndarray, reference: np.ndarray, rule: SignalRule, causes: list[str],
                    notes: list[str], decides: bool = True) -> None:
    """The input-space part of the rule (at least two runs carrying both), its causes appended;
    ``decides``: the comparison with the distance score is a cause on this panel (else a note)."""
    low, high = t_interval(novelty, rule.level)
    if low <= 0:
        causes.append(f"blind to novelty in its input space (rank correlation {np.mean(novelty):+.2f} "
                      f"[{low:+.2f}, {high:+.2f}])")
        return
    compared = distance_comparison(novelty, reference, rule.level)
    if compared is not None and compared[1][1] <= rule.novelty_margin:
        ref, (d, lo, hi) = compared
        what = (f"no better than a distance score in its input space (rank correlation with novelty "
                f"{np.mean(novelty):+.2f}, the distance score's {ref:+.2f}: difference {d:+.3f} "
                f"[{lo:+.3f}, {hi:+.3f}], not above {rule.novelty_margin:+g})")
        if decides:
            causes.append(what)
        else:
            notes.append(f"{what}, on a panel where the known working count does not clear it or was not "
                         f"tested: reported, not a cause")


def judge(at_max: np.ndarray, cv: np.ndarray, rank: np.ndarray | None, rule: SignalRule = RULE,
          reference: np.ndarray | None = None,
          count: bool = False,
          projected: bool = False, novelty: np.ndarray | None = None,
          novelty_reference: np.ndarray | None = None, novelty_decides: bool = True
          ) -> tuple[str, tuple[str, ...], tuple[str, ...], tuple[float, float] | None]:
    """``(verdict, causes, notes, rank interval)`` of a cell from its runs' statistics (one value per
    run: ``at_max`` and ``cv``; ``rank`` None where the panel has no coverage grid; ``reference``
    each run's distance-score rank correlation, NaN where unknown, None where none is; ``count``:
    the bonus is a count bonus, whose batch maximum is named for what it is; ``projected``: the
    coverage grid is a projection of the bonus's input, where the distance comparison is a note;
    ``novelty`` and ``novelty_reference`` each run's rank correlations with novelty in the bonus's
    input space, the bonus's and the distance score's, paired by run; None where no run records them;
    ``novelty_decides``: their comparison is a cause on this panel, else a note)."""
    if len(at_max) == 0:
        return "not measured", (), (), None
    causes: list[str] = []
    notes: list[str] = []
    top, spread = float(np.median(at_max)), float(np.median(cv))
    if top >= rule.at_clip:
        causes.append(_at_max_cause(top, count))
    elif top >= rule.partly_at_clip:
        notes.append(f"partly at its {'batch maximum' if count else 'clip'} ({top:.2f})")
    if spread < rule.constant_cv:
        causes.append(f"constant within a batch (CV {spread:.3g})")
    interval = None
    if rank is None:
        notes.append("visits not testable (no coverage grid)")
    elif len(rank) < 2:
        notes.append("visits not testable (one run)")
    else:
        interval = _visits_causes(rank, reference, rule, causes, notes, projected)
    if rule.novelty and novelty is not None and novelty_reference is not None:
        if len(novelty) < 2:
            notes.append("novelty not testable (one run)")
        else:
            _novelty_causes(novelty, novelty_reference, rule, causes, notes, novelty_decides)
    return ("degenerate" if causes else "ok"), tuple(causes), tuple(notes), interval


def run_values(coll: Collection, env: str, method: str, column: str) -> tuple[np.ndarray, np.ndarray]:
    """``(seeds, means)``: each used run's mean over its windows of ``column`` (runs without it left out)."""
    seeds, values = coll.column(env, method, column)
    if values.size == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    have = ~np.all(np.isnan(values), axis=1)
    return seeds[have], np.nanmean(values[have], axis=1)


def run_means(coll: Collection, env: str, method: str, column: str) -> np.ndarray:
    """Each used run's mean over its windows of ``column`` (runs without it left out)."""
    return run_values(coll, env, method, column)[1]


def paired_values(coll: Collection, env: str, method: str, column: str,
                  paired: str) -> tuple[np.ndarray, np.ndarray]:
    """Each run's mean over windows of ``column`` and of ``paired``, for the runs that carry both."""
    seeds, values = run_values(coll, env, method, column)
    other = dict(zip(*run_values(coll, env, method, paired)))
    keep = [i for i, s in enumerate(seeds) if s in other]
    return values[keep], np.array([other[seeds[i]] for i in keep])


def cell_signal(coll: Collection, env: str, method: str, rule: SignalRule = RULE,
                references: References | None = None) -> CellSignal:
    """The check of ``method`` on ``env`` (the bonus ``none`` has no reward: not judged);
    ``references`` the runs' distance-score rank correlations (``signal_calibration.references``)."""
    at_max, cv = run_means(coll, env, method, AT_MAX), run_means(coll, env, method, CV)
    seeds, rank = run_values(coll, env, method, RANK)
    has_grid = run_means(coll, env, method, COVERAGE).size > 0
    bonus = coll.bonus_of(method)
    variant = info.variant if (info := coll.method_info.get(method)) is not None else "base"
    ref = (np.array([references.get((env, bonus, variant, int(s)), math.nan) for s in seeds])
           if references is not None and has_grid else None)
    count = bonus in COUNT_BONUSES
    grid_rank = rank if has_grid else None
    novelty, novelty_ref = paired_values(coll, env, method, NOVELTY, NOVELTY_REFERENCE)
    measured = novelty if novelty.size else None
    verdict, causes, notes, interval = judge(at_max, cv, grid_rank, rule, ref, count,
                                             split_task(env)[0] not in WHOLE_STATE_GRIDS, measured, novelty_ref,
                                             rule.novelty_distance_decides(env))
    before = judge(at_max, cv, grid_rank, OLD_RULE, None, count)[0] if rule != OLD_RULE else ""
    compared = distance_comparison(rank, ref, rule.level) if has_grid else None
    novelty_compared = distance_comparison(novelty, novelty_ref, rule.level) if novelty.size else None
    return CellSignal(env, method, len(at_max), float(np.median(at_max)) if len(at_max) else math.nan,
                      float(np.median(cv)) if len(cv) else math.nan,
                      float(np.mean(rank)) if rank.size else None, interval, verdict, causes, notes, has_grid,
                      bonus in CONTROLS, bonus, variant, compared[0] if compared else None,
                      compared[1] if compared else None, before,
                      float(np.mean(novelty)) if novelty.size else None,
                      novelty_compared[0] if novelty_compared else None,
                      novelty_compared[1] if novelty_compared else None)


def short_verdict(verdict: tuple[str, tuple[str, ...]]) -> str:
    """A known answer's ``(verdict, causes)`` in a table cell: the verdict, or "rejected" with each
    cause's name (its numbers left out)."""
    v, causes = verdict
    if v != "degenerate":
        return v
    return "**rejected** (" + "; ".join(dict.fromkeys(c.split(" (")[0] for c in causes)) + ")"


def signal_cells(coll: Collection, rule: SignalRule = RULE, references: References | None = None) -> list[CellSignal]:
    """Every (env, method) cell of the collection whose bonus has a reward, envs then methods in
    the collection's order."""
    return [cell_signal(coll, env, method, rule, references) for env in coll.envs for method in coll.methods
            if coll.bonus_of(method) != "none"]


def degenerate(cells: list[CellSignal]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(env, method) -> causes, for the degenerate cells."""
    return {(c.env, c.method): c.causes for c in cells if c.verdict == "degenerate"}


def _cell_text(c: CellSignal) -> str:
    if c.verdict == "not measured":
        return "not measured"
    extra = [n for n in c.notes if "not testable" not in n]
    if c.before and c.before != c.verdict:
        extra.append(f"{c.before} under the {RULE_FIXED} rule")
    tail = f" ({'; '.join(extra)})" if extra else ""
    if c.verdict == "degenerate" and c.control:
        return "blind, as the control must be: " + "; ".join(c.causes).removeprefix("blind to visits ") + tail
    if c.verdict == "degenerate":
        return "**degenerate**: " + "; ".join(c.causes) + tail
    numbers = f"CV {c.cv:.2f}" + ("" if c.rank is None else f", ρ {c.rank:+.2f}")
    if c.reference is not None and c.difference is not None:
        numbers += f", the distance score's {c.reference:+.2f}: difference ≤ {c.difference[2]:+.2f}"
    if c.novelty is not None and c.novelty_reference is not None and c.novelty_difference is not None:
        numbers += (f"; novelty ρ {c.novelty:+.2f}, the distance score's {c.novelty_reference:+.2f}: difference ≥ "
                    f"{c.novelty_difference[1]:+.2f}")
    return f"ok ({'; '.join([numbers, *extra])})"


def rule_text(rule: SignalRule = RULE) -> str:
    """The rule in a sentence or two, as the captions state it."""
    text = (f"a cell is degenerate when its median run has at least {rule.at_clip:.0%} of its transitions at the "
            f"batch maximum (at its clip; for a count bonus, which has no clip, its maximum is a first visit), or a "
            f"coefficient of variation below {rule.constant_cv:g} (constant), or, on panels with a coverage grid, "
            f"when the {rule.level:.0%} t-interval of its mean rank correlation between bonus and visit count "
            f"does not lie below 0 (blind to visits)")
    if rule.distance_margin is None:
        return text
    text += (f", or when the {rule.level:.0%} t-interval of the mean over runs of its rank correlation minus "
             f"that of a score that learns nothing (a state's standardised distance from the visit-weighted "
             f"mean cell, on the same run's visits) does not lie below -{rule.distance_margin:g} (no better "
             f"than a distance score)")
    if not rule.novelty:
        return text
    return text + (f"; and, where its runs record novelty in the bonus's own input space (the distance to the "
                   f"10th nearest of a reservoir of earlier states, in the normalised observations it is given), "
                   f"when the {rule.level:.0%} t-interval of its mean rank correlation with that novelty does not "
                   f"lie above 0 (blind to novelty), or that of its mean difference from the same runs' distance "
                   f"score (the standardised distance from the reservoir's mean) does not lie above "
                   f"{rule.novelty_margin:+g} (no better than a distance score in its input space"
                   + (")" if rule.novelty_distance_panels is None else
                      f"; a cause only on {', '.join(sorted(rule.novelty_distance_panels)) or 'no panel'}, where "
                      f"its known answers get their verdicts, and reported elsewhere)"))


def signal_md(coll: Collection, cells: list[CellSignal], env_label, rule: SignalRule = RULE) -> str:
    """The panel x bonus table of the check, with the rule in its caption."""
    methods = list(dict.fromkeys(c.method for c in cells))
    lines = ["| Panel | " + " | ".join(coll.label(m) for m in methods) + " |",
             "| :--- |" + " :--- |" * len(methods)]
    by = {(c.env, c.method): c for c in cells}
    for env in dict.fromkeys(c.env for c in cells):
        no_grid = not any(c.has_grid for c in cells if c.env == env)
        lines.append(f"| {env_label(env)}{' †' if no_grid else ''} | "
                     + " | ".join(_cell_text(by[(env, m)]) if (env, m) in by else "—" for m in methods) + " |")
    runs = sorted({c.runs for c in cells if c.runs})
    when = (f"fixed {RULE_FIXED}, before these statistics were read" if rule.fixed == RULE_FIXED else
            f"first fixed {RULE_FIXED} before these statistics were read, revised {RULE_REVISED} after the 32-seed "
            f"data had been read" + (f", extended {RULE_NOVELTY} by the input-space novelty before any run recording "
                                     f"it had been read, its comparison with the distance score confined "
                                     f"{RULE_NOVELTY_PANELS} to the panels where its known answers hold"
                                     if rule.novelty else ""))
    caption = (f"Rule ({when}; campaign/claims/rule_history.py): {rule_text(rule)}. CV: the median run's coefficient "
               f"of variation of the raw bonus within a batch; ρ: the mean over runs of that rank correlation (a "
               f"novelty bonus's is negative). Each run's value is its mean over windows; "
               f"{'runs per cell: ' + ', '.join(map(str, runs)) if runs else 'no run carries the statistics'}. "
               + ("The distance score's rank correlation is not recorded by any committed run: it is computed "
                  "offline from each run's final visit map (4,096 transitions drawn from it, "
                  "campaign/claims/signal_calibration.py), for a signal-audit rerun from the grid's run of the same "
                  "panel, settings and seed; *difference ≤*: the upper end of the interval of rank correlation minus "
                  "the distance score's. "
                  if rule.distance_margin is not None else "")
               + ("*Novelty ρ*: the mean over runs of the rank correlation with novelty in the bonus's input space "
                  "(a novelty bonus's is positive), *difference ≥*: the lower end of the interval of it minus the "
                  "distance score's, where runs record them (no committed run before 2026-12-03 does). "
                  if rule.novelty else "")
               + "*Not measured*: runs made before the statistics were recorded. †: no coverage grid, so visits "
               "cannot be tested there, and the check cannot tell the noise control from an informative bonus on "
               "that panel.")
    return "\n".join(lines) + "\n\n" + caption + "\n"


__all__ = ["AT_MAX", "COUNT_BONUSES", "CV", "NOVELTY", "NOVELTY_REFERENCE", "NOVELTY_RULE_2026_12_03",
           "NOVELTY_RULE_2026_12_04", "OLD_RULE", "WHOLE_STATE_GRIDS", "RANK", "RULE", "RULE_FIXED",
           "RULE_NOVELTY", "RULE_NOVELTY_PANELS", "RULE_REVISED", "CellSignal", "paired_values",
           "References", "SignalRule", "cell_signal", "degenerate", "distance_comparison", "judge", "rule_text",
           "run_means", "run_values", "short_verdict", "signal_cells", "signal_md", "t_interval"]

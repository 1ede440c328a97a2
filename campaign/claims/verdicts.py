"""The rules that turn measurements into verdicts, and when each was fixed.

This docstring is the rule book: the reproduction report quotes it (``rules.md`` beside its
``index.md``), the numbers below are the module's constants (kept in ``campaign/claims/constants.py``
and read through this module), ``tests/test_verdicts.py`` holds every rule to synthetic scores whose
answer is known, with a case that fails if the rule is loosened, and ``tests/test_verdict_evidence.py``
holds rules 10-12 to enumeration, scipy and hand-made collections.
Not every rule was fixed before the data it judges was read: ``campaign/claims/rule_history.py`` records
each change with its date, its commit and the data that had been seen, and ``rules.md`` shows it;
a test fails when a constant changes without an entry there.

## Scope

1. The paper's claims are judged on the paper's own panels only: the 12 envs of its figure
   (``conf/sweep/paper.yaml``). Every other result (DeepSea at any size, the sensitivity runs, another
   Brax backend) is reported in a section of its own, with its own aggregates, and never enters the
   verdict of a claim of the paper.
2. A run's score is its final score: the mean return of the episodes that ended in its last
   evaluation window. Where a rule needs scores on a common scale they are min-max normalised per
   panel: 0 = the worst window and 1 = the best window of any run of the five methods on that panel,
   never the control's (the sensitivity claims: over the final scores of the sensitivity runs on
   that panel).

## Panels that cannot tell methods apart

3. A panel **does not discriminate** between the methods a comparison compares when at least
   ``SATURATION_SHARE`` (90%) of the runs of each share one final score, the same for all (every run
   at success 1.0, say). It is named and left out of that comparison's per-panel count, its claim's
   aggregate and every sensitivity range; a panel whose runs vary never is, however close the methods.
   Only the compared methods' runs decide it: a third method never changes a comparison of two others.
3b. A comparison is **near-saturated** when at least ``SATURATION_SHARE`` of the runs of each method
   compared lie within ``NEAR_BAND`` (5%) of the compared runs' range of final scores of their pooled
   median. It does not discriminate either: a near tie on a bounded measure (most runs at one
   milestone, say) is not decided by the runs that fall off it.

## The four verdicts

4. Every verdict compares an interval with the claim's threshold:
   - **supported**: the 95% interval lies entirely on the claim's side of the threshold;
   - **contradicted**: the interval lies entirely on the other side;
   - **undecided at n = k** (k seeds per method): otherwise. The report gives the direction of the
     point estimate and the number of seeds at which an effect of the measured size would have
     ``POWER`` (80%) power to clear the threshold, k ((z + z_0.8) (h / z) / e)^2, with e the
     estimate's distance from the threshold, h the half-width of the deciding interval towards it
     and z its normal quantile (intervals shrink like 1/sqrt(n)), at the level that would decide:
     95% on the claim's side, rule 6's Bonferroni level on the other side of a claim of several
     comparisons; "no effect" when e is below ``NO_EFFECT`` of the statistic's range. For a claim of
     several comparisons (rule 6) the seeds come from the comparison that decides: when an estimate
     is against the claim, one comparison can contradict it, the nearest; otherwise all must clear,
     the slowest. Where the runs behind a statistic have different numbers of seeds (a grid still
     filling), it reads **n = k to m**, the fewest and the most, and the seeds to resolve, counted
     from the fewest, are a lower bound ("or more");
   - **does not discriminate**: every panel the claim needs is saturated (rule 3).
5. Intervals are 95% percentile intervals of a bootstrap over runs, stratified by panel and method
   (runs resampled with replacement within each), ``REPS`` (20,000) resamples from a fixed seed; a
   probability of improvement (rule 7) uses its DeLong variance instead (point +- z se, no
   resampling: the same to the digit on every rebuild), a Mantel-Haenszel odds ratio its
   Robins-Breslow-Greenland interval. A percentile interval's end moves with the bootstrap's seed:
   its Monte-Carlo standard error is estimated from ``MC_BATCHES`` disjoint batches of the resamples,
   and an end within ``MC_GUARD`` (3) of them of a threshold counts as touching it, so that no rebuild
   with another seed turns a verdict. Every verdict shows the interval that decided it, and where a
   normal approximation decided it, the second test of rule 12 beside it.
6. Several comparisons in one claim. A claim that must hold on every panel (or against every other
   method) is supported only when each comparison is supported at 95% (an intersection-union test
   needs no correction). It is contradicted when any one comparison is contradicted at the
   Bonferroni level 1 - 0.05/m over its m comparisons. Neither verdict gets easier with more panels.
   A panel lacking runs of a method the claim needs, or where a method it is compared with is degenerate (the signal
   check), is named, the claim at best undecided; a claim against the best of several methods judges it on those that
   work there, others skip it. The check never removes the method a claim is about: where that method is degenerate
   it is judged as it runs, and the claim names the panel (a method is not excused from the panels where it fails).

## The statistics

7. P(X > Y) on a panel: the Mann-Whitney probability of improvement of X's runs over Y's (a tie
   counts one half); over panels, its mean over the discriminating panels, whose DeLong variances
   add (the panels are independent samples). Threshold 0.5. The
   verdicts hold the paper's panels fixed (the claims are about those panels); the report shows
   beside each pooled value its interval with the panels resampled as well (which panels one ran
   is then part of the uncertainty).
8. A non-inferiority margin on normalised scores: ``MARGIN`` = 0.10 (a tenth of the distance
   between a panel's worst and best window of any run). On the probability scale:
   ``POI_MARGIN`` = 0.056, the P(X > Y) of a small effect (Cohen's d = 0.2 between two normal
   samples: Phi(0.2 / sqrt 2) = 0.556). Two scales because two kinds of claim: "competitive" compares
   interquartile means across methods, a difference of locations in the panel's units, for which the
   panel's range is the scale a reader can see on the curves; the others compare whole samples, for
   which d = 0.2 is the textbook small effect. The two do not agree in seed SDs: MARGIN is 0.3-1.2 seed
   SDs on most panels and 27 on Acrobot (whose runs cluster tightly within a wide range), so the
   report gives each panel's MARGIN in seed SDs beside the claim that uses it.
9. **Equivalence where no effect is found.** A claim that X improves on Y (P(X > Y) > 0.5) that is
   not decided by rule 4 is tested symmetrically: when its 95% interval lies inside 0.5 ± POI_MARGIN
   it reads **no effect larger than d = 0.2**: the data rule out more than a small effect either way,
   which is not the same as not knowing.

## Verdicts that say no more than their evidence

10. **Each panel beside a pooled verdict.** A verdict on a statistic pooled over panels (rule 7's mean
   P(X > Y), the Mantel-Haenszel odds ratio) is about the mean, not about each panel. Beside it the
   report lists every panel's own value with its 95% interval, and marks each panel whose own interval
   at the Bonferroni level over the m pooled panels (1 - 0.05/m) lies entirely on a side of the claim's
   threshold that the pooled verdict does not state: below it for a supported claim, above it for a
   contradicted one, either side for an undecided claim or one of no effect (rule 9; where the panel's
   interval lies beyond the parity band as well, that is said too). A pooled verdict with marked
   panels says so in its words: "as a mean over m panels; on their own, k of them differ". The marks
   change no verdict; they keep a mean from reading as a statement about every panel.
11. **Every verdict again on the seeds that had not been read.** Seeds 0-7 had been read when the rule
   book was first written (2026-11-27T15:07Z, campaign/claims/rule_history.py); seeds from
   ``HELD_OUT_FROM`` (8) on had not. Every verdict is also given on those seeds alone, by the same
   rules on their runs only: rule 2's scale refitted on them, rules 3 and 3b judged on them, the signal
   check's degenerate cells as on every seed (that check judges whether a bonus works on a panel, on
   runs of its own). Rules changed after the 32-seed grid was complete were set with every seed read,
   so this column tests the first rule book on seeds it could not have been fitted to, not the later
   changes. It never changes the verdict on every seed; where the two differ, the claim's evidence
   rests on the seeds read first as much as on the others. A claim measured without seeds (the
   execution-time benchmark) has no such column.
12. **A second test where a normal approximation decides.** DeLong's interval (rule 5) and the
   Robins-Breslow-Greenland one are normal approximations. A verdict one of them decides (a
   comparison's P(X > Y), a pooled one, the odds ratio) stands only when a test without that
   approximation reaches it too; otherwise it is undecided, and says which test did not clear:
   - against 0.5 (no difference): the permutation test of the same statistic, X's and Y's runs
     relabelled within each panel, exact (every relabelling counted) where the panels share one
     n_x n_y, else ``PERM_DRAWS`` (100,000) relabellings drawn from a fixed seed. Its one-sided p on
     the verdict's side must lie below the deciding interval's tail: 0.025 at 95%, 0.025/m at rule 6's
     Bonferroni level over m comparisons (by MC_GUARD Monte-Carlo standard errors where drawn);
   - against another threshold (rule 8's non-inferiority) or rule 9's band, which no relabelling can
     produce: the stratified bootstrap of rule 5 (percentile interval, REPS resamples, its ends
     guarded) must give the same verdict;
   - the odds ratio: the exact conditional test of an odds ratio of 1 (each panel's count of X's
     solved runs hypergeometric given its margins), its one-sided p below 0.025.
   The second test never resolves a verdict DeLong leaves undecided (both must clear); the report
   shows it beside the deciding interval either way.

## The claims (the paper's words; Section 5 and Table 1)

- **"PPO+RFIG ... outperforming vanilla PPO"**: P(RFIG > PPO) over the panels > 0.5, on the final
  score, and separately on the area under the curve (the mean return over all windows); rule 9 where
  neither way is decided.
- **... and on solved seeds**, over the panels with a success rule (``SUCCESS_RULES`` in
  campaign/claims/claims.py): one pooled test, the Mantel-Haenszel common odds ratio of solving (RFIG
  against PPO) stratified by panel, > 1. A panel where both solve every seed or none drops out of it;
  0.5 is added to each cell of a panel with an empty cell.
- **"RFIG is competitive with NN-based methods across all environments"**: on each panel,
  D = IQM(RFIG) - max(IQM(RND), IQM(VIME), IQM(#Explo)) on normalised scores, the maximum taken
  inside every resample (choosing the best baseline is part of the interval); competitive there when
  D > -MARGIN. Supported when competitive on every discriminating panel (rule 6).
- **"without catastrophic failures"**: on each panel, a failure is RFIG below half of PPO:
  F = IQM(RFIG) - IQM(PPO) / 2 on normalised scores, a failure when F < 0, safe when F > 0.
  Supported when safe on every discriminating panel (rule 6). This rule replaced, after the 8-seed
  data had been read with it, the rule "RFIG's IQM interval entirely below PPO's, or below every
  baseline's" (campaign/claims/rule_history.py); the report shows the old rule's verdict beside this one,
  and the same rule applied to every other method, so that a reader sees what it can flag.
- **"RFIG competitively matches or exceeds RND's performance"**: P(RFIG > RND) over the panels
  > 0.5 - POI_MARGIN (non-inferiority).
- **"RFIG achieves peak performance in ... sparse-halfcheetah and Breakout"**, **"VIME excels in ...
  sparse-ant and sparse-walker2d"**: on that panel, P(X > Y) > 0.5 against each of the four others
  (rule 6: supported when X beats all four; contradicted when one beats X at 1 - 0.05/4).
- **"no significant execution time differences compared to NN approaches, even with full matrix
  inversion"**: from a controlled benchmark on one machine (paired, interleaved rounds; never from
  the campaign's job wall times, which other work on the machine moves): per env, the wall time of
  RFIG with its full inverse over the median of RND's, VIME's and #Explo's. Equivalent when the
  interval over rounds lies inside ``TIME_BAND`` = [0.8, 1.25] on every env measured; contradicted
  when on some env it lies entirely outside.
- **"Since we normalize exploration bonuses ..., this coefficient [beta] does not affect the relative
  comparison"**: on the sensitivity panels, for each pair of bonuses, P(A > B) at every beta swept
  (rule 4 at 0.5) and its change from the default beta, P_beta(A > B) - P_default(A > B) (DeLong's
  variances of the two added: different runs). An equivalence test: supported when every change's 95%
  interval lies inside ± POI_MARGIN (beta moves no comparison by more than a small effect; rule 6's
  intersection-union over the pairs x betas); contradicted when a pair is resolved one way at one beta
  and the other way at another, or when a change's Bonferroni interval lies entirely outside the band;
  else undecided. Rule 12: each change a DeLong interval decided is checked by the stratified
  bootstrap of the same change. (Until 2026-12-04 it was supported as soon as no resolved pair
  reversed: the absence of a reversal, which few seeds give for free.)
- **Table 1's sensitivity (RFIG low, RND medium, VIME and #Explo high)**: per method, the mean over
  its knobs and the discriminating sensitivity panels of the range of normalised IQM across a knob's
  values. Supported when RFIG's range is below each other method's (rule 6 over the three differences);
  contradicted when one method's is below RFIG's.

Nothing here imports JAX; every function is a pure function of arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

# The rule book's constants (campaign/claims/constants.py): the verdicts and the claims read them here.
from .constants import (  # noqa: F401
    HELD_OUT_FROM,
    LEVEL,
    MARGIN,
    MC_BATCHES,
    MC_GUARD,
    NEAR_BAND,
    NO_EFFECT,
    PERM_DRAWS,
    POI_MARGIN,
    POWER,
    REPS,
    RULE_CONSTANTS,
    SATURATION_SHARE,
    TIME_BAND,
    Z95,
)

# The statistics the verdicts judge (campaign/claims/resampling.py): the claims read them here.
from .resampling import (  # noqa: F401
    Dist,
    PoiDist,
    _z,
    iqm_rows,
    poi_change,
    poi_change_boot,
    poi_delong,
    poi_over_panels,
    poi_panels_resampled,
    poi_rows,
    resample,
    stratified,
)

SUPPORTED, CONTRADICTED, UNDECIDED = "supported", "contradicted", "undecided"
NO_DISCRIMINATION, NOT_MEASURED = "does not discriminate", "not measured here"

SUPPORTED_EQUIVALENT = "no effect"  # rule 9: an effect claim whose interval lies inside the parity band


@dataclass(frozen=True)
class Deciding:
    """The interval that decides a verdict: its ``level`` (0.95, or rule 6's Bonferroni level over
    ``comparisons``), its ends, threshold and ends' Monte-Carlo errors, which comparison (``label``)."""

    level: float
    lo: float
    hi: float
    threshold: float
    comparisons: int = 1
    se: tuple[float, float] = (0.0, 0.0)
    label: str = ""
    band: tuple[float, float] | None = None  # rule 9's parity band

    @property
    def text(self) -> str:
        where = f"{self.label}: " if self.label else ""
        name = "95%" if self.comparisons == 1 else f"Bonferroni {self.level:.2%} ({self.comparisons} comparisons)"
        mc = f" ± {max(self.se):.3f} (MC)" if max(self.se) > 0 else ""
        against = f"against {self.threshold:g}"
        if self.band is not None:
            b = f"[{self.band[0]:.3f}, {self.band[1]:.3f}]"
            inside = self.band[0] < self.lo and self.hi < self.band[1]
            outside = self.lo > self.band[1] or self.hi < self.band[0]
            against = f"inside {b}" if inside else f"outside {b}" if outside else f"across the edge of {b}"
        return f"{where}{name} [{self.lo:.3f}, {self.hi:.3f}]{mc} {against}"


@dataclass(frozen=True)
class Verdict:
    """One of the four verdicts (or not measured), with its words: ``kind`` is SUPPORTED,
    CONTRADICTED, UNDECIDED, NO_DISCRIMINATION or NOT_MEASURED; ``toward`` the side the point
    estimate is on (+1: the claim's, -1: the other, 0: none); ``resolve_at``: rule 4's seeds;
    ``n_max``: the most seeds behind it where its samples differ in size (None: all have ``n``)."""

    kind: str
    n: int | None = None
    toward: int = 0
    resolve_at: float | None = None
    why: str = ""  # an undecided verdict's reason, where it is not one estimate's distance from a threshold
    n_max: int | None = None
    deciding: Deciding | None = None  # the interval that decided it (or, undecided, the one nearest to deciding)
    second: str = ""  # rule 12: the test without a normal approximation beside the deciding interval, in words

    @property
    def mixed(self) -> bool:
        """Whether the samples behind the verdict differ in size (rule 4's "n = k to m")."""
        return self.n is not None and self.n_max is not None and self.n_max != self.n

    @property
    def text(self) -> str:
        if self.kind == SUPPORTED_EQUIVALENT:
            return f"no effect larger than d = 0.2 (interval inside 0.5 ± {POI_MARGIN})"
        if self.kind != UNDECIDED:
            return self.kind
        seeds = f"n = {self.n} to {self.n_max}" if self.mixed else f"n = {self.n}"
        if self.why:
            return f"undecided at {seeds} ({self.why})"
        side = {1: "estimate on the claim's side", -1: "estimate against the claim", 0: "no effect measured"}[
            self.toward]
        more = " or more" if self.mixed else ""
        at = (f"; an effect of this size would have {POWER:.0%} power at about {_round_seeds(self.resolve_at)} "
              f"seeds{more}") if self.resolve_at else ""
        return f"undecided at {seeds} ({side}{at})"


def _round_seeds(n: float | None) -> str:
    if n is None or not math.isfinite(n):
        return "?"
    if n < 100:
        return str(int(math.ceil(n)))
    return f"{float(f'{n:.2g}'):,.0f}"


def seeds_to_resolve(point: float, lo: float, hi: float, threshold: float, n: int, scale: float = 1.0,
                     level: float = LEVEL):
    """Rule 4: the seeds per method at which an effect of this size has :data:`POWER` (80%) power to
    clear the threshold with the ``level`` interval: with the interval's half-width h towards the
    threshold and e the estimate's distance from it, the standard error is h / z and shrinks like
    1/sqrt(n), so n ((z + z_power) (h / z) / e)^2. None when there is no effect (|e| < NO_EFFECT x scale)."""
    e = point - threshold
    if abs(e) < NO_EFFECT * scale:
        return None
    h = point - lo if e > 0 else hi - point
    if h <= 0:
        return float(n)
    z = _z(level)
    return n * ((z + _z(2 * POWER - 1)) * (h / z) / abs(e)) ** 2


def judge(point: float, lo: float, hi: float, threshold: float, n: int, against: tuple[float, float] | None = None,
          claim_above: bool = True, scale: float = 1.0, n_max: int | None = None) -> Verdict:
    """Rule 4 for the claim "statistic > threshold" (``claim_above``; else "< threshold"): supported
    when the 95% interval [lo, hi] clears the threshold on the claim's side; contradicted when the
    ``against`` interval (rule 6's Bonferroni one; default the same) lies entirely on the other side.
    ``n``: the fewest seeds behind the statistic, ``n_max`` the most (rule 4's "n = k to m")."""
    a_lo, a_hi = against if against is not None else (lo, hi)
    if not claim_above:  # mirror: the claim "< t" is "-statistic > -t"
        point, lo, hi, a_lo, a_hi, threshold = -point, -hi, -lo, -a_hi, -a_lo, -threshold
    if lo > threshold:
        return Verdict(SUPPORTED, n, n_max=n_max)
    if a_hi < threshold:
        return Verdict(CONTRADICTED, n, n_max=n_max)
    toward = 0 if abs(point - threshold) < NO_EFFECT * scale else (1 if point > threshold else -1)
    return Verdict(UNDECIDED, n, toward, seeds_to_resolve(point, lo, hi, threshold, n, scale), n_max=n_max)


def judge_dist(d: Dist | PoiDist, threshold: float, comparisons: int = 1, claim_above: bool = True,
               label: str = "") -> Verdict:
    """:func:`judge` on a bootstrap distribution, the "against" side at 1 - 0.05/comparisons; an
    interval end within :data:`MC_GUARD` Monte-Carlo standard errors of the threshold touches it
    (rule 5), so that another bootstrap seed cannot turn the verdict. The verdict carries the
    interval that decided it."""
    lo, hi = d.interval(LEVEL)
    a_level = 1 - (1 - LEVEL) / comparisons
    a_lo, a_hi = d.interval(a_level)
    se, a_se = d.mc_error(LEVEL), d.mc_error(a_level)

    def guarded(end: float, err: float) -> float:  # an end too close to call sits on the threshold
        return threshold if abs(end - threshold) < MC_GUARD * err else end

    v = judge(d.point, guarded(lo, se[0]), guarded(hi, se[1]), threshold, d.n,
              (guarded(a_lo, a_se[0]), guarded(a_hi, a_se[1])), claim_above, d.scale, d.n_max)
    against_side = v.kind == CONTRADICTED or (v.kind == UNDECIDED and v.toward == -1)
    if v.kind == UNDECIDED and v.resolve_at is not None:
        # its seeds from the unguarded interval at the level that would decide it: against the claim, a
        # comparison of several contradicts only at the Bonferroni level
        if against_side and comparisons > 1:
            v = replace(v, resolve_at=seeds_to_resolve(d.point, a_lo, a_hi, threshold, d.n, d.scale, a_level))
        else:
            v = replace(v, resolve_at=seeds_to_resolve(d.point, lo, hi, threshold, d.n, d.scale))
    deciding = (Deciding(a_level, a_lo, a_hi, threshold, comparisons, a_se, label) if against_side and comparisons > 1
                else Deciding(LEVEL, lo, hi, threshold, 1, se, label))
    return replace(v, deciding=deciding)


def judge_all(verdicts: Sequence[Verdict]) -> Verdict:
    """Rule 6 for a claim that must hold on every panel (each verdict judged with its Bonferroni
    "against" interval): contradicted when any is; supported when all are; else undecided (rule 4).
    The result carries the deciding comparison's interval, its second test (rule 12) and, where that
    test held it back, its reason."""
    verdicts = [v for v in verdicts if v.kind != NO_DISCRIMINATION]
    if not verdicts:
        return Verdict(NO_DISCRIMINATION)
    n, n_max = _seed_range(verdicts)

    def by(chosen: Sequence[Verdict], kind: str, toward: int = 0, resolve: float | None = None) -> Verdict:
        d = _deciding(chosen)
        return Verdict(kind, n, toward, resolve, d.why if kind == UNDECIDED else "", n_max, d.deciding, d.second)

    if any(v.kind == CONTRADICTED for v in verdicts):
        return by([v for v in verdicts if v.kind == CONTRADICTED], CONTRADICTED)
    open_ = [v for v in verdicts if v.kind != SUPPORTED]
    if not open_:
        return by(verdicts, SUPPORTED)
    toward = -1 if any(v.toward == -1 for v in open_) else (1 if all(v.toward == 1 for v in open_) else 0)
    if toward == -1:  # one comparison decides against the claim: the one nearest to it
        against = [v for v in open_ if v.toward == -1]
        resolve = [v.resolve_at for v in against if v.resolve_at is not None]
        return by(against, UNDECIDED, -1, min(resolve) if resolve else None)
    resolve_all = [v.resolve_at for v in open_]  # every open one must be resolved for the claim
    return by(open_, UNDECIDED, toward, None if any(r is None for r in resolve_all) else max(resolve_all))


def _deciding(verdicts: Sequence[Verdict]) -> Verdict:
    """The comparison that decides a claim of several: one that its second test held back (rule 12:
    its interval had cleared the threshold), else the one whose interval end is nearest its threshold."""
    held = [v for v in verdicts if v.why and v.deciding is not None]
    shown = held or [v for v in verdicts if v.deciding is not None]
    if not shown:
        return verdicts[0]
    def distance(d: Deciding) -> float:  # to its threshold, or to the near edges of its band
        if d.band is not None:
            return min(abs(d.lo - d.band[0]), abs(d.hi - d.band[1]))
        return min(abs(d.lo - d.threshold), abs(d.hi - d.threshold))

    return min(shown, key=lambda v: distance(v.deciding))


def judge_effect(d: Dist | PoiDist, comparisons: int = 1, label: str = "") -> Verdict:
    """Rule 9: P(X > Y) > 0.5 (rule 4); undecided, and its 95% interval inside 0.5 ± POI_MARGIN: no
    difference larger than a small effect (d = 0.2)."""
    v = judge_dist(d, 0.5, comparisons, label=label)
    if v.kind == UNDECIDED:
        lo, hi = d.interval(LEVEL)
        se = d.mc_error(LEVEL)
        if 0.5 - POI_MARGIN + MC_GUARD * se[0] < lo and hi < 0.5 + POI_MARGIN - MC_GUARD * se[1]:
            return replace(v, kind=SUPPORTED_EQUIVALENT, resolve_at=None,
                           deciding=Deciding(LEVEL, lo, hi, 0.5, 1, se, label, (0.5 - POI_MARGIN, 0.5 + POI_MARGIN)))
    return v


def _seed_range(verdicts: Sequence[Verdict]) -> tuple[int | None, int | None]:
    """The fewest and the most seeds behind some verdicts (None, None when none says)."""
    lows = [v.n for v in verdicts if v.n is not None]
    highs = [v.n_max if v.n_max is not None else v.n for v in verdicts if v.n is not None]
    return (min(lows), max(highs)) if lows else (None, None)


def judge_within(d: Dist | PoiDist, band: tuple[float, float], comparisons: int = 1,
                 label: str = "", guarded: bool = False) -> Verdict:
    """Equivalence: supported when the 95% interval lies inside ``band``; contradicted when the
    (Bonferroni) interval lies entirely above or entirely below it. ``guarded``: rule 5's guard, an
    interval end within :data:`MC_GUARD` Monte-Carlo errors of an edge touches it. The verdict carries
    the interval that decided it (the Bonferroni one where it contradicts), named ``label``."""
    lo, hi = d.interval(LEVEL)
    a_level = 1 - (1 - LEVEL) / comparisons
    a_lo, a_hi = d.interval(a_level)
    se, a_se = (d.mc_error(LEVEL), d.mc_error(a_level)) if guarded else ((0.0, 0.0), (0.0, 0.0))
    inside = Deciding(LEVEL, lo, hi, 0.0, 1, se, label, band)
    if band[0] + MC_GUARD * se[0] < lo and hi < band[1] - MC_GUARD * se[1]:
        return Verdict(SUPPORTED, d.n, n_max=d.n_max, deciding=inside)
    if a_lo > band[1] + MC_GUARD * a_se[0] or a_hi < band[0] - MC_GUARD * a_se[1]:
        return Verdict(CONTRADICTED, d.n, n_max=d.n_max,
                       deciding=Deciding(a_level, a_lo, a_hi, 0.0, comparisons, a_se, label, band))
    # rule 4's seeds: the interval must clear the band's nearest edge, from whichever side the estimate is
    # on: at 95% to lie inside, at the Bonferroni level to lie outside
    edge = band[0] if abs(d.point - band[0]) < abs(d.point - band[1]) else band[1]
    within = band[0] <= d.point <= band[1]
    resolve = (seeds_to_resolve(d.point, lo, hi, edge, d.n, d.scale) if within
               else seeds_to_resolve(d.point, a_lo, a_hi, edge, d.n, d.scale, a_level))
    return Verdict(UNDECIDED, d.n, 1 if within else -1, resolve, n_max=d.n_max, deciding=inside)


# --------------------------------------------------------------------------- panels


def near_saturated(scores: Mapping[str, np.ndarray], span: float, share: float = SATURATION_SHARE,
                   band: float = NEAR_BAND) -> bool:
    """Rule 3b: at least ``share`` of every method's runs within ``band`` x ``span`` (the panel's
    range of final scores over every run of every method) of their pooled median: a near tie."""
    arrays = [np.asarray(v, float) for v in scores.values() if len(v)]
    if not arrays or span <= 0:
        return False
    centre = float(np.median(np.concatenate(arrays)))
    return all(np.mean(np.abs(a - centre) <= band * span) >= share for a in arrays)


def saturated(scores: Mapping[str, np.ndarray], share: float = SATURATION_SHARE) -> bool:
    """Rule 3: at least ``share`` of every method's runs at one common final score."""
    arrays = [np.asarray(v, float) for v in scores.values() if len(v)]
    if not arrays:
        return False
    values, counts = np.unique(np.concatenate(arrays), return_counts=True)
    common = values[np.argmax(counts)]
    return all(np.mean(np.isclose(a, common, rtol=1e-9, atol=1e-12)) >= share for a in arrays)

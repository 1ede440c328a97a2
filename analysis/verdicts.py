"""The rules that turn measurements into verdicts, fixed before the data is read.

This docstring is the rule book: the reproduction report quotes it (``rules.md`` beside its
``index.md``), the numbers below are the module's constants, and ``tests/test_verdicts.py`` holds
every rule to synthetic scores whose answer is known, with a case that fails if the rule is loosened.

## Scope

1. The paper's claims are judged on the paper's own panels only: the 12 envs of its figure
   (``conf/sweep/paper.yaml``). Every other result (DeepSea at any size, the sensitivity runs, another
   Brax backend) is reported in a section of its own, with its own aggregates, and never enters the
   verdict of a claim of the paper.
2. A run's score is its final score: the mean return of the episodes that ended in its last
   evaluation window. Where a rule needs scores on a common scale they are min-max normalised per
   panel as the report's aggregates are: 0 = the worst window and 1 = the best window of any run of
   the five methods on that panel (the sensitivity claims: over the final scores of the sensitivity
   runs on that panel).

## Panels that cannot tell methods apart

3. A panel **does not discriminate** when at least ``SATURATION_SHARE`` (90%) of the runs of every
   method share one final score, the same value for all methods (every run at success 1.0, say: a
   bound of the measure). It is listed as such and left out of every per-panel count, every
   aggregate behind a claim, and every sensitivity range. A panel whose runs vary is never left
   out, however close the methods are: that is what the intervals are for.

## The four verdicts

4. Every verdict compares an interval with the claim's threshold:
   - **supported**: the 95% interval lies entirely on the claim's side of the threshold;
   - **contradicted**: the interval lies entirely on the other side;
   - **undecided at n = k** (k seeds per method): otherwise. The report gives the direction of the
     point estimate and the number of seeds at which an effect of the measured size would be
     resolved, k (h / e)^2, with e the estimate's distance from the threshold and h the
     half-width of the interval towards it (intervals shrink like 1/sqrt(n)); "no effect" when
     e is below ``NO_EFFECT`` of the statistic's range. Where the runs behind a statistic have
     different numbers of seeds (a grid still filling), it reads **n = k to m**, the fewest and the
     most, and the seeds to resolve, counted from the fewest, are a lower bound ("or more");
   - **does not discriminate**: every panel the claim needs is saturated (rule 3).
5. Intervals are 95% percentile intervals of a bootstrap over runs, stratified by panel and method
   (runs resampled with replacement within each), ``REPS`` resamples from a fixed seed; a
   Mantel-Haenszel odds ratio uses its Robins-Breslow-Greenland interval instead.
6. Several comparisons in one claim. A claim that must hold on every panel (or against every other
   method) is supported only when each comparison is supported at 95% (an intersection-union test
   needs no correction). It is contradicted when any one comparison is contradicted at the
   Bonferroni level 1 - 0.05/m over its m comparisons. Neither verdict gets easier with more panels.

## The statistics

7. P(X > Y) on a panel: the Mann-Whitney probability of improvement of X's runs over Y's (a tie
   counts one half); over panels, its mean over the discriminating panels. Threshold 0.5.
8. A non-inferiority margin on normalised scores: ``MARGIN`` = 0.10 (a tenth of the distance
   between a panel's worst and best run). On the probability scale: ``POI_MARGIN`` = 0.056, the
   P(X > Y) of a small effect (Cohen's d = 0.2 between two normal samples: Phi(0.2 / sqrt 2) = 0.556).

## The claims (the paper's words; Section 5 and Table 1)

- **"PPO+RFIG ... outperforming vanilla PPO"**: P(RFIG > PPO) over the panels > 0.5, on the final
  score, and separately on the area under the curve (the mean return over all windows).
- **... and on solved seeds**, over the panels with a success rule (``SUCCESS_RULES`` in
  analysis/claims.py): one pooled test, the Mantel-Haenszel common odds ratio of solving (RFIG
  against PPO) stratified by panel, > 1. A panel where both solve every seed or none drops out of it;
  0.5 is added to each cell of a panel with an empty cell.
- **"RFIG is competitive with NN-based methods across all environments"**: on each panel,
  D = IQM(RFIG) - max(IQM(RND), IQM(VIME), IQM(#Explo)) on normalised scores, the maximum taken
  inside every resample (choosing the best baseline is part of the interval); competitive there when
  D > -MARGIN. Supported when competitive on every discriminating panel (rule 6).
- **"without catastrophic failures"**: on each panel, a failure is RFIG below half of PPO:
  F = IQM(RFIG) - IQM(PPO) / 2 on normalised scores, a failure when F < 0, safe when F > 0.
  Supported when safe on every discriminating panel (rule 6).
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
  comparison"**: on the sensitivity panels at every beta swept, the direction of P(A > B) for each pair
  of bonuses (rule 4 at 0.5). Contradicted when a pair is resolved one way at one beta and the other
  way at another (rule 6 over the pairs); supported when every pair resolved at some beta is resolved
  the same way at every beta, and at least one pair is resolved; else undecided.
- **Table 1's sensitivity (RFIG low, RND medium, VIME and #Explo high)**: per method, the mean over
  its knobs and the discriminating sensitivity panels of the range of normalised IQM across a knob's
  values. Supported when RFIG's range is below each other method's (rule 6 over the three differences);
  contradicted when one method's is below RFIG's.

Nothing here imports JAX; every function is a pure function of arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

SUPPORTED, CONTRADICTED, UNDECIDED = "supported", "contradicted", "undecided"
NO_DISCRIMINATION, NOT_MEASURED = "does not discriminate", "not measured here"

LEVEL = 0.95            # every interval that supports a claim
SATURATION_SHARE = 0.9  # rule 3
MARGIN = 0.10           # rule 8, normalised scores
POI_MARGIN = 0.056      # rule 8, probability of improvement
TIME_BAND = (0.8, 1.25)  # the execution-time claim's equivalence band
NO_EFFECT = 0.01        # rule 4: below this share of the statistic's range an estimate is "no effect"
REPS = 2000             # rule 5
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Dist:
    """A statistic's point estimate and its bootstrap distribution; ``n``: seeds per method (the
    smallest sample behind it), ``scale``: the width of the statistic's range (1 for probabilities
    and normalised scores), for rule 4's "no effect"; ``n_max``: the largest sample behind it (None:
    every sample has ``n``)."""

    point: float
    samples: np.ndarray
    n: int
    scale: float = 1.0
    n_max: int | None = None

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        tail = (1.0 - level) / 2 * 100
        lo, hi = np.percentile(self.samples, [tail, 100 - tail])
        return float(lo), float(hi)


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

    @property
    def mixed(self) -> bool:
        """Whether the samples behind the verdict differ in size (rule 4's "n = k to m")."""
        return self.n is not None and self.n_max is not None and self.n_max != self.n

    @property
    def text(self) -> str:
        if self.kind != UNDECIDED:
            return self.kind
        seeds = f"n = {self.n} to {self.n_max}" if self.mixed else f"n = {self.n}"
        if self.why:
            return f"undecided at {seeds} ({self.why})"
        side = {1: "estimate on the claim's side", -1: "estimate against the claim", 0: "no effect measured"}[
            self.toward]
        more = " or more" if self.mixed else ""
        at = f"; an effect of this size is resolved at about {_round_seeds(self.resolve_at)} seeds{more}" \
            if self.resolve_at else ""
        return f"undecided at {seeds} ({side}{at})"


def _round_seeds(n: float | None) -> str:
    if n is None or not math.isfinite(n):
        return "?"
    if n < 100:
        return str(int(math.ceil(n)))
    return f"{float(f'{n:.2g}'):,.0f}"


def seeds_to_resolve(point: float, lo: float, hi: float, threshold: float, n: int, scale: float = 1.0):
    """Rule 4: the seeds per method at which the interval of an effect of this size would clear the
    threshold, n (h / e)^2; None when there is no effect (|e| < NO_EFFECT x scale)."""
    e = point - threshold
    if abs(e) < NO_EFFECT * scale:
        return None
    h = point - lo if e > 0 else hi - point
    return n * (h / abs(e)) ** 2 if h > 0 else float(n)


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


def judge_dist(d: Dist, threshold: float, comparisons: int = 1, claim_above: bool = True) -> Verdict:
    """:func:`judge` on a bootstrap distribution, the "against" side at 1 - 0.05/comparisons."""
    lo, hi = d.interval(LEVEL)
    against = d.interval(1 - (1 - LEVEL) / comparisons)
    return judge(d.point, lo, hi, threshold, d.n, against, claim_above, d.scale, d.n_max)


def judge_all(verdicts: Sequence[Verdict]) -> Verdict:
    """Rule 6 for a claim that must hold on every panel (each verdict judged with its Bonferroni
    "against" interval): contradicted when any is; supported when all are; otherwise undecided,
    resolved when the slowest undecided one is."""
    verdicts = [v for v in verdicts if v.kind != NO_DISCRIMINATION]
    if not verdicts:
        return Verdict(NO_DISCRIMINATION)
    n, n_max = _seed_range(verdicts)
    if any(v.kind == CONTRADICTED for v in verdicts):
        return Verdict(CONTRADICTED, n, n_max=n_max)
    open_ = [v for v in verdicts if v.kind != SUPPORTED]
    if not open_:
        return Verdict(SUPPORTED, n, n_max=n_max)
    toward = -1 if any(v.toward == -1 for v in open_) else (1 if all(v.toward == 1 for v in open_) else 0)
    resolve = [v.resolve_at for v in open_]
    return Verdict(UNDECIDED, n, toward, None if any(r is None for r in resolve) else max(resolve), n_max=n_max)


def _seed_range(verdicts: Sequence[Verdict]) -> tuple[int | None, int | None]:
    """The fewest and the most seeds behind some verdicts (None, None when none says)."""
    lows = [v.n for v in verdicts if v.n is not None]
    highs = [v.n_max if v.n_max is not None else v.n for v in verdicts if v.n is not None]
    return (min(lows), max(highs)) if lows else (None, None)


def judge_within(d: Dist, band: tuple[float, float], comparisons: int = 1) -> Verdict:
    """Equivalence: supported when the 95% interval lies inside ``band``; contradicted when the
    (Bonferroni) interval lies entirely above or entirely below it."""
    lo, hi = d.interval(LEVEL)
    a_lo, a_hi = d.interval(1 - (1 - LEVEL) / comparisons)
    if band[0] < lo and hi < band[1]:
        return Verdict(SUPPORTED, d.n, n_max=d.n_max)
    if a_lo > band[1] or a_hi < band[0]:
        return Verdict(CONTRADICTED, d.n, n_max=d.n_max)
    # rule 4's seeds: the interval must clear the band's nearest edge, from whichever side the estimate is on
    edge = band[0] if abs(d.point - band[0]) < abs(d.point - band[1]) else band[1]
    e, h = abs(d.point - edge), (hi - d.point if edge > d.point else d.point - lo)
    resolve = d.n * (h / e) ** 2 if e > 0 and h > 0 else None
    return Verdict(UNDECIDED, d.n, 1 if band[0] <= d.point <= band[1] else -1, resolve, n_max=d.n_max)


# --------------------------------------------------------------------------- panels


def saturated(scores: Mapping[str, np.ndarray], share: float = SATURATION_SHARE) -> bool:
    """Rule 3: at least ``share`` of every method's runs at one common final score."""
    arrays = [np.asarray(v, float) for v in scores.values() if len(v)]
    if not arrays:
        return False
    values, counts = np.unique(np.concatenate(arrays), return_counts=True)
    common = values[np.argmax(counts)]
    return all(np.mean(np.isclose(a, common, rtol=1e-9, atol=1e-12)) >= share for a in arrays)


# --------------------------------------------------------------------------- bootstrap statistics


def resample(x: np.ndarray, reps: int, rng: np.random.Generator) -> np.ndarray:
    """``reps`` bootstrap resamples of the runs in ``x``: (reps, len(x))."""
    x = np.asarray(x, float)
    return x[rng.integers(0, len(x), size=(reps, len(x)))]


def iqm_rows(x: np.ndarray) -> np.ndarray:
    """The interquartile mean of each row of (reps, n): scipy.stats.trim_mean(row, 0.25)."""
    n = x.shape[-1]
    k = int(0.25 * n)
    return np.sort(x, axis=-1)[..., k:n - k].mean(axis=-1)


def poi_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) + P(X = Y) / 2 over all run pairs, per row of (reps, nx) and (reps, ny)."""
    gt = (x[..., :, None] > y[..., None, :]).mean(axis=(-1, -2))
    eq = (x[..., :, None] == y[..., None, :]).mean(axis=(-1, -2))
    return gt + 0.5 * eq


def stratified(samples: Mapping[tuple, np.ndarray], statistic: Callable[[Mapping[tuple, np.ndarray]], np.ndarray],
               reps: int = REPS, seed: int = 0, scale: float = 1.0) -> Dist:
    """Rule 5: the statistic on the runs as they are, and on ``reps`` resamples drawn within each
    stratum (a key: a panel and a method). ``statistic`` maps {key: (R, n_key)} to (R,)."""
    rng = np.random.default_rng(seed)
    keys = sorted(samples)
    point = statistic({k: np.asarray(samples[k], float)[None, :] for k in keys})
    boot = statistic({k: resample(samples[k], reps, rng) for k in keys})
    sizes = [len(samples[k]) for k in keys]
    return Dist(float(np.asarray(point).reshape(-1)[0]), np.asarray(boot, float), min(sizes), scale, max(sizes))


def poi_over_panels(x: Mapping[str, np.ndarray], y: Mapping[str, np.ndarray], reps: int = REPS,
                    seed: int = 0) -> Dist:
    """Rule 7: P(X > Y) averaged over the panels both have."""
    panels = sorted(set(x) & set(y))
    samples = {**{(p, "x"): x[p] for p in panels}, **{(p, "y"): y[p] for p in panels}}
    return stratified(samples, lambda s: np.mean([poi_rows(s[(p, "x")], s[(p, "y")]) for p in panels], axis=0),
                      reps, seed)


# --------------------------------------------------------------------------- pooled success


@dataclass(frozen=True)
class OddsRatio:
    """Mantel-Haenszel common odds ratio with its Robins-Breslow-Greenland interval; ``strata``: the
    informative panels (the others: both methods solve every seed or none); ``n`` and ``n_max``: the
    fewest and the most seeds of one method on one of them."""

    point: float
    lo: float
    hi: float
    strata: int
    n: int
    n_max: int | None = None

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        if self.strata == 0:
            return (float("nan"), float("nan"))
        z = _z(level)
        se = (math.log(self.hi) - math.log(self.lo)) / (2 * Z95)
        return (math.exp(math.log(self.point) - z * se), math.exp(math.log(self.point) + z * se))


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + level / 2))


def mantel_haenszel(tables: Sequence[tuple[int, int, int, int]]) -> OddsRatio:
    """Pooled odds ratio over 2x2 tables (a, b, c, d) = (X solved, X not, Y solved, Y not), one per
    panel. A table with no variation in success (a + c = 0 or b + d = 0) carries no information and is
    dropped; 0.5 is added to every cell of a kept table with an empty cell."""
    kept = []
    sizes = [size for a, b, c, d in tables if a + c and b + d for size in (a + b, c + d)]
    n, n_max = min(sizes, default=0), max(sizes, default=0)
    for a, b, c, d in tables:
        if a + c == 0 or b + d == 0:
            continue
        if 0 in (a, b, c, d):
            a, b, c, d = a + 0.5, b + 0.5, c + 0.5, d + 0.5
        kept.append((float(a), float(b), float(c), float(d)))
    if not kept:
        return OddsRatio(float("nan"), float("nan"), float("nan"), 0, n, n_max)
    r = np.array([a * d / (a + b + c + d) for a, b, c, d in kept])
    s = np.array([b * c / (a + b + c + d) for a, b, c, d in kept])
    p = np.array([(a + d) / (a + b + c + d) for a, b, c, d in kept])
    q = 1.0 - p
    sr, ss = r.sum(), s.sum()
    ratio = sr / ss
    var = (p * r).sum() / (2 * sr ** 2) + (p * s + q * r).sum() / (2 * sr * ss) + (q * s).sum() / (2 * ss ** 2)
    half = Z95 * math.sqrt(var)
    return OddsRatio(float(ratio), math.exp(math.log(ratio) - half), math.exp(math.log(ratio) + half), len(kept), n,
                     n_max)


def judge_odds_ratio(odds: OddsRatio) -> Verdict:
    """Rule 4 on the log odds ratio, threshold 0 (an odds ratio of 1)."""
    if odds.strata == 0:
        return Verdict(NO_DISCRIMINATION)
    lo, hi = odds.interval(LEVEL)
    return judge(math.log(odds.point), math.log(lo), math.log(hi), 0.0, odds.n, scale=1.0, n_max=odds.n_max)


# --------------------------------------------------------------------------- the beta claim


def ranking_verdict(directions: Mapping[tuple[str, str], Sequence[Verdict]]) -> Verdict:
    """The beta claim: ``directions[(A, B)]`` holds, per value of beta, rule 4's verdict on
    P(A > B) > 0.5 (judged with the Bonferroni "against" interval over the pairs x values). A pair
    resolved both ways contradicts; every resolved pair resolved alike at every value supports."""
    n, n_max = _seed_range([v for vs in directions.values() for v in vs])
    kinds = [{v.kind for v in vs} for vs in directions.values()]
    if any({SUPPORTED, CONTRADICTED} <= k for k in kinds):
        return Verdict(CONTRADICTED, n, n_max=n_max)
    resolved = [k for k in kinds if k & {SUPPORTED, CONTRADICTED}]
    if resolved and all(len(k) == 1 for k in resolved):
        return Verdict(SUPPORTED, n, n_max=n_max)
    partly = sum(1 for k in resolved if len(k) > 1)
    return Verdict(UNDECIDED, n, 0, None, f"no pair reversed; {partly} of {len(kinds)} pairs resolved at some beta "
                   "but not at every one" if resolved else f"none of {len(kinds)} pairs resolved at any beta",
                   n_max=n_max)

"""The rule book's pooled and ranking statistics (campaign/claims/verdicts.py's rules for solved seeds and
for the beta claim): the Mantel-Haenszel common odds ratio with its Robins-Breslow-Greenland
interval, and the verdict on whether an ordering of bonuses holds across values of beta. Pure
functions; no JAX."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .verdicts import CONTRADICTED, LEVEL, NO_DISCRIMINATION, SUPPORTED, UNDECIDED, Z95, Verdict, _seed_range, _z, judge


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

"""Tests that need no normal approximation, for beside the rule book's DeLong and Robins-Breslow-Greenland
intervals (rule 12 of :mod:`campaign.claims.verdicts`): an exact permutation test of P(X > Y), on one
panel or as a mean over panels with the runs relabelled within each, and the exact conditional test of
a common odds ratio of 1 over 2x2 tables.

A relabelling keeps each panel's runs and their numbers per method and draws which of them are X's;
under "X and Y are exchangeable" every relabelling is equally likely. P(X > Y) with ties counted a
half is (R - n_x (n_x + 1) / 2) / (n_x n_y), R the sum of X's midranks among the pooled runs, so its
distribution over every relabelling is that of the sum of n_x of the pooled midranks drawn without
replacement: counted exactly here, by subset sums over doubled midranks (integers), with no draws.
Panels with equal n_x n_y add their doubled Mann-Whitney U on one integer grid, so their mean's
distribution is the convolution of theirs, exact too; where the panels' sizes differ, the mean is
drawn ``draws`` times from the panels' exact distributions (a fixed seed: the same on every rebuild)
and the p-value carries its Monte-Carlo standard error. Pure numpy and scipy; no JAX.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy.stats import hypergeom, rankdata


@dataclass(frozen=True)
class PermutationTest:
    """The observed statistic and its one-sided p-values over the relabellings: ``p_greater`` the
    share at least as large as observed, ``p_less`` at most as large (the observed relabelling is one
    of them, so neither is 0). ``draws``: 0 when every relabelling was counted (exact), else how many
    were drawn (each p is then (k + 1) / (draws + 1))."""

    statistic: float
    p_greater: float
    p_less: float
    draws: int = 0

    @property
    def exact(self) -> bool:
        return self.draws == 0

    def p(self, side: int) -> float:
        """The one-sided p-value towards ``side`` (+1: X above, -1: X below)."""
        return self.p_greater if side > 0 else self.p_less

    def se(self, side: int) -> float:
        """The Monte-Carlo standard error of :meth:`p` (0 when exact)."""
        p = self.p(side)
        return 0.0 if self.exact else math.sqrt(p * (1 - p) / self.draws)


def u2_distribution(x: np.ndarray, y: np.ndarray) -> tuple[int, np.ndarray]:
    """Twice the Mann-Whitney U of X over Y (ties a half: an integer) as observed, and its distribution
    over every relabelling of the pooled runs: probabilities of 2U = 0, 1, ..., 2 n_x n_y."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    nx, ny = len(x), len(y)
    ranks2 = np.rint(2 * rankdata(np.concatenate([x, y]))).astype(np.int64)  # doubled midranks: integers
    total = int(ranks2.sum())
    ways = np.zeros((nx + 1, total + 1))  # ways[k, s]: subsets of k pooled runs whose doubled ranks sum to s
    ways[0, 0] = 1.0
    for r in ranks2:
        ways[1:, r:] = ways[1:, r:] + ways[:-1, :total + 1 - r]
    sums = ways[nx] / math.comb(nx + ny, nx)
    offset = nx * (nx + 1)  # 2U = doubled rank sum - n_x (n_x + 1)
    dist = sums[offset:offset + 2 * nx * ny + 1]
    return int(ranks2[:nx].sum()) - offset, dist


def permutation_poi(x: Mapping[str, np.ndarray], y: Mapping[str, np.ndarray], draws: int = 100_000,
                    seed: int = 0) -> PermutationTest:
    """The permutation test of the mean over the panels both have of P(X > Y) (ties a half), the runs
    relabelled within each panel: exact where every panel has the same n_x n_y, else ``draws`` means
    drawn from the panels' exact distributions."""
    panels = sorted(set(x) & set(y))
    if not panels:
        raise ValueError("no panel has runs of both methods")
    each = [u2_distribution(x[p], y[p]) for p in panels]
    pairs = [len(x[p]) * len(y[p]) for p in panels]
    observed = float(np.mean([u2 / (2 * n) for (u2, _), n in zip(each, pairs)]))
    if len(set(pairs)) == 1:
        total, obs = np.ones(1), 0
        for u2, dist in each:
            total, obs = np.convolve(total, dist), obs + u2
        return PermutationTest(observed, float(total[obs:].sum()), float(total[:obs + 1].sum()))
    rng = np.random.default_rng(seed)
    mean = np.zeros(draws)
    for (_, dist), n in zip(each, pairs):
        mean += rng.choice(len(dist), size=draws, p=dist / dist.sum()) / (2 * n)
    mean /= len(panels)
    tol = 1e-12
    above, below = int(np.sum(mean >= observed - tol)), int(np.sum(mean <= observed + tol))
    return PermutationTest(observed, (above + 1) / (draws + 1), (below + 1) / (draws + 1), draws)


def exact_odds_ratio(tables: Sequence[tuple[int, int, int, int]]) -> PermutationTest:
    """The exact conditional test of a common odds ratio of 1 over 2x2 tables (a, b, c, d) = (X solved,
    X not, Y solved, Y not): given each table's margins, a is hypergeometric under the null and the
    tables independent, so the sum of the a's has the convolution of their distributions. ``p_greater``:
    X solves more often than the null says (an odds ratio above 1), ``p_less``: less often. A table with
    no variation in success carries no information and changes neither. The statistic is the sum of a."""
    dist, low, observed = np.ones(1), 0, 0
    for a, b, c, d in tables:
        rows, solved = a + b, a + c
        lo, hi = max(0, solved - (c + d)), min(solved, rows)
        dist = np.convolve(dist, hypergeom(rows + c + d, rows, solved).pmf(np.arange(lo, hi + 1)))
        low, observed = low + lo, observed + a
    k = observed - low
    return PermutationTest(float(observed), float(dist[k:].sum()), float(dist[:k + 1].sum()))


__all__ = ["PermutationTest", "exact_odds_ratio", "permutation_poi", "u2_distribution"]

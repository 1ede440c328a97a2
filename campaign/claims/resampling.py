"""The statistics the rule book's verdicts judge (rules 5 and 7 of :mod:`campaign.claims.verdicts`): a
statistic's bootstrap distribution (:class:`Dist`) or its DeLong standard error (:class:`PoiDist`),
resamples of runs stratified by panel and method, the interquartile mean and the probability of
improvement per resample, P(X > Y) with its DeLong variance on a panel and as a mean over panels, and
that mean with the panels resampled too. ``campaign.claims.verdicts`` re-exports every name here, where
the claims read them. Pure numpy; no JAX."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from .constants import LEVEL, MC_BATCHES, REPS


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

    def mc_error(self, level: float = LEVEL) -> tuple[float, float]:
        """Rule 5: the Monte-Carlo standard error of each end of the ``level`` interval, from the
        spread of that percentile over :data:`MC_BATCHES` disjoint batches of the resamples, over
        sqrt(batches); zero with too few resamples to batch (nothing then guards the ends)."""
        batches = np.array_split(np.asarray(self.samples, float).reshape(-1), MC_BATCHES)
        if min(len(b) for b in batches) < 20:
            return 0.0, 0.0
        tail = (1.0 - level) / 2 * 100
        ends = np.array([np.percentile(b, [tail, 100 - tail]) for b in batches])
        se = ends.std(axis=0, ddof=1) / math.sqrt(MC_BATCHES)
        return float(se[0]), float(se[1])


@dataclass(frozen=True)
class PoiDist:
    """P(X > Y) (rule 7) with its DeLong standard error (:func:`poi_delong`; a mean over panels: the
    root of the summed variances over the panels): intervals point +- z se clipped to [0, 1], the same
    on every rebuild (rule 5). :class:`Dist`'s interface where the verdicts read it."""

    point: float
    se: float
    n: int
    scale: float = 1.0
    n_max: int | None = None
    lower: float = 0.0  # the statistic's least value: -1 for a change of P(X > Y) (poi_change)

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        half = _z(level) * self.se
        return max(self.lower, self.point - half), min(1.0, self.point + half)

    def mc_error(self, level: float = LEVEL) -> tuple[float, float]:
        return 0.0, 0.0




def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + level / 2))


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


def poi_delong(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """P(X > Y) + P(X = Y) / 2 over all run pairs and its DeLong variance: with V10_i the share of
    Y's runs that run i of X beats (a tie a half) and V01_j the share of X's runs that beat run j of
    Y, var = var(V10) / n_x + var(V01) / n_y."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    wins = (x[:, None] > y[None, :]) + 0.5 * (x[:, None] == y[None, :])
    var = (wins.mean(axis=1).var(ddof=1) / len(x) if len(x) > 1 else 0.0) + (
        wins.mean(axis=0).var(ddof=1) / len(y) if len(y) > 1 else 0.0)
    return float(wins.mean()), float(var)


def poi_over_panels(x: Mapping[str, np.ndarray], y: Mapping[str, np.ndarray]) -> PoiDist:
    """Rule 7: P(X > Y) averaged over the panels both have (the panels held fixed), with its DeLong
    standard error (panels independent: the variances add)."""
    panels = sorted(set(x) & set(y))
    each = [poi_delong(x[p], y[p]) for p in panels]
    sizes = [len(v[p]) for v in (x, y) for p in panels]
    return PoiDist(float(np.mean([e[0] for e in each])), math.sqrt(sum(e[1] for e in each)) / len(panels),
                   min(sizes), 1.0, max(sizes))


def poi_change(x: Mapping[str, np.ndarray], y: Mapping[str, np.ndarray], x_ref: Mapping[str, np.ndarray],
               y_ref: Mapping[str, np.ndarray]) -> PoiDist:
    """P(X > Y) on the runs ``x``, ``y`` minus P(X > Y) on ``x_ref``, ``y_ref`` (each rule 7's mean
    over the panels all four share), with its DeLong standard error: the root of the two variances
    summed (different runs), the interval clipped to [-1, 1]."""
    panels = sorted(set(x) & set(y) & set(x_ref) & set(y_ref))
    at = poi_over_panels({p: x[p] for p in panels}, {p: y[p] for p in panels})
    ref = poi_over_panels({p: x_ref[p] for p in panels}, {p: y_ref[p] for p in panels})
    return PoiDist(at.point - ref.point, math.hypot(at.se, ref.se), min(at.n, ref.n), 2.0,
                   max(at.n_max or at.n, ref.n_max or ref.n), lower=-1.0)


def poi_change_boot(x: Mapping[str, np.ndarray], y: Mapping[str, np.ndarray], x_ref: Mapping[str, np.ndarray],
                    y_ref: Mapping[str, np.ndarray], reps: int = REPS, seed: int = 0) -> Dist:
    """:func:`poi_change` by rule 5's stratified bootstrap (each panel's runs of each of the four
    resampled within), for rule 12's second test of a verdict its DeLong interval decided."""
    panels = sorted(set(x) & set(y) & set(x_ref) & set(y_ref))
    samples = {(p, side): v[p] for p in panels for side, v in (("x", x), ("y", y), ("xr", x_ref), ("yr", y_ref))}

    def change(s):
        return np.mean([poi_rows(s[(p, "x")], s[(p, "y")]) - poi_rows(s[(p, "xr")], s[(p, "yr")]) for p in panels],
                       axis=0)

    return stratified(samples, change, reps, seed, scale=2.0)


def poi_panels_resampled(x: Mapping[str, np.ndarray], y: Mapping[str, np.ndarray], reps: int = REPS,
                         seed: int = 0) -> Dist:
    """Rule 7's pooled P(X > Y) with the panels resampled too: each resample draws as many panels as
    there are, with replacement, and resamples the runs within each drawn panel; the interval then
    covers which panels one happened to run, not only which seeds (the verdicts hold the paper's
    panels fixed; the report shows this one beside them)."""
    panels = sorted(set(x) & set(y))
    rng = np.random.default_rng(seed)
    per = np.stack([poi_rows(resample(x[p], reps, rng), resample(y[p], reps, rng)) for p in panels])  # (P, R)
    draws = rng.integers(0, len(panels), size=(reps, len(panels)))
    boot = per[draws, np.arange(reps)[:, None]].mean(axis=1)
    point = float(np.mean([poi_rows(np.asarray(x[p], float)[None], np.asarray(y[p], float)[None])[0]
                           for p in panels]))
    sizes = [len(v[p]) for v in (x, y) for p in panels]
    return Dist(point, boot, min(sizes), 1.0, max(sizes))


def quick_verdicts_warning(verdict_reps: int) -> list[str]:
    """The line a report built with fewer resamples than rule 5's carries above its verdicts."""
    if verdict_reps == REPS:
        return []
    return [f"the verdicts below were drawn from {verdict_reps:,} bootstrap resamples, not rule 5's "
            f"{REPS:,}: a quick build, not the rule book's verdicts"]

"""Rule 12 of the rule book (:mod:`campaign.claims.verdicts`): a verdict that a normal approximation
decided (DeLong's interval of P(X > Y), the Robins-Breslow-Greenland interval of an odds ratio) stands
only when a test without it reaches the same verdict; otherwise it becomes undecided and says which
test did not clear. Each function takes the verdict as the approximation gave it and returns it with
the second test's words (``Verdict.second``), changed only where that test disagrees."""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np

from . import verdicts as V
from .exact import PermutationTest, exact_odds_ratio, permutation_poi


def _tail(v: V.Verdict, side: int, comparisons: int) -> tuple[float, str]:
    """The one-sided level a test towards ``side`` must clear to agree with ``v``: the 95% interval's
    tail towards the claim, rule 6's Bonferroni tail against it; and its name."""
    if side > 0 or comparisons == 1:
        return (1 - V.LEVEL) / 2, f"{(1 - V.LEVEL) / 2:g}"
    alpha = (1 - V.LEVEL) / (2 * comparisons)
    return alpha, f"{alpha:.3g} (Bonferroni, {comparisons} comparisons)"


def p_text(p: float) -> str:
    """A p-value to four decimals, or in two significant digits below 0.001."""
    return f"{p:.4f}" if p >= 0.001 else f"{p:.2g}"


def _p_text(test: PermutationTest, side: int, name: str, threshold: float) -> str:
    mc = "" if test.exact else f" ± {p_text(test.se(side))} (MC, {test.draws:,} relabellings drawn)"
    where = "above" if side > 0 else "below"
    return f"{name}: one-sided p = {p_text(test.p(side))}{mc} {where} {threshold:g}"


def _held_back(v: V.Verdict, toward: int, reason: str, second: str) -> V.Verdict:
    """``v``, which its approximation resolved, made undecided because its second test does not agree."""
    words = {1: "estimate on the claim's side", -1: "estimate against the claim"}.get(toward, "no effect measured")
    return replace(v, kind=V.UNDECIDED, toward=toward, resolve_at=None, second=second,
                   why=f"{words}; undecided by rule 12: {reason}")


def confirm_poi(v: V.Verdict, x: Mapping[str, np.ndarray], y: Mapping[str, np.ndarray], threshold: float = 0.5,
                comparisons: int = 1, reps: int = V.REPS, seed: int = 0) -> V.Verdict:
    """Rule 12 for a verdict on P(X > Y) (one panel, or the mean over the panels ``x`` and ``y`` share)
    judged against ``threshold`` with DeLong's interval, ``comparisons`` its rule 6 family: against 0.5
    the permutation test of the same statistic, else (and for rule 9's "no effect") the stratified
    bootstrap's verdict. A verdict the approximation left undecided stays so, its second test shown."""
    if v.kind in (V.NO_DISCRIMINATION, V.NOT_MEASURED):
        return v
    if threshold == 0.5 and v.kind != V.SUPPORTED_EQUIVALENT:
        test = permutation_poi(x, y, V.PERM_DRAWS, seed)
        side = {V.SUPPORTED: 1, V.CONTRADICTED: -1}.get(v.kind, 1 if test.statistic >= 0.5 else -1)
        alpha, level = _tail(v, side, comparisons)
        name = "exact permutation test" if test.exact else "permutation test"
        clears = test.p(side) + V.MC_GUARD * test.se(side) < alpha
        words = _p_text(test, side, name, threshold) + f", against {level}: " + ("clears" if clears else
                                                                                  "does not clear")
        if v.kind in (V.SUPPORTED, V.CONTRADICTED) and not clears:
            return _held_back(v, side, f"DeLong's interval clears {threshold:g}, the {name} does not", words)
        return replace(v, second=words)
    panels = sorted(set(x) & set(y))
    samples = {**{(e, "x"): x[e] for e in panels}, **{(e, "y"): y[e] for e in panels}}
    d = V.stratified(samples, lambda s: np.mean([V.poi_rows(s[(e, "x")], s[(e, "y")]) for e in panels], axis=0),
                     reps, seed)
    w = V.judge_effect(d) if v.kind == V.SUPPORTED_EQUIVALENT else V.judge_dist(d, threshold, comparisons)
    agrees = w.kind == v.kind
    if v.kind == V.SUPPORTED_EQUIVALENT:  # the bootstrap's interval against the band, whatever it decided
        (lo, hi), se = d.interval(), d.mc_error()
        shown = V.Deciding(V.LEVEL, lo, hi, 0.5, 1, se, band=(0.5 - V.POI_MARGIN, 0.5 + V.POI_MARGIN)).text
    else:
        shown = w.deciding.text if w.deciding is not None else ""
    words = f"stratified bootstrap ({reps:,} resamples): {shown}: " + (
        "the same verdict" if agrees else f"{w.kind}, not {v.kind}")
    if v.kind == V.SUPPORTED_EQUIVALENT and not agrees:
        return _held_back(v, v.toward, "DeLong's interval lies inside the parity band, the bootstrap's does not",
                          words)
    if v.kind in (V.SUPPORTED, V.CONTRADICTED) and not agrees:
        return _held_back(v, 1 if v.kind == V.SUPPORTED else -1,
                          f"DeLong's interval clears {threshold:g}, the bootstrap's does not", words)
    return replace(v, second=words)


def confirm_odds(v: V.Verdict, tables: Sequence[tuple[int, int, int, int]]) -> V.Verdict:
    """Rule 12 for the pooled odds ratio of solving (judged against 1 with the Robins-Breslow-Greenland
    interval): the exact conditional test over the same 2x2 tables, one-sided at 0.025."""
    if v.kind in (V.NO_DISCRIMINATION, V.NOT_MEASURED) or not tables:
        return v
    test = exact_odds_ratio(tables)
    side = {V.SUPPORTED: 1, V.CONTRADICTED: -1}.get(v.kind, 1 if test.p_greater <= test.p_less else -1)
    alpha = (1 - V.LEVEL) / 2
    clears = test.p(side) < alpha
    words = (f"exact conditional test of an odds ratio of 1: one-sided p = {p_text(test.p(side))} "
             f"{'above' if side > 0 else 'below'} 1, against {alpha:g}: " + ("clears" if clears else "does not clear"))
    if v.kind in (V.SUPPORTED, V.CONTRADICTED) and not clears:
        return _held_back(v, side, "the Robins-Breslow-Greenland interval clears 1, the exact test does not", words)
    return replace(v, second=words)


__all__ = ["confirm_odds", "confirm_poi", "p_text"]

"""The paper's "peak performance" claims: a method best on one panel, judged against each other method
the paper compares there (rule 6 of :mod:`campaign.claims.verdicts`: supported when it beats all of
them, contradicted when one beats it at the Bonferroni level), each comparison's DeLong verdict checked
by the exact permutation test (rule 12). Split from :mod:`campaign.claims.claims`, which calls
:func:`peak_claims`."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from analysis.bootstrap import stream_seed
from analysis.names import BASELINES, CONTROLS, env_label, method_label, split_task

from . import verdicts as V
from .claim_rows import Claim, fmt
from .confirm import confirm_poi

if TYPE_CHECKING:
    from .claims import Panels

# The paper's "peak" statements: method -> the panel it is said to be best on.
PEAKS = (("rfig", "minatar_breakout", "RFIG achieves peak performance in ... Breakout"),
         ("rfig", "sparse_halfcheetah", "RFIG achieves peak performance in ... sparse-halfcheetah"),
         ("vime", "sparse_ant", "VIME excels in ... sparse-ant"),
         ("vime", "sparse_walker2d", "VIME excels in ... sparse-walker2d"))


def peak_claims(p: Panels, reps: int, seed: int) -> list[Claim]:
    """Each of :data:`PEAKS` on its panel: P(X > Y) against each other method of the paper (not the
    control), a method degenerate by the signal check or without runs there named and not judged."""
    claims = []
    for method, target, words in PEAKS:
        env = next((e for e in p.paper if split_task(e)[0] == target), None)
        if env is None or method not in p.scores.get(env, {}):
            claims.append(Claim.judged(words, "P(X > each other method) on the panel", "—", V.Verdict(V.NOT_MEASURED),
                                       f"no {method_label(method)} runs on {env_label(target)}"))
            continue
        # the methods the paper compares: the control (campaign.claims.control) is not one of them
        others = [m for m in p.scores[env] if m != method and p.coll.bonus_of(m) not in CONTROLS]
        if p.saturated(env, method, *others):
            claims.append(Claim.judged(words, f"on {env_label(env)}", "—", V.Verdict(V.NO_DISCRIMINATION)))
            continue
        verdicts, rows = [], []
        broken = p.broken(env, *others)  # the method the claim is about is judged as it runs (rule 6)
        for m in others:
            if m in broken:
                rows.append(f"P({method_label(method)} > {p.coll.label(m)}) not judged: degenerate by the signal check")
                continue
            x, y = {env: p.runs(env, method)}, {env: p.runs(env, m)}
            d = V.poi_over_panels(x, y)
            label = f"P({method_label(method)} > {p.coll.label(m)})"
            if p.saturated(env, method, m) or p.near_tie(env, method, m):
                v = V.Verdict(V.NO_DISCRIMINATION)
            else:
                v = confirm_poi(V.judge_dist(d, 0.5, comparisons=len(others), label=label), x, y, 0.5, len(others),
                                reps, stream_seed(seed, env, m))
            verdicts.append(v)
            kind = v.kind if v.kind != V.NO_DISCRIMINATION else "near-saturated, rule 3b"
            rows.append(f"{label} {fmt(d)} ({kind}{'; ' + v.second if v.second else ''})")
        ranking = ", ".join(f"{p.coll.label(m)} {float(np.median(p.runs(env, m))):.3g}"
                            for m in sorted(p.scores[env], key=lambda m: -float(np.median(p.runs(env, m)))))
        judged = [r for r in rows if "not judged" not in r]
        weakest = min(judged, key=lambda r: float(r.split(") ", 1)[1].split(" ", 1)[0])) if judged else "—"
        overall = V.judge_all(verdicts) if verdicts else V.Verdict(V.NOT_MEASURED)
        unrun = [b for b in BASELINES if b != method and b not in p.scores[env]]
        no_runs = f" No runs there yet of: {', '.join(map(method_label, unrun))}." if unrun else ""
        if p.broken(env, method):
            no_runs += (f" {p.coll.label(method)} is degenerate there by the signal check, and judged as it runs "
                        "(rule 6).")
        if (broken or unrun) and overall.kind == V.SUPPORTED:  # a peak over every method is not shown without one
            overall = dataclasses.replace(overall, kind=V.UNDECIDED, toward=1, why=(
                f"shown against every method judged; {', '.join(map(p.coll.label, broken))} degenerate there"
                if broken else f"shown against every method judged; no runs there yet of "
                               f"{', '.join(map(method_label, unrun))}"))
        claims.append(Claim.judged(words, f"P({method_label(method)} > each of the other {len(others)}) on "
                                   f"{env_label(env)}", weakest.split(" (")[0], overall,
                                   "; ".join(rows) + f". Medians: {ranking}." + no_runs))
    return claims


__all__ = ["PEAKS", "peak_claims"]

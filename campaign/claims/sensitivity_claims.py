"""The paper's sensitivity claims, judged on the sensitivity runs by the rule book: beta does not
change the comparison between bonuses, and Table 1's sensitivity ordering (RFIG low, RND medium,
VIME and #Explo high). Split from :mod:`campaign.claims.claims`, which calls :func:`sensitivity_claims`."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from analysis.bootstrap import stream_seed
from analysis.collect import Collection, final_scores
from analysis.names import BASELINES, env_label, method_label

from . import pooled as P
from . import verdicts as V
from .claim_rows import BETA, Claim, fmt, panels_text
from .confirm import confirm_poi

BETA_CLAIM = "beta does not affect the relative comparison between baselines (bonuses are normalised)"
ORDERING_CLAIM = "sensitivity: RFIG low, RND medium, VIME and #Explo high (Table 1)"
# The claims the sensitivity runs judge, by their words in the claims table
SENSITIVITY_CLAIMS = (BETA_CLAIM, ORDERING_CLAIM)


def sensitivity_knobs(sens: Collection) -> tuple[dict[str, dict[str, dict]], dict[str, str]]:
    """bonus -> knob -> value -> method key (the default's value included), and bonus -> default key."""
    from collections import defaultdict

    common = set(sens.common_overrides)
    knobs: dict[str, dict[str, dict]] = defaultdict(lambda: defaultdict(dict))
    defaults: dict[str, str] = {}
    for key, m in sens.method_info.items():
        own = {k: v for k, v in m.overrides if k not in common}
        if not own:
            defaults[m.bonus] = key
        elif len(own) == 1:
            (k, v), = own.items()
            knobs[m.bonus][k][v] = key
    for bonus, by_knob in knobs.items():
        if bonus not in defaults:
            continue
        cfg = next((r.config for r in sens.runs_of(defaults[bonus]) if r.config), None) or {}
        for k in by_knob:
            node = cfg
            for part in k.split("."):
                node = node.get(part) if isinstance(node, dict) else None
            if node is not None:
                by_knob[k].setdefault(node, defaults[bonus])
    return knobs, defaults


def sensitivity_claims(sens: Collection, paper_envs: Sequence[str], reps: int, seed: int) -> list[Claim]:
    scores = final_scores(sens)
    knobs, defaults = sensitivity_knobs(sens)
    panels = [e for e in sens.envs if len(scores.get(e, {})) >= 2]
    return [_beta_claim(scores, knobs, defaults, panels, reps, stream_seed(seed, "beta")),
            _ordering_claim(scores, knobs, panels, reps, stream_seed(seed, "ordering"))]


def _discriminating(scores, panels, keys) -> tuple[list[str], str]:
    """Rule 3 over the methods a claim compares (``keys``): the panels that discriminate, and the
    words for those left out."""
    saturated = [e for e in panels
                 if V.saturated({k: scores[e][k][1] for k in keys if k in scores.get(e, {})})]
    left = (f" Left out, not discriminating (rule 3): {', '.join(map(env_label, saturated))}." if saturated else "")
    return [e for e in panels if e not in saturated], left


def _beta_claim(scores, knobs, defaults, panels, reps, seed) -> Claim:
    words = BETA_CLAIM
    by_bonus = {b: k[BETA] for b, k in knobs.items() if BETA in k}
    bonuses = sorted(by_bonus, key=lambda b: list(BASELINES + ("rfig",)).index(b) if b in BASELINES + ("rfig",) else 9)
    betas = sorted(set.intersection(*[set(v) for v in by_bonus.values()]), key=float) if by_bonus else []
    envs, left = _discriminating(scores, panels, [by_bonus[b][x] for b in bonuses for x in betas])
    measure = (f"the direction of P(A > B) for each pair of bonuses at each beta, and its change from the default "
               f"beta (inside ± {V.POI_MARGIN}, rule 9's small effect), on {panels_text(len(envs))}")
    if len(bonuses) < 2 or len(betas) < 2 or not envs:
        return Claim.judged(words, measure, "—", V.Verdict(V.NOT_MEASURED if envs else V.NO_DISCRIMINATION),
                            f"beta swept for {', '.join(map(method_label, bonuses)) or 'no bonus'}." + left)
    ref = next((x for x in betas if all(by_bonus[b][x] == defaults.get(b) for b in bonuses)), betas[len(betas) // 2])
    pairs = [(a, b) for i, a in enumerate(bonuses) for b in bonuses[i + 1:]]
    m = len(pairs) * len(betas)
    m_change = len(pairs) * (len(betas) - 1)
    directions, changes, rows = {}, [], []

    def runs(key):
        return {e: scores[e][key][1] for e in envs if key in scores[e]}

    for a, b in pairs:
        vs, cells, moved = [], [], []
        for beta in betas:
            xs, ys = runs(by_bonus[a][beta]), runs(by_bonus[b][beta])
            xs, ys = {e: xs[e] for e in xs if e in ys}, {e: ys[e] for e in ys if e in xs}
            d = V.poi_over_panels(xs, ys)
            v = confirm_poi(V.judge_dist(d, 0.5, comparisons=m), xs, ys, 0.5, m, reps,
                            stream_seed(seed, "direction", a, b, beta))  # rule 12
            vs.append(v)
            cells.append(f"{beta:g}: {fmt(d)}")
            if beta != ref:
                c = _change(xs, ys, runs(by_bonus[a][ref]), runs(by_bonus[b][ref]), m_change,
                            f"P({method_label(a)} > {method_label(b)}) at beta {beta:g} - at {ref:g}", reps,
                            stream_seed(seed, "change", a, b, beta))
                changes.append(c)
                moved.append(f"{beta:g}: {c.deciding.lo:+.2f} to {c.deciding.hi:+.2f}" if c.deciding else "")
        directions[(a, b)] = vs
        rows.append(f"P({method_label(a)} > {method_label(b)}) " + ", ".join(cells)
                    + f" (change from {ref:g}: " + ", ".join(moved) + ")")
    reversal = P.ranking_verdict(directions)
    unchanged = V.judge_all(changes)
    flips = sum(1 for vs in directions.values() if {V.SUPPORTED, V.CONTRADICTED} <= {v.kind for v in vs})
    resolved = sum(1 for vs in directions.values() if {V.SUPPORTED, V.CONTRADICTED} & {v.kind for v in vs})
    inside = sum(1 for c in changes if c.kind == V.SUPPORTED)
    verdict = (replace(reversal, why="a pair of bonuses is resolved one way at one beta and the other way at another")
               if reversal.kind == V.CONTRADICTED else unchanged)
    value = (f"{resolved} of {len(pairs)} pairs resolved, {flips} reversed; {inside} of {len(changes)} changes "
             f"from beta {ref:g} inside ± {V.POI_MARGIN}")
    return Claim.judged(words, measure + f", beta in {', '.join(f'{x:g}' for x in betas)}", value, verdict,
                        "; ".join(rows) + "." + left)


def _change(x, y, x_ref, y_ref, comparisons: int, label: str, reps: int, seed: int) -> V.Verdict:
    """Rule 9 for a change of P(X > Y) between two betas: supported when DeLong's 95% interval of
    the change lies inside ± POI_MARGIN, contradicted when its Bonferroni interval lies outside; a
    verdict DeLong decided stands only when the stratified bootstrap's gives the same (rule 12)."""
    band = (-V.POI_MARGIN, V.POI_MARGIN)
    v = V.judge_within(V.poi_change(x, y, x_ref, y_ref), band, comparisons, label)
    boot = V.judge_within(V.poi_change_boot(x, y, x_ref, y_ref, reps, seed), band, comparisons, label, guarded=True)
    shown = boot.deciding.text if boot.deciding is not None else ""
    agrees = boot.kind == v.kind
    words = f"stratified bootstrap ({reps:,} resamples): {shown}: " + ("the same verdict" if agrees else
                                                                      f"{boot.kind}, not {v.kind}")
    if v.kind in (V.SUPPORTED, V.CONTRADICTED) and not agrees:
        return replace(v, kind=V.UNDECIDED, resolve_at=None, second=words,
                       why=f"undecided by rule 12: DeLong's interval decides {label}, the bootstrap's does not")
    return replace(v, second=words)


def _ordering_claim(scores, knobs, panels, reps, seed) -> Claim:
    words = ORDERING_CLAIM
    measure = ("per method, the mean over its knobs and the discriminating sensitivity panels of the range of "
               "normalised IQM across a knob's values; RFIG's below each other method's")
    envs, left = _discriminating(scores, panels, [k for by in knobs.values() for v in by.values() for k in v.values()])
    lo = {e: min(float(v.min()) for _, v in scores[e].values()) for e in envs}
    hi = {e: max(float(v.max()) for _, v in scores[e].values()) for e in envs}
    envs = [e for e in envs if hi[e] > lo[e]]
    cells = {(b, k, e): [scores[e][key][1] for key in by_value.values() if key in scores[e]]
             for b, by_knob in knobs.items() for k, by_value in by_knob.items() for e in envs}
    cells = {c: v for c, v in cells.items() if len(v) >= 2}
    methods = sorted({b for b, _, _ in cells})
    if "rfig" not in methods or len(methods) < 2:
        return Claim.judged(words, measure, "—", V.Verdict(V.NOT_MEASURED), left.strip())
    samples = {(c, j): (np.asarray(v, float) - lo[c[2]]) / (hi[c[2]] - lo[c[2]])
               for c, values in cells.items() for j, v in enumerate(values)}

    def spread(s, method):
        ranges = []
        for c, values in cells.items():
            if c[0] == method:
                q = np.stack([V.iqm_rows(s[(c, j)]) for j in range(len(values))])
                ranges.append(q.max(axis=0) - q.min(axis=0))
        return np.mean(ranges, axis=0)

    others = [b for b in methods if b != "rfig"]
    dists = {b: V.stratified(samples, lambda s, b=b: spread(s, b) - spread(s, "rfig"), reps, stream_seed(seed, b))
             for b in others}
    as_is = {k: np.asarray(v, float)[None, :] for k, v in samples.items()}
    means = {b: float(spread(as_is, b)[0]) for b in methods}
    verdict = V.judge_all([V.judge_dist(d, 0.0, comparisons=len(others)) for d in dists.values()])
    order = sorted(methods, key=lambda b: means[b])
    return Claim.judged(words, measure, ", ".join(f"{method_label(b)} {means[b]:.2f}" for b in order), verdict,
                        "; ".join(f"range({method_label(b)}) - range(RFIG) {fmt(d)}" for b, d in dists.items())
                        + "." + left)

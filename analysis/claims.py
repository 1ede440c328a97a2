"""The paper's claims, each measured on a collection and judged by the rules of
:mod:`analysis.verdicts` (its docstring is the rule book the report quotes as ``rules.md``).

A claim is judged on the paper's own panels only (``paper_envs``); the envs beyond the paper
(DeepSea) get :func:`beyond_paper_claims`, their own aggregates, never a paper verdict. Each
:class:`Claim` names the paper's words, how it is measured, the value with its 95% interval and
the verdict, and says which panels did not discriminate.

Nothing here imports JAX; every number comes from the collection handed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from . import verdicts as V
from .collect import Collection, final_scores
from .names import BASELINES, CONTROLS, env_label, method_label

# What counts as solving an env (per run, on its final evaluation window), where the env has a
# success criterion: reaching the goal before the time limit on average, or the env's own flag.
SUCCESS_RULES: dict[str, tuple[str, str, float]] = {
    # env (or task base name): (metrics column, description, threshold: solved when value > it)
    "mountaincar": ("episode_return", "mean return > -200 (the car reaches the flag before the 200-step limit)",
                    -200.0),
    "acrobot": ("episode_return", "mean return > -500 (the tip swings up before the 500-step limit)", -500.0),
    "deepsea": ("episode_return", "mean return > 0.5 (most episodes end at the treasure)", 0.5),
    "pointmaze_umaze": ("env/success", "success rate > 0.5 (the env's own goal flag)", 0.5),
    "pointmaze_medium": ("env/success", "success rate > 0.5 (the env's own goal flag)", 0.5),
}
# The paper's "peak" statements: method -> the panels it is said to be best on.
PEAKS = (("rfig", "minatar_breakout", "RFIG achieves peak performance in ... Breakout"),
         ("rfig", "sparse_halfcheetah", "RFIG achieves peak performance in ... sparse-halfcheetah"),
         ("vime", "sparse_ant", "VIME excels in ... sparse-ant"),
         ("vime", "sparse_walker2d", "VIME excels in ... sparse-walker2d"))
BETA = "bonus.beta"


@dataclass
class Claim:
    """One row of the claims table: the paper's words, how they were measured, the value with its
    interval, the verdict (``kind`` one of analysis.verdicts' five; ``verdict`` its words)."""

    claim: str
    measure: str
    value: str
    verdict: str
    detail: str = ""
    kind: str = ""
    scope: str = "paper"  # "paper": judged on the paper's panels; "beyond": the envs the paper did not run

    @classmethod
    def judged(cls, claim: str, measure: str, value: str, verdict: V.Verdict, detail: str = "",
               scope: str = "paper") -> Claim:
        return cls(claim, measure, value, verdict.text, detail, verdict.kind, scope)


@dataclass
class Panels:
    """The panels a collection offers a set of claims: final scores by env and method, which of them
    are the paper's, and which do not discriminate (rule 3)."""

    coll: Collection
    scores: dict
    paper: list[str]
    beyond: list[str]
    saturated: list[str] = field(default_factory=list)

    def discriminating(self, envs: Sequence[str], *methods: str) -> list[str]:
        return [e for e in envs if e not in self.saturated and all(m in self.scores.get(e, {}) for m in methods)]

    def runs(self, env: str, method: str) -> np.ndarray:
        return np.asarray(self.scores[env][method][1], float)


def base_env(env: str) -> str:
    return env.split("[", 1)[0]


def panels_of(coll: Collection, paper_envs: Sequence[str]) -> Panels:
    """Split a collection's envs into the paper's panels and the rest, and find the saturated ones."""
    scores = final_scores(coll)
    paper = [e for e in coll.envs if base_env(e) in paper_envs]
    beyond = [e for e in coll.envs if base_env(e) not in paper_envs]
    sat = [e for e in coll.envs
           if len(scores.get(e, {})) >= 2 and V.saturated({m: v for m, (_, v) in scores[e].items()})]
    return Panels(coll, scores, paper, beyond, sat)


def _fmt(d: V.Dist | tuple[float, float, float], digits: int = 2) -> str:
    point, (lo, hi) = (d.point, d.interval()) if isinstance(d, V.Dist) else (d[0], (d[1], d[2]))
    return f"{point:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _panels(k: int) -> str:
    return f"{k} panel" + ("" if k == 1 else "s")


def _not_discriminating(p: Panels, envs: Sequence[str]) -> str:
    left = [env_label(e) for e in envs if e in p.saturated]
    return f" Left out, not discriminating (rule 3): {', '.join(left)}." if left else ""


def poi_by_panel(p: Panels, x: str, y: str, envs: Sequence[str], reps: int, seed: int) -> dict[str, V.Dist]:
    """P(X > Y) on each panel that has both methods (saturated ones included: the figure shows them)."""
    return {e: V.poi_over_panels({e: p.runs(e, x)}, {e: p.runs(e, y)}, reps, seed + i)
            for i, e in enumerate(envs) if x in p.scores.get(e, {}) and y in p.scores.get(e, {})}


def claims_table(coll: Collection, agg, paper_envs: Sequence[str], reps: int = V.REPS, seed: int = 0,
                 timing: Mapping[str, Mapping[str, np.ndarray]] | None = None,
                 sens: Collection | None = None) -> list[Claim]:
    """Every claim of the paper this data can judge, on the paper's panels (the module docstring).

    agg: compute_aggregates(coll) (its min-max normalisation, rule 2). timing: env -> variant ->
    seconds per round (analysis.repro.timing), for the execution-time claim. sens: the sensitivity
    collection, for the beta and sensitivity claims."""
    p = panels_of(coll, paper_envs)
    claims = [*_outperforms_ppo(p, reps, seed), *_competitive(p, agg.normalisation, reps, seed + 200),
              _matches_rnd(p, reps, seed + 300), *_peaks(p, reps, seed + 400), _execution_time(timing, reps, seed)]
    if sens is not None:
        claims += _sensitivity_claims(sens, paper_envs, reps, seed + 500)
    return claims


def comparisons_table(coll: Collection, paper_envs: Sequence[str], reps: int = V.REPS, seed: int = 0) -> list[Claim]:
    """RFIG against each NN baseline on the paper's panels: measurements (rule 4 at 0.5), not claims."""
    p = panels_of(coll, paper_envs)
    rows = []
    for j, b in enumerate(m for m in BASELINES if m in coll.methods):
        envs = p.discriminating(p.paper, "rfig", b)
        if not envs:
            continue
        d = V.poi_over_panels({e: p.runs(e, "rfig") for e in envs}, {e: p.runs(e, b) for e in envs}, reps,
                              seed + 600 + j)
        rows.append(Claim.judged(f"RFIG against {coll.label(b)}", f"P(RFIG > {coll.label(b)}) over {len(envs)} panels",
                                 _fmt(d), V.judge_dist(d, 0.5), _not_discriminating(p, p.paper).strip()))
    return rows


def _outperforms_ppo(p: Panels, reps: int, seed: int, scope: str = "paper") -> list[Claim]:
    """PPO+RFIG outperforms PPO: final score, area under the curve, solved seeds (pooled)."""
    pool = p.paper if scope == "paper" else p.beyond
    envs = p.discriminating(pool, "rfig", "none")
    where = "the paper's panels" if scope == "paper" else "the envs beyond the paper"
    claims: list[Claim] = []
    words = "PPO+RFIG ... outperforming vanilla PPO"
    if not envs:
        claims.append(Claim.judged(f"{words} (final score)", f"P(RFIG > PPO) over {where}", "—",
                                   V.Verdict(V.NO_DISCRIMINATION if pool else V.NOT_MEASURED),
                                   _not_discriminating(p, pool).strip(), scope))
        return claims
    per = poi_by_panel(p, "rfig", "none", envs, reps, seed + 10)
    d = V.poi_over_panels({e: p.runs(e, "rfig") for e in envs}, {e: p.runs(e, "none") for e in envs}, reps, seed)
    claims.append(Claim.judged(
        f"{words} (final score)", f"P(RFIG > PPO), mean over {len(envs)} of {where}", _fmt(d), V.judge_dist(d, 0.5),
        "; ".join(f"{env_label(e)} {_fmt(x)}" for e, x in per.items()) + "." + _not_discriminating(p, pool), scope))
    auc_x, auc_y = {}, {}
    for e in envs:
        ax, ay = area_under_curve(p.coll, e, "rfig"), area_under_curve(p.coll, e, "none")
        if ax and ay:
            auc_x[e], auc_y[e] = np.array(list(ax.values())), np.array(list(ay.values()))
    if auc_x:
        d = V.poi_over_panels(auc_x, auc_y, reps, seed + 1)
        claims.append(Claim.judged(f"{words} (area under the curve)",
                                   f"P(RFIG > PPO) on the mean return over all windows, {_panels(len(auc_x))}",
                                   _fmt(d), V.judge_dist(d, 0.5), scope=scope))
    tables, rows = [], []
    for e in pool:
        sx, sy = success_of_runs(p.coll, e, "rfig"), success_of_runs(p.coll, e, "none")
        if sx is None or sy is None or not len(sx) or not len(sy) or e in p.saturated:
            continue
        a, c = int(sx.sum()), int(sy.sum())
        tables.append((a, len(sx) - a, c, len(sy) - c))
        rows.append(f"{env_label(e)}: RFIG {a}/{len(sx)}, PPO {c}/{len(sy)}")
    if tables:
        odds = V.mantel_haenszel(tables)
        value = (f"odds ratio {odds.point:.2f} [{odds.lo:.2f}, {odds.hi:.2f}] over {_panels(odds.strata)} where "
                 "solving varies"
                 if odds.strata else "no panel where solving varies")
        claims.append(Claim.judged(
            f"{words} (seeds solved)", "Mantel-Haenszel odds ratio of solving, RFIG against PPO, stratified by panel "
            f"({_panels(len(tables))} with a success rule)", value, V.judge_odds_ratio(odds), "; ".join(rows) + ".",
            scope))
    return claims


def _competitive(p: Panels, norm, reps: int, seed: int) -> list[Claim]:
    """Competitive with the NN baselines on every panel; no catastrophic failure."""
    baselines = [b for b in BASELINES if b in p.coll.methods]
    envs = [e for e in p.discriminating(p.paper, "rfig", *baselines) if norm.usable(e)]
    claims = []
    if baselines and envs:
        verdicts, rows = [], []
        for i, e in enumerate(envs):
            samples = {(m,): norm.apply(e, p.runs(e, m)) for m in ("rfig", *baselines)}
            d = V.stratified(samples, lambda s: V.iqm_rows(s[("rfig",)]) - np.max(
                [V.iqm_rows(s[(b,)]) for b in baselines], axis=0), reps, seed + i)
            v = V.judge_dist(d, -V.MARGIN, comparisons=len(envs))
            verdicts.append(v)
            rows.append(f"{env_label(e)} {_fmt(d)} ({v.kind})")
        overall = V.judge_all(verdicts)
        shown = sum(v.kind == V.SUPPORTED for v in verdicts)
        claims.append(Claim.judged(
            "RFIG is competitive with NN-based methods across all environments",
            f"per panel, IQM(RFIG) - best IQM of {', '.join(map(method_label, baselines))} (normalised), "
            f"> -{V.MARGIN:g}", f"shown on {shown} of {len(envs)} panels", overall,
            "; ".join(rows) + "." + _not_discriminating(p, p.paper)))
    envs = [e for e in p.discriminating(p.paper, "rfig", "none") if norm.usable(e)]
    if envs:
        verdicts, rows = [], []
        for i, e in enumerate(envs):
            samples = {(m,): norm.apply(e, p.runs(e, m)) for m in ("rfig", "none")}
            d = V.stratified(samples, lambda s: V.iqm_rows(s[("rfig",)]) - 0.5 * V.iqm_rows(s[("none",)]), reps,
                             seed + 50 + i)
            v = V.judge_dist(d, 0.0, comparisons=len(envs))
            verdicts.append(v)
            rows.append(f"{env_label(e)} {_fmt(d)} ({v.kind})")
        overall = V.judge_all(verdicts)
        failures = sum(v.kind == V.CONTRADICTED for v in verdicts)
        claims.append(Claim.judged(
            "RFIG maintains stable performance without catastrophic failures",
            "per panel, IQM(RFIG) - IQM(PPO) / 2 (normalised): a failure when below 0",
            f"failures on {failures} of {len(envs)} panels", overall,
            "; ".join(rows) + "." + _not_discriminating(p, p.paper)))
    return claims


def _matches_rnd(p: Panels, reps: int, seed: int) -> Claim:
    words = "RFIG competitively matches or exceeds RND's performance"
    envs = p.discriminating(p.paper, "rfig", "rnd")
    if not envs:
        return Claim.judged(words, "P(RFIG > RND)", "—", V.Verdict(V.NOT_MEASURED))
    d = V.poi_over_panels({e: p.runs(e, "rfig") for e in envs}, {e: p.runs(e, "rnd") for e in envs}, reps, seed)
    return Claim.judged(words, f"P(RFIG > RND) over {len(envs)} panels, > {0.5 - V.POI_MARGIN:.3f} "
                        "(non-inferiority)", _fmt(d), V.judge_dist(d, 0.5 - V.POI_MARGIN),
                        _not_discriminating(p, p.paper).strip())


def _peaks(p: Panels, reps: int, seed: int) -> list[Claim]:
    claims = []
    for k, (method, target, words) in enumerate(PEAKS):
        env = next((e for e in p.paper if base_env(e) == target), None)
        if env is None or method not in p.scores.get(env, {}):
            claims.append(Claim.judged(words, "P(X > each other method) on the panel", "—", V.Verdict(V.NOT_MEASURED),
                                       f"no {method_label(method)} runs on {env_label(target)}"))
            continue
        # the methods the paper compares: the control (analysis.control) is not one of them
        others = [m for m in p.scores[env] if m != method and p.coll.bonus_of(m) not in CONTROLS]
        if env in p.saturated:
            claims.append(Claim.judged(words, f"on {env_label(env)}", "—", V.Verdict(V.NO_DISCRIMINATION)))
            continue
        verdicts, rows = [], []
        for j, m in enumerate(others):
            d = V.poi_over_panels({env: p.runs(env, method)}, {env: p.runs(env, m)}, reps, seed + 10 * k + j)
            v = V.judge_dist(d, 0.5, comparisons=len(others))
            verdicts.append(v)
            rows.append(f"P({method_label(method)} > {p.coll.label(m)}) {_fmt(d)} ({v.kind})")
        ranking = ", ".join(f"{p.coll.label(m)} {float(np.median(p.runs(env, m))):.3g}"
                            for m in sorted(p.scores[env], key=lambda m: -float(np.median(p.runs(env, m)))))
        weakest = min(rows, key=lambda r: float(r.split(") ", 1)[1].split(" ", 1)[0]))
        claims.append(Claim.judged(words, f"P({method_label(method)} > each of the other {len(others)}) on "
                                   f"{env_label(env)}", weakest.split(" (")[0], V.judge_all(verdicts),
                                   "; ".join(rows) + f". Medians: {ranking}."))
    return claims


def _execution_time(timing, reps: int, seed: int) -> Claim:
    words = "no significant execution time differences compared to NN approaches, even with full matrix inversion"
    measure = ("a run's wall time, RFIG with its full (exact) inverse over the median of RND, VIME and #Explo; "
               f"paired, interleaved rounds on one machine; inside {V.TIME_BAND[0]}-{V.TIME_BAND[1]}x")
    if not timing:
        return Claim.judged(words, measure, "—", V.Verdict(V.NOT_MEASURED),
                            "needs the controlled benchmark (benchmarks/bench_timing_claim.py); the campaign's job "
                            "wall times are not evidence: other work on the machine moved them")
    verdicts, rows = [], []
    envs = sorted(timing)
    for i, e in enumerate(envs):
        t = {k: np.asarray(v, float) for k, v in timing[e].items()}
        nn = [b for b in BASELINES if b in t]
        rounds = len(t["rfig_exact"])

        def ratio(s, nn=nn):
            return s[("rfig_exact",)] / np.median(np.stack([s[(b,)] for b in nn]), axis=0)

        # rounds are paired: resample whole rounds, every variant of a round together
        idx = np.random.default_rng(seed + i).integers(0, rounds, size=(reps, rounds))
        boot = ratio({(k,): t[k][idx] for k in t}).mean(axis=-1)
        point = float(ratio({(k,): t[k][None, :] for k in t}).mean())
        d = V.Dist(point, boot, rounds)
        v = V.judge_within(d, V.TIME_BAND, comparisons=len(envs))
        verdicts.append(v)
        wood = ""
        if "rfig" in t:
            wood = f", Woodbury {float((t['rfig'] / np.median(np.stack([t[b] for b in nn]), axis=0)).mean()):.2f}x"
        rows.append(f"{env_label(e)} {_fmt(d)}x ({v.kind}{wood}; {rounds} rounds)")
    overall = V.judge_all(verdicts)
    return Claim.judged(words, measure, "; ".join(r.split(" (")[0] for r in rows), overall, "; ".join(rows) + ".")


# --------------------------------------------------------------------------- sensitivity


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


def _sensitivity_claims(sens: Collection, paper_envs: Sequence[str], reps: int, seed: int) -> list[Claim]:
    scores = final_scores(sens)
    knobs, _ = sensitivity_knobs(sens)
    panels = [e for e in sens.envs if len(scores.get(e, {})) >= 2]
    return [_beta_claim(scores, knobs, panels, reps, seed), _ordering_claim(scores, knobs, panels, reps, seed + 100)]


def _discriminating(scores, panels, keys) -> tuple[list[str], str]:
    """Rule 3 over the methods a claim compares (``keys``): the panels that discriminate, and the
    words for those left out."""
    saturated = [e for e in panels
                 if V.saturated({k: scores[e][k][1] for k in keys if k in scores.get(e, {})})]
    left = (f" Left out, not discriminating (rule 3): {', '.join(map(env_label, saturated))}." if saturated else "")
    return [e for e in panels if e not in saturated], left


def _beta_claim(scores, knobs, panels, reps, seed) -> Claim:
    words = "beta does not affect the relative comparison between baselines (bonuses are normalised)"
    by_bonus = {b: k[BETA] for b, k in knobs.items() if BETA in k}
    bonuses = sorted(by_bonus, key=lambda b: list(BASELINES + ("rfig",)).index(b) if b in BASELINES + ("rfig",) else 9)
    betas = sorted(set.intersection(*[set(v) for v in by_bonus.values()]), key=float) if by_bonus else []
    envs, left = _discriminating(scores, panels, [by_bonus[b][x] for b in bonuses for x in betas])
    measure = f"the direction of P(A > B) for each pair of bonuses at each beta, on {_panels(len(envs))}"
    if len(bonuses) < 2 or len(betas) < 2 or not envs:
        return Claim.judged(words, measure, "—", V.Verdict(V.NOT_MEASURED if envs else V.NO_DISCRIMINATION),
                            f"beta swept for {', '.join(map(method_label, bonuses)) or 'no bonus'}." + left)
    pairs = [(a, b) for i, a in enumerate(bonuses) for b in bonuses[i + 1:]]
    m = len(pairs) * len(betas)
    directions, rows = {}, []
    for i, (a, b) in enumerate(pairs):
        vs, cells = [], []
        for j, beta in enumerate(betas):
            ka, kb = by_bonus[a][beta], by_bonus[b][beta]
            have = [e for e in envs if ka in scores[e] and kb in scores[e]]
            d = V.poi_over_panels({e: scores[e][ka][1] for e in have}, {e: scores[e][kb][1] for e in have}, reps,
                                  seed + 10 * i + j)
            v = V.judge_dist(d, 0.5, comparisons=m)
            vs.append(v)
            cells.append(f"{beta:g}: {_fmt(d)}")
        directions[(a, b)] = vs
        rows.append(f"P({method_label(a)} > {method_label(b)}) " + ", ".join(cells))
    verdict = V.ranking_verdict(directions)
    flips = sum(1 for vs in directions.values() if {V.SUPPORTED, V.CONTRADICTED} <= {v.kind for v in vs})
    resolved = sum(1 for vs in directions.values() if {V.SUPPORTED, V.CONTRADICTED} & {v.kind for v in vs})
    return Claim.judged(words, measure + f", beta in {', '.join(f'{x:g}' for x in betas)}",
                        f"{resolved} of {len(pairs)} pairs resolved, {flips} reversed", verdict,
                        "; ".join(rows) + "." + left)


def _ordering_claim(scores, knobs, panels, reps, seed) -> Claim:
    words = "sensitivity: RFIG low, RND medium, VIME and #Explo high (Table 1)"
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
    dists = {b: V.stratified(samples, lambda s, b=b: spread(s, b) - spread(s, "rfig"), reps, seed + i)
             for i, b in enumerate(others)}
    as_is = {k: np.asarray(v, float)[None, :] for k, v in samples.items()}
    means = {b: float(spread(as_is, b)[0]) for b in methods}
    verdict = V.judge_all([V.judge_dist(d, 0.0, comparisons=len(others)) for d in dists.values()])
    order = sorted(methods, key=lambda b: means[b])
    return Claim.judged(words, measure, ", ".join(f"{method_label(b)} {means[b]:.2f}" for b in order), verdict,
                        "; ".join(f"range({method_label(b)}) - range(RFIG) {_fmt(d)}" for b, d in dists.items())
                        + "." + left)


# --------------------------------------------------------------------------- beyond the paper


def beyond_paper_claims(coll: Collection, paper_envs: Sequence[str], reps: int = V.REPS, seed: int = 0) -> list[Claim]:
    """The same comparison of RFIG with PPO on the envs the paper did not run, and over all envs
    together: reported beside the paper's claims, never part of their verdicts."""
    p = panels_of(coll, paper_envs)
    if not p.beyond:
        return []
    claims = _outperforms_ppo(p, reps, seed + 700, scope="beyond")
    every = p.discriminating(p.paper + p.beyond, "rfig", "none")
    if every:
        d = V.poi_over_panels({e: p.runs(e, "rfig") for e in every}, {e: p.runs(e, "none") for e in every}, reps,
                              seed + 800)
        claims.append(Claim.judged("PPO+RFIG against PPO, every env together (the paper's and beyond)",
                                   f"P(RFIG > PPO), mean over {len(every)} panels", _fmt(d), V.judge_dist(d, 0.5),
                                   scope="beyond"))
    return claims


# --------------------------------------------------------------------------- per-run measures


def area_under_curve(coll: Collection, env: str, method: str) -> dict[int, float]:
    """Per scored run: the mean return over all evaluation windows (area under the learning
    curve divided by its length; empty leading windows are left out)."""
    out = {}
    for c in coll.env_data[env].curves.get(method, []):
        if c.scored and np.isfinite(c.values).any():
            out[c.seed] = float(np.nanmean(c.values))
    return out


def success_of_runs(coll: Collection, env: str, method: str) -> np.ndarray | None:
    """Per scored run, 1.0 when it solves ``env`` at its last window (SUCCESS_RULES), else 0.0;
    None when the env has no success criterion."""
    rule = SUCCESS_RULES.get(base_env(env))
    if rule is None:
        return None
    column, _, threshold = rule
    seeds, values = coll.column(env, method, column, scored=True)
    if not len(seeds):
        return np.zeros(0)
    last = values[:, -1]
    return np.where(np.isfinite(last), (last > threshold).astype(float), 0.0)


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (good at 0/n and n/n, unlike the bootstrap)."""
    if n == 0:
        return (float("nan"), float("nan"))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (float(max(0.0, centre - half)), float(min(1.0, centre + half)))


def solved_fractions(coll: Collection, methods=None) -> dict[str, dict[str, tuple[int, int]]]:
    """env -> method -> (runs solved at the last window, scored runs), for envs with a rule."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for e in coll.envs:
        for m in methods or coll.methods:
            s = success_of_runs(coll, e, m)
            if s is None:
                break
            if len(s):
                out.setdefault(e, {})[m] = (int(s.sum()), len(s))
    return out

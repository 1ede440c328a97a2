"""The paper's claims, each measured on a collection and judged by the rules of
:mod:`campaign.claims.verdicts` (its docstring is the rule book the report quotes as ``rules.md``).

A claim is judged on the paper's own panels only (``paper_envs``); the envs beyond the paper
(DeepSea) get :func:`beyond_paper_claims`, their own aggregates, never a paper verdict. Each
:class:`Claim` names the paper's words, how it is measured, the value with its 95% interval and
the verdict, and says which panels did not discriminate.

Nothing here imports JAX; every number comes from the collection handed in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from analysis.aggregate import fit_normalisation
from analysis.bootstrap import stream_seed
from analysis.collect import Collection, final_scores
from analysis.names import BASELINES, CONTROLS, env_label, method_label

from . import pooled as P
from . import verdicts as V
from .claim_rows import Claim, fmt, panels_text
from .competitive import competitive_panels, working_baselines
from .confirm import confirm_odds, confirm_poi
from .panel_effects import effects_text, odds_effects, poi_effects, qualified
from .peaks import peak_claims
from .sensitivity_claims import sensitivity_claims

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


@dataclass
class Panels:
    """The panels a collection offers a set of claims: final scores by env and method, and which of
    them are the paper's. Whether a panel discriminates (rules 3 and 3b) is a property of a
    comparison, judged on the runs of the methods it compares only: a third method's runs (a
    baseline rerun, the control) never change which panels decide a comparison of two others."""

    coll: Collection
    scores: dict
    paper: list[str]
    beyond: list[str]
    degenerate: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)  # the signal check's

    def discriminating(self, envs: Sequence[str], subject: str, *others: str) -> list[str]:
        """The panels of ``envs`` with ``subject`` (the method the claim is about) and every one of
        ``others``, none of ``others`` degenerate there (the signal check), that for these methods are
        neither saturated (rule 3) nor near-saturated (rule 3b). A degenerate subject is judged as it
        runs (rule 6): the check keeps a method from being beaten by a baseline that does not work, it
        never takes the method under test off a panel where it fails."""
        methods = (subject, *others)
        return [e for e in envs if all(m in self.scores.get(e, {}) for m in methods) and not self.broken(e, *others)
                and not self.saturated(e, *methods) and not (len(methods) > 1 and self.near_tie(e, *methods))]

    def broken(self, env: str, *methods: str) -> list[str]:
        """The methods of ``methods`` whose bonus the signal check finds degenerate on ``env``."""
        return [m for m in methods if (env, m) in self.degenerate]

    def saturated(self, env: str, *methods: str) -> bool:
        """Rule 3 for a comparison of ``methods`` on ``env`` (of the ones the panel has; two at least)."""
        have = [m for m in methods if m in self.scores.get(env, {})]
        return len(have) >= 2 and V.saturated({m: self.runs(env, m) for m in have})

    def span(self, env: str, *methods: str) -> float:
        """The range of final scores over every run of ``methods`` on ``env`` (rule 3b's scale)."""
        values = [np.asarray(self.scores[env][m][1], float) for m in methods if m in self.scores.get(env, {})]
        values = np.concatenate(values or [np.zeros(1)])
        return float(values.max() - values.min())

    def near_tie(self, env: str, *methods: str) -> bool:
        """Rule 3b for a comparison of ``methods`` on ``env``."""
        return V.near_saturated({m: self.runs(env, m) for m in methods}, self.span(env, *methods))

    def runs(self, env: str, method: str) -> np.ndarray:
        return np.asarray(self.scores[env][method][1], float)


def base_env(env: str) -> str:
    return env.split("[", 1)[0]


def panels_of(coll: Collection, paper_envs: Sequence[str],
              degenerate: Mapping[tuple[str, str], tuple[str, ...]] | None = None) -> Panels:
    """Split a collection's envs into the paper's panels and the rest; ``degenerate``: the signal
    check's degenerate cells, (env, method) -> causes (campaign.claims.signal.degenerate)."""
    paper = [e for e in coll.envs if base_env(e) in paper_envs]
    beyond = [e for e in coll.envs if base_env(e) not in paper_envs]
    return Panels(coll, final_scores(coll), paper, beyond, dict(degenerate or {}))


def _not_discriminating(p: Panels, envs: Sequence[str], subject: str, *others: str) -> str:
    """The panels of ``envs`` a comparison of ``subject`` with ``others`` leaves out, each with why: a
    method without runs there, a compared method degenerate, saturated (rule 3), near-saturated (rule
    3b); and the panels judged although the subject is degenerate there (rule 6)."""
    methods = (subject, *others)
    missing = {e: [m for m in methods if m not in p.scores.get(e, {})] for e in envs}
    broken = [f"{env_label(e)} ({', '.join(p.coll.label(m) for m in p.broken(e, *others))})" for e in envs
              if not missing[e] and p.broken(e, *others)]
    have = [e for e in envs if not missing[e] and not p.broken(e, *others)]
    own = [env_label(e) for e in have if p.broken(e, subject)]
    left = [env_label(e) for e in have if p.saturated(e, *methods)]
    near = [env_label(e) for e in have if len(methods) > 1 and not p.saturated(e, *methods) and p.near_tie(e, *methods)]
    absent = [f"{env_label(e)} ({', '.join(p.coll.label(m) for m in missing[e])})" for e in envs
              if missing[e] and len(missing[e]) < len(methods)]
    return ((f" Left out, not discriminating (rule 3): {', '.join(left)}." if left else "")
            + (f" Left out, near-saturated (rule 3b): {', '.join(near)}." if near else "")
            + (f" Not judged, no runs yet of: {'; '.join(absent)}." if absent else "")
            + (f" Not judged, degenerate by the signal check: {'; '.join(broken)}." if broken else "")
            + (f" Judged although {p.coll.label(subject)} is degenerate there by the signal check (rule 6: the "
               f"method a claim is about is judged as it runs): {', '.join(own)}." if own else ""))


def _no_runs_at_all(coll: Collection) -> tuple[str, str]:
    """The paper's NN baselines without a run in the whole grid (e.g. a baseline whose defaults were
    fixed and whose reruns have not landed), and the sentence that names them."""
    absent = [b for b in BASELINES if b not in coll.methods]
    return absent, (f" No runs yet on any panel of: {', '.join(map(method_label, absent))}." if absent else "")


def poi_by_panel(p: Panels, x: str, y: str, envs: Sequence[str]) -> dict[str, V.PoiDist]:
    """P(X > Y) on each panel that has both methods (saturated ones included: the figure shows them)."""
    return {e: V.poi_over_panels({e: p.runs(e, x)}, {e: p.runs(e, y)})
            for e in envs if x in p.scores.get(e, {}) and y in p.scores.get(e, {})}


def claims_table(coll: Collection, agg, paper_envs: Sequence[str], reps: int = V.REPS, seed: int = 0,
                 timing: Mapping[str, Mapping[str, np.ndarray]] | None = None,
                 sens: Collection | None = None,
                 degenerate: Mapping[tuple[str, str], tuple[str, ...]] | None = None) -> list[Claim]:
    """Every claim of the paper this data can judge, on the paper's panels (the module docstring).

    agg: compute_aggregates(coll) (its kind of normalisation; rule 2's scale is refitted without the
    control). timing: env -> variant -> seconds per round (campaign.repro.timing), for the
    execution-time claim. sens: the sensitivity collection, for the beta and sensitivity claims.
    degenerate: the signal check's degenerate cells, (env, method) -> causes; a comparison never uses one (rule 6)."""
    p = panels_of(coll, paper_envs, degenerate)
    # rule 2's scale: the runs of the paper's methods, never the control's (no claim is about it)
    scale = fit_normalisation(coll, p.scores, agg.normalisation.kind,
                              methods=[m for m in coll.methods if coll.bonus_of(m) not in CONTROLS])
    claims = [*_outperforms_ppo(p, reps, seed), *_competitive(p, scale, reps, seed + 200),
              _matches_rnd(p, reps, seed + 300), *peak_claims(p, reps, seed + 400), _execution_time(timing, reps, seed)]
    if sens is not None:
        claims += sensitivity_claims(sens, paper_envs, reps, seed + 500)
    return claims


def comparisons_table(coll: Collection, paper_envs: Sequence[str], reps: int = V.REPS, seed: int = 0,
                      degenerate: Mapping[tuple[str, str], tuple[str, ...]] | None = None) -> list[Claim]:
    """RFIG against each NN baseline on the paper's panels: measurements (rule 4 at 0.5), not claims."""
    p = panels_of(coll, paper_envs, degenerate)
    rows = []
    for b in BASELINES:
        if b not in coll.methods:
            rows.append(Claim.judged(f"RFIG against {method_label(b)}", f"P(RFIG > {method_label(b)})", "—",
                                     V.Verdict(V.NOT_MEASURED), _no_runs_at_all(coll)[1].strip()))
            continue
        envs = p.discriminating(p.paper, "rfig", b)
        if not envs:
            continue
        rows.append(pooled_poi(f"RFIG against {coll.label(b)}", f"P(RFIG > {coll.label(b)}) over {len(envs)} panels",
                               {e: p.runs(e, "rfig") for e in envs}, {e: p.runs(e, b) for e in envs}, 0.5, reps,
                               stream_seed(seed, b), _not_discriminating(p, p.paper, "rfig", b).strip()))
    return rows


def pooled_poi(claim: str, measure: str, x: Mapping[str, np.ndarray], y: Mapping[str, np.ndarray],
               threshold: float, reps: int, seed: int, detail: str = "", scope: str = "paper",
               effect: bool = False) -> Claim:
    """A claim on P(X > Y) as a mean over the panels of ``x`` and ``y`` (rule 7), > ``threshold``:
    DeLong's verdict (with rule 9's equivalence where ``effect``), checked by rule 12's second test,
    and each panel's own value beside it with the ones the pooled verdict does not speak for marked in
    the verdict's words too (rule 10)."""
    d = V.poi_over_panels(x, y)
    v = V.judge_effect(d) if effect else V.judge_dist(d, threshold)
    v = confirm_poi(v, x, y, threshold, 1, reps, seed)
    band = (0.5 - V.POI_MARGIN, 0.5 + V.POI_MARGIN) if effect else None
    effects = poi_effects(x, y, {e: env_label(e) for e in x}, threshold, band) if len(x) > 1 else []
    c = Claim.judged(claim, measure, fmt(d), v, detail, scope, effects_text(effects, v.kind, threshold))
    c.verdict = qualified(c.verdict, effects, v.kind)
    return c


def _resampled(x: Mapping[str, np.ndarray], y: Mapping[str, np.ndarray], reps: int, seed: int) -> str:
    """Rule 7's interval with the panels resampled too, for beside the panels-fixed one."""
    if len(set(x) & set(y)) < 2:
        return ""
    lo, hi = V.poi_panels_resampled(x, y, reps, seed + 5000).interval()
    return f"With the panels resampled as well: [{lo:.2f}, {hi:.2f}]. "


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
                                   _not_discriminating(p, pool, "rfig", "none").strip(), scope))
        return claims
    x, y = {e: p.runs(e, "rfig") for e in envs}, {e: p.runs(e, "none") for e in envs}
    claims.append(pooled_poi(f"{words} (final score)", f"P(RFIG > PPO), mean over {len(envs)} of {where}", x, y,
                             0.5, reps, seed + 2, (_resampled(x, y, reps, seed)
                                                   + _not_discriminating(p, pool, "rfig", "none")).strip(),
                             scope, effect=True))
    auc_x, auc_y = {}, {}
    for e in envs:
        ax, ay = area_under_curve(p.coll, e, "rfig"), area_under_curve(p.coll, e, "none")
        if ax and ay:
            auc_x[e], auc_y[e] = np.array(list(ax.values())), np.array(list(ay.values()))
    if auc_x:
        claims.append(pooled_poi(f"{words} (area under the curve)",
                                 f"P(RFIG > PPO) on the mean return over all windows, {panels_text(len(auc_x))}",
                                 auc_x, auc_y, 0.5, reps, seed + 3, _resampled(auc_x, auc_y, reps, seed + 1).strip(),
                                 scope, effect=True))
    tables, rows, by_panel = [], [], {}
    for e in pool:
        sx, sy = success_of_runs(p.coll, e, "rfig"), success_of_runs(p.coll, e, "none")
        if sx is None or sy is None or not len(sx) or not len(sy) or p.saturated(e, "rfig", "none"):
            continue
        a, c = int(sx.sum()), int(sy.sum())
        tables.append((a, len(sx) - a, c, len(sy) - c))
        by_panel[e] = tables[-1]
        rows.append(f"{env_label(e)}: RFIG {a}/{len(sx)}, PPO {c}/{len(sy)}")
    if tables:
        odds = P.mantel_haenszel(tables)
        value = (f"odds ratio {odds.point:.2f} [{odds.lo:.2f}, {odds.hi:.2f}] over {panels_text(odds.strata)} where "
                 "solving varies"
                 if odds.strata else "no panel where solving varies")
        v = confirm_odds(P.judge_odds_ratio(odds), tables)
        effects = odds_effects(by_panel, {e: env_label(e) for e in by_panel})
        effects = effects if len(effects) > 1 else []  # one informative panel: its own value is the pooled one
        c = Claim.judged(
            f"{words} (seeds solved)", "Mantel-Haenszel odds ratio of solving, RFIG against PPO, stratified by panel "
            f"({panels_text(len(tables))} with a success rule)", value, v, "; ".join(rows) + ".", scope,
            effects_text(effects, v.kind, 1.0))
        c.verdict = qualified(c.verdict, effects, v.kind)
        claims.append(c)
    return claims


def _competitive(p: Panels, norm, reps: int, seed: int) -> list[Claim]:
    """Competitive with the NN baselines on every panel; no catastrophic failure. On each panel RFIG
    is compared with the best of the baselines that work there (rule 6)."""
    baselines = [b for b in BASELINES if b in p.coll.methods]
    envs, named = competitive_panels(p, norm)
    works = {e: working_baselines(p, e) for e in p.paper}   # each panel's working baselines, read once
    claims = []
    if envs:
        verdicts, rows = [], []
        for e in envs:
            working = works[e]
            samples = {(m,): norm.apply(e, p.runs(e, m)) for m in ("rfig", *working)}
            d = V.stratified(samples, lambda s, w=working: V.iqm_rows(s[("rfig",)]) - np.max(
                [V.iqm_rows(s[(b,)]) for b in w], axis=0), reps, stream_seed(seed, e))
            v = V.judge_dist(d, -V.MARGIN, comparisons=len(envs))
            verdicts.append(v)
            rows.append(f"{env_label(e)} {fmt(d)} ({v.kind})")
        overall = V.judge_all(verdicts)
        absent, no_runs = _no_runs_at_all(p.coll)
        waiting = [e for e in p.paper if "rfig" in p.scores.get(e, {})
                   and len(works[e]) < len(BASELINES)]
        if overall.kind == V.SUPPORTED and waiting:  # a claim on every panel is not shown on some of them
            overall = dataclasses.replace(overall, kind=V.UNDECIDED, toward=1, why=(
                f"shown on every panel judged; {len(waiting)} of the paper's panels wait for a working "
                "baseline's runs"))
        shown = sum(v.kind == V.SUPPORTED for v in verdicts)
        sds = [f"{env_label(e)} {_margin_in_sds(p, norm, e, ('rfig', *works[e])):.2g}" for e in envs]
        claims.append(Claim.judged(
            "RFIG is competitive with NN-based methods across all environments",
            f"per panel, IQM(RFIG) - best IQM of {', '.join(map(method_label, BASELINES))} (normalised; those that "
            f"work there), > -{V.MARGIN:g}" + (f"; so far without {', '.join(map(method_label, absent))}" if absent
                                               else ""),
            f"shown on {shown} of {len(envs)} panels", overall,
            f"MARGIN {V.MARGIN:g} of the panel's range, in seed SDs (rule 8): " + "; ".join(sds) + "." + named
            + no_runs, panels=_each_panel(rows)))
    else:  # the claim stays in the table, saying why nothing was judged
        claims.append(Claim.judged("RFIG is competitive with NN-based methods across all environments",
                                   "per panel, IQM(RFIG) - best IQM of the working NN baselines", "—",
                                   V.Verdict(V.NOT_MEASURED), (named + _no_runs_at_all(p.coll)[1]).strip()))
    envs = [e for e in p.discriminating(p.paper, "rfig", "none") if norm.usable(e)]
    if envs:
        verdicts, rows = _failures(p, norm, "rfig", envs, reps, stream_seed(seed, "failures", "rfig"))
        overall = V.judge_all(verdicts)
        failures = sum(v.kind == V.CONTRADICTED for v in verdicts)
        others = []
        for b in baselines:
            have = [e for e in p.discriminating(p.paper, b, "none") if norm.usable(e)]
            theirs, _ = _failures(p, norm, b, have, reps, stream_seed(seed, "failures", b))
            others.append(f"{method_label(b)} {sum(v.kind == V.CONTRADICTED for v in theirs)} of {len(have)}")
        claims.append(Claim.judged(
            "RFIG maintains stable performance without catastrophic failures",
            "per panel, IQM(RFIG) - IQM(PPO) / 2 (normalised): a failure when below 0",
            f"failures on {failures} of {len(envs)} panels", overall,
            "The same rule for the other methods (what it can flag): failures of " + ", ".join(others) + " panels."
            + _not_discriminating(p, p.paper, "rfig", "none"), panels=_each_panel(rows)))
        claims.append(_failure_before_the_rule_book(p, reps, seed + 90))
    return claims


def _each_panel(rows: Sequence[str]) -> str:
    """A claim on every panel (rule 6) beside its verdict: each panel's value and own verdict."""
    return "Each panel judged (rule 6): " + "; ".join(rows) + "."


def _failures(p: Panels, norm, method: str, envs: Sequence[str], reps: int, seed: int):
    """The catastrophic-failure rule for ``method``: per panel, IQM(method) - IQM(PPO) / 2 on
    normalised scores, judged against 0 with the Bonferroni "against" interval over the panels."""
    verdicts, rows = [], []
    for e in envs:
        samples = {(m,): norm.apply(e, p.runs(e, m)) for m in (method, "none")}
        d = V.stratified(samples, lambda s: V.iqm_rows(s[(method,)]) - 0.5 * V.iqm_rows(s[("none",)]), reps,
                         stream_seed(seed, e))
        v = V.judge_dist(d, 0.0, comparisons=len(envs), label=env_label(e))
        verdicts.append(v)
        rows.append(f"{env_label(e)} {fmt(d)} ({v.kind})")
    return verdicts, rows


def _failure_before_the_rule_book(p: Panels, reps: int, seed: int) -> Claim:
    """The catastrophic-failure criterion the rule book replaced after the 8-seed data had been read
    with it (campaign/claims/rule_history.py): on some panel, RFIG's IQM 95% interval entirely below PPO's,
    or entirely below every baseline's. Shown beside the rule that replaced it, on the same data."""
    baselines = [b for b in BASELINES if b in p.coll.methods]
    failed = []
    for e in p.discriminating(p.paper, "rfig", "none"):
        iv = {m: V.stratified({(m,): p.runs(e, m)}, lambda s, m=m: V.iqm_rows(s[(m,)]), reps, stream_seed(seed, e, m))
              .interval() for m in ["rfig", "none", *[b for b in baselines if b in p.scores[e]]]}
        below_ppo = iv["rfig"][1] < iv["none"][0]
        below_all = len(iv) > 2 and all(iv["rfig"][1] < iv[b][0] for b in iv if b not in ("rfig", "none"))
        if below_ppo or below_all:
            failed.append(f"{env_label(e)} (below {'PPO' if below_ppo else 'every baseline'})")
    return Claim("RFIG maintains stable performance without catastrophic failures (the criterion before the rule "
                 "book, 2026-11-26 to 2026-11-27T15:07Z)",
                 "per panel, RFIG's IQM 95% interval entirely below PPO's, or below every baseline's",
                 f"failures on {panels_text(len(failed))}", "supported" if not failed else "not supported",
                 (", ".join(failed) + ".") if failed else "no panel fails.", kind="old rule")


def _margin_in_sds(p: Panels, norm, env: str, methods: Sequence[str]) -> float:
    """Rule 8's MARGIN on a panel in units of its seeds' spread: MARGIN over the mean over the
    methods of the standard deviation of their normalised final scores."""
    sd = np.mean([np.std(norm.apply(env, p.runs(env, m)), ddof=1) for m in methods if len(p.runs(env, m)) > 1])
    return float(V.MARGIN / sd) if sd > 0 else float("inf")


def _matches_rnd(p: Panels, reps: int, seed: int) -> Claim:
    words = "RFIG competitively matches or exceeds RND's performance"
    envs = p.discriminating(p.paper, "rfig", "rnd")
    if not envs:
        return Claim.judged(words, "P(RFIG > RND)", "—", V.Verdict(V.NOT_MEASURED))
    x, y = {e: p.runs(e, "rfig") for e in envs}, {e: p.runs(e, "rnd") for e in envs}
    return pooled_poi(words, f"P(RFIG > RND) over {len(envs)} panels, > {0.5 - V.POI_MARGIN:.3f} (non-inferiority)",
                      x, y, 0.5 - V.POI_MARGIN, reps, seed + 2,
                      (_resampled(x, y, reps, seed) + _not_discriminating(p, p.paper, "rfig", "rnd")).strip())


def _execution_time(timing, reps: int, seed: int) -> Claim:
    words = "no significant execution time differences compared to NN approaches, even with full matrix inversion"
    measure = ("a run's wall time, RFIG with its full (exact) inverse over the median of RND, VIME and #Explo; "
               "paired, interleaved rounds on one CPU core, one seed per run; "
               f"inside {V.TIME_BAND[0]}-{V.TIME_BAND[1]}x")
    if not timing:
        return Claim.judged(words, measure, "—", V.Verdict(V.NOT_MEASURED),
                            "needs the controlled benchmark (benchmarks/bench_timing_claim.py); the campaign's job "
                            "wall times are not evidence: other work on the machine moved them")
    verdicts, rows = [], []
    envs = sorted(timing)
    for e in envs:
        t = {k: np.asarray(v, float) for k, v in timing[e].items()}
        nn = [b for b in BASELINES if b in t]
        rounds = len(t["rfig_exact"])

        def ratio(s, nn=nn):
            return s[("rfig_exact",)] / np.median(np.stack([s[(b,)] for b in nn]), axis=0)

        # rounds are paired: resample whole rounds, every variant of a round together
        idx = np.random.default_rng(stream_seed(seed, e)).integers(0, rounds, size=(reps, rounds))
        boot = ratio({(k,): t[k][idx] for k in t}).mean(axis=-1)
        point = float(ratio({(k,): t[k][None, :] for k in t}).mean())
        d = V.Dist(point, boot, rounds)
        v = V.judge_within(d, V.TIME_BAND, comparisons=len(envs))
        verdicts.append(v)
        wood = ""
        if "rfig" in t:
            wood = f", Woodbury {float((t['rfig'] / np.median(np.stack([t[b] for b in nn]), axis=0)).mean()):.2f}x"
        rows.append(f"{env_label(e)} {fmt(d)}x ({v.kind}{wood}; {rounds} rounds)")
    overall = V.judge_all(verdicts)
    return Claim.judged(words, measure, "; ".join(r.split(" (")[0] for r in rows), overall, "; ".join(rows) + ".")


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
        claims.append(pooled_poi("PPO+RFIG against PPO, every env together (the paper's and beyond)",
                                 f"P(RFIG > PPO), mean over {len(every)} panels", {e: p.runs(e, "rfig") for e in every},
                                 {e: p.runs(e, "none") for e in every}, 0.5, reps, seed + 800, scope="beyond"))
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

"""The paper's claims, each measured on a collection and given a verdict.

A verdict is ``supported``, ``not supported`` or ``inconclusive at this n``, decided from a 95%
bootstrap interval over runs (seeds), never from a point estimate alone:

- *X beats Y*: the probability of improvement P(X > Y) (Mann-Whitney U / (n_x n_y), averaged
  over envs) has a CI above 0.5 -> supported; below 0.5 -> not supported; else inconclusive.
- *competitive*: on an env, X's IQM CI reaches the best other method's IQM CI (they overlap or
  X is above) -> competitive there; X's CI entirely below every compared method's -> a failure.
- *peaks on an env*: X has the highest IQM and its CI is above every other method's CI ->
  supported; another method's CI is entirely above X's -> not supported; else inconclusive.

Nothing here imports JAX; every number comes from the collection handed in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .aggregate import Interval, _poi_func, bootstrap
from .collect import Collection, final_scores
from .names import BASELINES, env_label, method_label

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE = "supported", "not supported", "inconclusive at this n"
NOT_MEASURED = "not measured here"

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
class Claim:
    claim: str
    measure: str
    value: str
    verdict: str
    detail: str = ""


def _base(env: str) -> str:
    return env.split("[", 1)[0]


def paired_poi(x_by_env: dict[str, np.ndarray], y_by_env: dict[str, np.ndarray], reps: int, seed: int) -> Interval:
    """P(X > Y) averaged over the envs both have, with its 95% stratified bootstrap CI.
    x_by_env / y_by_env: env -> (runs,) scores; each env is cut to its smallest run count."""
    envs = [e for e in x_by_env if e in y_by_env and len(x_by_env[e]) and len(y_by_env[e])]
    nx = min(len(x_by_env[e]) for e in envs)
    ny = min(len(y_by_env[e]) for e in envs)
    x = np.stack([np.asarray(x_by_env[e])[:nx] for e in envs], axis=1)
    y = np.stack([np.asarray(y_by_env[e])[:ny] for e in envs], axis=1)
    pts, ivs = bootstrap({"p": (x, y)}, _poi_func, reps, seed)
    return Interval(float(pts["p"][0]), float(ivs["p"][0, 0]), float(ivs["p"][1, 0]))


def beats_verdict(poi: Interval) -> str:
    if poi.lo > 0.5:
        return SUPPORTED
    if poi.hi < 0.5:
        return NOT_SUPPORTED
    return INCONCLUSIVE


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
    rule = SUCCESS_RULES.get(_base(env))
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


def _fmt_iv(iv: Interval, digits: int = 2) -> str:
    return f"{iv.point:.{digits}f} [{iv.lo:.{digits}f}, {iv.hi:.{digits}f}]"


def claims_table(coll: Collection, agg, reps: int = 2000, seed: int = 0,
                 speed: dict[str, dict[str, float]] | None = None) -> list[Claim]:
    """Every claim of the paper that this collection can test (see the module docstring).

    agg: compute_aggregates(coll) output (per-env IQM intervals, normalisation).
    speed: env -> bonus -> median env steps/s (from the runs' summaries), for the cost claim."""
    scores = final_scores(coll)
    envs = [e for e in coll.envs if "rfig" in scores.get(e, {}) and "none" in scores.get(e, {})]
    baselines = [m for m in BASELINES if m in coll.methods]
    claims: list[Claim] = []
    if envs:
        claims += _beats_ppo_claims(coll, scores, envs, reps, seed)
    if baselines:
        claims += _baseline_claims(coll, agg, scores, baselines, reps, seed)
    claims += _peak_claims(coll, agg)
    if speed:
        claims += _speed_claims(speed)
    return claims


def _beats_ppo_claims(coll: Collection, scores, envs: list[str], reps: int, seed: int) -> list[Claim]:
    """RFIG beats PPO: final score, area under the curve, success."""
    claims: list[Claim] = []
    poi = paired_poi({e: scores[e]["rfig"][1] for e in envs}, {e: scores[e]["none"][1] for e in envs}, reps, seed)
    per_env = []
    for i, e in enumerate(envs):
        p = paired_poi({e: scores[e]["rfig"][1]}, {e: scores[e]["none"][1]}, reps, seed + 10 + i)
        per_env.append(f"{env_label(e)} {p.point:.2f} [{p.lo:.2f}, {p.hi:.2f}] ({beats_verdict(p)})")
    claims.append(Claim("PPO+RFIG beats PPO (final score)", f"P(RFIG > PPO) over {len(envs)} envs",
                        _fmt_iv(poi), beats_verdict(poi), "; ".join(per_env)))
    auc_x, auc_y = {}, {}
    for e in envs:
        ax, ay = area_under_curve(coll, e, "rfig"), area_under_curve(coll, e, "none")
        if ax and ay:
            auc_x[e], auc_y[e] = np.array(list(ax.values())), np.array(list(ay.values()))
    if auc_x:
        poi_auc = paired_poi(auc_x, auc_y, reps, seed + 1)
        claims.append(Claim("PPO+RFIG beats PPO (area under the curve)",
                            f"P(RFIG > PPO) on the mean return over all windows, {len(auc_x)} envs",
                            _fmt_iv(poi_auc), beats_verdict(poi_auc)))
    solved_rows = []
    verdicts = []
    for e in envs:
        sx, sy = success_of_runs(coll, e, "rfig"), success_of_runs(coll, e, "none")
        if sx is None or sy is None or not len(sx) or not len(sy):
            continue
        lx, ly = wilson(int(sx.sum()), len(sx)), wilson(int(sy.sum()), len(sy))
        if lx[0] > ly[1]:
            v = SUPPORTED
        elif lx[1] < ly[0]:
            v = NOT_SUPPORTED
        else:
            v = INCONCLUSIVE
        verdicts.append(v)
        solved_rows.append(f"{env_label(e)}: RFIG {int(sx.sum())}/{len(sx)} [{lx[0]:.2f}, {lx[1]:.2f}] vs PPO "
                           f"{int(sy.sum())}/{len(sy)} [{ly[0]:.2f}, {ly[1]:.2f}] ({v})")
    if solved_rows:
        more, fewer = verdicts.count(SUPPORTED), verdicts.count(NOT_SUPPORTED)
        overall = (SUPPORTED if more and not fewer else NOT_SUPPORTED if fewer and not more else INCONCLUSIVE)
        claims.append(Claim("PPO+RFIG solves more seeds than PPO",
                            "seeds solved at the last window per env, Wilson 95% intervals apart",
                            f"more on {more}, fewer on {fewer}, no difference resolved on "
                            f"{len(verdicts) - more - fewer} of {len(verdicts)} envs", overall,
                            "; ".join(solved_rows)))
    return claims


def _baseline_claims(coll: Collection, agg, scores, baselines: list[str], reps: int, seed: int) -> list[Claim]:
    """Competitive with RND, VIME, #Explo on every env; no catastrophic failure."""
    claims: list[Claim] = []
    rows, worst, failures = [], [], []
    for e in coll.envs:
        cells = agg.per_env.get(e, {})
        if "rfig" not in cells:
            continue
        others = {b: cells[b]["iqm"] for b in baselines if b in cells}
        if not others:
            continue
        best_b = max(others, key=lambda b: others[b].point)
        r = cells["rfig"]["iqm"]
        competitive = r.hi >= others[best_b].lo
        below_all = all(r.hi < iv.lo for iv in others.values())
        below_ppo = "none" in cells and r.hi < cells["none"]["iqm"].lo
        rows.append(f"{env_label(e)}: RFIG {r.point:.3g} [{r.lo:.3g}, {r.hi:.3g}] vs best baseline "
                    f"{coll.label(best_b)} {others[best_b].point:.3g} [{others[best_b].lo:.3g}, "
                    f"{others[best_b].hi:.3g}]" + ("" if competitive else " (below)"))
        if not competitive:
            worst.append(env_label(e))
        if below_all or below_ppo:
            failures.append(env_label(e) + (" (below every baseline)" if below_all else " (below PPO)"))
    if rows:
        verdict = SUPPORTED if not worst else NOT_SUPPORTED
        claims.append(Claim("RFIG is competitive with RND, VIME and #Explo on every env",
                            "per env, RFIG's IQM CI reaches the best baseline's IQM CI",
                            f"{len(rows) - len(worst)} of {len(rows)} envs", verdict,
                            ("below on: " + ", ".join(worst) + ". " if worst else "") + "; ".join(rows)))
        claims.append(Claim("RFIG has no catastrophic failure",
                            "per env, RFIG's IQM CI entirely below every baseline's or below PPO's",
                            f"{len(failures)} of {len(rows)} envs", SUPPORTED if not failures else NOT_SUPPORTED,
                            ", ".join(failures) if failures else "none"))
    for j, b in enumerate(baselines):
        both = [e for e in coll.envs if "rfig" in scores.get(e, {}) and b in scores.get(e, {})]
        if both:
            p = paired_poi({e: scores[e]["rfig"][1] for e in both}, {e: scores[e][b][1] for e in both},
                           reps, seed + 100 + j)
            claims.append(Claim(f"RFIG against {coll.label(b)} (final score)",
                                f"P(RFIG > {coll.label(b)}) over {len(both)} envs", _fmt_iv(p),
                                {SUPPORTED: "RFIG better", NOT_SUPPORTED: f"{coll.label(b)} better"}.get(
                                    beats_verdict(p), "no difference resolved at this n"),
                                "the paper claims parity, not superiority: an interval containing 0.5 agrees"))
    return claims


def _peak_claims(coll: Collection, agg) -> list[Claim]:
    """RFIG peaks on Breakout and sparse-halfcheetah; VIME on sparse ant / walker2d."""
    claims: list[Claim] = []
    for method, targets in (("rfig", ("minatar_breakout", "sparse_halfcheetah")),
                            ("vime", ("sparse_ant", "sparse_walker2d"))):
        for target in targets:
            env = next((e for e in coll.envs if _base(e) == target), None)
            name = f"{coll.label(method)} peaks on {env_label(target)}"
            if env is None or method not in agg.per_env.get(env, {}):
                why = ("env not in this reproduction (README: sweep=paper)" if env is None
                       else f"no complete {coll.label(method)} runs on {env_label(env)}")
                claims.append(Claim(name, "highest IQM final score, CI above the others", "—", NOT_MEASURED, why))
                continue
            cells = agg.per_env[env]
            mine = cells[method]["iqm"]
            others = {b: c["iqm"] for b, c in cells.items() if b != method}
            top = max(cells, key=lambda b: cells[b]["iqm"].point)
            if top == method and all(mine.lo > iv.hi for iv in others.values()):
                v = SUPPORTED
            elif any(iv.lo > mine.hi for iv in others.values()):
                v = NOT_SUPPORTED
            else:
                v = INCONCLUSIVE
            ranking = ", ".join(f"{coll.label(b)} {cells[b]['iqm'].point:.3g}"
                                for b in sorted(cells, key=lambda b: -cells[b]["iqm"].point))
            claims.append(Claim(name, f"IQM final score on {env_label(env)}", _fmt_iv(mine, 3), v,
                                f"ranking by IQM: {ranking}"))
    return claims


def _speed_claims(speed: dict[str, dict[str, float]]) -> list[Claim]:
    """No significant execution-time difference from the NN bonuses."""
    claims: list[Claim] = []
    ratios, rows = [], []
    for e, by_bonus in speed.items():
        nn = [by_bonus[b] for b in BASELINES if b in by_bonus]
        if "rfig" in by_bonus and nn:
            r = by_bonus["rfig"] / float(np.median(nn))
            ratios.append(r)
            rows.append(f"{env_label(e)} {r:.2f}x")
    if ratios:
        lo, hi = min(ratios), max(ratios)
        verdict = SUPPORTED if lo >= 2 / 3 else NOT_SUPPORTED
        claims.append(Claim("RFIG's execution time is not significantly different from the NN bonuses'",
                            f"RFIG env steps/s / median of {', '.join(map(method_label, BASELINES))} (same runs, "
                            "8 vmapped seeds, one CPU core); supported when RFIG is nowhere more than 1.5x slower",
                            f"{float(np.median(ratios)):.2f}x (range {lo:.2f}-{hi:.2f}x)", verdict,
                            "; ".join(rows)))
    return claims


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

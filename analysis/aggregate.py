"""Statistics: per-point IQM / percentiles, normalisation, rliable aggregates.

Every bootstrap resamples *runs* (seeds) -- stratified by env via rliable --
never evaluation episodes: a run's windowed return is one number per eval
point, whatever number of episodes went into it.

Definitions used in every report:

* Final score of a run = mean of its last ``last_k`` evaluation points
  (default 1: the last window, which is what summary.json's final_return holds).
* ``minmax`` normalisation (default): per env, (x - lo) / (hi - lo) with lo / hi
  the min / max over every eval point of every counted run of every method in
  the report, so curves and final scores lie in [0, 1] (1 = the best window any
  run reached). It depends on which methods are in the report.
* ``reference`` normalisation (alias ``ppo``): per env, (x - lo) / (IQM of the
  reference's final scores - lo), lo as above, so 1 = the reference's final IQM.

Methods take their part by their bonus's declared role (rfig_exp.bonuses.ROLES),
never by name: the reference is the bonus of role reference (plain PPO), the
probability of improvement that of each bonus of role method (RFIG, or a user's).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.stats

from .bootstrap import bootstrap, stream_seed
from .collect import Collection, final_scores
from .names import BUILT_IN, describe_normalisation, normalisation_kind
from .names import NORMALISATIONS as NORMALISATIONS  # re-exported: code that lists them imports them from here

OVERALL_METRICS = ("IQM", "Median", "Mean", "Optimality gap")


# --------------------------------------------------------------------------- per-point statistics


def iqm(x, axis: int = 0) -> np.ndarray:
    """Interquartile mean (scipy trim_mean, 25% cut each side) along ``axis``, ignoring NaN.

    x: (..., S, ...) array; returns it without ``axis``; NaN where no finite value.
    Equal to ``scipy.stats.trim_mean(x, 0.25, axis)`` when x has no NaN.
    """
    x = np.moveaxis(np.asarray(x, float), axis, -1)
    finite = np.isfinite(x)
    if finite.all():
        if x.shape[-1] == 0:
            return np.full(x.shape[:-1], np.nan)
        return np.asarray(scipy.stats.trim_mean(x, 0.25, axis=-1))
    out = np.full(x.shape[:-1], np.nan)
    for idx in np.ndindex(out.shape):
        v = x[idx][finite[idx]]
        if v.size:
            out[idx] = scipy.stats.trim_mean(v, 0.25)
    return out


def percentiles(x, q=(25, 75), axis: int = 0) -> np.ndarray:
    """NaN-ignoring percentiles (numpy's linear method). Returns (len(q), ...rest)."""
    x = np.asarray(x, float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns -> NaN, on purpose
        return np.nanpercentile(x, q, axis=axis)


def curve_stats(values: np.ndarray) -> dict[str, np.ndarray]:
    """Per-eval-point summary of one method in one env.

    values: (S, T) returns. Returns {"iqm", "p25", "p75", "n"}, each (T,);
    n counts the seeds with a value at that point.
    """
    values = np.asarray(values, float)
    p25, p75 = percentiles(values, (25, 75), axis=0)
    return {"iqm": iqm(values, axis=0), "p25": p25, "p75": p75,
            "n": np.isfinite(values).sum(axis=0)}


# --------------------------------------------------------------------------- normalisation


@dataclass
class Normalisation:
    """Per-env affine map x -> (x - lo[env]) / (hi[env] - lo[env]). kind: a canonical name (no alias);
    reference: the label of the method the ``reference`` normalisation divides by."""

    kind: str
    lo: dict[str, float]
    hi: dict[str, float]
    excluded: dict[str, str] = field(default_factory=dict)  # env -> why it cannot be normalised
    reference: str = field(default_factory=lambda: BUILT_IN.role_label("reference"))

    @property
    def description(self) -> str:
        return describe_normalisation(self.kind, self.reference)

    def apply(self, env: str, x) -> np.ndarray:
        return (np.asarray(x, float) - self.lo[env]) / (self.hi[env] - self.lo[env])

    def usable(self, env: str) -> bool:
        return env in self.lo and env not in self.excluded


def fit_normalisation(coll: Collection, scores: dict, kind: str = "minmax",
                      methods: Sequence[str] | None = None) -> Normalisation:
    """Fit lo / hi per env (see the module docstring). scores: final_scores() output. methods: the
    methods whose runs set the scale (default: every method of ``coll``)."""
    kind = normalisation_kind(kind)
    unknown = sorted(set(methods or ()) - set(coll.methods))
    if unknown:
        raise ValueError(f"methods: {', '.join(unknown)} not in the collection; valid: {', '.join(coll.methods)}")
    lo, hi, excluded = {}, {}, {}
    reference = coll.names.role_label("reference", {coll.bonus_of(m) for m in coll.methods})
    for env in coll.envs:
        ed = coll.env_data[env]
        vals = np.concatenate([c.values for b in (coll.methods if methods is None else methods)
                               for c in ed.curves.get(b, []) if c.used] or [np.zeros(0)])
        counted = vals.size > 0
        vals = vals[np.isfinite(vals)]
        if vals.size == 0:
            excluded[env] = ("no episode finished in any counted run" if counted else
                             "no counted run: every run here is incomplete or failed (see the Data section)")
            continue
        lo[env] = float(vals.min())
        if kind == "minmax":
            hi[env] = float(vals.max())
        else:
            top = _reference_top(coll, scores, env)
            if isinstance(top, str):
                excluded[env] = top
                continue
            hi[env] = top
        if not hi[env] > lo[env]:
            excluded[env] = _degenerate(kind, lo[env], hi[env], reference)
    return Normalisation(kind, lo, hi, excluded, reference)


def _reference_top(coll: Collection, scores: dict, env: str) -> float | str:
    """The reference's final IQM in ``env`` (1 on the reference normalisation's scale), or why there is
    none. The reference: the method that stands for the report's first bonus of role reference."""
    here = coll.role_methods("reference")
    bonus, ref = here[0] if here else ((*coll.names.with_role("reference"), "reference")[0], None)
    label = coll.names.label(bonus)
    if ref is not None and ref in scores.get(env, {}):
        return float(iqm(scores[env][ref][1]))
    n = sum(coll.bonus_of(m) == bonus for m in coll.methods)
    return (f"no {label} (bonus={bonus}) runs in this report to normalise by" if not n else
            f"{label} has {n} variants and none at its defaults: none to normalise by" if not ref
            else f"no {label} final scores to normalise by ({no_score_reason(coll, env, ref)})")


def _degenerate(kind: str, lo: float, hi: float, reference: str) -> str:
    # Every run scoring the same (all -200 on MountainCar) is data, not a missing score: say so.
    if kind == "minmax":
        return (f"every return of every counted run is {lo:.4g}: max - min is 0, so the min-max normalised "
                "score (x - min) / (max - min) is undefined")
    return (f"{reference}'s final IQM ({hi:.4g}) is not above the lowest return ({lo:.4g}), so the "
            f"{reference}-normalised score (x - min) / (IQM - min) is undefined")


def no_score_reason(coll: Collection, env: str, method: str, last_k: int = 1) -> str:
    """Why ``method`` has no final score in ``env``, from its runs there: none at all, or how many
    are incomplete, failed, unreadable or finished no episode in their last ``last_k`` windows."""
    runs = [r for r in coll.runs if r.env == env and r.method == method]
    if not runs:
        return "no runs here"
    curves = coll.env_data[env].curves.get(method, []) if env in coll.env_data else []
    counts = {"incomplete": sum(not r.complete for r in runs),
              "unreadable": sum(r.complete and r.metrics is None for r in runs),
              "failed (excluded)": sum(c.failed and not c.incomplete and not c.scored for c in curves),
              f"with no finished episode in the last {last_k} window(s)":
                  sum(c.scored and not np.isfinite(c.values[-last_k:]).any() for c in curves)}
    parts = [f"{k} {what}" for what, k in counts.items() if k]
    other = len(runs) - sum(counts.values())
    if other > 0:
        parts.append(f"{other} with no evaluation point on the env's grid")
    return f"{len(runs)} run(s) here, none with a final score: {', '.join(parts)}"


# --------------------------------------------------------------------------- bootstrap


@dataclass
class Interval:
    """A point estimate with its bootstrap CI."""

    point: float
    lo: float
    hi: float

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2


# The bootstrap calls these thousands of times; scipy's trim_mean and
# mannwhitneyu spend most of their time in argument handling, so these are
# exact vectorised equivalents of rliable.metrics (tests check the equality).


def _iqm_cols(x: np.ndarray) -> np.ndarray:
    """IQM of each column of a 2-D array, as scipy.stats.trim_mean(x, 0.25, axis=0)."""
    n = x.shape[0]
    k = int(0.25 * n)
    return np.sort(x, axis=0)[k:n - k].mean(axis=0)


def fast_iqm(x: np.ndarray) -> float:
    """rliable.metrics.aggregate_iqm (IQM over all runs and tasks)."""
    return float(_iqm_cols(np.asarray(x, float).reshape(-1, 1))[0])


def fast_probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """rliable.metrics.probability_of_improvement: mean over tasks of
    P(X > Y) + 0.5 P(X = Y) over all run pairs (= Mann-Whitney U / (n_x n_y))."""
    gt = (x[:, None, :] > y[None, :, :]).mean(axis=(0, 1))
    eq = (x[:, None, :] == y[None, :, :]).mean(axis=(0, 1))
    return float(np.mean(gt + 0.5 * eq))


def _per_env_func(x: np.ndarray) -> np.ndarray:
    # x: (runs, 1) -> [mean, IQM, median] over runs, from one sort. (The median
    # is over runs: rliable's aggregate_median would be the median of task means.)
    s = np.sort(x, axis=None)
    n = s.size
    k = int(0.25 * n)
    return np.array([s.mean(), s[k:n - k].mean(), 0.5 * (s[(n - 1) // 2] + s[n // 2])])


def _overall_func(x: np.ndarray) -> np.ndarray:
    # = [metrics.aggregate_iqm, aggregate_median, aggregate_mean, aggregate_optimality_gap(gamma=1)](x)
    task_means = x.mean(axis=0)
    return np.array([fast_iqm(x), np.median(task_means), np.mean(task_means), 1.0 - np.mean(np.minimum(x, 1.0))])


def _curve_func(x: np.ndarray) -> np.ndarray:
    # x: (runs, tasks, T) -> [metrics.aggregate_iqm(x[..., t]) for t in range(T)]
    return _iqm_cols(x.reshape(-1, x.shape[-1]))


def _poi_func(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.array([fast_probability_of_improvement(x, y)])


# --------------------------------------------------------------------------- aggregates


@dataclass
class Aggregates:
    """Everything the report's figures and tables need.

    scores: env -> method -> (seeds (S,), raw final scores (S,)).
    per_env: env -> method -> {"n": int, "mean"/"iqm"/"median": Interval}.
    overall: method -> metric name (OVERALL_METRICS) -> Interval, over agg_envs
      with runs_per_method[bonus] runs per env.
    curve_x: (T',) eval points (env steps, or fraction of training when envs
      differ: see curve_xlabel); curves: method -> (point, lo, hi), each (T',).
    poi: list of (x method, y method, Interval, number of envs).
    spread: method -> median over envs of the IQR of normalised final scores.
    """

    last_k: int
    reps: int
    seed: int
    normalisation: Normalisation
    scores: dict
    per_env: dict
    agg_envs: list[str]
    agg_methods: list[str]
    runs_per_method: dict[str, int]
    overall: dict
    curve_x: np.ndarray
    curve_xlabel: str
    curves: dict
    poi: list
    spread: dict[str, float]
    notes: list[str]


def _take_runs(scores_env_bonus, n: int):
    seeds, vals = scores_env_bonus
    order = np.argsort(seeds, kind="stable")[:n]
    return seeds[order], vals[order]


def compute_aggregates(coll: Collection, reps: int = 2000, last_k: int = 1, normalisation: str = "minmax",
                       seed: int = 0, curve_points: int = 40, ci: float = 0.95) -> Aggregates:
    """Run every bootstrap of the report (see the module docstring for definitions)."""
    if reps < 1:
        raise ValueError("reps must be >= 1")
    notes: list[str] = []
    scores = final_scores(coll, last_k)
    norm = fit_normalisation(coll, scores, normalisation)
    for env, why in norm.excluded.items():
        notes.append(f"{env}: left out of cross-env aggregates ({why}).")

    per_env: dict = {}
    for env in coll.envs:
        sd = {b: v[:, None] for b, (_, v) in scores[env].items()}
        per_env[env] = {}
        if not sd:
            continue
        pts, ivs = bootstrap(sd, _per_env_func, reps, stream_seed(seed, "per-env", env), ci)
        for b in sd:
            per_env[env][b] = {"n": len(sd[b]),
                               **{name: Interval(float(pts[b][k]), float(ivs[b][0, k]), float(ivs[b][1, k]))
                                  for k, name in enumerate(("mean", "iqm", "median"))}}

    # Cross-env aggregates need one (runs, envs) matrix per method: only envs
    # where every method has scores, and the same run count across those envs.
    methods = [b for b in coll.methods if any(b in scores[e] for e in coll.envs)]
    agg_envs = [e for e in coll.envs if norm.usable(e) and all(b in scores[e] for b in methods)]
    for e in coll.envs:
        if e not in agg_envs and norm.usable(e):
            notes.append(_lacking_note(coll, scores, e, methods, last_k))
    runs_per_method: dict[str, int] = {}
    overall: dict = {}
    curves: dict = {}
    curve_x = np.zeros(0)
    curve_xlabel = "Environment steps"
    normed: dict[str, np.ndarray] = {}
    if agg_envs and methods:
        for b in methods:
            counts = {e: len(scores[e][b][0]) for e in agg_envs}
            n = min(counts.values())
            runs_per_method[b] = n
            if len(set(counts.values())) > 1:
                more = ", ".join(f"{e} ({k})" for e, k in counts.items() if k > n)
                notes.append(f"{coll.label(b)}: {n} runs per env in cross-env aggregates (the lowest seeds); "
                             f"envs with more runs: {more}.")
            normed[b] = np.stack([norm.apply(e, _take_runs(scores[e][b], n)[1]) for e in agg_envs], axis=1)
        pts, ivs = bootstrap(normed, _overall_func, reps, stream_seed(seed, "overall"), ci)
        for b in methods:
            overall[b] = {name: Interval(float(pts[b][k]), float(ivs[b][0, k]), float(ivs[b][1, k]))
                          for k, name in enumerate(OVERALL_METRICS)}
        curve_x, curve_xlabel, curves = _aggregate_curves(coll, scores, norm, agg_envs, methods, runs_per_method,
                                                          reps, stream_seed(seed, "curves"), ci, curve_points, last_k,
                                                          notes)
    elif coll.envs:
        notes.append("No method has a final score in any env (see the Data section): no cross-env aggregates."
                     if not methods else
                     "No env's final scores can be normalised (each env's reason above): no cross-env aggregates."
                     if not any(norm.usable(e) for e in coll.envs) else
                     "No env has final scores for every method: no cross-env aggregates.")

    poi = _method_poi(coll, scores, methods, reps, stream_seed(seed, "poi"), ci, notes, last_k)

    spread = {}
    for b in methods:
        iqrs = []
        for e in coll.envs:
            if norm.usable(e) and b in scores[e] and len(scores[e][b][1]) >= 2:
                q25, q75 = np.percentile(norm.apply(e, scores[e][b][1]), [25, 75])
                iqrs.append(q75 - q25)
        spread[b] = float(np.median(iqrs)) if iqrs else float("nan")

    return Aggregates(last_k, reps, seed, norm, scores, per_env, agg_envs, methods, runs_per_method, overall,
                      curve_x, curve_xlabel, curves, poi, spread, notes)


def _lacking_note(coll: Collection, scores, env: str, methods: list[str], last_k: int) -> str:
    """Why ``env`` is left out of the cross-env aggregates: the methods without final scores there.
    A method without runs here is named alone (the Data section lists the missing runs); one whose
    runs are here says why none of them scored."""
    lacking = [b for b in methods if b not in scores[env]]
    ran = {b for b in lacking if any(r.env == env and r.method == b for r in coll.runs)}
    bare = [coll.label(b) for b in lacking if b not in ran]
    told = [f"{coll.label(b)} ({no_score_reason(coll, env, b, last_k)})" for b in lacking if b in ran]
    return (f"{env}: left out of cross-env aggregates (no final scores for "
            f"{'; '.join(([', '.join(bare)] if bare else []) + told)}).")


def _method_poi(coll: Collection, scores, methods: list[str], reps: int, seed: int, ci: float,
                notes: list[str], last_k: int = 1) -> list[tuple]:
    """P(X > other) over the envs where both have scores, for every other method, X each method that
    stands for a bonus of role method (the proposed one: RFIG, or a user's bonus declared so)."""
    poi = []
    proposed = coll.role_methods("method")
    for bonus, x in proposed:
        if x is None or x not in methods:
            if methods:
                notes.append(_why_no_poi(coll, bonus, x, last_k))
            continue
        for b in (m for m in methods if m != x):
            envs = [e for e in coll.envs if x in scores[e] and b in scores[e]]
            if not envs:
                why = "; ".join(f"{e}: {coll.label(m)} {no_score_reason(coll, e, m, last_k)}"
                                for e in coll.envs for m in (x, b) if m not in scores[e])
                notes.append(f"P({coll.label(x)} > {coll.label(b)}): no env where both have final scores ({why}).")
                continue
            nx = min(len(scores[e][x][0]) for e in envs)
            ny = min(len(scores[e][b][0]) for e in envs)
            # Raw scores: P(X > Y) per env is invariant to the per-env normalisation.
            xs = np.stack([_take_runs(scores[e][x], nx)[1] for e in envs], axis=1)
            ys = np.stack([_take_runs(scores[e][b], ny)[1] for e in envs], axis=1)
            # Drawn from the other method's named seed alone: a user's method of this role gets
            # exactly the proposed method's numbers on the same runs.
            pts, ivs = bootstrap({b: (xs, ys)}, _poi_func, reps, seed, ci)
            poi.append((x, b, Interval(float(pts[b][0]), float(ivs[b][0, 0]), float(ivs[b][1, 0])),
                        len(envs)))
    if not proposed and methods:
        label = coll.names.role_label("method")
        notes.append(f"No {label} runs in this report: no probability of improvement (of {label} over each other "
                     "method).")
    return poi


def _why_no_poi(coll: Collection, bonus: str, x: str | None, last_k: int) -> str:
    """Why the report has no probability of improvement of ``bonus`` (one of role method), whose
    method ``x`` (None: no variant at its defaults) has no final score."""
    label = coll.names.label(bonus)
    variants = [m for m in coll.methods if coll.bonus_of(m) == bonus]
    if x is None:
        return (f"{label} has {len(variants)} variants here ({', '.join(coll.label(m) for m in variants)}) and none "
                f"runs its defaults (no override beyond the common ones): no probability of improvement, which "
                f"compares one {label} with each other method; choose one with --methods.")
    why = "; ".join(f"{e}: {no_score_reason(coll, e, x, last_k)}" for e in coll.envs)
    return f"{label} has no final score in any env ({why}): no probability of improvement."


def poi_label(coll: Collection, poi: list[tuple]) -> str:
    """Whose probability of improvement ``poi`` holds, as a caption names it: its bonuses' labels."""
    return " and ".join(dict.fromkeys(coll.label(coll.bonus_of(x)) for x, *_ in poi))


def _aggregate_curves(coll, scores, norm, agg_envs, methods, runs_per_method, reps, seed, ci, curve_points,
                      last_k, notes):
    """IQM of normalised returns across envs and runs at each eval point, with CIs."""
    grids = [coll.env_data[e].steps for e in agg_envs]
    same = all(len(g) == len(grids[0]) and np.array_equal(g, grids[0]) for g in grids)
    if same:
        x = grids[0].astype(float)
        xlabel = "Environment steps"

        def on_grid(e, v):
            return v
    else:
        # Envs on different step grids: put every env on the shortest grid,
        # expressed as a fraction of that env's last eval point.
        shortest = min(grids, key=len)
        x = shortest / shortest[-1]
        xlabel = "Fraction of training (env steps / final env steps)"
        notes.append("Envs have different env_steps grids: the aggregate curve is on a common "
                     f"fraction-of-training grid of {len(x)} points (linear interpolation within each env).")

        def on_grid(e, v):
            g = coll.env_data[e].steps.astype(float)
            return np.stack([np.interp(x * g[-1], g, row, left=np.nan, right=np.nan) for row in v])

    data = {}
    for b in methods:
        per_env = []
        for e in agg_envs:
            want = set(_take_runs(scores[e][b], runs_per_method[b])[0].tolist())
            rows = np.stack([c.values for c in coll.env_data[e].curves[b] if c.scored and c.seed in want])
            per_env.append(norm.apply(e, on_grid(e, rows)))
        data[b] = np.stack(per_env, axis=1)  # (runs, envs, T)
    keep = np.all([np.isfinite(d).all(axis=(0, 1)) for d in data.values()], axis=0)
    if not keep.all():
        notes.append(f"Aggregate curve: {int((~keep).sum())} early eval point(s) dropped because some run had "
                     "finished no episode yet.")
    idx = np.nonzero(keep)[0]
    if len(idx) > curve_points:
        idx = idx[np.unique(np.round(np.linspace(0, len(idx) - 1, curve_points)).astype(int))]
    if len(idx) == 0:
        return np.zeros(0), xlabel, {}
    data = {b: d[..., idx] for b, d in data.items()}
    pts, ivs = bootstrap(data, _curve_func, reps, seed, ci)
    return x[idx], xlabel, {b: (np.asarray(pts[b]), ivs[b][0], ivs[b][1]) for b in methods}

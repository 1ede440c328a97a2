"""Read a results tree into aligned arrays, and say what is missing or broken.

The results tree is the results contract of :mod:`rfig_exp.results.contract` (its layout
``<results_dir>/<experiment>/<env>/<bonus>/<variant>/seed_<k>/``, its file names and its
one rule of completeness); the runs are read by analysis.runs and aligned by
analysis.align. A method is a (bonus, variant) pair: see analysis.methods for its key,
label and colour.

Rules applied to the ``episode_return`` column (documented in every report):

* A window with NaN return and ``episodes_finished == 0`` is *empty*, not a
  failure: it takes the previous window's return (forward fill). Leading empty
  windows have nothing to copy and stay NaN (plots start where data starts).
* A NaN / inf return in a window where episodes did finish (or where the
  ``episodes_finished`` column is absent, so emptiness cannot be shown) is a
  *failed window*; an evaluation point of the env's grid absent from a run's
  metrics.csv is a *missing window*. Either makes the run a *failed seed*:
  excluded from every statistic by default, or kept with those windows
  forward-filled when ``keep_failed=True`` -- both reported, never silent.
* Runs that are not complete (``rfig_exp.results.contract.incomplete_reason``: no
  ``summary.json``, a status other than ``complete``, or fewer whole rows in
  ``metrics.csv`` than its windows) are *incomplete*: reported, excluded by
  default; ``include_incomplete=True`` adds their partial curves to the
  per-env curves only (never to final scores).

Alignment: each env gets one reference grid of ``env_steps`` -- the grid shared
by most complete runs (ties: the longer one). Runs on a sub/super-set of it are
matched point by point; runs on a different grid are linearly interpolated at
the reference points inside their own range (never extrapolated), and every
such run is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rfig_exp.config.variants import BASE

from .align import EnvData, RunCurve, align_run, clean_steps, place_on_grid, reference_grid
from .issues import AnalysisError, Issue, fmt_list
from .markdown import render_markdown
from .methods import Method, build_methods, format_overrides, reference_method
from .names import BUILT_IN, Names, env_label, env_sort_key, sort_envs
from .runs import Run, find_experiments, resolve_variant_overrides, scan_runs, split_env_options, summary_identity


@dataclass
class Collection:
    """A whole experiment, collected.

    envs: ordered names (paper order) of envs with at least one run after
    filtering; methods: ordered method keys (see analysis.methods: the bonus
    name for a bonus's base variant, ``<bonus>/<variant>`` for the others).
    env_data: env -> EnvData. method_info: key -> Method (label, colour,
    overrides). common_overrides: overrides shared by every selected method.
    names: how the report names its bonuses (those of users' own modules too).
    """

    results_dir: Path
    experiment: str
    envs: list[str]
    methods: list[str]
    env_data: dict[str, EnvData]
    runs: list[Run]
    issues: list[Issue]
    include_incomplete: bool = False
    keep_failed: bool = False
    requested_envs: list[str] | None = None
    requested_bonuses: list[str] | None = None
    method_info: dict[str, Method] = field(default_factory=dict)
    common_overrides: dict = field(default_factory=dict)
    requested_variants: list[str] | None = None
    requested_methods: list[str] | None = None
    names: Names = BUILT_IN

    def label(self, method: str) -> str:
        """Display label of a method key (the bonus label for unknown keys)."""
        m = self.method_info.get(method)
        return m.label if m else self.names.label(method)

    def colour(self, method: str) -> str:
        m = self.method_info.get(method)
        return m.colour if m else self.names.colour(method)

    def linestyle(self, method: str):
        m = self.method_info.get(method)
        return m.linestyle if m else "-"

    def bonus_of(self, method: str) -> str:
        m = self.method_info.get(method)
        return m.bonus if m else method

    def role_methods(self, role: str) -> list[tuple[str, str | None]]:
        """(bonus, the method that stands for it: methods.reference_method) for each bonus of this
        report that declares ``role`` (analysis.names), in report order."""
        bonuses = self.names.of_role(role, {self.bonus_of(m) for m in self.methods})
        return [(b, reference_method(list(self.method_info.values()), b, self.common_overrides)) for b in bonuses]

    def method_key(self, bonus: str | None, variant: str | None) -> str | None:
        for m in self.method_info.values():
            if m.bonus == bonus and m.variant == (variant or BASE):
                return m.key
        return None

    def runs_of(self, method: str) -> list[Run]:
        return [r for r in self.runs if r.method == method]

    def curves(self) -> list[RunCurve]:
        return [c for e in self.envs for b in self.methods for c in self.env_data[e].curves.get(b, [])]

    def to_array(self) -> tuple[np.ndarray, list[str], list[str], np.ndarray, np.ndarray]:
        """Dense (method, env, seed, eval point) array of used runs' returns.

        Returns (values (M, E, S, T), methods, envs, seeds (S,), steps (T,));
        absent (method, env, seed) cells are NaN. Needs every env on the same
        grid (otherwise the eval axis means different things): ValueError.
        """
        grids = {e: tuple(self.env_data[e].steps) for e in self.envs}
        if len(set(grids.values())) > 1:
            raise ValueError(
                "envs have different env_steps grids; use EnvData.returns per env: "
                + ", ".join(f"{e}: {len(g)} points to {g[-1] if g else 0}" for e, g in grids.items())
            )
        steps = np.asarray(next(iter(grids.values())), dtype=np.int64) if grids else np.zeros(0, np.int64)
        seeds = sorted({c.seed for c in self.curves() if c.used})
        out = np.full((len(self.methods), len(self.envs), len(seeds), len(steps)), np.nan)
        for i, m in enumerate(self.methods):
            for j, e in enumerate(self.envs):
                for c in self.env_data[e].used(m):
                    out[i, j, seeds.index(c.seed)] = c.values
        return out, list(self.methods), list(self.envs), np.asarray(seeds, np.int64), steps

    def column(self, env: str, method: str, column: str, scored: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Any numeric metrics.csv column for the used runs (``scored``: only the
        runs that get a final score, i.e. complete ones), on the env grid.

        Returns (seeds (S,), values (S, T)). No forward fill here (only returns
        have the empty-window rule); points a run lacks are NaN; runs on another
        grid are interpolated like their returns.
        """
        ed = self.env_data[env]
        seeds, rows = [], []
        for c in ed.used(method):
            if scored and not c.scored:
                continue
            df = c.run.metrics
            seeds.append(c.seed)
            if df is None or column not in df.columns:
                rows.append(np.full(len(ed.steps), np.nan))
                continue
            own_steps, own = clean_steps(df, column)
            vals, _, _, _ = place_on_grid(own_steps, own, ed.steps)
            rows.append(vals)
        arr = np.stack(rows) if rows else np.zeros((0, len(ed.steps)))
        return np.asarray(seeds, np.int64), arr

    def issues_of(self, *kinds: str) -> list[Issue]:
        return [i for i in self.issues if i.kind in kinds]


# --------------------------------------------------------------------------- entry point


def _split(arg) -> list[str] | None:
    if arg is None:
        return None
    items = arg.split(",") if isinstance(arg, str) else list(arg)
    items = [i.strip() for i in items if i and i.strip()]
    return items or None


def _split_known(arg, known) -> list[str] | None:
    """Like _split, but names may themselves hold commas (variant folders
    ``a=1,b=2``, labels ``RFIG (a=1, b=2)``): the longest run of comma-joined
    pieces that is a known name is taken as one item; a list is taken as is."""
    if arg is None or not isinstance(arg, str):
        return _split(arg)
    pieces = arg.split(",")
    known = set(known)
    out, i = [], 0
    while i < len(pieces):
        for j in range(len(pieces), i, -1):
            cand = ",".join(pieces[i:j]).strip()
            if cand in known:
                out.append(cand)
                i = j
                break
        else:
            if pieces[i].strip():
                out.append(pieces[i].strip())
            i += 1
    return out or None


def resolve_experiment(results_dir: str | Path, experiment: str | None) -> str:
    """The experiment to analyse; AnalysisError with the choices otherwise."""
    root = Path(results_dir)
    if not root.exists():
        raise AnalysisError(f"results directory {root} does not exist")
    if not root.is_dir():
        raise AnalysisError(f"results path {root} is not a directory")
    found = find_experiments(root)
    if experiment is not None:
        if experiment not in found:
            listing = ", ".join(found) if found else "none"
            raise AnalysisError(f"no runs for experiment {experiment!r} under {root} "
                                f"(expected {root}/{experiment}/<env>/<bonus>/<variant>/seed_<k>/); "
                                f"experiments found: {listing}")
        return experiment
    if not found:
        raise AnalysisError(f"no runs found under {root} "
                            f"(expected {root}/<experiment>/<env>/<bonus>/<variant>/seed_<k>/)")
    if len(found) > 1:
        raise AnalysisError(f"{len(found)} experiments under {root}; pick one with --experiment: " + ", ".join(found))
    return found[0]


def collect(results_dir: str | Path, experiment: str | None = None, envs=None, bonuses=None,
            include_incomplete: bool = False, keep_failed: bool = False, variants=None,
            methods=None) -> Collection:
    """Collect one experiment.

    envs / bonuses / variants: optional filters (list or comma-separated
    string) on env names, bonus names and variant folder names. methods:
    method keys (``rfig``, ``rfig/bonus.lengthscale=2.0``), labels as they
    would read without this filter (``RFIG``, ``RFIG (lengthscale=2)``), or
    bonus names (every variant of that bonus). Requested names without runs
    are reported as issues; nothing left raises AnalysisError.
    """
    experiment = resolve_experiment(results_dir, experiment)
    want_envs, want_bonuses = _split(envs), _split(bonuses)
    issues: list[Issue] = []
    all_runs = scan_runs(results_dir, experiment)
    names = _names(all_runs, issues)
    want_variants = _split_known(variants, {r.variant for r in all_runs})
    runs = _select_runs(all_runs, experiment, want_envs, want_bonuses, want_variants, issues)
    resolve_variant_overrides(runs, issues)
    split_env_options(runs)
    runs, want_methods = _select_methods(runs, methods, experiment, issues, names)
    if not runs:
        raise AnalysisError(f"no runs in experiment {experiment!r} match envs={want_envs} bonuses={want_bonuses} "
                            f"variants={want_variants} methods={want_methods}; "
                            f"present envs: {', '.join(sort_envs({r.env for r in all_runs}))}; "
                            f"bonuses: {', '.join(names.sort({r.bonus for r in all_runs}))}; "
                            f"variants: {', '.join(sorted({r.variant for r in all_runs}))}")
    groups = _method_groups(runs)
    _report_variant_clashes(runs, groups, issues)
    method_list, common = build_methods(groups, names)
    key_of = {(m.bonus, m.variant): m.key for m in method_list}
    for r in runs:
        r.method = key_of[(r.bonus, r.variant)]
    env_names = sort_envs({r.env for r in runs})
    method_keys = [m.key for m in method_list]
    env_data = {env: _env_data(env, [r for r in runs if r.env == env], method_keys, include_incomplete, keep_failed,
                               issues) for env in env_names}
    _report_missing_seeds(runs, env_names, method_list, issues)
    return Collection(Path(results_dir), experiment, env_names, method_keys, env_data, runs, issues,
                      include_incomplete, keep_failed, want_envs, want_bonuses,
                      {m.key: m for m in method_list}, common, want_variants, want_methods, names)


def _select_runs(all_runs: list[Run], experiment: str, want_envs, want_bonuses, want_variants,
                 issues: list[Issue]) -> list[Run]:
    """The runs the env / bonus / variant filters keep; a requested name without runs is an issue."""
    for kind, want, have in (("missing_env", want_envs, {r.env for r in all_runs}),
                             ("missing_bonus", want_bonuses, {r.bonus for r in all_runs}),
                             ("missing_variant", want_variants, {r.variant for r in all_runs})):
        for name in want or []:
            if name not in have:
                what = kind.split("_")[1]
                issues.append(Issue(kind, "error", name if what == "env" else None, name if what == "bonus" else None,
                                    None, f"requested {what} {name!r} has no runs in experiment {experiment!r} "
                                          f"(present: {', '.join(sorted(have))})", "nothing to show",
                                    name if what == "variant" else None))
    return [r for r in all_runs
            if (want_envs is None or r.env in want_envs) and (want_bonuses is None or r.bonus in want_bonuses)
            and (want_variants is None or r.variant in want_variants)]


def _method_groups(runs: list[Run]) -> dict[tuple[str, str], dict]:
    """(bonus, variant) -> the overrides of its first run."""
    out: dict[tuple[str, str], dict] = {}
    for r in runs:
        out.setdefault((r.bonus, r.variant), r.variant_overrides)
    return out


def _select_methods(runs: list[Run], methods, experiment: str, issues: list[Issue], names: Names):
    """(the runs of the requested methods, the requests as read); every run without a request."""
    want_methods = _split(methods)
    if methods is None or not runs:
        return runs, want_methods
    before, _ = build_methods(_method_groups(runs), names)
    labels_before = {m.key: m.label for m in before}
    want_methods = _split_known(methods, [m.key for m in before] + [m.label for m in before])
    if not want_methods:
        return runs, want_methods
    keep: set[tuple[str, str]] = set()
    for item in want_methods:
        hit = [m for m in before if item in (m.key, labels_before.get(m.key))]
        if not hit:  # a bonus name (or its label): every variant of that bonus
            hit = [m for m in before if item in (m.bonus, names.label(m.bonus))]
        if not hit:
            issues.append(Issue("missing_method", "error", None, None, None,
                                f"requested method {item!r} matches nothing in experiment {experiment!r} "
                                f"(present: {', '.join(m.label for m in before)})", "nothing to show"))
        keep |= {(m.bonus, m.variant) for m in hit}
    return [r for r in runs if (r.bonus, r.variant) in keep], want_methods


def _report_variant_clashes(runs: list[Run], groups: dict[tuple[str, str], dict], issues: list[Issue]) -> None:
    """Two envs may hold the same variant folder name with different variant.yaml (never from
    the launcher, but a hand-edited tree): the first one wins, reported."""
    reported = set()
    for r in runs:
        first = groups[(r.bonus, r.variant)]
        if (format_overrides(r.variant_overrides) != format_overrides(first)
                and (r.env, r.bonus, r.variant) not in reported):
            reported.add((r.env, r.bonus, r.variant))
            issues.append(Issue("variant", "warning", r.env, r.bonus, None,
                                f"overrides {format_overrides(r.variant_overrides)} differ from those of the same "
                                f"variant elsewhere ({format_overrides(first)})",
                                "the method is labelled by the first", r.variant))


def _env_data(env: str, env_runs: list[Run], method_keys: list[str], include_incomplete: bool, keep_failed: bool,
              issues: list[Issue]) -> EnvData:
    """The runs of one env on its reference grid, each reported as it is used or left out."""
    ref, note = reference_grid(env_runs)
    if note:
        issues.append(Issue("grid", "warning", env, None, None, note, "other runs matched or interpolated"))
    ed = EnvData(env, ref)
    for r in sorted(env_runs, key=lambda r: (method_keys.index(r.method), r.seed)):
        if r.complete:
            summary_identity(r, issues)
        else:
            why = r.load_error if r.summary is not None else "no summary.json (crashed or still running)"
            if r.metrics is None and r.summary is None and r.load_error:
                why += f"; {r.load_error}"
            shown = include_incomplete and r.metrics is not None
            issues.append(Issue("incomplete", "warning" if shown else "error", env, r.bonus, r.seed, why,
                                "partial curve shown, no final score" if shown else "excluded", r.variant))
        if r.metrics is None:
            if r.complete:  # (an incomplete run's reason is already in its "incomplete" issue)
                issues.append(Issue("unreadable", "error", env, r.bonus, r.seed, r.load_error or "no metrics",
                                    "excluded", r.variant))
            continue
        if len(ref) == 0:
            continue
        n0 = len(issues)
        c = align_run(r, ref, keep_failed, issues)
        for i in issues[n0:]:
            i.variant = r.variant
        c.used = (not c.incomplete or include_incomplete) and (not c.failed or keep_failed)
        c.scored = c.used and not c.incomplete
        ed.curves.setdefault(r.method, []).append(c)
    return ed


def _names(runs: list[Run], issues: list[Issue]) -> Names:
    """The report's names: the built-in bonuses' and each of a user's own module (its runs'
    ``bonus.module``), or an issue saying that it is shown by its name."""
    modules = {r.bonus: str(r.config["bonus"]["module"]) for r in runs if isinstance(r.config, dict)
               and isinstance(r.config.get("bonus"), dict) and r.config["bonus"].get("module")}
    names, unknown = BUILT_IN.with_user_bonuses(modules)
    for bonus, why in unknown.items():
        issues.append(Issue("bonus", "warning", None, bonus, None, why, "shown by its name"))
    return names


def _report_missing_seeds(runs: list[Run], env_names: list[str], method_list: list[Method],
                          issues: list[Issue]) -> None:
    """Every (env, method) should have every seed seen in this selection."""
    all_seeds = sorted({r.seed for r in runs})
    for env in env_names:
        for m in method_list:
            have = {r.seed for r in runs if r.env == env and r.method == m.key}
            lacking = [s for s in all_seeds if s not in have]
            if not have:
                issues.append(Issue("missing_runs", "error", env, m.bonus, None,
                                    f"no run directory at all (expected seeds {fmt_list(all_seeds)})",
                                    "method absent from this env; left out of cross-env aggregates", m.variant))
            elif lacking:
                issues.append(Issue("missing_runs", "error", env, m.bonus, None,
                                    f"no run directory for seed(s) {fmt_list(lacking)} (other cells have them)",
                                    "fewer seeds in this cell", m.variant))


def final_scores(coll: Collection, last_k: int = 1) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Final score of every scored run: mean of its last ``last_k`` eval points.

    Returns env -> method key -> (seeds (S,), scores (S,)). Runs with no finite
    value in those points (no episode ever finished) are left out and reported
    once in ``coll.issues`` (kind "no_episodes").
    """
    if last_k < 1:
        raise ValueError("last_k must be >= 1")
    out: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for env in coll.envs:
        ed = coll.env_data[env]
        out[env] = {}
        for b in coll.methods:
            seeds, scores = [], []
            for c in ed.curves.get(b, []):
                if not c.scored:
                    continue
                tail = c.values[-last_k:]
                if not np.isfinite(tail).any():
                    r = c.run
                    if not any(i.kind == "no_episodes" and (i.env, i.bonus, i.variant, i.seed) ==
                               (env, r.bonus, r.variant, c.seed) for i in coll.issues):
                        coll.issues.append(Issue("no_episodes", "error", env, r.bonus, c.seed,
                                                 f"no finished episode in the last {last_k} window(s)",
                                                 "no final score", r.variant))
                    continue
                seeds.append(c.seed)
                scores.append(float(np.nanmean(tail)))
            if seeds:
                out[env][b] = (np.asarray(seeds, np.int64), np.asarray(scores, float))
    return out


def runs_table(coll: Collection, last_k: int = 1) -> pd.DataFrame:
    """One row per run directory: identity, status, what the analysis did with it."""
    scores = final_scores(coll, last_k)
    curve_of = {(c.run.env, c.run.method, c.seed): c for c in coll.curves()}
    order = {k: i for i, k in enumerate(coll.methods)}
    rows = []
    for r in sorted(coll.runs, key=lambda r: (env_sort_key(r.env), order.get(r.method, len(order)), r.seed)):
        if r.env not in coll.env_data or r.method not in coll.methods:
            continue
        c = curve_of.get((r.env, r.method, r.seed))
        fs = np.nan
        if r.env in scores and r.method in scores[r.env]:
            seeds, vals = scores[r.env][r.method]
            hit = np.nonzero(seeds == r.seed)[0]
            fs = float(vals[hit[0]]) if len(hit) else np.nan
        s = r.summary
        rows.append({
            "env": r.env, "bonus": r.bonus, "variant": r.variant, "method": r.method, "label": coll.label(r.method),
            "seed": r.seed,
            "status": c.state if c else ("incomplete" if not r.complete else "unreadable"),
            "used_in_curves": bool(c and c.used), "scored": bool(c and c.scored and math.isfinite(fs)),
            "final_score": fs,
            "eval_points": int(len(r.metrics)) if r.metrics is not None else 0,
            "filled_windows": c.n_filled if c else 0,
            "censored_windows": c.n_censored if c else 0,
            "failed_windows": c.n_failed_windows if c else 0,
            "missing_windows": c.n_missing_windows if c else 0,
            "interpolated": bool(c and c.interpolated),
            "env_steps": s and s.env_steps, "env_steps_per_second": s and s.env_steps_per_second,
            "wall_time_s": s and s.wall_time_s, "compile_time_s": s and s.compile_time_s,
            "path": str(r.path),
        })
    return pd.DataFrame(rows)


def return_measurement(coll: Collection) -> list[dict]:
    """How each env's return is measured, from its runs: the episode time limit, the windows left
    out at the start because an episode of that length could not have ended in them (survivor
    bias, :func:`analysis.align.censored_windows`), and the first window that counts. One dict per
    env, in the collection's order."""
    out = []
    for e in coll.envs:
        curves = [c for b in coll.methods for c in coll.env_data[e].curves.get(b, [])]
        limits = sorted({c.time_limit for c in curves if c.time_limit})
        censored = sorted({c.n_censored for c in curves})
        steps = coll.env_data[e].steps
        first = int(steps[max(censored)]) if censored and len(steps) > max(censored) else None
        out.append({"env": e, "time_limit": limits[0] if len(limits) == 1 else (limits or None),
                    "windows_left_out": max(censored) if censored else 0,
                    "known": all(c.time_limit for c in curves), "first_counted_env_steps": first,
                    "window_env_steps": int(steps[0]) if len(steps) else None})
    return out


def return_measurement_md(coll: Collection) -> str:
    """:func:`return_measurement` as a paragraph and a table, for a report."""
    rows = []
    for m in return_measurement(coll):
        limit = m["time_limit"] if m["known"] else "not recorded"
        first = m["first_counted_env_steps"]
        left = ("none" if not m["windows_left_out"] else
                f"{m['windows_left_out']} (the first counted one ends at env_steps {first:,})" if first is not None
                else f"{m['windows_left_out']}: every window (none ends after each env has run the time limit)")
        rows.append([env_label(m["env"]), str(limit), left])
    return ("A window's return is the mean undiscounted return of the episodes that ended in it. Until each of "
            "the parallel envs has run the env's time limit, an episode that lasts that long cannot have ended, so "
            "such a window averages only the shorter episodes (survivor bias: in a PointMaze, only the successes). "
            "Those first windows are left out of every curve, area and table; a run that did not record its time "
            "limit is taken as it is.\n\n"
            + render_markdown(["Env", "episode time limit (steps)", "first windows left out"], rows, align="lrl"))

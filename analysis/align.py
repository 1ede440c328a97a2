"""Runs' returns on one grid of ``env_steps`` per env (:class:`EnvData`), with the rules for
empty, failed and missing windows (see analysis.collect's docstring)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .issues import Issue, fmt_list
from .runs import EPISODES_COLUMN, RETURN_COLUMN, STEPS_COLUMN, Run


@dataclass
class RunCurve:
    """A run's returns placed on its env's reference grid.

    values: (T,) float, T = len(EnvData.steps); NaN = no value at that point.
    """

    run: Run
    values: np.ndarray
    failed: bool = False
    incomplete: bool = False
    interpolated: bool = False
    n_filled: int = 0          # empty windows forward-filled
    n_leading_empty: int = 0   # empty windows before the first finished episode
    n_failed_windows: int = 0
    n_missing_windows: int = 0
    n_censored: int = 0        # first windows left out: survivors only (:func:`censored_windows`)
    time_limit: int | None = None  # the env's max_episode_steps, where the run recorded it
    used: bool = False          # counted in per-env curves
    scored: bool = False        # counted in final scores

    @property
    def seed(self) -> int:
        return self.run.seed

    @property
    def state(self) -> str:
        parts = []
        if self.incomplete:
            parts.append("incomplete")
        if self.failed:
            parts.append("failed")
        return "+".join(parts) or "ok"


@dataclass
class EnvData:
    """All runs of one env, aligned on one grid.

    steps: (T,) int64 reference grid of env_steps.
    curves: method key -> RunCurves sorted by seed (including excluded ones;
    see RunCurve.used / RunCurve.scored).
    """

    env: str
    steps: np.ndarray
    curves: dict[str, list[RunCurve]] = field(default_factory=dict)

    def used(self, method: str) -> list[RunCurve]:
        return [c for c in self.curves.get(method, []) if c.used]

    def returns(self, method: str) -> tuple[np.ndarray, np.ndarray]:
        """Used runs of ``method`` (a method key): (seeds (S,), returns (S, T)); S may be 0."""
        cs = self.used(method)
        seeds = np.array([c.seed for c in cs], dtype=np.int64)
        vals = np.stack([c.values for c in cs]) if cs else np.zeros((0, len(self.steps)))
        return seeds, vals


def clean_steps(df: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(steps (N,), values (N,)) sorted by steps, duplicate steps keep the last row."""
    sub = df[[STEPS_COLUMN, column]].copy()
    sub[STEPS_COLUMN] = pd.to_numeric(sub[STEPS_COLUMN], errors="coerce")
    sub[column] = pd.to_numeric(sub[column], errors="coerce")
    sub = sub.dropna(subset=[STEPS_COLUMN])
    sub = sub.drop_duplicates(subset=[STEPS_COLUMN], keep="last").sort_values(STEPS_COLUMN)
    return sub[STEPS_COLUMN].to_numpy(np.int64), sub[column].to_numpy(float)


def place_on_grid(own_steps: np.ndarray, own: np.ndarray, ref: np.ndarray):
    """Put a run's own-grid values on the reference grid.

    Returns (values (T,), absent (T,) bool: reference points the run does not
    have and that lie after its first own point, leading (T,) bool: reference
    points before its first own point, interpolated: bool).
    """
    values = np.full(len(ref), np.nan)
    absent = np.zeros(len(ref), bool)
    leading = np.zeros(len(ref), bool)
    if len(own_steps) == 0:
        absent[:] = True
        return values, absent, leading, False
    own_set = set(own_steps.tolist())
    ref_set = set(ref.tolist())
    if own_set <= ref_set or ref_set <= own_set:
        idx = {s: i for i, s in enumerate(own_steps.tolist())}
        for j, s in enumerate(ref.tolist()):
            if s in idx:
                values[j] = own[idx[s]]
            else:
                absent[j] = True
        return values, absent, leading, False
    # Different grids: interpolate inside the run's own range only. A NaN
    # neighbour (failed window) propagates, so failures are not smoothed over.
    lo, hi = own_steps[0], own_steps[-1]
    inside = (ref >= lo) & (ref <= hi)
    values[inside] = np.interp(ref[inside].astype(float), own_steps.astype(float), own)
    leading[ref < lo] = True
    absent[ref > hi] = True
    return values, absent, leading, True


def forward_fill(values: np.ndarray, fill: np.ndarray) -> np.ndarray:
    """Copy the last finite value into positions where ``fill`` is True."""
    out = values.copy()
    last = np.nan
    for i in range(len(out)):
        if fill[i]:
            out[i] = last
        elif np.isfinite(out[i]):
            last = out[i]
    return out


def reference_grid(runs: list[Run]) -> tuple[np.ndarray, str | None]:
    grids = []
    for r in runs:
        if r.metrics is not None:
            s, _ = clean_steps(r.metrics, RETURN_COLUMN)
            if len(s):
                grids.append((r.complete, tuple(s.tolist())))
    # Incomplete runs stop early by nature: they only choose the grid when no run is complete.
    pool = [g for c, g in grids if c] or [g for _, g in grids]
    if not pool:
        return np.zeros(0, np.int64), None
    counts = Counter(pool)
    ref = max(counts, key=lambda g: (counts[g], len(g), g[-1]))
    # Runs on a subset of the grid get their own missing-window issue; only
    # grids that need matching or interpolation deserve an env-level note.
    odd = [g for g in pool if not set(g) <= set(ref)]
    note = None
    if odd:
        note = (f"{len(odd)} complete run(s) on an env_steps grid that is not a subset of the reference grid "
                f"({len(ref)} points, {ref[0]}..{ref[-1]}, shared by {counts[ref]} of {len(pool)} runs)")
    return np.asarray(ref, np.int64), note


def time_limit_and_envs(run: Run) -> tuple[int | None, int | None]:
    """The env's episode time limit and the number of parallel envs of a run (None where it did
    not record them: summaries before these fields existed)."""
    s = run.summary
    agent = (run.config or {}).get("agent") or {}
    limit, envs = (s.max_episode_steps if s else None), (s.num_envs if s else None) or agent.get("num_envs")
    return (int(limit) if limit else None), (int(envs) if envs else None)


def censored_windows(run: Run, steps: np.ndarray) -> np.ndarray:
    """Windows whose return could average only the episodes that ended early (survivor bias).

    A window's return is the mean over the episodes that ended in it. Until every env has run
    ``max_episode_steps`` steps (``env_steps < max_episode_steps * num_envs``), an episode that
    lasts to the time limit cannot have ended, so the window counts only the shorter ones (in a
    PointMaze, only the successes). From the first window that ends at or after that point,
    episodes of every length can be in it. (bool (N,); all False when the run did not record
    its time limit.)"""
    limit, envs = time_limit_and_envs(run)
    if not limit or not envs:
        return np.zeros(len(steps), bool)
    return steps < limit * envs


def align_run(run: Run, ref: np.ndarray, keep_failed: bool, issues: list[Issue]) -> RunCurve:
    env, bonus, seed = run.env, run.bonus, run.seed
    steps, r = clean_steps(run.metrics, RETURN_COLUMN)
    n_dupes = len(run.metrics) - len(steps)
    censored = censored_windows(run, steps)
    r = np.where(censored, np.nan, r)  # neither a value nor a source for a forward fill
    if EPISODES_COLUMN in run.metrics.columns:
        _, ef = clean_steps(run.metrics, EPISODES_COLUMN)
        empty = ~np.isfinite(r) & ((ef == 0) | censored)
    else:
        empty = censored.copy()
    failed_own = ~np.isfinite(r) & ~empty
    finite_before = np.cumsum(np.isfinite(r)) > 0
    n_leading_empty = int(np.sum(empty & ~finite_before & ~censored))
    own = forward_fill(np.where(np.isfinite(r), r, np.nan), (empty & finite_before) | (failed_own & keep_failed))
    values, absent, _, interpolated = place_on_grid(steps, own, ref)

    curve = RunCurve(run, values, incomplete=not run.complete, interpolated=interpolated,
                     n_filled=int(np.sum(empty & finite_before)), n_leading_empty=n_leading_empty,
                     n_censored=int(np.sum(censored)), time_limit=time_limit_and_envs(run)[0])
    handling = "kept with these windows forward-filled" if keep_failed else "seed excluded"

    if n_dupes:
        issues.append(Issue("duplicate_rows", "warning", env, bonus, seed,
                            f"{n_dupes} metrics.csv rows repeat or lack env_steps", "kept the last row per env_steps"))
    if failed_own.any():
        bad = steps[failed_own].tolist()
        why = ("NaN/inf episode_return" if EPISODES_COLUMN in run.metrics.columns
               else f"NaN/inf episode_return and no {EPISODES_COLUMN!r} column to show the window was empty")
        issues.append(Issue("failed", "warning" if keep_failed else "error", env, bonus, seed,
                            f"{why} in {len(bad)} window(s) at env_steps {fmt_list(bad)}", handling))
        curve.n_failed_windows = len(bad)
        curve.failed = True

    # Reference points absent from this run: missing windows, except the tail
    # an incomplete run has not reached yet.
    if run.complete:
        missing = absent
    else:
        last_own = steps[-1] if len(steps) else -1
        missing = absent & (ref < last_own)
    if run.complete and run.summary and len(steps) >= 2:
        # metrics.csv can stop early while summary.json says the run finished.
        total = run.summary.env_steps
        step = int(np.median(np.diff(steps)))
        if total is not None and total > steps[-1] + step and not missing.any():
            issues.append(Issue("missing_windows", "warning" if keep_failed else "error", env, bonus, seed,
                                f"metrics.csv ends at env_steps {steps[-1]} but summary.json reports {int(total)}",
                                handling))
            curve.failed = True
    if missing.any():
        pts = ref[missing].tolist()
        issues.append(Issue("missing_windows", "warning" if keep_failed else "error", env, bonus, seed,
                            f"{len(pts)} evaluation point(s) of the env grid absent from metrics.csv: "
                            f"env_steps {fmt_list(pts)}", handling))
        curve.n_missing_windows = len(pts)
        curve.failed = True
        if keep_failed:
            curve.values = forward_fill(curve.values, missing)
    if interpolated:
        issues.append(Issue("interpolated", "warning", env, bonus, seed,
                            f"own env_steps grid ({len(steps)} points, {steps[0]}..{steps[-1]}) differs from the "
                            f"env's reference grid", "linearly interpolated at reference points inside its range"))
    if curve.n_filled:
        issues.append(Issue("empty_windows", "info", env, bonus, seed,
                            f"{curve.n_filled} window(s) with no finished episode",
                            "previous window's return carried forward"))
    if n_leading_empty:
        issues.append(Issue("empty_windows", "info", env, bonus, seed,
                            f"first {n_leading_empty} window(s) finished no episode",
                            "left empty (curve starts later)"))
    return curve

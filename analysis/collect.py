"""Read a results tree into aligned arrays, and say what is missing or broken.

The results contract (written by ``launch.py``; this module only reads it)::

    <results_dir>/<experiment>/<env>/<bonus>/<variant>/
        variant.yaml   {dotted.key: value} overrides defining the variant ({} for base)
        seed_<k>/
            config.yaml    resolved Hydra config
            metrics.csv    one row per evaluation window (env_steps, episode_return,
                           episodes_finished, intrinsic_reward, losses, wall_time_s,
                           coverage, env/<name>, ...)
            summary.json   written last and atomically; its absence = incomplete run
                           (variant, variant_overrides, coverage_grid, ...)
            visits.npy     final visit-count grid (envs with a coverage grid)

The older layout ``<env>/<bonus>/seed_<k>/`` (no variant folder) is read as
variant ``base``; when both layouts hold the same (env, bonus, seed), the
variant-folder run is used and the other reported. A method is a (bonus,
variant) pair: see analysis.methods for its key, label and colour.

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
* Runs without ``summary.json`` are *incomplete*: reported, excluded by
  default; ``include_incomplete=True`` adds their partial curves to the
  per-env curves only (never to final scores).

Alignment: each env gets one reference grid of ``env_steps`` -- the grid shared
by most complete runs (ties: the longer one). Runs on a sub/super-set of it are
matched point by point; runs on a different grid are linearly interpolated at
the reference points inside their own range (never extrapolated), and every
such run is reported.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rfig_exp import results

from .methods import BASE, Method, build_methods, format_overrides, format_value
from .names import env_sort_key, method_label, sort_envs, sort_methods

RETURN_COLUMN = "episode_return"
EPISODES_COLUMN = "episodes_finished"
STEPS_COLUMN = "env_steps"
_SEED_DIR = re.compile(r"^seed_(\d+)$")


class AnalysisError(Exception):
    """A user-facing problem (bad path, nothing to analyse); the CLI prints it."""


@dataclass
class Issue:
    """One reported problem or adjustment.

    severity: "error" (run or data left out), "warning" (data used but altered,
    e.g. interpolated or forward-filled failure), "info" (expected behaviour
    worth knowing, e.g. empty windows forward-filled).
    """

    kind: str
    severity: str
    env: str | None
    bonus: str | None
    seed: int | None
    detail: str
    handling: str
    variant: str | None = None


@dataclass
class Run:
    """One run directory, as read from disk (nothing aligned yet)."""

    experiment: str
    env: str
    bonus: str
    seed: int
    path: Path
    complete: bool
    summary: dict | None = None
    config: dict | None = None
    metrics: pd.DataFrame | None = None
    load_error: str | None = None
    variant: str = BASE
    flat_layout: bool = False           # old layout: seed_<k> directly under <bonus>
    variant_overrides: dict = field(default_factory=dict)
    method: str | None = None           # method key, set by collect()
    # Where the run lives: the env and variant folder names. ``env`` and ``variant`` above are
    # what the analysis compares: an ``env.*`` override (DeepSea's size, a Brax backend) makes
    # another *task*, ``<env>[size=30]``, and leaves the method's variant (see split_env_options).
    env_folder: str = ""
    variant_folder: str = ""

    @property
    def variant_dir(self) -> Path:
        return self.path.parent


ENV_OPTION_PREFIX = "env."


def task_name(env: str, env_options: dict) -> str:
    """``deepsea`` + ``{"env.size": 30}`` -> ``deepsea[size=30]`` (``env`` alone when no options)."""
    if not env_options:
        return env
    opts = ",".join(f"{k[len(ENV_OPTION_PREFIX):]}={format_value(v)}" for k, v in sorted(env_options.items()))
    return f"{env}[{opts}]"


def method_variant_name(overrides: dict) -> str:
    """The variant a method is known by once env options are taken out: ``base`` or ``k=v,...``."""
    return ",".join(f"{k}={format_value(v)}" for k, v in sorted(overrides.items())) or BASE


def split_env_options(runs: list["Run"]) -> None:
    """Env options are part of the task, not of the method.

    A run whose variant overrides hold ``env.*`` keys (``env.size=30``, ``env.backend=spring``)
    is compared as the task ``<env>[size=30]``, and its method is the bonus with the remaining
    overrides (``base`` when none remain). So DeepSea at four sizes is four tasks on which the
    same five methods are compared, and a Brax env run on another backend is the same methods
    on a differently-named task. The folders stay where they are (``env_folder``,
    ``variant_folder``).
    """
    for r in runs:
        r.env_folder = r.env_folder or r.env
        r.variant_folder = r.variant_folder or r.variant
        env_opts = {k: v for k, v in r.variant_overrides.items() if k.startswith(ENV_OPTION_PREFIX)}
        if not env_opts:
            continue
        rest = {k: v for k, v in r.variant_overrides.items() if k not in env_opts}
        r.env = task_name(r.env_folder, env_opts)
        r.variant = method_variant_name(rest)
        r.variant_overrides = rest


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


@dataclass
class Collection:
    """A whole experiment, collected.

    envs: ordered names (paper order) of envs with at least one run after
    filtering; methods: ordered method keys (see analysis.methods: the bonus
    name for a bonus's base variant, ``<bonus>/<variant>`` for the others).
    env_data: env -> EnvData. method_info: key -> Method (label, colour,
    overrides). common_overrides: overrides shared by every selected method.
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

    def label(self, method: str) -> str:
        """Display label of a method key (the bonus label for unknown keys)."""
        m = self.method_info.get(method)
        return m.label if m else method_label(method)

    def colour(self, method: str) -> str:
        m = self.method_info.get(method)
        if m:
            return m.colour
        from .names import method_colour

        return method_colour(method)

    def linestyle(self, method: str):
        m = self.method_info.get(method)
        return m.linestyle if m else "-"

    def bonus_of(self, method: str) -> str:
        m = self.method_info.get(method)
        return m.bonus if m else method

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
            own_steps, own = _clean_steps(df, column)
            vals, _, _, _ = _place_on_grid(own_steps, own, ed.steps)
            rows.append(vals)
        arr = np.stack(rows) if rows else np.zeros((0, len(ed.steps)))
        return np.asarray(seeds, np.int64), arr

    def issues_of(self, *kinds: str) -> list[Issue]:
        return [i for i in self.issues if i.kind in kinds]


# --------------------------------------------------------------------------- scanning


def _is_run_dir(p: Path) -> bool:
    return p.is_dir() and _SEED_DIR.match(p.name) is not None


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _seed_dirs(exp_dir: Path):
    """(env, bonus, variant, flat_layout, seed, path) of every run folder of one experiment:
    ``<env>/<bonus>/<variant>/seed_<k>`` and the old ``<env>/<bonus>/seed_<k>`` (variant base)."""
    for env_dir in sorted(p for p in exp_dir.iterdir() if p.is_dir() and not _hidden(p.name)):
        for bonus_dir in sorted(p for p in env_dir.iterdir() if p.is_dir() and not _hidden(p.name)):
            for child in sorted(p for p in bonus_dir.iterdir() if p.is_dir() and not _hidden(p.name)):
                m = _SEED_DIR.match(child.name)
                if m:
                    yield env_dir.name, bonus_dir.name, BASE, True, int(m.group(1)), child
                    continue
                for seed_dir in sorted(child.iterdir()):
                    m = _SEED_DIR.match(seed_dir.name)
                    if m and seed_dir.is_dir():
                        yield env_dir.name, bonus_dir.name, child.name, False, int(m.group(1)), seed_dir


def find_experiments(results_dir: str | Path) -> list[str]:
    """Experiments under ``results_dir``: folders holding ``<env>/<bonus>/[<variant>/]seed_<k>``."""
    root = Path(results_dir)
    if not root.is_dir():
        return []
    found = []
    for exp in sorted(p for p in root.iterdir() if p.is_dir() and not _hidden(p.name)):
        if next(_seed_dirs(exp), None) is not None:
            found.append(exp.name)
    return found


def _read_yaml(path: Path) -> dict | None:
    try:
        import yaml  # optional: only used for cross-checks, not for any number
    except ImportError:
        return None
    with open(path) as f:
        data = yaml.safe_load(f)
    return data if isinstance(data, dict) else None


def load_run(path: Path, experiment: str, env: str, bonus: str, seed: int, variant: str = BASE,
             flat_layout: bool = False) -> Run:
    """Read one run directory. Never raises for bad content: sets load_error."""
    path = Path(path)
    run = Run(experiment, env, bonus, seed, path, complete=False, variant=variant, flat_layout=flat_layout)
    errors = []
    if (path / results.SUMMARY).is_file():
        run.summary, problem = results.read_summary(path)
        problem = problem or results.incomplete_reason(path, run.summary)
        run.complete = problem is None
        if problem:
            errors.append(problem)
    if (path / "config.yaml").is_file():
        try:
            run.config = _read_yaml(path / "config.yaml")
        except Exception as exc:  # a broken config must not hide the metrics
            errors.append(f"config.yaml unreadable ({type(exc).__name__})")
    metrics_path = path / "metrics.csv"
    if metrics_path.is_file() and metrics_path.stat().st_size == 0:
        # Created at start-up, before the first window: normal for a young run.
        errors.append("metrics.csv empty (no window written yet)")
    elif metrics_path.is_file():
        try:
            df = pd.read_csv(metrics_path)
            if STEPS_COLUMN not in df.columns or RETURN_COLUMN not in df.columns:
                errors.append(f"metrics.csv lacks {STEPS_COLUMN!r} or {RETURN_COLUMN!r}")
            else:
                run.metrics = df
        except (OSError, ValueError, pd.errors.ParserError) as exc:
            errors.append(f"metrics.csv unreadable ({type(exc).__name__}: {exc})")
    else:
        errors.append("no metrics.csv")
    run.load_error = "; ".join(errors) or None
    return run


def scan_runs(results_dir: str | Path, experiment: str) -> list[Run]:
    """Every run folder of one experiment (both layouts), loaded; variant_overrides not yet set."""
    root = Path(results_dir) / experiment
    return [load_run(path, experiment, env, bonus, seed, variant, flat)
            for env, bonus, variant, flat, seed, path in _seed_dirs(root)]


def read_variant_overrides(variant_dir: Path) -> tuple[dict | None, str | None]:
    """(overrides, problem) from ``variant_dir/variant.yaml``; overrides None when unusable."""
    path = Path(variant_dir) / "variant.yaml"
    if not path.is_file():
        return None, "no variant.yaml"
    try:
        import yaml

        data = yaml.safe_load(path.read_text())
    except Exception as exc:  # a broken file is reported, never fatal
        return None, f"variant.yaml unreadable ({type(exc).__name__})"
    if data is None:
        return {}, None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        return None, "variant.yaml is not a mapping of dotted keys"
    return dict(data), None


def parse_variant_name(name: str) -> dict | None:
    """Overrides spelled out in a variant folder name (``a.b=1,c.d=x``), or None
    when the name cannot be read back (a hashed ``~`` name, or no ``=``)."""
    if name == BASE:
        return {}
    if "~" in name or "=" not in name:
        return None
    try:
        import yaml
    except ImportError:  # values stay text
        yaml = None
    out = {}
    for part in name.split(","):
        if "=" not in part:
            return None
        k, v = part.split("=", 1)
        try:
            out[k] = yaml.safe_load(v) if yaml else v
        except Exception:
            out[k] = v
    return out


def _clean_steps(df: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(steps (N,), values (N,)) sorted by steps, duplicate steps keep the last row."""
    sub = df[[STEPS_COLUMN, column]].copy()
    sub[STEPS_COLUMN] = pd.to_numeric(sub[STEPS_COLUMN], errors="coerce")
    sub[column] = pd.to_numeric(sub[column], errors="coerce")
    sub = sub.dropna(subset=[STEPS_COLUMN])
    sub = sub.drop_duplicates(subset=[STEPS_COLUMN], keep="last").sort_values(STEPS_COLUMN)
    return sub[STEPS_COLUMN].to_numpy(np.int64), sub[column].to_numpy(float)


def _place_on_grid(own_steps: np.ndarray, own: np.ndarray, ref: np.ndarray):
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


def _forward_fill(values: np.ndarray, fill: np.ndarray) -> np.ndarray:
    """Copy the last finite value into positions where ``fill`` is True."""
    out = values.copy()
    last = np.nan
    for i in range(len(out)):
        if fill[i]:
            out[i] = last
        elif np.isfinite(out[i]):
            last = out[i]
    return out


def _reference_grid(runs: list[Run]) -> tuple[np.ndarray, str | None]:
    grids = []
    for r in runs:
        if r.metrics is not None:
            s, _ = _clean_steps(r.metrics, RETURN_COLUMN)
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


def _align_run(run: Run, ref: np.ndarray, keep_failed: bool, issues: list[Issue]) -> RunCurve:
    env, bonus, seed = run.env, run.bonus, run.seed
    steps, r = _clean_steps(run.metrics, RETURN_COLUMN)
    n_dupes = len(run.metrics) - len(steps)
    if EPISODES_COLUMN in run.metrics.columns:
        _, ef = _clean_steps(run.metrics, EPISODES_COLUMN)
        empty = ~np.isfinite(r) & (ef == 0)
    else:
        empty = np.zeros(len(r), bool)
    failed_own = ~np.isfinite(r) & ~empty
    finite_before = np.cumsum(np.isfinite(r)) > 0
    n_leading_empty = int(np.sum(empty & ~finite_before))
    own = _forward_fill(np.where(np.isfinite(r), r, np.nan), empty | (failed_own & keep_failed))
    values, absent, _, interpolated = _place_on_grid(steps, own, ref)

    curve = RunCurve(run, values, incomplete=not run.complete, interpolated=interpolated,
                     n_filled=int(np.sum(empty)) - n_leading_empty, n_leading_empty=n_leading_empty)
    handling = "kept with these windows forward-filled" if keep_failed else "seed excluded"

    if n_dupes:
        issues.append(Issue("duplicate_rows", "warning", env, bonus, seed,
                            f"{n_dupes} metrics.csv rows repeat or lack env_steps", "kept the last row per env_steps"))
    if failed_own.any():
        bad = steps[failed_own].tolist()
        why = ("NaN/inf episode_return" if EPISODES_COLUMN in run.metrics.columns
               else f"NaN/inf episode_return and no {EPISODES_COLUMN!r} column to show the window was empty")
        issues.append(Issue("failed", "warning" if keep_failed else "error", env, bonus, seed,
                            f"{why} in {len(bad)} window(s) at env_steps {_fmt_list(bad)}", handling))
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
        total = run.summary.get("env_steps")
        step = int(np.median(np.diff(steps)))
        if isinstance(total, (int, float)) and total > steps[-1] + step and not missing.any():
            issues.append(Issue("missing_windows", "warning" if keep_failed else "error", env, bonus, seed,
                                f"metrics.csv ends at env_steps {steps[-1]} but summary.json reports {int(total)}",
                                handling))
            curve.failed = True
    if missing.any():
        pts = ref[missing].tolist()
        issues.append(Issue("missing_windows", "warning" if keep_failed else "error", env, bonus, seed,
                            f"{len(pts)} evaluation point(s) of the env grid absent from metrics.csv: "
                            f"env_steps {_fmt_list(pts)}", handling))
        curve.n_missing_windows = len(pts)
        curve.failed = True
        if keep_failed:
            curve.values = _forward_fill(curve.values, missing)
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


def _fmt_list(xs: list, limit: int = 6) -> str:
    shown = ", ".join(str(x) for x in xs[:limit])
    return shown + (f", ... ({len(xs)} in all)" if len(xs) > limit else "")


def _summary_identity(run: Run, issues: list[Issue]) -> None:
    s = run.summary or {}
    expected = {"env": run.env_folder or run.env, "bonus": run.bonus, "seed": run.seed, "experiment": run.experiment}
    if not run.flat_layout:
        expected["variant"] = run.variant_folder or run.variant
    diffs = [f"{k}={s[k]!r}" for k, v in expected.items() if k in s and s[k] != v]
    if run.flat_layout and s.get("variant") not in (None, BASE):
        diffs.append(f"variant={s['variant']!r} (the old layout has no variant folder: read as base)")
    if diffs:
        issues.append(Issue("mismatch", "warning", run.env, run.bonus, run.seed,
                            "summary.json says " + ", ".join(diffs), "the directory path is trusted", run.variant))


def _resolve_variant_overrides(runs: list[Run], issues: list[Issue]) -> None:
    """Set Run.variant_overrides from variant.yaml (per variant folder), else
    summary.json["variant_overrides"], else the folder name; report fallbacks
    and disagreements (per variant folder, once)."""
    by_dir: dict[Path, list[Run]] = {}
    for r in runs:
        by_dir.setdefault(r.variant_dir if not r.flat_layout else r.path, []).append(r)
    for folder, rs in by_dir.items():
        r0 = rs[0]
        if r0.flat_layout:
            for r in rs:
                r.variant_overrides = {}
            continue
        overrides, problem = read_variant_overrides(folder)
        from_summary = [r.summary["variant_overrides"] for r in rs
                        if r.summary and isinstance(r.summary.get("variant_overrides"), dict)]
        source = "variant.yaml"
        if overrides is None:
            if from_summary:
                overrides, source = dict(from_summary[0]), "summary.json"
            else:
                parsed = parse_variant_name(r0.variant)
                overrides, source = (parsed, "the folder name") if parsed is not None else \
                    ({"variant": r0.variant}, None)
            if r0.variant != BASE or problem != "no variant.yaml":
                handling = (f"overrides taken from {source}" if source
                            else "overrides unknown: the method is labelled by its folder name")
                issues.append(Issue("variant", "warning", r0.env, r0.bonus, None,
                                    f"{folder.name}: {problem}", handling, r0.variant))
        for fs in from_summary:
            if format_overrides(fs) != format_overrides(overrides):
                issues.append(Issue("variant", "warning", r0.env, r0.bonus, None,
                                    f"summary.json variant_overrides ({format_overrides(fs) or 'none'}) differ from "
                                    f"{source} ({format_overrides(overrides) or 'none'})",
                                    f"{source} trusted", r0.variant))
                break
        for r in rs:
            r.variant_overrides = dict(overrides)


def _drop_layout_duplicates(runs: list[Run], issues: list[Issue]) -> list[Run]:
    """The same (env, bonus, base, seed) in both layouts: keep the variant-folder run."""
    new = {(r.env, r.bonus, r.seed) for r in runs if not r.flat_layout and r.variant == BASE}
    kept = []
    for r in runs:
        if r.flat_layout and (r.env, r.bonus, r.seed) in new:
            issues.append(Issue("duplicate", "warning", r.env, r.bonus, r.seed,
                                f"seed_{r.seed} exists in the old layout (<bonus>/seed_<k>) and under base/",
                                "the run under base/ is used", BASE))
            continue
        kept.append(r)
    return kept


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


def _matches_method(item: str, m: Method, labels_before: dict[str, str]) -> bool:
    return item in (m.key, labels_before.get(m.key))


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
    all_runs = _drop_layout_duplicates(scan_runs(results_dir, experiment), issues)
    want_variants = _split_known(variants, {r.variant for r in all_runs})
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
    runs = [r for r in all_runs
            if (want_envs is None or r.env in want_envs) and (want_bonuses is None or r.bonus in want_bonuses)
            and (want_variants is None or r.variant in want_variants)]
    _resolve_variant_overrides(runs, issues)
    split_env_options(runs)

    def groups_of(rs):
        out: dict[tuple[str, str], dict] = {}
        for r in rs:
            out.setdefault((r.bonus, r.variant), r.variant_overrides)
        return out

    want_methods = _split(methods)
    if methods is not None and runs:
        before, _ = build_methods(groups_of(runs))
        labels_before = {m.key: m.label for m in before}
        want_methods = _split_known(methods, [m.key for m in before] + [m.label for m in before])
    if want_methods and runs:
        keep: set[tuple[str, str]] = set()
        for item in want_methods:
            hit = [m for m in before if _matches_method(item, m, labels_before)]
            if not hit:  # a bonus name (or its label): every variant of that bonus
                hit = [m for m in before if item in (m.bonus, method_label(m.bonus))]
            if not hit:
                issues.append(Issue("missing_method", "error", None, None, None,
                                    f"requested method {item!r} matches nothing in experiment {experiment!r} "
                                    f"(present: {', '.join(m.label for m in before)})", "nothing to show"))
            keep |= {(m.bonus, m.variant) for m in hit}
        runs = [r for r in runs if (r.bonus, r.variant) in keep]
    if not runs:
        raise AnalysisError(f"no runs in experiment {experiment!r} match envs={want_envs} bonuses={want_bonuses} "
                            f"variants={want_variants} methods={want_methods}; "
                            f"present envs: {', '.join(sort_envs({r.env for r in all_runs}))}; "
                            f"bonuses: {', '.join(sort_methods({r.bonus for r in all_runs}))}; "
                            f"variants: {', '.join(sorted({r.variant for r in all_runs}))}")

    # Two envs may hold the same variant folder name with different variant.yaml
    # (never from the launcher, but a hand-edited tree): the first one wins, reported.
    groups = groups_of(runs)
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
    method_list, common = build_methods(groups)
    key_of = {(m.bonus, m.variant): m.key for m in method_list}
    for r in runs:
        r.method = key_of[(r.bonus, r.variant)]

    env_names = sort_envs({r.env for r in runs})
    method_keys = [m.key for m in method_list]
    env_data: dict[str, EnvData] = {}
    for env in env_names:
        env_runs = [r for r in runs if r.env == env]
        ref, note = _reference_grid(env_runs)
        if note:
            issues.append(Issue("grid", "warning", env, None, None, note, "other runs matched or interpolated"))
        ed = EnvData(env, ref)
        for r in sorted(env_runs, key=lambda r: (method_keys.index(r.method), r.seed)):
            if r.complete:
                _summary_identity(r, issues)
            if not r.complete:
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
            c = _align_run(r, ref, keep_failed, issues)
            for i in issues[n0:]:
                i.variant = r.variant
            c.used = (not c.incomplete or include_incomplete) and (not c.failed or keep_failed)
            c.scored = c.used and not c.incomplete
            ed.curves.setdefault(r.method, []).append(c)
        env_data[env] = ed

    # Seeds: every (env, method) should have every seed seen in this selection.
    all_seeds = sorted({r.seed for r in runs})
    for env in env_names:
        for m in method_list:
            have = {r.seed for r in runs if r.env == env and r.method == m.key}
            lacking = [s for s in all_seeds if s not in have]
            if not have:
                issues.append(Issue("missing_runs", "error", env, m.bonus, None,
                                    f"no run directory at all (expected seeds {_fmt_list(all_seeds)})",
                                    "method absent from this env; left out of cross-env aggregates", m.variant))
            elif lacking:
                issues.append(Issue("missing_runs", "error", env, m.bonus, None,
                                    f"no run directory for seed(s) {_fmt_list(lacking)} (other cells have them)",
                                    "fewer seeds in this cell", m.variant))
    return Collection(Path(results_dir), experiment, env_names, method_keys, env_data, runs, issues,
                      include_incomplete, keep_failed, want_envs, want_bonuses,
                      {m.key: m for m in method_list}, common, want_variants, want_methods)


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
        s = r.summary or {}
        rows.append({
            "env": r.env, "bonus": r.bonus, "variant": r.variant, "method": r.method, "label": coll.label(r.method),
            "seed": r.seed,
            "status": c.state if c else ("incomplete" if not r.complete else "unreadable"),
            "used_in_curves": bool(c and c.used), "scored": bool(c and c.scored and math.isfinite(fs)),
            "final_score": fs,
            "eval_points": int(len(r.metrics)) if r.metrics is not None else 0,
            "filled_windows": c.n_filled if c else 0,
            "failed_windows": c.n_failed_windows if c else 0,
            "missing_windows": c.n_missing_windows if c else 0,
            "interpolated": bool(c and c.interpolated),
            "env_steps": s.get("env_steps"), "env_steps_per_second": s.get("env_steps_per_second"),
            "wall_time_s": s.get("wall_time_s"), "compile_time_s": s.get("compile_time_s"),
            "path": str(r.path),
        })
    return pd.DataFrame(rows)

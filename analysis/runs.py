"""Runs as read from a results tree: one :class:`Run` per run folder, with its summary, config,
metrics and the overrides of its variant. The layout, the file names and the rule of
completeness are the results contract's (:mod:`rfig_exp.results.contract`); this module only reads.

A variant's overrides come from ``variant.yaml``, else from ``summary.json["variant_overrides"]``,
else from the folder name (every fallback reported). An ``env.*`` override makes another *task*
(``deepsea[size=30]``), not another method: see :func:`split_env_options`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rfig_exp.config.variants import BASE, format_value
from rfig_exp.results import contract as results
from rfig_exp.results.contract import RunSummary

from .issues import Issue
from .methods import format_overrides

RETURN_COLUMN = "episode_return"
EPISODES_COLUMN = "episodes_finished"
STEPS_COLUMN = "env_steps"


@dataclass
class Run:
    """One run directory, as read from disk (nothing aligned yet)."""

    experiment: str
    env: str
    bonus: str
    seed: int
    path: Path
    complete: bool
    summary: RunSummary | None = None
    config: dict | None = None
    metrics: pd.DataFrame | None = None
    load_error: str | None = None
    variant: str = BASE
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


def find_experiments(results_dir: str | Path) -> list[str]:
    """Experiments under ``results_dir`` that hold at least one run folder."""
    return [e for e in results.experiments(results_dir) if results.has_runs(results_dir, e)]


def _read_yaml(path: Path) -> dict | None:
    try:
        import yaml  # optional: only used for cross-checks, not for any number
    except ImportError:
        return None
    with open(path) as f:
        data = yaml.safe_load(f)
    return data if isinstance(data, dict) else None


def load_run(path: Path, experiment: str, env: str, bonus: str, seed: int, variant: str = BASE) -> Run:
    """Read one run directory. Never raises for bad content: sets load_error."""
    path = Path(path)
    run = Run(experiment, env, bonus, seed, path, complete=False, variant=variant)
    errors = []
    if (path / results.SUMMARY).is_file():
        run.summary, problem = results.read_summary(path)
        problem = problem or results.incomplete_reason(path, run.summary)
        run.complete = problem is None
        if problem:
            errors.append(problem)
    if (path / results.CONFIG).is_file():
        try:
            run.config = _read_yaml(path / results.CONFIG)
        except Exception as exc:  # a broken config must not hide the metrics
            errors.append(f"config.yaml unreadable ({type(exc).__name__})")
    metrics_path = path / results.METRICS
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
    """Every run folder of one experiment, loaded; variant_overrides not yet set."""
    return [load_run(r.path, experiment, r.env, r.bonus, r.seed, r.variant)
            for r in results.iter_runs(results_dir, experiment)]


def read_variant_overrides(variant_dir: Path) -> tuple[dict | None, str | None]:
    """(overrides, problem) from ``variant_dir/variant.yaml``; overrides None when unusable."""
    path = Path(variant_dir) / results.VARIANT
    if not path.is_file():
        return None, f"no {results.VARIANT}"
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


def summary_identity(run: Run, issues: list[Issue]) -> None:
    s = run.summary
    expected = {"env": run.env_folder or run.env, "bonus": run.bonus, "seed": run.seed, "experiment": run.experiment,
                "variant": run.variant_folder or run.variant}
    said = {k: getattr(s, k) for k in expected} if s else {}
    diffs = [f"{k}={said[k]!r}" for k, v in expected.items() if said.get(k) is not None and said[k] != v]
    if diffs:
        issues.append(Issue("mismatch", "warning", run.env, run.bonus, run.seed,
                            "summary.json says " + ", ".join(diffs), "the directory path is trusted", run.variant))


def resolve_variant_overrides(runs: list[Run], issues: list[Issue]) -> None:
    """Set Run.variant_overrides from variant.yaml (per variant folder), else
    summary.json["variant_overrides"], else the folder name; report fallbacks
    and disagreements (per variant folder, once)."""
    by_dir: dict[Path, list[Run]] = {}
    for r in runs:
        by_dir.setdefault(r.variant_dir, []).append(r)
    for folder, rs in by_dir.items():
        r0 = rs[0]
        overrides, problem = read_variant_overrides(folder)
        from_summary = [r.summary.variant_overrides for r in rs
                        if r.summary and r.summary.variant_overrides is not None]
        source = results.VARIANT
        if overrides is None:
            if from_summary:
                overrides, source = dict(from_summary[0]), results.SUMMARY
            else:
                parsed = parse_variant_name(r0.variant)
                overrides, source = (parsed, "the folder name") if parsed is not None else \
                    ({"variant": r0.variant}, None)
            if r0.variant != BASE or problem != f"no {results.VARIANT}":
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

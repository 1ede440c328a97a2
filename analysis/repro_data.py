"""The compact, committed form of a results tree, and back.

A published report must rebuild from data in the repository, and a results tree is too big to
commit (checkpoints, wandb folders, every metrics column). ``export_tree`` keeps what the
reports read, in three files under ``data/``:

- ``runs.csv.gz``: every metrics.csv row of every run, the columns in :data:`KEPT_COLUMNS`
  that the run has, keyed by ``experiment, env, bonus, variant, seed`` (folder names);
- ``runs.json.gz``: per run, its ``summary.json`` (without the fields no report reads; absent
  for an incomplete run), ``variant.yaml`` and the ``env``/``bonus``/``agent`` part of its
  ``config.yaml``;
- ``visits.npz``: the final visit-count grid of every run of :data:`VISIT_EXPERIMENTS`.

``rebuild_tree`` writes these back as a results tree (the same contract launch.py writes), so
a report built from the committed data goes through exactly the code that reads live results.
Nothing here imports JAX.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from rfig_exp import results as contract

from .runs import find_experiments

KEPT_COLUMNS = ("env_steps", "episode_return", "episodes_finished", "episode_length", "intrinsic_reward",
                "coverage", "env/success", "env/milestones", "env/distance", "wall_time_s")
ID_COLUMNS = ("experiment", "env", "bonus", "variant", "seed")
DROPPED_SUMMARY_KEYS = ("versions", "overrides")  # long, and no report reads them
VISIT_EXPERIMENTS = ("repro", "paper32")  # the main grids' heat maps; the sensitivity runs' are left out
RUNS_CSV, RUNS_JSON, VISITS = "runs.csv.gz", "runs.json.gz", "visits.npz"


def _visit_key(exp: str, env: str, bonus: str, variant: str, seed: int) -> str:
    return "|".join((exp, env, bonus, variant, str(seed)))


def export_tree(results: str | Path, data_dir: str | Path, experiments=None) -> dict:
    """Write the compact form of ``results`` (the experiments given, or all) into ``data_dir``.
    Returns counts: runs, complete runs, rows, bytes written."""
    results, data_dir = Path(results), Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    frames, records, visits = [], [], {}
    for exp in experiments or find_experiments(results):
        for run in contract.iter_runs(results, exp):
            env, bonus, variant, seed, path = run.env, run.bonus, run.variant, run.seed, run.path
            ident = dict(experiment=exp, env=env, bonus=bonus, variant=variant, seed=seed)
            rec: dict = dict(ident)
            metrics = path / contract.METRICS
            if metrics.is_file() and metrics.stat().st_size:
                df = pd.read_csv(metrics)
                df = df[[c for c in KEPT_COLUMNS if c in df.columns]]
                for k, v in reversed(ident.items()):
                    df.insert(0, k, v)
                frames.append(df)
            if (path / contract.SUMMARY).is_file():
                summary = json.loads((path / contract.SUMMARY).read_text())
                rec["summary"] = {k: v for k, v in summary.items() if k not in DROPPED_SUMMARY_KEYS}
            if (path.parent / contract.VARIANT).is_file():
                rec["variant_overrides"] = yaml.safe_load((path.parent / contract.VARIANT).read_text()) or {}
            if (path / contract.CONFIG).is_file():
                cfg = yaml.safe_load((path / contract.CONFIG).read_text()) or {}
                rec["config"] = {k: cfg[k] for k in ("env", "bonus", "agent", "num_seeds", "eval_frequency")
                                 if k in cfg}
            if exp in VISIT_EXPERIMENTS and (path / contract.VISITS).is_file():
                visits[_visit_key(exp, env, bonus, variant, seed)] = np.load(path / contract.VISITS)
            records.append(rec)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(ID_COLUMNS))
    # mtime=0: the same data gives the same bytes, so a rebuilt export does not show as a change.
    with gzip.GzipFile(data_dir / RUNS_CSV, "wb", mtime=0) as f:
        f.write(table.to_csv(index=False, float_format="%.6g").encode())
    with gzip.GzipFile(data_dir / RUNS_JSON, "wb", mtime=0) as f:
        f.write(json.dumps(records, sort_keys=True, separators=(",", ":")).encode())
    np.savez_compressed(data_dir / VISITS, **visits)
    written = sum((data_dir / n).stat().st_size for n in (RUNS_CSV, RUNS_JSON, VISITS))
    return {"runs": len(records), "complete": sum("summary" in r for r in records), "rows": len(table),
            "bytes": written}


def rebuild_tree(data_dir: str | Path, results: str | Path, only_missing_complete: bool = False) -> Path:
    """Write the compact data of ``data_dir`` back as a results tree under ``results``.

    ``only_missing_complete``: write only the complete runs whose folder ``results`` lacks, and
    leave every existing folder alone (:func:`restore_tree`)."""
    data_dir, results = Path(data_dir), Path(results)
    with gzip.open(data_dir / RUNS_JSON, "rt") as f:
        records = json.load(f)
    if only_missing_complete:
        records = [_with_keys_added_since(r) for r in records
                   if (r.get("summary") or {}).get("status") == "complete"
                   and not contract.run_dir(results, r["experiment"], r["env"], r["bonus"], r["variant"],
                                            r["seed"]).exists()]
    table = pd.read_csv(data_dir / RUNS_CSV, keep_default_na=True)
    groups = {k: g for k, g in table.groupby(list(ID_COLUMNS), sort=False)} if len(table) else {}
    visits = np.load(data_dir / VISITS) if (data_dir / VISITS).is_file() else {}
    for rec in records:
        key = tuple(rec[k] for k in ID_COLUMNS)
        path = contract.run_dir(results, rec["experiment"], rec["env"], rec["bonus"], rec["variant"], rec["seed"])
        path.mkdir(parents=True, exist_ok=True)
        if "variant_overrides" in rec:
            (path.parent / contract.VARIANT).write_text(yaml.safe_dump(rec["variant_overrides"]))
        if "config" in rec:
            (path / contract.CONFIG).write_text(yaml.safe_dump(rec["config"]))
        rows = groups.get(key)
        if rows is not None:
            rows.drop(columns=list(ID_COLUMNS)).to_csv(path / contract.METRICS, index=False)
        else:
            (path / contract.METRICS).write_text("")
        if "summary" in rec:
            (path / contract.SUMMARY).write_text(json.dumps(rec["summary"]))
        vkey = _visit_key(*key)
        if vkey in visits:
            np.save(path / contract.VISITS, visits[vkey])
    return results


# Config keys added after some committed runs were made, each with the value that reproduces how
# those runs behaved, as (group, choice, key) -> value. A restored run's saved config gets them, so
# that launch.py's comparison with today's config sees no difference where there is none.
# bonus.matmul_precision: RFIG's matmuls are float32 on a CPU whatever it says (XLA's CPU backend
# has no reduced precision; checked: identical metrics with `default` and `highest`).
KEYS_ADDED_SINCE = {("bonus", "rfig", "matmul_precision"): "highest"}


def _with_keys_added_since(record: dict) -> dict:
    config = record.get("config")
    if not config:
        return record
    config = {k: dict(v) if isinstance(v, dict) else v for k, v in config.items()}
    for (group, choice, key), value in KEYS_ADDED_SINCE.items():
        section = config.get(group)
        if isinstance(section, dict) and section.get("name") == choice and key not in section:
            section[key] = value
    return {**record, "config": config}


def restore_tree(data_dir: str | Path, results: str | Path) -> int:
    """Put the committed complete runs back into ``results`` where it has no folder for them, so
    that a sweep launched on ``results`` skips them (each is complete by the results contract, and
    its saved config has every hyperparameter, which launch.py compares with the job's: a cell
    whose defaults changed since it ran is refused by name rather than silently reused). Returns
    the number of runs written."""
    before = sum(1 for _ in Path(results).glob("*/*/*/*/seed_*")) if Path(results).is_dir() else 0
    rebuild_tree(data_dir, results, only_missing_complete=True)
    return sum(1 for _ in Path(results).glob("*/*/*/*/seed_*")) - before

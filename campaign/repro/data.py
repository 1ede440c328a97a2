"""The compact, committed form of results trees: a store that accumulates runs across machines.

A published report must rebuild from data in the repository, and a results tree is too big to
commit (checkpoints, wandb folders, every metrics column). A data folder keeps what the reports
read, in three files:

- ``runs.csv.gz``: every metrics.csv row of every run, the columns in :data:`KEPT_COLUMNS`
  that the run has, keyed by ``experiment, env, bonus, variant, seed`` (folder names);
- ``runs.json.gz``: per run, its ``summary.json`` (the package versions cut to
  :data:`KEPT_VERSIONS`; absent for an incomplete run), ``variant.yaml``, the ``env``/``bonus``/
  ``agent`` part of its ``config.yaml``, and its ``origin``: the commit, machine and jax version
  that made it;
- ``visits.npz``: the final visit-count grid of every run of :data:`VISIT_EXPERIMENTS`.

The folder accumulates: :func:`export_tree` and :func:`merge_data` add runs to what it holds. A
run (one seed of one cell) that arrives again is kept once when it is identical (its metrics
rows, summary and visits), replaces the stored one only when that one was incomplete, and is
refused otherwise, naming both origins (:class:`DataConflict`): nothing is written then. The
files are written in run-key order with no timestamps, so the same runs give the same bytes.

``rebuild_tree`` writes the data back as a results tree (the same contract launch.py writes), so
a report built from the committed data goes through exactly the code that reads live results;
``restore_tree`` puts the complete runs back into a live results tree, so that a sweep there
skips them. Nothing here imports JAX.
"""

from __future__ import annotations

import gzip
import io
import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from analysis.runs import find_experiments
from rfig_exp.results import contract
from rfig_exp.results.status import seed_ranges

from .fixes import FIXES

KEPT_COLUMNS = ("env_steps", "episode_return", "episodes_finished", "episode_length", "intrinsic_reward",
                "signal/at_max_fraction", "signal/cv", "signal/visit_rank_corr", "signal/novelty_rank_corr",
                "signal/distance_novelty_rank_corr", "bonus/clipped_fraction",
                "bonus/occupied_buckets", "bonus/info_gain_mean",
                "coverage", "env/success", "env/milestones", "env/distance",
                # the evaluation episodes' mean (agent.eval_episodes > 0: the score the authors' code reports)
                "eval/episode_return", "eval/episode_length", "wall_time_s")
ID_COLUMNS = ("experiment", "env", "bonus", "variant", "seed")
DROPPED_SUMMARY_KEYS = ("overrides",)  # long, and no report reads it
KEPT_VERSIONS = ("git_commit", "jax", "jaxlib", "brax", "python")  # of summary["versions"]
VISIT_EXPERIMENTS = ("repro", "paper32")  # the main grids' heat maps; the sensitivity runs' are left out
RUNS_CSV, RUNS_JSON, VISITS = "runs.csv.gz", "runs.json.gz", "visits.npz"

RunKey = tuple  # (experiment, env, bonus, variant, seed)


class DataConflict(Exception):
    """Runs that arrive again with other numbers than the stored ones; one line each."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class StoredRun:
    """One run in compact form: its record (ids, summary, variant, config, origin), its metrics rows
    as canonical CSV text ('' when it has none) and its visit counts (None when not kept)."""

    record: dict
    rows: str
    visits: np.ndarray | None = None

    @property
    def key(self) -> RunKey:
        return tuple(self.record[k] for k in ID_COLUMNS)

    @property
    def complete(self) -> bool:
        return (self.record.get("summary") or {}).get("status") == "complete"

    def same_numbers(self, other: StoredRun) -> bool:
        """The same metrics rows and visits, and the same value for every summary field both have
        (config and origin aside: they say where the numbers came from, not what they are; a field
        only one has was added to the record later, e.g. a time limit filled in for old runs)."""
        mine, theirs = self.record.get("summary"), other.record.get("summary")
        if self.rows != other.rows or (mine is None) != (theirs is None):
            return False
        if mine is not None and any(mine[k] != theirs[k] for k in mine.keys() & theirs.keys()):
            return False
        if (self.visits is None) != (other.visits is None):
            return False
        return self.visits is None or bool(np.array_equal(self.visits, other.visits))


def _canonical_rows(df: pd.DataFrame | None) -> str:
    """A run's kept columns as CSV text in one form, whichever table they came from: columns in
    KEPT_COLUMNS order, a column empty in every row left out, floats to 6 significant digits."""
    if df is None or not len(df):
        return ""
    df = df[[c for c in KEPT_COLUMNS if c in df.columns]].dropna(axis=1, how="all")
    for c in df.columns:  # an integer column that went through a table with gaps comes back as floats
        if df[c].dtype.kind == "f" and np.all(np.mod(df[c].to_numpy(), 1) == 0):
            df = df.assign(**{c: df[c].astype(np.int64)})
    return df.to_csv(index=False, float_format="%.6g")


def describe_machine(machine: dict | None) -> str | None:
    """summary.json's ``machine`` in a few words: the accelerator, else the CPU, with the cores; for
    runs that record them, the CPU's family and model and its instruction-set hash, which tell apart
    two machines whose model name and cores read alike."""
    if not machine:
        return None
    cores = f"{machine['cores']} CPU cores" if machine.get("cores") else "CPU"
    if machine.get("backend") not in (None, "cpu"):
        n = machine.get("devices") or 1
        return f"{n} x {machine.get('device_kind')} ({machine['backend']}), {cores}"
    ident, isa = machine.get("cpu_id") or {}, machine.get("isa") or {}
    kind = " ".join(f"{k} {ident[k]}" for k in ("family", "model", "stepping", "part") if k in ident)
    kind += (", " if kind and isa else "") + (f"ISA {isa['sha256_16']}" if isa.get("sha256_16") else "")
    cpu = f" ({machine['cpu']}{'; ' + kind if kind else ''})" if machine.get("cpu") else ""
    mem = f", {machine['memory_gib']:.0f} GiB" if machine.get("memory_gib") else ""
    return f"{cores}{cpu}{mem}, no GPU"


def origin_of(summary: dict | None) -> dict:
    """The commit, machine and jax version that made a run, from its summary (None where unknown)."""
    summary = summary or {}
    versions = summary.get("versions") or {}
    commit = versions.get("git_commit")
    if commit:
        commit = commit[:7] + ("-dirty" if summary.get("git_dirty") else "")
    return {"commit": commit, "machine": describe_machine(summary.get("machine")), "jax": versions.get("jax")}


def _visit_key(exp: str, env: str, bonus: str, variant: str, seed: int) -> str:
    return "|".join((exp, env, bonus, variant, str(seed)))


def _run_from_folder(path: Path, ident: dict) -> StoredRun:
    rec: dict = dict(ident)
    df = None
    metrics = path / contract.METRICS
    if metrics.is_file() and metrics.stat().st_size:
        df = pd.read_csv(metrics)
    if (path / contract.SUMMARY).is_file():
        summary = json.loads((path / contract.SUMMARY).read_text())
        summary = {k: v for k, v in summary.items() if k not in DROPPED_SUMMARY_KEYS}
        if isinstance(summary.get("versions"), dict):
            summary["versions"] = {k: v for k, v in summary["versions"].items() if k in KEPT_VERSIONS}
        rec["summary"] = summary
        rec["origin"] = origin_of(summary)
    if (path.parent / contract.VARIANT).is_file():
        rec["variant_overrides"] = yaml.safe_load((path.parent / contract.VARIANT).read_text()) or {}
    if (path / contract.CONFIG).is_file():
        cfg = yaml.safe_load((path / contract.CONFIG).read_text()) or {}
        rec["config"] = {k: cfg[k] for k in ("env", "bonus", "agent", "num_seeds", "eval_frequency") if k in cfg}
    visits = None
    if ident["experiment"] in VISIT_EXPERIMENTS and (path / contract.VISITS).is_file():
        visits = np.load(path / contract.VISITS)
    return StoredRun(rec, _canonical_rows(df), visits)


def read_tree(results: str | Path, experiments=None, complete_cells: bool = False,
              complete_runs: bool = False) -> tuple[dict, list[str]]:
    """The runs of ``results`` (the experiments given, or all) in compact form, by run key.

    ``complete_cells``: only the cells (experiment, env, bonus, variant) whose every run there is
    complete; ``complete_runs``: every complete run, its cell's other runs left (a job's vmapped
    seeds finish together, so this takes whole jobs: a block of seeds that finished goes in while the
    next block of the same cell still runs). What is left waits for a later export and is named,
    per cell, in the second value."""
    if complete_cells and complete_runs:
        raise ValueError("complete_cells and complete_runs: choose one")
    results = Path(results)
    runs: dict[RunKey, StoredRun] = {}
    for exp in experiments or find_experiments(results):
        for run in contract.iter_runs(results, exp):
            ident = dict(experiment=exp, env=run.env, bonus=run.bonus, variant=run.variant, seed=run.seed)
            stored = _run_from_folder(run.path, ident)
            runs[stored.key] = stored
    held_back: list[str] = []
    if complete_cells or complete_runs:
        cells: dict[tuple, list[StoredRun]] = {}
        for r in runs.values():
            cells.setdefault(r.key[:4], []).append(r)
        for cell, members in sorted(cells.items()):
            if not all(r.complete for r in members):
                done = sum(r.complete for r in members)
                left = [r for r in members if complete_cells or not r.complete]
                held_back.append(f"{'/'.join(map(str, cell))}: {done} of {len(members)} seeds complete"
                                 + (f"; seeds {seed_ranges(r.key[4] for r in left)} left" if complete_runs else ""))
                for r in left:
                    del runs[r.key]
    return runs, held_back


def read_data(data_dir: str | Path) -> dict[RunKey, StoredRun]:
    """The runs a data folder holds, by run key (empty for a folder without data)."""
    data_dir = Path(data_dir)
    if not (data_dir / RUNS_JSON).is_file():
        return {}
    with gzip.open(data_dir / RUNS_JSON, "rt") as f:
        records = json.load(f)
    table = pd.read_csv(data_dir / RUNS_CSV, keep_default_na=True) if (data_dir / RUNS_CSV).is_file() else None
    groups = ({k: g for k, g in table.groupby(list(ID_COLUMNS), sort=False)}
              if table is not None and len(table) else {})
    visits = dict(np.load(data_dir / VISITS)) if (data_dir / VISITS).is_file() else {}
    out = {}
    for rec in records:
        key = tuple(rec[k] for k in ID_COLUMNS)
        rows = groups.get(key)
        out[key] = StoredRun(rec, _canonical_rows(rows), visits.get(_visit_key(*key)))
    return out


def merge_runs(into: dict[RunKey, StoredRun], new: dict[RunKey, StoredRun]) -> dict[str, int]:
    """Add ``new`` to ``into`` in place: a new run is added; a run already there is kept once when
    its numbers are the same; an incomplete stored run gives way to the arriving one; an arriving
    incomplete run never replaces a stored one. Any other difference raises :class:`DataConflict`
    (listing every such run) before anything changes. Returns counts."""
    conflicts, plan = [], []
    counts = {"added": 0, "identical": 0, "replaced_incomplete": 0, "kept_complete": 0}
    for key, run in sorted(new.items()):
        old = into.get(key)
        if old is None:
            plan.append(run)
            counts["added"] += 1
        elif old.same_numbers(run):
            counts["identical"] += 1
        elif not old.complete:
            plan.append(run)
            counts["replaced_incomplete"] += 1
        elif not run.complete:
            counts["kept_complete"] += 1
        else:
            conflicts.append(f"{'/'.join(map(str, key))}: the stored run ({_origin_text(old)}) and the arriving one "
                             f"({_origin_text(run)}) differ; a run is kept once only when identical: remove one of "
                             "them (or give the new runs another experiment=) and merge again")
    if conflicts:
        raise DataConflict(conflicts)
    for run in plan:
        into[run.key] = run
    return counts


def _origin_text(run: StoredRun) -> str:
    o = run.record.get("origin") or {}
    return ", ".join(f"{k} {o[k]}" for k in ("commit", "machine", "jax") if o.get(k)) or "origin not recorded"


def write_data(runs: dict[RunKey, StoredRun], data_dir: str | Path) -> dict:
    """Write ``runs`` as a data folder (run-key order, no timestamps: the same runs, the same bytes)."""
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    frames, records, visits = [], [], {}
    for key in sorted(runs):
        run = runs[key]
        records.append(run.record)
        if run.rows:
            df = pd.read_csv(io.StringIO(run.rows))
            for k, v in reversed(list(zip(ID_COLUMNS, key))):
                df.insert(0, k, v)
            frames.append(df)
        if run.visits is not None:
            visits[_visit_key(*key)] = run.visits
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(ID_COLUMNS))
    table = table[list(ID_COLUMNS) + [c for c in KEPT_COLUMNS if c in table.columns]]
    # mtime=0: the same data gives the same bytes, so a rebuilt export does not show as a change.
    with gzip.GzipFile(data_dir / RUNS_CSV, "wb", mtime=0) as f:
        f.write(table.to_csv(index=False, float_format="%.6g").encode())
    with gzip.GzipFile(data_dir / RUNS_JSON, "wb", mtime=0) as f:
        f.write(json.dumps(records, sort_keys=True, separators=(",", ":")).encode())
    np.savez_compressed(data_dir / VISITS, **{k: visits[k] for k in sorted(visits)})  # no timestamps inside
    written = sum((data_dir / n).stat().st_size for n in (RUNS_CSV, RUNS_JSON, VISITS))
    return {"runs": len(records), "complete": sum(r.complete for r in runs.values()), "rows": len(table),
            "bytes": written}


def export_tree(results: str | Path, data_dir: str | Path, experiments=None, complete_cells: bool = False,
                complete_runs: bool = False) -> dict:
    """Add the runs of ``results`` (the experiments given, or all) to the data in ``data_dir``
    (:func:`merge_runs`; a conflict writes nothing). Returns counts, with ``held_back``: the cells
    left out (or partly left) by ``complete_cells`` or ``complete_runs`` (:func:`read_tree`)."""
    stored = read_data(data_dir)
    new, held_back = read_tree(results, experiments, complete_cells, complete_runs)
    merged = merge_runs(stored, file_by_fixes(new))
    counts = write_data(stored, data_dir)
    return {**counts, **merged, "held_back": held_back}


def merge_data(source: str | Path, data_dir: str | Path) -> dict:
    """Add the runs of the data folder ``source`` (an export from another machine) to ``data_dir``."""
    stored = read_data(data_dir)
    merged = merge_runs(stored, file_by_fixes(read_data(source)))
    return {**write_data(stored, data_dir), **merged}


def relabel_runs(runs: dict[RunKey, StoredRun], source: str, target: str, envs, variants) -> dict[RunKey, StoredRun]:
    """The runs of experiment ``source`` on ``envs`` x ``variants``, as runs of experiment ``target``:
    the same runs (numbers, config, origin), filed under another experiment, and each record says
    which one it was made in (``relabelled_from``). This is how the 32-seed grid holds the
    reproduction's seeds 0-7: a run's experiment names the grid it belongs to, never its numbers."""
    out = {}
    for key, run in runs.items():
        exp, env, _bonus, variant, _seed = key
        if exp != source or env not in envs or variant not in variants:
            continue
        record = {**run.record, "experiment": target, "relabelled_from": run.record.get("relabelled_from", source)}
        if isinstance(record.get("summary"), dict):
            record["summary"] = {**record["summary"], "experiment": target}
        moved = replace(run, record=record)
        out[moved.key] = moved
    return out


def made_at(record: dict, overrides: dict) -> bool:
    """Whether a run was made at ``overrides`` (``bonus.KEY: value``) as far as its recorded config
    says: each key there equal to the value, or absent (a setting added with the change did not
    exist when the run was made). A run made at other values (the new defaults) was not."""
    config = (record.get("config") or {}).get("bonus") or {}
    return all(k.split(".", 1)[1] not in config or config[k.split(".", 1)[1]] == v for k, v in overrides.items())


def relabel_variant(runs: dict[RunKey, StoredRun], bonus: str, overrides: dict, note: str) -> dict[RunKey, StoredRun]:
    """Every run of ``bonus`` filed under the variant it is once ``overrides`` are written out: for runs
    made before the bonus's defaults changed, ``overrides`` are the old defaults, so each run lands
    where the same command with those overrides writes today, and its record says so (its config
    takes the values, ``relabelled_variant_from`` the variant it had, ``note`` why); a run whose own
    variant already sets one of those keys keeps its value there, and a run whose config records other
    values (made at the new defaults) is left as it is (:func:`made_at`). Their numbers stay
    as they are; the bonus's runs at the new defaults then go under its base variant, never mixed
    with these. Other runs are returned unchanged. A run that lands where another run already is must
    be that run (the same numbers), else :class:`DataConflict` (:func:`merge_runs`)."""
    staying, moving = {}, []
    for key, run in runs.items():
        moved = _refiled(run, bonus, overrides, note)
        if moved is None:
            staying[key] = run
        else:
            moving.append(moved)
    for moved in moving:
        merge_runs(staying, {moved.key: moved})
    return staying


def _refiled(run: StoredRun, bonus: str, overrides: dict, note: str) -> StoredRun | None:
    """``run`` filed under ``overrides`` (:func:`relabel_variant`), or None where it stays."""
    from rfig_exp.config.variants import variant_name

    own = run.record.get("variant_overrides", {})
    old = {k: v for k, v in overrides.items() if k not in own}  # a run that set a key itself keeps its value
    if run.key[2] != bonus or not old or not made_at(run.record, old):
        return None
    record = dict(run.record)
    moved = {**own, **old}
    record.update(variant=variant_name(moved), variant_overrides=moved,
                  relabelled_variant_from=record.get("relabelled_variant_from", record["variant"]),
                  relabelled_variant_note=note)
    config = dict(record.get("config") or {})
    config["bonus"] = {**config.get("bonus", {}), **{k.split(".", 1)[1]: v for k, v in old.items()}}
    record["config"] = config
    if isinstance(record.get("summary"), dict):
        record["summary"] = {**record["summary"], "variant": record["variant"], "variant_overrides": moved}
    return replace(run, record=record)


def file_by_fixes(runs: dict[RunKey, StoredRun], fixes=FIXES) -> dict[RunKey, StoredRun]:
    """``runs`` with every run made before a declared fix of its bonus (:data:`campaign.repro.fixes.FIXES`)
    filed under the variant of that fix's old values (:func:`relabel_variant`). Applied to the runs
    entering the data before they are merged, so a run made at old values is never merged as a run of
    the fixed bonus."""
    for fix in fixes:
        runs = relabel_variant(runs, fix.bonus, dict(fix.old_defaults), fix.note)
    return runs


def refile_data(data_dir: str | Path, fixes=FIXES) -> str:
    """:func:`file_by_fixes` on the runs already in a data folder (after a fix is declared); the line
    that says how many runs moved where. A second call moves none."""
    stored = read_data(data_dir)
    moved = file_by_fixes(stored, fixes)
    counts = write_data(moved, data_dir)
    arrived = [k for k in moved if k not in stored]
    where = "; ".join(f"{bonus} -> {variant}" for bonus, variant in sorted({(k[2], k[3]) for k in arrived}))
    return (f"{len(arrived)} runs of {data_dir} filed under the old values of a fix ({where or 'nothing to move'}); "
            f"it holds {counts['runs']} runs")


def merge_relabelled(source: str | Path, data_dir: str | Path, from_experiment: str, to_experiment: str, envs,
                     variants) -> dict:
    """:func:`merge_data` of the ``from_experiment`` runs of ``source`` on ``envs`` x ``variants``,
    filed under ``to_experiment`` (:func:`relabel_runs`)."""
    stored = read_data(data_dir)
    merged = merge_runs(stored, file_by_fixes(relabel_runs(read_data(source), from_experiment, to_experiment, envs,
                                                           variants)))
    return {**write_data(stored, data_dir), **merged}


def rebuild_tree(data_dir: str | Path, results: str | Path, only_missing_complete: bool = False) -> Path:
    """Write the compact data of ``data_dir`` back as a results tree under ``results``.

    ``only_missing_complete``: write only the complete runs whose folder ``results`` lacks, and
    leave every existing folder alone (:func:`restore_tree`)."""
    return write_tree(read_data(data_dir), results, only_missing_complete)


def write_tree(stored: dict[RunKey, StoredRun], results: str | Path, only_missing_complete: bool = False) -> Path:
    """Write runs already read (:func:`read_data`) as a results tree under ``results``
    (:func:`rebuild_tree`, for a caller that also reads them)."""
    results = Path(results)
    runs = list(stored.values())
    if only_missing_complete:
        runs = [replace(r, record=_with_keys_added_since(r.record)) for r in runs
                if r.complete and not contract.run_dir(results, *r.key).exists()]
    for run in runs:
        rec = run.record
        path = contract.run_dir(results, *run.key)
        path.mkdir(parents=True, exist_ok=True)
        if "variant_overrides" in rec:
            (path.parent / contract.VARIANT).write_text(yaml.safe_dump(rec["variant_overrides"]))
        if "config" in rec:
            (path / contract.CONFIG).write_text(yaml.safe_dump(rec["config"]))
        (path / contract.METRICS).write_text(run.rows)
        if "summary" in rec:
            (path / contract.SUMMARY).write_text(json.dumps(rec["summary"]))
        if run.visits is not None:
            np.save(path / contract.VISITS, run.visits)
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

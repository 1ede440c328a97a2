"""The results contract shared with ``analysis/`` and the scale-out tooling.

Each run (env, bonus, variant, seed) owns
``<results_dir>/<experiment>/<env>/<bonus>/<variant>/seed_<k>/`` (``variant``: see
:mod:`rfig_exp.config.variants`; its full list of overrides is ``<variant>/variant.yaml``):

- ``config.yaml``: the resolved config of the run (with its own ``seed``);
- ``metrics.csv``: a row per window, appended and flushed as it goes (``events.out.tfevents.*``: TensorBoard's);
- ``visits.npy``: the final visit counts of the env's coverage grid (envs with a grid);
- ``summary.json``: written last and atomically, its fields those of :class:`RunSummary` (the run
  loop writes one, ``status``, ``estimate`` and ``analysis`` read them); see
  :func:`incomplete_reason` for when a run is complete (the one rule they all share).

An experiment folder also holds ``manifest.jsonl`` (:data:`MANIFEST`): one line per job of every
``-m`` launch, a :class:`ManifestEntry` with its seeds (written by ``preflight``, read by
``status``). Readers find runs
with :func:`iter_runs` only; folders whose names start with ``.`` or ``_`` are not part of the
tree (a ``.trash`` or ``_old`` folder beside the runs is skipped).

Files are created with the permissions the umask allows (as ``open`` would), so that
collaborators on a shared cluster can read them.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import yaml

from rfig_exp.config import variants

SUMMARY = "summary.json"
METRICS = "metrics.csv"
CONFIG = "config.yaml"
VARIANT = "variant.yaml"
VISITS = "visits.npy"
MANIFEST = "manifest.jsonl"
SEED_DIR = re.compile(r"^seed_(\d+)$")
# Leading columns of metrics.csv, in this order; the rest follow alphabetically.
LEADING_COLUMNS = ("env_steps", "update", "episode_return", "episode_length", "episodes_finished",
                   "intrinsic_reward", "intrinsic_reward_normalized", "extrinsic_reward")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()


def run_dir(results_dir: str | os.PathLike, experiment: str, env: str, bonus: str, variant: str, seed: int) -> Path:
    return Path(results_dir) / experiment / env / bonus / variant / f"seed_{seed}"


@dataclass(frozen=True)
class RunDir:
    """Where one run lives: its place in the layout (folder names) and its folder."""

    experiment: str
    env: str
    bonus: str
    variant: str
    seed: int
    path: Path


def hidden(name: str) -> bool:
    """Folders that are not part of the results tree (``.trash``, ``_old``, ...)."""
    return name.startswith((".", "_"))


def _subdirs(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir() and not hidden(p.name))


def experiments(results_dir: str | os.PathLike) -> list[str]:
    """The experiment folders of a results folder, sorted (none when it is not a folder)."""
    root = Path(results_dir)
    return [p.name for p in _subdirs(root)] if root.is_dir() else []


def iter_runs(results_dir: str | os.PathLike, experiment: str) -> Iterator[RunDir]:
    """Every run folder ``<env>/<bonus>/<variant>/seed_<k>`` of one experiment, in sorted order."""
    exp_dir = Path(results_dir) / experiment
    if not exp_dir.is_dir():
        return
    for env_dir in _subdirs(exp_dir):
        for bonus_dir in _subdirs(env_dir):
            for variant_dir in _subdirs(bonus_dir):
                for seed_dir in _subdirs(variant_dir):
                    m = SEED_DIR.match(seed_dir.name)
                    if m:
                        yield RunDir(experiment, env_dir.name, bonus_dir.name, variant_dir.name, int(m.group(1)),
                                     seed_dir)


def has_runs(results_dir: str | os.PathLike, experiment: str) -> bool:
    return next(iter_runs(results_dir, experiment), None) is not None


def _int(value: Any) -> int | None:
    """An integer as JSON holds one (an integral float too); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, float) and value.is_integer() else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _dict(value: Any) -> dict | None:
    return dict(value) if isinstance(value, dict) else None


BONUS_PREFIX = "bonus_"  # summary.json's fields of what the bonus chose or counted (bonus_lengthscale, ...)
# summary.json's fields written only where they apply (a summary without them reads them as None)
OPTIONAL_FIELDS = ("failure", "coverage_grid", "final_coverage", "eval_return_at_start", "eval_length_at_start")


@dataclass(frozen=True)
class RunSummary:
    """``summary.json`` of one run: what the run loop writes, field by field, under these names.

    Read back (:meth:`from_json`) from any summary, also one written before a field existed
    (``machine``, ``num_envs``, ``max_episode_steps``, ``finished_at`` are recent) or by hand: a
    field that is absent, or not of its type, reads as None (empty for the lists). ``status`` is
    ``complete`` or ``failed`` (then ``failure`` says why); ``final_return`` is None when no
    episode ever ended; ``bonus_values`` are the ``bonus_<name>`` fields (the bonus's ``describe``
    at the end); ``coverage_grid`` and ``final_coverage`` exist where the env has a grid;
    ``eval_return_at_start`` and ``eval_length_at_start`` where the run evaluated (``agent.eval_episodes``
    > 0): the step-0 point of the ``eval/*`` columns of ``metrics.csv`` (one row per window), the mean
    over the evaluation episodes of the initial policy, after the warm-up and before any update."""

    status: str | None
    experiment: str | None = None
    env: str | None = None
    bonus: str | None = None
    variant: str | None = None
    variant_overrides: dict | None = None
    seed: int | None = None
    num_seeds_in_process: int | None = None   # the seeds vmapped in the run's process
    env_steps: int | None = None              # per seed, the whole run
    num_windows: int | None = None
    requested_timesteps: int | None = None    # agent.total_timesteps before rounding up to windows
    final_return: float | None = None         # the last window's return that was finite
    wall_time_s: float | None = None          # the job's whole time, compile included
    compile_time_s: float | None = None
    train_time_s: float | None = None         # training, earlier attempts of a resumed run included
    checkpoints_written: int | None = None
    checkpoint_wait_s: float | None = None    # training time lost to checkpoints
    env_steps_per_second: float | None = None  # all the process's seeds, this attempt's training time
    warmup_env_steps: int | None = None       # the random-policy warm-up of the observation statistics
    num_envs: int | None = None               # parallel envs per seed
    max_episode_steps: int | None = None      # the env's time limit (survivor bias of the first windows)
    finished_at: str | None = None            # UTC, ISO 8601
    resumed_from_windows: tuple[int, ...] = ()
    overrides: tuple[str, ...] = ()           # the job's command line
    host: str | None = None
    machine: dict | None = None               # CPU, cores, memory, accelerator (rfig_exp.run.provenance)
    placement: dict | None = None             # the process's share of the machine (rfig_exp.run.placement)
    git_dirty: bool | None = None
    versions: dict | None = None              # python, packages, git_commit
    failure: str | None = None                # why a failed run failed
    coverage_grid: dict | None = None
    final_coverage: float | None = None
    eval_return_at_start: float | None = None  # agent.eval_episodes' mean return at step 0 (the eval/* columns after)
    eval_length_at_start: float | None = None  # their mean length
    bonus_values: dict[str, float] = field(default_factory=dict)

    @property
    def device(self) -> str | None:
        """The accelerator (or CPU) JAX trained on, as ``machine`` records it."""
        return _str((self.machine or {}).get("device_kind"))

    def to_json(self) -> dict:
        """The JSON object ``summary.json`` holds (``failure``, ``coverage_grid`` and
        ``final_coverage`` and the ``eval_*_at_start`` only where they apply)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "bonus_values":
                out.update({f"{BONUS_PREFIX}{k}": v for k, v in value.items()})
            elif f.name in OPTIONAL_FIELDS and value is None:
                continue
            else:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> RunSummary:
        ints = ("seed", "num_seeds_in_process", "env_steps", "num_windows", "requested_timesteps",
                "checkpoints_written", "warmup_env_steps", "num_envs", "max_episode_steps")
        floats = ("final_return", "wall_time_s", "compile_time_s", "train_time_s", "checkpoint_wait_s",
                  "env_steps_per_second", "final_coverage", "eval_return_at_start", "eval_length_at_start")
        texts = ("status", "experiment", "env", "bonus", "variant", "finished_at", "host", "failure")
        dicts = ("variant_overrides", "machine", "placement", "versions", "coverage_grid")
        values: dict[str, Any] = {k: _int(raw.get(k)) for k in ints}
        values.update({k: _float(raw.get(k)) for k in floats})
        values.update({k: _str(raw.get(k)) for k in texts})
        values.update({k: _dict(raw.get(k)) for k in dicts})
        resumed, overrides = raw.get("resumed_from_windows"), raw.get("overrides")
        values["resumed_from_windows"] = tuple(w for w in map(_int, resumed) if w is not None) \
            if isinstance(resumed, list) else ()
        values["overrides"] = tuple(str(o) for o in overrides) if isinstance(overrides, list) else ()
        values["git_dirty"] = raw.get("git_dirty") if isinstance(raw.get("git_dirty"), bool) else None
        values["bonus_values"] = {k[len(BONUS_PREFIX):]: float(v) for k, v in raw.items()
                                  if k.startswith(BONUS_PREFIX) and _float(v) is not None}
        return cls(**values)


def read_summary(path: Path) -> tuple[RunSummary | None, str | None]:
    """``(summary, problem)`` of a run folder: ``(None, "no summary.json")`` without one,
    ``(None, why)`` when it cannot be read as a JSON object."""
    try:
        text = (path / SUMMARY).read_text()
    except FileNotFoundError:
        return None, f"no {SUMMARY}"
    except OSError as exc:
        return None, f"{SUMMARY} unreadable ({exc})"
    try:
        summary = json.loads(text)
    except ValueError as exc:
        return None, f"{SUMMARY} unreadable ({exc})"
    if not isinstance(summary, dict):
        return None, f"{SUMMARY} unreadable (not a JSON object)"
    return RunSummary.from_json(summary), None


def read_config(path: Path) -> dict | None:
    """A run folder's saved ``config.yaml`` as a dict (None without one, or when unreadable)."""
    try:
        config = yaml.safe_load((path / CONFIG).read_text())
    except (OSError, ValueError, yaml.YAMLError):
        return None
    return config if isinstance(config, dict) else None


def incomplete_reason(path: Path, summary: RunSummary | None = None) -> str | None:
    """Why the run in ``path`` is not complete; None when it is. THE rule of completeness:

    a readable ``summary.json`` whose ``status`` is ``complete`` (the trainer writes ``status``
    in every summary: ``complete`` or ``failed``; a summary without it is not one the trainer
    wrote, so it does not count as complete), over a whole ``metrics.csv`` (a row per window:
    ``num_windows`` of the summary, when it says), so that a truncated or deleted metrics file
    makes the run incomplete again and a relaunch re-runs it. ``summary``: the summary already
    read from ``path`` (read here otherwise)."""
    if summary is None:
        summary, problem = read_summary(path)
        if summary is None:
            return problem or f"{SUMMARY} unreadable"
    if summary.status != "complete":
        return f"{SUMMARY} status is {summary.status!r}"
    windows = summary.num_windows
    if windows is not None:
        rows = whole_rows(path)
        if rows != windows:
            return f"{METRICS} has {rows} whole row(s), {SUMMARY} says {windows} window(s)"
    return None


def write_variant(variant_dir: Path, overrides: Mapping[str, Any]) -> None:
    """Save the variant's full list of overrides next to its seeds (once)."""
    path = variant_dir / VARIANT
    if not path.exists():
        atomic_write_text(path, "# hyperparameters that differ from the defaults of this env and bonus\n"
                          + (yaml.safe_dump(dict(overrides), sort_keys=True) if overrides else "{}\n"))


def config_differences(saved_yaml: str, new_yaml: str, new_overrides: Mapping[str, Any] | None = None) -> list[str]:
    """Keys whose values differ between two saved configs, bookkeeping keys aside (``variants.not_hyperparameters``).
    A key the saved one lacks that the new one has at its default (not in ``new_overrides``, its variant's
    overrides) is a setting added since that run, which had that value: no difference."""
    old, new = (variants.flatten(yaml.safe_load(text) or {}) for text in (saved_yaml, new_yaml))
    keys = sorted(k for k in set(old) | set(new) if variants.is_hyperparameter(k))
    added = {k for k in set(new) - set(old) if new_overrides is not None and k not in new_overrides}
    return [f"{k}: {old.get(k, '<absent>')!r} -> {new.get(k, '<absent>')!r}" for k in keys
            if k not in added and (k not in old or k not in new or not variants.same_value(old[k], new[k]))]


def is_complete(path: Path) -> bool:
    """Whether the run in ``path`` is complete (:func:`incomplete_reason`)."""
    return incomplete_reason(path) is None


def whole_rows(path: Path) -> int:
    """The number of whole rows at the start of ``metrics.csv`` (0 without one): a torn last line
    (a crash or a truncation) or a row of the wrong width ends the count."""
    try:
        lines = (path / METRICS).read_text().split("\n")
    except (OSError, ValueError):
        return 0
    if len(lines) < 2:
        return 0
    width, count = len(next(csv.reader([lines[0]]))), 0
    for line in lines[1:-1]:  # the last piece follows the last newline: never a whole row
        if len(next(csv.reader([line]), [])) != width:
            break
        count += 1
    return count


def damaged_config(path: Path) -> str | None:
    """Why ``config.yaml`` cannot be a config this code wrote (None: it can). Written atomically
    and ending in a newline, so a torn, truncated or overwritten file shows."""
    try:
        text = (path / CONFIG).read_text()
        if not isinstance(yaml.safe_load(text), dict) or not text.endswith("\n"):
            return "not a whole YAML mapping"
    except FileNotFoundError:
        return None
    except (OSError, ValueError, yaml.YAMLError) as err:
        return str(err).splitlines()[0]
    return None


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)  # mkstemp makes 0600; the result should be as readable as any file
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def start_run(path: Path, config_yaml: str) -> None:
    """Prepare a run folder for a fresh start: an old summary goes first, so a crash can never
    look complete; so do the metrics, visits, TensorBoard events and wandb runs of an earlier attempt
    (``wandb sync`` would upload an orphaned offline run beside the new one, TensorBoard draw both)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / SUMMARY).unlink(missing_ok=True)
    for name in (METRICS, VISITS, *(p.name for p in path.glob("events.out.tfevents.*"))):
        (path / name).unlink(missing_ok=True)
    shutil.rmtree(path / "wandb", ignore_errors=True)
    atomic_write_text(path / CONFIG, config_yaml)


def write_visits(path: Path, visits) -> None:
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.asarray(visits, dtype=np.int64))
    fd, tmp = tempfile.mkstemp(dir=path, prefix=f".{VISITS}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(buffer.getvalue())
        os.replace(tmp, path / VISITS)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_summary(path: Path, summary: RunSummary) -> None:
    atomic_write_text(path / SUMMARY, json.dumps(_finite_or_none(summary.to_json()), indent=2, sort_keys=True)
                      + "\n")


def _finite_or_none(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    return value


class MetricsWriter:
    """Appends one row per window to ``metrics.csv``; the header is fixed by the first row.

    ``keep_rows > 0`` continues a resumed run: the first ``keep_rows`` rows (the windows its
    checkpoint covers) are kept and any later row, written after that checkpoint by the
    attempt that died, is dropped, so no window appears twice.
    """

    def __init__(self, path: Path, keep_rows: int = 0):
        self._writer: csv.DictWriter | None = None
        self.kept: list[dict] = []
        if keep_rows:
            with open(path / METRICS, newline="") as f:
                reader = csv.DictReader(f)
                fields = list(reader.fieldnames or [])
                self.kept = [row for _, row in zip(range(keep_rows), reader)]
            if len(self.kept) < keep_rows:
                raise ValueError(f"{path / METRICS} has {len(self.kept)} rows, its checkpoint covers {keep_rows}")
            text = io.StringIO()
            writer = csv.DictWriter(text, fieldnames=fields)
            writer.writeheader()
            writer.writerows(self.kept)
            atomic_write_text(path / METRICS, text.getvalue())
            self._file = open(path / METRICS, "a", newline="")
            self._writer = csv.DictWriter(self._file, fieldnames=fields)
        else:
            self._file = open(path / METRICS, "w", newline="")

    def last_finite(self, column: str) -> float:
        """The last finite value of ``column`` among the kept rows (NaN if none)."""
        for row in reversed(self.kept):
            try:
                value = float(row.get(column) or "nan")
            except ValueError:
                continue
            if math.isfinite(value):
                return value
        return float("nan")

    def append(self, row: Mapping[str, float]) -> None:
        if self._writer is None:
            rest = sorted(k for k in row if k not in LEADING_COLUMNS)
            fields = [k for k in LEADING_COLUMNS if k in row] + rest
            self._writer = csv.DictWriter(self._file, fieldnames=fields)
            self._writer.writeheader()
        self._check_still_there()
        self._writer.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()})
        self._file.flush()

    def _check_still_there(self) -> None:
        """Rows appended to a file that was deleted (results_dir removed, moved or unmounted under a
        running job) would go nowhere without an error: stop at the first one instead."""
        try:
            there = os.path.samestat(os.fstat(self._file.fileno()), os.stat(self._file.name))
        except FileNotFoundError:
            there = False
        if not there:
            raise FileNotFoundError(errno.ENOENT, "vanished while the run was writing it (its folder deleted, "
                                    "moved or unmounted?)", self._file.name)

    def close(self) -> None:
        self._file.close()


@dataclass(frozen=True)
class ManifestEntry:
    """One line of ``manifest.jsonl``: a job of a ``-m`` launch, the runs it is to make."""

    env: str
    bonus: str
    variant: str
    seeds: tuple[int, ...]
    overrides: tuple[str, ...] = ()  # the job's own
    launched_at: str = ""            # local time, ISO 8601 to the second

    def to_json(self) -> dict:
        return {"env": self.env, "bonus": self.bonus, "variant": self.variant, "seeds": list(self.seeds),
                "overrides": list(self.overrides), "launched_at": self.launched_at}

    @classmethod
    def from_json(cls, raw: Any) -> ManifestEntry:
        """Raises KeyError, TypeError or ValueError for a line that is not an entry."""
        return cls(str(raw["env"]), str(raw["bonus"]), str(raw["variant"]), tuple(int(s) for s in raw["seeds"]),
                   tuple(str(o) for o in raw.get("overrides") or ()), str(raw.get("launched_at") or ""))


def append_manifest(experiment_dir: Path, entries: Sequence[ManifestEntry]) -> None:
    """Append a launch's jobs to the experiment's ``manifest.jsonl``."""
    experiment_dir.mkdir(parents=True, exist_ok=True)
    with open(experiment_dir / MANIFEST, "a") as f:
        f.write("\n".join(json.dumps(e.to_json()) for e in entries) + "\n")


def read_manifest(experiment_dir: Path) -> tuple[list[ManifestEntry], int]:
    """The manifest's entries, and how many of its lines could not be read."""
    entries, bad = [], 0
    try:
        text = (experiment_dir / MANIFEST).read_text()
    except OSError:
        return [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entries.append(ManifestEntry.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            bad += 1
    return entries, bad

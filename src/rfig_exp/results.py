"""The results contract shared with ``analysis/`` and the scale-out tooling.

Each run (env, bonus, seed) owns ``<results_dir>/<experiment>/<env>/<bonus>/seed_<k>/``:

- ``config.yaml``: the resolved config of the run (with its own ``seed``);
- ``metrics.csv``: one row per evaluation window, appended and flushed as training goes;
- ``summary.json``: written last and atomically. Without it a run is *not* complete.
"""

from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Mapping

SUMMARY = "summary.json"
METRICS = "metrics.csv"
CONFIG = "config.yaml"
# Leading columns of metrics.csv, in this order; the rest follow alphabetically.
LEADING_COLUMNS = ("env_steps", "update", "episode_return", "episode_length", "episodes_finished",
                   "intrinsic_reward", "intrinsic_reward_normalized", "extrinsic_reward")


def run_dir(results_dir: str | os.PathLike, experiment: str, env: str, bonus: str, seed: int) -> Path:
    return Path(results_dir) / experiment / env / bonus / f"seed_{seed}"


def is_complete(path: Path) -> bool:
    try:
        return json.loads((path / SUMMARY).read_text()).get("status") == "complete"
    except (OSError, ValueError):
        return False


def atomic_write_text(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def start_run(path: Path, config_yaml: str) -> None:
    """Prepare a run folder: an old summary goes first, so a crash can never look complete."""
    path.mkdir(parents=True, exist_ok=True)
    (path / SUMMARY).unlink(missing_ok=True)
    atomic_write_text(path / CONFIG, config_yaml)


def write_summary(path: Path, summary: Mapping) -> None:
    atomic_write_text(path / SUMMARY, json.dumps(_finite_or_none(dict(summary)), indent=2, sort_keys=True) + "\n")


def _finite_or_none(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    return value


class MetricsWriter:
    """Appends one row per window to ``metrics.csv``; the header is fixed by the first row."""

    def __init__(self, path: Path):
        self._file = open(path / METRICS, "w", newline="")
        self._writer: csv.DictWriter | None = None

    def append(self, row: Mapping[str, float]) -> None:
        if self._writer is None:
            rest = sorted(k for k in row if k not in LEADING_COLUMNS)
            fields = [k for k in LEADING_COLUMNS if k in row] + rest
            self._writer = csv.DictWriter(self._file, fieldnames=fields)
            self._writer.writeheader()
        self._writer.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()})
        self._file.flush()

    def close(self) -> None:
        self._file.close()

"""Per-seed checkpoints of the whole run state, written atomically into the run directory.

A job trains ``S`` vmapped seeds; each seed's slice of the stacked ``RunState`` pytree is
saved in its own run directory, so a seed can resume whatever job it lands in next time::

    seed_<k>/checkpoint/window_<w>.npz    the state's leaves (np.savez)
    seed_<k>/checkpoint/window_<w>.json   window, leaf count, sha256 of the .npz, extra values

Both are written to temporary names, fsynced and renamed, the ``.json`` last: a checkpoint
exists only once its ``.json`` does, and a checkpoint whose ``.npz`` does not match the
recorded checksum or leaf shapes is skipped with a warning (the previous one is used, or
the run starts afresh). The last ``keep`` checkpoints are kept.

Why not orbax-checkpoint: measured here, one orbax ``save`` + ``wait_until_finished`` costs
60-110 ms whatever the state's size (8 MB or 50 kB), against 1-20 ms for this module, and
its import adds 1.6 s to every job; a checkpoint per seed per window would cost PPO runs
up to a third of their time. See docs/running.md, *Checkpoints*.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

log = logging.getLogger("rfig_exp")

FOLDER = "checkpoint"
_NAME = re.compile(r"^window_(\d+)\.json$")


def due(window: int, last_window: int, now: float, last_time: float, every_windows: int | None,
        every_seconds: float | None) -> bool:
    """Is a checkpoint due after ``window``? ``last_window`` / ``last_time``: the last one saved
    (or the run's start); a cadence that is None is off."""
    return bool((every_windows is not None and window - last_window >= every_windows)
                or (every_seconds is not None and now - last_time >= every_seconds))


class BackgroundWriter:
    """Writes checkpoints in one background thread, one at a time.

    The caller takes a device copy of the run state first (the next window takes the donated
    buffers over), hands a function that brings it to the host and writes it, and trains on
    while the files are written, fsynced and renamed. ``submit`` waits for the write before it, so
    at most one is in flight
    and they land in order; ``wait`` returns the window of the newest checkpoint on disk and
    raises what a failed write raised (a full disk, say), so no failure goes unseen.
    """

    def __init__(self, saved_window: int = 0):
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoint-writer")
        self._pending: tuple[int, Any] | None = None
        self.saved_window = saved_window

    def submit(self, window: int, write) -> None:
        self.wait()
        self._pending = (window, self._pool.submit(write))

    def wait(self) -> int:
        if self._pending is not None:
            window, future = self._pending
            try:
                future.result()
            except BaseException:
                # A failed write is done with; a Ctrl-C that interrupted the waiting is not:
                # the write goes on, and the next wait (the interrupt handler's) sees it land.
                if future.done():
                    self._pending = None
                raise
            self._pending = None
            self.saved_window = window
        return self.saved_window

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=True)


class Checkpoint(NamedTuple):
    window: int
    leaves: list[np.ndarray]
    extra: dict


def _atomic_write(path: Path, write) -> str:
    """Write through ``write(file)`` to a temp file, fsync, rename; return the sha256."""
    from rfig_exp.results.contract import FILE_MODE

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        digest = hashlib.sha256(Path(tmp).read_bytes()).hexdigest()
        os.replace(tmp, path)
        return digest
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(run_dir: Path, window: int, leaves: list[np.ndarray], extra: dict[str, Any], keep: int = 2) -> None:
    """Save one seed's state leaves after ``window`` windows; prune to the last ``keep``."""
    folder = run_dir / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    digest = _atomic_write(folder / f"window_{window}.npz", lambda f: np.savez(f, *leaves))
    meta = {"window": window, "num_leaves": len(leaves), "sha256": digest,
            "shapes": [list(np.shape(x)) for x in leaves], "extra": extra}
    _atomic_write(folder / f"window_{window}.json", lambda f: f.write(json.dumps(meta).encode()))
    for old in windows(run_dir)[:-keep]:
        for suffix in (".json", ".npz"):
            (folder / f"window_{old}{suffix}").unlink(missing_ok=True)


def windows(run_dir: Path) -> list[int]:
    """Windows with a (possibly corrupt) checkpoint, oldest first."""
    folder = run_dir / FOLDER
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _NAME.match(p.name)))


def load(run_dir: Path, window: int, shapes: list[tuple[int, ...]] | None = None) -> Checkpoint | None:
    """The checkpoint after ``window`` windows, or None (with a warning) if it is damaged."""
    folder = run_dir / FOLDER
    try:
        meta = json.loads((folder / f"window_{window}.json").read_text())
        blob = (folder / f"window_{window}.npz").read_bytes()
        if hashlib.sha256(blob).hexdigest() != meta["sha256"]:
            raise ValueError("checksum mismatch (half-written or corrupted file)")
        with np.load(folder / f"window_{window}.npz") as data:
            leaves = [data[f"arr_{i}"] for i in range(meta["num_leaves"])]
        if shapes is not None and [tuple(np.shape(x)) for x in leaves] != [tuple(s) for s in shapes]:
            raise ValueError("its arrays do not match this run's state (another config or code version)")
    except (OSError, ValueError, KeyError) as err:
        log.warning("checkpoint %s/window_%d is unusable: %s", folder, window, err)
        return None
    return Checkpoint(int(meta["window"]), leaves, dict(meta.get("extra", {})))


def latest(run_dir: Path, shapes: list[tuple[int, ...]] | None = None, at_most: int | None = None) -> Checkpoint | None:
    """The newest usable checkpoint (at or before window ``at_most``), falling back to older ones."""
    for window in reversed(windows(run_dir)):
        if at_most is not None and window > at_most:
            continue
        found = load(run_dir, window, shapes)
        if found is not None:
            return found
    return None


def remove(run_dir: Path) -> None:
    folder = run_dir / FOLDER
    if folder.is_dir():
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()


def on_disk(run_dirs: list[Path], num_windows: int | None = None) -> str:
    """What a relaunch of ``run_dirs`` (runs that are not complete) resumes from, as the checkpoints
    on disk say now: ``the last checkpoint is after window 3 of 10``, or that none was written yet
    (a relaunch starts afresh); the runs of a stacked or vmapped job are counted by their newest window."""
    newest: dict[int | None, int] = {}
    for run_dir in run_dirs:
        found = windows(run_dir)
        window = found[-1] if found else None
        newest[window] = newest.get(window, 0) + 1
    of = f" of {num_windows}" if num_windows else ""
    if not newest or set(newest) == {None}:
        return "no checkpoint was written yet, so a relaunch starts it afresh"
    if len(newest) == 1:
        return f"its last checkpoint is after window {next(iter(newest))}{of}: a relaunch resumes from it"
    parts = [f"{count} after window {w}{of}" if w is not None else f"{count} none yet (those start afresh)"
             for w, count in sorted(newest.items(), key=lambda item: -1 if item[0] is None else item[0])]
    return f"last checkpoints of its {len(run_dirs)} runs: {', '.join(parts)}; a relaunch resumes from them"

"""One owner per run directory: a second process never trains a seed that another is training.

The same sweep launched twice, a SLURM requeue while the old task is still exiting, a local and
a SLURM launch of one preset: each would otherwise train the same seed into the same folder.
Before training, a job takes ``seed_<k>/owner.json`` for each seed it will run:

- created with ``O_CREAT | O_EXCL`` (atomic on a local disk and on NFSv3+/Lustre/GPFS, the
  filesystems SLURM clusters share), holding host, pid, the process's start time and when;
- kept fresh: its owner touches it after every window (the mtime is the heartbeat);
- **live** when its owner runs: on this host the pid exists with the same start time, on
  another host the heartbeat is younger than ``stale_after_s`` (the stall limit times 3:
  a live owner finishes a window, or is ended as stalled, well within it). A job waits up to
  ``owner_grace_s`` (conf/config.yaml) for a live owner to let go (a SLURM requeue can start while the old process is
  still exiting), then leaves that seed out, with one line naming the owner.
- **stale** otherwise (a killed process): taken over, the lock saying from whom (the job says it). The takeover renames the
  old file away first (atomic: of two processes taking over, one rename succeeds), checks it
  renamed the stale owner it judged, and creates its own with ``O_EXCL`` again.

The lock is removed when the job ends, however it ends; a SIGKILL leaves it behind, stale.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path


LOCK = "owner.json"


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (None: no such process)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def me() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid(), "start_ticks": _start_ticks(os.getpid()),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def describe(owner: dict) -> str:
    return f"pid {owner.get('pid')} on {owner.get('host')} since {owner.get('started')}"


def is_live(owner: dict, lock: Path, stale_after_s: float) -> bool:
    if owner.get("host") == socket.gethostname():
        pid = owner.get("pid")
        return isinstance(pid, int) and _start_ticks(pid) is not None and _start_ticks(pid) == owner.get("start_ticks")
    try:
        return time.time() - lock.stat().st_mtime < stale_after_s
    except OSError:
        return False


def _create(lock: Path, owner: dict) -> bool:
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)  # as the umask allows
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        json.dump(owner, f)
        f.flush()
        os.fsync(f.fileno())
    return True


def _read(lock: Path) -> dict | None:
    try:
        data = json.loads(lock.read_text())
        return data if isinstance(data, dict) else {}
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # torn or foreign: no owner we can show alive


@dataclass
class Lock:
    """A run folder's lock held by this process: its file, this process as its owner, and the owner
    it took the folder over from (None: the folder was free), for the caller to say."""

    path: Path
    owner: dict
    taken_from: dict | None = None

    def beat(self) -> None:
        try:
            os.utime(self.path)
        except OSError:
            pass

    def release(self) -> None:
        """Remove the lock if it is still this process's (a takeover may have replaced it)."""
        now = _read(self.path) or {}
        if (now.get("host"), now.get("pid")) == (self.owner["host"], self.owner["pid"]):
            self.path.unlink(missing_ok=True)


def acquire(run_dir: Path, stale_after_s: float) -> tuple[Lock | None, dict | None]:
    """``(lock, None)`` when this process now owns ``run_dir`` (``lock.taken_from``: the gone
    process whose lock it replaced); ``(None, owner)`` when a live process does."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lock, mine = run_dir / LOCK, me()
    taken_from = None
    for _ in range(3):
        if _create(lock, mine):
            return Lock(lock, mine, taken_from), None
        owner = _read(lock)
        if owner is None:
            continue  # released between our two looks
        if is_live(owner, lock, stale_after_s):
            return None, owner
        aside = run_dir / f".{LOCK}.stale.{mine['pid']}"
        try:
            os.rename(lock, aside)
        except FileNotFoundError:
            continue  # another process took it over first
        if _read(aside) != owner:  # we moved a lock someone created since: put it back
            try:
                os.link(aside, lock)
            except FileExistsError:
                pass
            aside.unlink(missing_ok=True)
            continue
        aside.unlink(missing_ok=True)
        taken_from = owner
    owner = _read(lock) or {}
    return None, owner

"""Test-only fault injection at named points of a real run (tests/test_faults.py). Off unless set.

Some faults cannot be timed from outside: a SIGKILL *inside* a checkpoint or summary write, a
full disk on one particular file, a wedge that happens once. The writers call :func:`hit` at
those points; it does nothing unless the environment asks for a fault there::

    RFIG_FAULT="<point>[@<n>]:<action>[,...]"   e.g. "checkpoint.npz@2:kill", "summary:enospc"
    RFIG_FAULT_ONCE=<path>                      fire only while <path> does not exist (created on
                                                firing), so the relaunch of a faulted run runs clean

points: ``metrics`` (a row appended), ``checkpoint.npz`` / ``checkpoint.json`` / ``summary``
(bytes written, not yet renamed into place), ``window`` (a window's rows written); ``@n``: the
n-th time the point is reached in this process (default: the first).
actions: ``kill`` (SIGKILL this process), ``enospc`` (raise ``OSError(ENOSPC)``), ``stall`` (block
this thread for ever, as an XLA wedge blocks it), ``pause`` (block it for :data:`PAUSE_S` seconds:
time for a test to break something outside the process between two windows).
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
from pathlib import Path

_counts: dict[str, int] = {}
PAUSE_S = 4.0


def _wanted() -> dict[str, tuple[int, str]]:
    spec = os.environ.get("RFIG_FAULT", "")
    faults = {}
    for item in filter(None, (s.strip() for s in spec.split(","))):
        where, _, action = item.partition(":")
        point, _, nth = where.partition("@")
        faults[point] = (int(nth or 1), action)
    return faults


def hit(point: str, path: os.PathLike | str = "") -> None:
    """Called by the writers at ``point``; injects the fault the environment asks for there."""
    if "RFIG_FAULT" not in os.environ:
        return
    wanted = _wanted().get(point)
    _counts[point] = _counts.get(point, 0) + 1
    if wanted is None or _counts[point] != wanted[0]:
        return
    once = os.environ.get("RFIG_FAULT_ONCE")
    if once:
        try:
            os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return  # fired in an earlier attempt
    action = wanted[1]
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "enospc":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(Path(path)) if path else point)
    elif action == "stall":
        threading.Event().wait()
    elif action == "pause":
        time.sleep(PAUSE_S)
    else:
        raise ValueError(f"RFIG_FAULT: unknown action {action!r} at {point}")

"""The tests' fault seam: faults injected at named points of a real run, from outside the package.

Some faults cannot be timed from outside a process: a SIGKILL *inside* a checkpoint or summary
write, a full disk on one particular file, a wedge that happens once. A test puts this folder first
on ``PYTHONPATH`` (``conftest.fault_env``), so every Python process of the run imports this module
at start-up (``site`` imports ``sitecustomize``): launch.py, a job's supervised process, a submitit
task. It then wraps the package's writers as they are imported; the package itself has no hook::

    RFIG_FAULT="<point>[@<n>]:<action>[,...]"   e.g. "checkpoint.npz@2:kill", "summary:enospc"
    RFIG_FAULT_ONCE=<path>                      fire only while <path> does not exist (created on
                                                firing), so the relaunch of a faulted run runs clean

points: ``metrics`` (a row about to be appended), ``checkpoint.npz`` / ``checkpoint.json`` /
``summary`` (bytes written, not yet renamed into place), ``window`` (a window's rows written, its
checkpoint not yet); ``@n``: the n-th time the point is reached in this process (default: the first).
actions: ``kill`` (SIGKILL this process), ``enospc`` (raise ``OSError(ENOSPC)``), ``stall`` (block
this thread for ever, as an XLA wedge blocks it), ``pause`` (block it for :data:`PAUSE_S` seconds:
time for a test to break something outside the process between two windows).
"""

from __future__ import annotations

import errno
import importlib.abc
import os
import signal
import sys
import threading
import time
from pathlib import Path

PAUSE_S = 4.0
_counts: dict[str, int] = {}


def _wanted() -> dict[str, tuple[int, str]]:
    faults = {}
    for item in filter(None, (s.strip() for s in os.environ.get("RFIG_FAULT", "").split(","))):
        where, _, action = item.partition(":")
        point, _, nth = where.partition("@")
        faults[point] = (int(nth or 1), action)
    return faults


def hit(point: str, path: os.PathLike | str = "") -> None:
    """``point`` was reached: inject the fault the environment asks for there, if any."""
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


def _point_of(destination) -> str | None:
    """The point an atomic write's rename is, by the file it puts in place."""
    path = Path(destination)
    if path.name == "summary.json":
        return "summary"
    if path.parent.name == "checkpoint" and path.name.startswith("window_") and path.suffix in (".npz", ".json"):
        return f"checkpoint{path.suffix}"
    return None


class _OsWithFaults:
    """``os`` as a writer module sees it, with a fault point just before each rename."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def replace(src, dst, *args, **kwargs):
        point = _point_of(dst)
        if point is not None:
            hit(point, dst)
        return os.replace(src, dst, *args, **kwargs)


def _patch_contract(module) -> None:
    module.os = _OsWithFaults()
    append = module.MetricsWriter.append

    def append_with_fault(self, row):
        hit("metrics", self._file.name)
        return append(self, row)

    module.MetricsWriter.append = append_with_fault


def _patch_checkpoint(module) -> None:
    module.os = _OsWithFaults()


def _patch_observers(module) -> None:
    on_window = module.Checkpointer.on_window

    def on_window_with_fault(self, window):
        hit("window")
        return on_window(self, window)

    module.Checkpointer.on_window = on_window_with_fault


PATCHES = {"rfig_exp.results.contract": _patch_contract, "rfig_exp.run.checkpoint": _patch_checkpoint,
           "rfig_exp.run.observers": _patch_observers}


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the patched modules as the other finders do, then patches each once it has run."""

    def find_spec(self, name, path, target=None):
        if name not in PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                exec_module = spec.loader.exec_module

                def exec_and_patch(module, exec_module=exec_module):
                    exec_module(module)
                    PATCHES[name](module)

                spec.loader.exec_module = exec_and_patch  # type: ignore[method-assign]
                return spec
        return None


if os.environ.get("RFIG_FAULT"):
    sys.meta_path.insert(0, _Finder())

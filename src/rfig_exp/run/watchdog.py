"""Ends a process whose training loop has stopped making progress (an XLA CPU wedge).

jaxlib 0.10 on CPU can wedge for ever inside a jitted call: every thread idle, the main thread in
``block_until_ready`` (README, *XLA CPU wedges*). Nothing in Python can interrupt that call, so a
wedged sweep would sit until someone notices. The watchdog is a daemon thread: the training loop
calls :meth:`Watchdog.beat` after every window; when no beat has come for ``max(min_s,
factor * slowest window so far)`` seconds (``first_s`` before the first window), it logs what
happened and ends the process with :attr:`ExitCode.STALLED`. Checkpoints already on disk are kept and
no summary is written, so the run never looks complete and relaunching the same command resumes it.

A sweep retries a stalled job by itself (``stall_retries``, rfig_exp.launch.retry): its job passes the
watchdog an ``end`` (re-execute the sweep, requeue the task), which runs once the run's owner
locks are released and the log is flushed, in place of :func:`end_process`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable

from rfig_exp.config.errors import ExitCode

log = logging.getLogger("rfig_exp")


def end_process(message: str) -> None:
    """What ends a stalled process by default. An ``end`` is called from the watchdog thread while
    the main thread is stuck in XLA, so it must end (or replace) the process itself: nothing can
    unwind the main thread."""
    os._exit(ExitCode.STALLED)


class Watchdog:
    """Calls ``on_stall(message)`` once no :meth:`beat` has come for too long (default: log it,
    ``release()``, then ``end(message)``, and ``os._exit(ExitCode.STALLED)`` if that returned).
    ``min_s <= 0`` disables it."""

    def __init__(self, tag: str, min_s: float, factor: float = 20.0, first_s: float | None = None,
                 on_stall: Callable[[str], None] | None = None, poll_s: float = 1.0,
                 release: Callable[[], None] = lambda: None, end: Callable[[str], None] = end_process):
        self.tag, self.min_s, self.factor = tag, float(min_s), float(factor)
        self.first_s = float(first_s) if first_s is not None else 3.0 * self.min_s
        # release: the run's owner locks, freed before the process ends, so the retry (a requeued
        # task on another node, or this process re-executed) need not wait for them to go stale
        self.on_stall = on_stall or (lambda message: _exit(message, release, end))
        self.poll_s = poll_s
        self.windows = 0
        self.slowest = 0.0
        self.last = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def limit(self) -> float:
        if not self.windows:
            return self.first_s
        return max(self.min_s, self.factor * self.slowest)

    def beat(self) -> None:
        now = time.monotonic()
        self.slowest = max(self.slowest, now - self.last)
        self.windows += 1
        self.last = now

    def start(self) -> "Watchdog":
        if self.min_s > 0:
            self.last = time.monotonic()
            self._thread = threading.Thread(target=self._watch, name="rfig-watchdog", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> "Watchdog":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_s):
            idle, limit = time.monotonic() - self.last, self.limit()
            if idle > limit:
                done = f"after window {self.windows}" if self.windows else "before its first window"
                self.on_stall(
                    f"[{self.tag}] no progress for {idle:.0f} s {done} (limit {limit:.0f} s = "
                    f"max(stall_timeout_s, {self.factor:g} x the slowest window)): the process looks wedged "
                    "(README: XLA CPU wedges); ending it with exit code "
                    f"{int(ExitCode.STALLED)}. Its checkpoints are kept: relaunch the same command to resume")
                return


def _exit(message: str, release: Callable[[], None], end: Callable[[str], None]) -> None:
    log.error(message)
    try:
        release()
    except Exception as err:  # noqa: BLE001 - a lock left behind goes stale; the exit must happen
        log.error("could not release the run's owner locks: %s", err)
    for handler in logging.getLogger().handlers + log.handlers:
        handler.flush()
    end(message)
    os._exit(ExitCode.STALLED)  # an end that returned

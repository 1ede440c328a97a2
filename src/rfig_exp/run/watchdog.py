"""Ends a process whose training loop has stopped making progress (an XLA CPU wedge).

jaxlib 0.10 on CPU can wedge for ever inside a jitted call: every thread idle, the main thread in
``block_until_ready`` (README, *XLA CPU wedges*). Nothing in Python can interrupt that call, so a
wedged sweep would sit until someone notices. The watchdog is a daemon thread: the training loop
calls :meth:`Watchdog.beat` after every window; when no beat has come for ``max(min_s,
factor * slowest window so far)`` seconds (``first_s`` before the first window), it logs what
happened and ends the process with :attr:`ExitCode.STALLED`. Checkpoints already on disk are kept and
no summary is written, so the run never looks complete and relaunching the same command resumes it.

A sweep retries a stalled job by itself (``stall_retries``, rfig_exp.launch.retry): its job passes the
watchdog an ``end`` (requeue the submitit task; in the sweep's own process, leave the job's thread
behind: :func:`on_own_thread`), which runs once the run's owner locks are released and the log is
flushed, in place of :func:`end_process`.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Callable, TypeVar

from rfig_exp.config.errors import ExitCode, Stalled

log = logging.getLogger("rfig_exp")


def end_process(message: str) -> None:
    """What ends a stalled process by default. An ``end`` is called from the watchdog thread while
    the training thread is stuck in XLA: nothing can unwind that thread, so an ``end`` ends the
    process itself, or returns where the process can go on without the thread (:func:`on_own_thread`)."""
    os._exit(ExitCode.STALLED)


class Watchdog:
    """Calls ``on_stall(message)`` once no :meth:`beat` has come for too long (default: log it,
    ``release()``, then ``end(message)``, which ends the process or returns to leave the stalled
    thread behind). ``min_s <= 0`` disables it. :attr:`fired` is True from then on: a stalled
    thread that wakes up after all must not go on (``rfig_exp.run.observers.Heartbeat``)."""

    def __init__(self, tag: str, min_s: float, factor: float = 20.0, first_s: float | None = None,
                 on_stall: Callable[[str], None] | None = None, poll_s: float = 1.0,
                 release: Callable[[], None] = lambda: None, end: Callable[[str], None] = end_process):
        self.tag, self.min_s, self.factor = tag, float(min_s), float(factor)
        self.first_s = float(first_s) if first_s is not None else 3.0 * self.min_s
        # release: the run's owner locks, freed before the process ends, so the retry (a requeued
        # task on another node, or the job again on a fresh thread) need not wait for them to go stale
        self.on_stall = on_stall or (lambda message: _stalled(message, release, end))
        self.fired = False
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
                self.fired = True
                self.on_stall(
                    f"[{self.tag}] no progress for {idle:.0f} s {done} (limit {limit:.0f} s = "
                    f"max(stall_timeout_s, {self.factor:g} x the slowest window)): the process looks wedged "
                    "(README: XLA CPU wedges); ending it with exit code "
                    f"{int(ExitCode.STALLED)}. Its checkpoints are kept: relaunch the same command to resume")
                return


def _stalled(message: str, release: Callable[[], None], end: Callable[[str], None]) -> None:
    log.error(message)
    try:
        release()
    except Exception as err:  # noqa: BLE001 - a lock left behind goes stale; the exit must happen
        log.error("could not release the run's owner locks: %s", err)
    flush_logs()
    end(message)


def flush_logs() -> None:
    for handler in logging.getLogger().handlers + log.handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()


T = TypeVar("T")


def on_own_thread(work: Callable[..., T]) -> T:
    """``work(after_stall=end)`` run on a thread of its own while this thread waits: its result, or
    its exception raised here. ``end`` is the ``end`` to give its watchdog: a stalled ``work`` is left
    behind on its thread (nothing can unwind it) and :class:`Stalled` is raised here instead, so
    the process goes on (an in-process sweep retries the job, rfig_exp.launch.retry). Signals still
    come to this thread, the main one: ``work`` reads what they asked for from a
    ``rfig_exp.run.observers.StopSignals`` entered here. A second Ctrl-C, which quits at once, ends
    the process (exit 130): the job's thread cannot be stopped mid-window."""
    done = threading.Event()
    outcome: dict[str, object] = {}

    def end(message: str) -> None:
        outcome["stalled"] = message
        done.set()

    def target() -> None:
        try:
            outcome["value"] = work(after_stall=end)
        except BaseException as err:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = err
        finally:
            done.set()

    threading.Thread(target=target, name="rfig-job", daemon=True).start()
    try:
        done.wait()
    except KeyboardInterrupt:
        log.error("interrupted (Ctrl-C again) while the job trained; relaunch the same command to resume from its "
                  "last checkpoint")
        flush_logs()
        os._exit(ExitCode.INTERRUPTED)
    if "stalled" in outcome:
        raise Stalled(str(outcome["stalled"]), 0)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]

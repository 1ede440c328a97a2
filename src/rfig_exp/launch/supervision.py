"""What a job's supervisor (``rfig_exp.launch.task``) keeps: the stall clock and the signals it passes on.

The job trains in a child process that only reports (a pulse after compiling and after each
window); the supervisor judges. :class:`StallClock` is that judgement as a value: jaxlib 0.10 on a
CPU can wedge for ever inside a jitted call (README, *XLA CPU wedges*), so a child whose pulse stops
for ``max(min_s, factor * its slowest window)`` seconds (``first_s`` before its first window) is
stalled. The clock starts when the job has compiled: a long compile is not a stall.

:class:`SignalForwarder` passes the stop signals the supervisor gets (a scheduler's SIGTERM,
Ctrl-C, submitit's SIGUSR2) on to the child, which checkpoints after its window and stops; the child
sits in a process group of its own, so a terminal's Ctrl-C reaches it once, through here. Nothing
here imports JAX.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Callable

from rfig_exp.config.errors import ExitCode
from rfig_exp.run.stop_signals import StopSignalScope

# Why a stall's limit follows the slowest window: a window's time varies with the load beside it
# (a sweep's other jobs, other users); 20 times the slowest one seen is no false alarm under load.
FACTOR = 20.0


class StallClock:
    """When a child that reports after each window has stalled. ``min_s <= 0``: never. Times are
    ``now()``'s (monotonic seconds), given so that a test can drive the clock."""

    def __init__(self, min_s: float, factor: float = FACTOR, first_s: float | None = None,
                 now: Callable[[], float] = time.monotonic):
        self.min_s, self.factor, self.now = float(min_s), float(factor), now
        self.first_s = float(first_s) if first_s is not None else 3.0 * self.min_s
        self.started = False
        self.windows = 0
        self.slowest = 0.0
        self.last = now()

    def start(self) -> None:
        """The job compiled: its first window is due within ``first_s`` from now."""
        self.started, self.last = True, self.now()

    def beat(self) -> None:
        """A window finished."""
        now = self.now()
        self.slowest = max(self.slowest, now - self.last)
        self.windows += 1
        self.last = now

    def limit(self) -> float:
        return self.first_s if not self.windows else max(self.min_s, self.factor * self.slowest)

    def overdue(self) -> float | None:
        """Seconds without a pulse when they exceed the limit (None: not stalled, or not started)."""
        if not self.started or self.min_s <= 0:
            return None
        idle = self.now() - self.last
        return idle if idle > self.limit() else None

    def message(self, tag: str, idle: float) -> str:
        """The line that says a job stalled (its supervisor adds what its checkpoints on disk leave, and
        what follows)."""
        done = f"after window {self.windows}" if self.windows else "before its first window"
        return (f"[{tag}] no progress for {idle:.0f} s {done} (limit {self.limit():.0f} s = max(stall_timeout_s, "
                f"{self.factor:g} x the slowest window)): the process looks wedged (README: XLA CPU wedges) and is "
                "killed")


# What a single run's stall ends with (a sweep's job is retried first: ``stall_retries``).
STALL_ENDS = f"the run ends with exit code {int(ExitCode.STALLED)}; relaunch the same command to take it up again"


class SignalForwarder(StopSignalScope):
    """While entered (in the main thread; elsewhere it does nothing), SIGTERM and SIGINT, and SIGUSR2
    under submitit, are recorded (:attr:`received`, the first) and sent on to the process
    :meth:`follow` names. Each Ctrl-C goes on: the child's second one quits at once."""

    def __init__(self, submitit: bool = False):
        super().__init__(submitit)
        self.received: int | None = None
        self.pid: int | None = None

    def follow(self, pid: int | None) -> None:
        """Signals go to ``pid`` from now on (None: to no process, until the next); one that came
        before it started goes at once."""
        self.pid = pid
        if pid is not None and self.received is not None:
            self._send(self.received)

    def _handle(self, signum, frame) -> None:
        if self.received is None:
            self.received = signum
        self._send(signum)

    def _send(self, signum: int) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:  # it ended meanwhile: its end is read from its pipe
                pass


def hand_over_to_submitit() -> bool:
    """Give SIGUSR2 to the handler in place now (submitit's in a task: it checkpoints the task's
    submission and requeues it, then exits). False when there is none to give it to."""
    handler = signal.getsignal(signal.SIGUSR2)
    if not callable(handler):
        return False
    handler(signal.SIGUSR2, None)
    return True

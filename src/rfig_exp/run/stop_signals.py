"""The stop signals a process takes over while it works: a scheduler's SIGTERM, Ctrl-C, and under
submitit SIGUSR2 (time limit, preemption). :class:`StopSignalScope` installs its ``_handle`` for
them while entered and puts the previous handlers back on exit; the trainer's ``StopSignals``
(``run.observers``) and the supervisor's ``SignalForwarder`` (``launch.supervision``) build on it.
Outside the main thread, where Python cannot install handlers, it does nothing. Nothing here
imports JAX.
"""

from __future__ import annotations

import signal
import threading
from typing import Any


class StopSignalScope:
    """Subclasses define ``_handle(signum, frame)``; ``submitit`` adds SIGUSR2 to the signals taken."""

    def __init__(self, submitit: bool = False) -> None:
        self.submitit = submitit
        self._previous: dict[int, Any] = {}

    def signals(self) -> list[signal.Signals]:
        return [signal.SIGTERM, signal.SIGINT] + ([signal.SIGUSR2] if self.submitit else [])

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in self.signals():
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            if handler is not None:
                signal.signal(signum, handler)
        self._previous = {}

    def _handle(self, signum, frame) -> None:
        raise NotImplementedError


__all__ = ["StopSignalScope"]

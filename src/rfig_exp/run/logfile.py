"""The job's log file (Hydra's ``hydra.job_logging`` file handler, set in ``conf/config.yaml``).

On a full disk, or with its folder gone, Python's ``logging.FileHandler`` prints a ``--- Logging
error ---`` traceback for every line it cannot write, which buries the run's own one-line error.
:class:`LogFile` says it once and leaves out the lines it cannot write; the console still shows
them all. Nothing here imports JAX.
"""

from __future__ import annotations

import logging
import sys


class LogFile(logging.FileHandler):
    """A ``logging.FileHandler`` that reports its first failure to write (one line on stderr) and
    drops the lines it cannot write after it, without a traceback."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.failed = False

    def handleError(self, record: logging.LogRecord | None) -> None:  # noqa: N802 - logging's name
        if self.failed:
            return
        self.failed = True
        err = sys.exc_info()[1]
        why = f"{type(err).__name__}: {err}" if err is not None else "an error"
        sys.stderr.write(f"logging: cannot write the log file {self.baseFilename} ({why}); the lines it cannot "
                         "take are left out of it (the console shows them all)\n")
        sys.stderr.flush()

    def flush(self) -> None:
        try:
            super().flush()
        except OSError:
            self.handleError(None)

    def close(self) -> None:
        try:
            super().close()  # closing flushes what the disk did not take
        except OSError:
            self.handleError(None)

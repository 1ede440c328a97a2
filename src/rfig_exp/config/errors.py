"""The errors ``launch.py`` reports, each with its exit code, and the one list of exit codes.

:class:`ExitCode` is that list: ``launch.py --help`` prints it and docs/running.md's exit-code table
is held to it (tests/test_preflight.py), so neither can drift from the code. Every exception
here carries the code its process ends with. Nothing here imports anything heavy: ``--help``
and the error paths stay fast.
"""

from __future__ import annotations

import difflib
import enum
import textwrap
from typing import Sequence


class ExitCode(enum.IntEnum):
    """``launch.py``'s exit codes; each member's ``meaning`` is what ``--help`` says of it."""

    DONE = 0
    RUN_FAILED = 1
    BAD_CONFIG = 2
    STALLED = 75        # EX_TEMPFAIL: try again (the relaunch resumes from the last checkpoint, or finds
                        # complete the runs another process was training)
    INTERRUPTED = 130   # 128 + SIGINT, as a shell reports Ctrl-C
    TERMINATED = 143    # 128 + SIGTERM

    @property
    def meaning(self) -> str:
        return _MEANINGS[self]


_MEANINGS = {
    ExitCode.DONE: "done, or already complete (a relaunch skips complete seeds)",
    ExitCode.RUN_FAILED: "a run failed (e.g. diverged to NaN); in a sweep, some job failed and the others ran",
    ExitCode.BAD_CONFIG: "bad config: one line per error, every bad job of a sweep at once, nothing created",
    ExitCode.STALLED: ("not finished here: stalled (the job's supervisor killed its wedged process; README, XLA CPU "
                       "wedges), or runs left to another live process that trains them (the same sweep launched "
                       "twice); relaunch to resume or to check them"),
    ExitCode.INTERRUPTED: "interrupted by Ctrl-C (one line says at which window); relaunch to resume",
    ExitCode.TERMINATED: "terminated by SIGTERM after checkpointing the current window; relaunch to resume",
}


class ConfigError(ValueError):
    """A config value is unknown or impossible. The message names the config key."""

    exit_code = ExitCode.BAD_CONFIG


class PreflightError(Exception):
    """A command line that cannot run: one or more lines, each a complete error message."""

    exit_code = ExitCode.BAD_CONFIG

    def __init__(self, lines: Sequence[str]):
        super().__init__("\n".join(lines))
        self.lines = list(lines)


class RunFailed(Exception):
    """Some seeds of the job failed at run time (e.g. diverged to NaN); the others completed."""

    exit_code = ExitCode.RUN_FAILED


class Interrupted(Exception):
    """Training stopped by Ctrl-C (exit 130) or a signal (128 + its number); the message says where."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


def unknown_choice(key: str, value: str, label: str, options: Sequence[str]) -> str:
    """The one line for a name that is none of ``options``: ``env=cartpol is not a known environment
    (did you mean cartpole?); valid: ...``, the guess when one option is close."""
    close = difflib.get_close_matches(str(value), list(options), n=1, cutoff=0.6)
    guess = f" (did you mean {close[0]}?)" if close else ""
    return f"{key}={value} is not a known {label}{guess}; valid: {', '.join(options)}"


def exit_codes_help(width: int = 100) -> list[str]:
    """The exit codes as ``--help`` prints them, one wrapped entry per code."""
    lines = []
    for code in ExitCode:
        lines += textwrap.wrap(code.meaning, width, initial_indent=f"  {int(code):<5}", subsequent_indent=" " * 7)
    return lines


def exit_codes_markdown() -> str:
    """The exit codes as docs/running.md's table shows them."""
    return "\n".join(["| exit code | meaning |", "|---|---|",
                      *(f"| {int(code)} | {code.meaning} |" for code in ExitCode)])

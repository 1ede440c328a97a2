"""Errors raised for bad user input, before anything is compiled, and ``launch.py``'s exit codes.

:data:`EXIT_CODES` is the one list of them: ``launch.py --help`` prints it and the README's
exit-code table is held to it (tests/test_preflight.py), so neither can drift from the code.
Nothing here imports anything: ``launch.py --help`` and its error paths stay fast.
"""

import textwrap

EXIT_DONE = 0
EXIT_RUN_FAILED = 1
EXIT_BAD_CONFIG = 2
EXIT_STALLED = 75  # EX_TEMPFAIL: try again (the relaunch resumes from the last checkpoint)
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM

EXIT_CODES = {
    EXIT_DONE: "done, or already complete (a relaunch skips complete seeds)",
    EXIT_RUN_FAILED: "a run failed (e.g. diverged to NaN); in a sweep, some job failed and the others ran",
    EXIT_BAD_CONFIG: "bad config: one line per error, every bad job of a sweep at once, nothing created",
    EXIT_STALLED: "stalled: the watchdog ended a wedged process (README, XLA CPU wedges); relaunch to resume",
    EXIT_INTERRUPTED: "interrupted by Ctrl-C (one line says at which window); relaunch to resume",
    EXIT_TERMINATED: "terminated by SIGTERM after checkpointing the current window; relaunch to resume",
}


class ConfigError(ValueError):
    """A config value is unknown or impossible. The message names the config key."""


def exit_codes_help(width: int = 100) -> list[str]:
    """The exit codes as ``--help`` prints them, one wrapped entry per code."""
    lines = []
    for code, meaning in EXIT_CODES.items():
        lines += textwrap.wrap(meaning, width, initial_indent=f"  {code:<5}", subsequent_indent=" " * 7)
    return lines


def exit_codes_markdown() -> str:
    """The exit codes as the README's table shows them."""
    return "\n".join(["| exit code | meaning |", "|---|---|",
                      *(f"| {code} | {meaning} |" for code, meaning in EXIT_CODES.items())])

"""Run a command until a deadline, then stop it so that every run it leaves is whole or resumable.

    python campaign/scripts/run_until.py --deadline 480 [--last-start 400] [--grace 30] -- CMD [ARG ...]

The command runs in a process session of its own, with everything it starts (a local sweep's
submitit controllers and jobs). Times are seconds from this script's start:

- ``--last-start``: the command itself (a sweep's launching process) gets SIGTERM, so no new job
  starts; the jobs already running go on.
- ``--deadline``: every process left gets SIGTERM, again every ``--every`` seconds. A training job
  finishes its window, checkpoints and exits 143 at the first; a job still compiling ignores it
  (submitit logs "Bypassing signal SIGTERM") and stops after its first window at a later one.
- ``--grace`` seconds after the deadline, whatever is left is killed (SIGKILL).

A run writes its summary last and atomically, so a stopped run is never taken as complete;
checkpoints let a relaunch on the same results resume it. This process adopts the command's
orphans (a sweep's jobs outlive the launching process it stops first) to reap them.

Exit status: the command's own when it ended by itself, 124 when the deadline or the last start
stopped it. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
STOPPED = 124  # as timeout(1)


def say(t0: float, message: str) -> None:
    print(f"[run_until] {time.monotonic() - t0:6.0f} s: {message}", flush=True)


def adopt_orphans() -> bool:
    """Become the reaper of the command's orphaned descendants (Linux); False where refused."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap(leader: int) -> int | None:
    """Collect every child that ended; the leader's exit status when it was among them."""
    status = None
    while True:
        try:
            pid, raw = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == leader:
            status = os.waitstatus_to_exitcode(raw)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # a member we may not signal is still a member
        return True


def signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


def run(cmd: list[str], deadline: float, last_start: float | None, grace: float, every: float,
        poll: float = 0.2) -> int:
    """Run ``cmd`` under the deadline (see the module docstring); returns the exit status."""
    t0 = time.monotonic()
    adopted = adopt_orphans()
    leader = subprocess.Popen(cmd, start_new_session=True).pid
    say(t0, f"started pid {leader} (deadline at {deadline:.0f} s, last start at "
            f"{'the deadline' if last_start is None else f'{last_start:.0f} s'}, then {grace:.0f} s of grace"
            f"{'' if adopted else '; orphans are not adopted here'})")
    code, stopped, next_term, killed = None, False, deadline, False
    while True:
        status = reap(leader)
        code = status if status is not None else code
        if not group_alive(leader):
            break
        now = time.monotonic() - t0
        if last_start is not None and now >= last_start and code is None and not stopped:
            say(t0, "last start passed: SIGTERM to the command, so no new job starts; running jobs go on")
            os.kill(leader, signal.SIGTERM)
            stopped = True
        if now >= next_term and not killed:
            say(t0, "deadline: SIGTERM to every process left (a training job checkpoints and exits 143)"
                if next_term == deadline else "SIGTERM again (a job that was compiling stops after its first window)")
            signal_group(leader, signal.SIGTERM)
            stopped, next_term = True, next_term + every
        if now >= deadline + grace and not killed:
            say(t0, f"grace of {grace:.0f} s over: SIGKILL to what is left (its runs stay incomplete)")
            signal_group(leader, signal.SIGKILL)
            killed = True
        time.sleep(poll)
    say(t0, f"done: the command {'was stopped' if stopped else 'ended'} (its exit status {code})")
    return STOPPED if stopped else (code if code is not None else 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--deadline", type=float, required=True, help="seconds until every process is stopped")
    p.add_argument("--last-start", type=float, default=None, help="seconds until the command itself is stopped")
    p.add_argument("--grace", type=float, default=30.0, help="seconds after the deadline before SIGKILL")
    p.add_argument("--every", type=float, default=5.0, help="seconds between SIGTERMs after the deadline")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- then the command")
    args = p.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        p.error("no command given (put it after --)")
    for name in ("deadline", "grace"):
        if getattr(args, name) < 0:
            p.error(f"--{name}={getattr(args, name)} must be >= 0")
    if args.every <= 0:
        p.error(f"--every={args.every} must be > 0")
    return run(cmd, args.deadline, args.last_start, args.grace, args.every)


if __name__ == "__main__":
    sys.exit(main())

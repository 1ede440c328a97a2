"""A stalled sweep job retried from its checkpoint without a person (``stall_retries``).

The watchdog ends a wedged job with exit 75, its checkpoints kept (rfig_exp.watchdog). Nothing can
unwind the wedged main thread, so a retry always needs a new process image; how a sweep gets one
depends on where its jobs run:

- **in-process** (Hydra's basic launcher, the default): the jobs run one after another in the
  sweep's own process, so the stall ends the sweep itself. The sweeper
  (hydra_plugins.rfig_exp_sweeper) re-executes the sweep's command instead (``os.execv``: same
  pid, same console) with its progress in :data:`RESUME_ENV`: jobs already done are not run
  again, the stalled one resumes from its checkpoint, and the counts carry on into the final
  ``[sweep]`` line. A job out of retries is counted failed and the sweep goes on with the next.
- **submitit** (``hydra/launcher=local`` or ``slurm``): each job is a task of its own, which
  requeues itself through submitit (SLURM: ``scontrol requeue``, the same array task; local: the
  exit code submitit_local restarts), its retries counted in a file in its submitit folder. A task
  out of retries ends with a failed result, so the sweep reports it and goes on.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

from rfig_exp.errors import Stalled

log = logging.getLogger("rfig_exp")

RESUME_ENV = "RFIG_SWEEP_RESUME"
# The sweep's command line as typed (launch.py sets it); None: no re-execution, a stall ends it.
command: list[str] | None = None



def set_command(argv: Sequence[str]) -> None:
    global command
    command = [sys.executable, str(Path(sys.argv[0]).resolve()), *argv]


def _flush_logs() -> None:
    for handler in logging.getLogger().handlers + log.handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()


def re_execute(progress: dict) -> None:
    """Replace this process by a fresh run of the sweep's command, handing it ``progress``."""
    if command is None:
        return
    os.environ[RESUME_ENV] = json.dumps(progress)
    _flush_logs()
    os.execv(command[0], command)


def resumed_progress() -> dict | None:
    """The progress a re-executed sweep was handed (taken out of the environment, so the jobs'
    own processes never see it)."""
    text = os.environ.pop(RESUME_ENV, None)
    return json.loads(text) if text else None


# -- submitit tasks ------------------------------------------------------------------------
def _counter() -> Path:
    import submitit

    env = submitit.JobEnvironment()
    return Path(env.paths.folder) / f"{env.job_id}_stall_retries"


def submitit_retries_used() -> int:
    """Stall retries this submitit task has had so far (0 outside submitit)."""
    if not os.environ.get("SUBMITIT_EXECUTOR"):
        return 0
    try:
        return int(_counter().read_text())
    except (OSError, ValueError):
        return 0


def submitit_stall_action(budget: int, failed_result: Callable[[Exception], object]) -> Callable[[str], None]:
    """The watchdog's :data:`~rfig_exp.watchdog.stall_action` in a submitit task: requeue the
    task while retries are left, else end it with ``failed_result(Stalled(...))`` as its result
    (a task that dies without one would make the launcher raise for the whole batch)."""

    def act(message: str) -> None:
        import submitit

        from rfig_exp import hydra_adapter

        used = submitit_retries_used()
        if used < budget:
            _counter().write_text(str(used + 1))
            log.warning("[sweep] stall retry %d of %d (stall_retries): requeueing task %s, which resumes from "
                        "its checkpoint", used + 1, budget, submitit.JobEnvironment().job_id)
            _flush_logs()
            hydra_adapter.requeue_submitit_task()
            return
        error = Stalled(f"stalled {used + 1} times, stall_retries={budget} used up: {message}", used)
        hydra_adapter.write_submitit_result(failed_result(error))
        _flush_logs()

    return act

"""A stalled sweep job retried from its checkpoint without a person (``stall_retries``).

The watchdog ends a wedged job, its checkpoints kept (rfig_exp.run.watchdog). Nothing can unwind the
wedged thread, so the retry needs a fresh one; who gives it depends on where the job runs:

- **in-process** (Hydra's basic launcher, the default): the jobs run one after another in the
  sweep's own process, each trained on a thread of its own (``rfig_exp.run.watchdog.on_own_thread``).
  A stalled job's thread is left behind and the job comes back stalled; the sweep's runner
  (``rfig_exp.launch.runner``) launches it again, resumed from its checkpoint, while
  it has retries left, and counts the retries in its final ``[sweep]`` line. A job out of retries is
  counted failed and the sweep goes on.
- **submitit** (``hydra/launcher=local`` or ``slurm``): each job is a task of its own, which
  requeues itself through submitit (SLURM: ``scontrol requeue``, the same array task; local: the
  exit code submitit_local restarts), its retries counted in a file in its submitit folder
  (:func:`submitit_stall_action`). A task out of retries ends with a failed result, so the sweep
  reports it and goes on.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Callable

from rfig_exp.config.errors import ExitCode, Stalled

log = logging.getLogger("rfig_exp")


def _flush_logs() -> None:
    for handler in logging.getLogger().handlers + log.handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()


def _counter() -> Path:
    import submitit

    env = submitit.JobEnvironment()
    return Path(env.paths.folder) / f"{env.job_id}_stall_retries"


def submitit_retries_used() -> int:
    """Stall retries this submitit task has had so far."""
    try:
        return int(_counter().read_text())
    except (OSError, ValueError):
        return 0


def submitit_stall_action(budget: int, failed_result: Callable[[Exception], object]) -> Callable[[str], None]:
    """The end of a stalled submitit task (the watchdog's ``end``): requeue the
    task while retries are left, else end it with ``failed_result(Stalled(...))`` as its result
    (a task that dies without one would make the launcher raise for the whole batch)."""

    def act(message: str) -> None:
        import submitit

        from rfig_exp.launch import hydra_adapter

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
        os._exit(ExitCode.STALLED)

    return act

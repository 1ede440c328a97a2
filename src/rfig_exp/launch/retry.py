"""A stalled sweep job retried from its checkpoint without a person (``stall_retries``).

The watchdog ends a wedged job with exit 75, its checkpoints kept (rfig_exp.run.watchdog). Nothing can
unwind the wedged main thread, so a retry always needs a new process image; how a sweep gets one
depends on where its jobs run:

- **in-process** (Hydra's basic launcher, the default): the jobs run one after another in the
  sweep's own process, so the stall ends the sweep itself. Before each job the sweeper
  (hydra_plugins.rfig_exp_sweeper) saves its progress in the sweep folder (:class:`SweepProgress`);
  the stalled job re-executes the process's own command line instead of ending it (``os.execv``:
  same pid, same console; :func:`in_process_stall_action`), handing it that file and its own
  index in :data:`RESUME_ENV`. The re-executed sweeper does not run the jobs already done again,
  resumes the stalled one from its checkpoint while it has retries left, and carries the counts
  into the final ``[sweep]`` line. A job out of retries is counted failed and the sweep goes on.
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
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

from rfig_exp.config.errors import Stalled

log = logging.getLogger("rfig_exp")

RESUME_ENV = "RFIG_SWEEP_RESUME"
PROGRESS = "sweep_progress.json"  # in the sweep folder, beside Hydra's multirun.yaml


@dataclass
class SweepProgress:
    """Where an in-process sweep stands before its job ``next``: the counts of the final line, the
    failure lines, the stall retries used per job index, and when the sweep started (epoch s)."""

    counts: dict[str, int]
    failures: list[str]
    retries: dict[int, int]
    next: int
    started_at: float

    @classmethod
    def start(cls) -> SweepProgress:
        return cls({"completed": 0, "skipped": 0, "resumed": 0, "failed": 0, "stall_retries": 0}, [], {}, 0,
                   time.time())

    def start_time(self) -> float:
        """The sweep's start on this process's ``perf_counter`` clock (earlier processes included)."""
        return time.perf_counter() - (time.time() - self.started_at)

    def save(self, sweep_dir: Path) -> None:
        (sweep_dir / PROGRESS).write_text(json.dumps(asdict(self)))

    @classmethod
    def load(cls, handed: dict) -> SweepProgress:
        """The progress a stalled job handed over (:func:`resumed_progress`)."""
        saved = json.loads(Path(handed["progress"]).read_text())
        return cls(saved["counts"], saved["failures"], {int(k): v for k, v in saved["retries"].items()},
                   saved["next"], saved["started_at"])


def own_command() -> list[str]:
    """This process's command line, to run it again (the interpreter, the script, its arguments)."""
    return [sys.executable, str(Path(sys.argv[0]).resolve()), *sys.argv[1:]]


def _flush_logs() -> None:
    for handler in logging.getLogger().handlers + log.handlers:
        handler.flush()
    sys.stdout.flush()
    sys.stderr.flush()


def re_execute(handed: dict, command: Sequence[str]) -> None:
    """Replace this process by a fresh run of ``command``, handing it ``handed``."""
    os.environ[RESUME_ENV] = json.dumps(handed)
    _flush_logs()
    os.execv(command[0], list(command))


def resumed_progress() -> dict | None:
    """What a re-executed sweep was handed (taken out of the environment, so the jobs' own
    processes never see it)."""
    text = os.environ.pop(RESUME_ENV, None)
    return json.loads(text) if text else None


def in_process_stall_action(sweep_dir: str | os.PathLike, index: int) -> Callable[[str], None]:
    """The end of stalled job ``index`` of an in-process sweep (the watchdog's ``end``): re-execute
    the sweep, which decides whether the job gets another try. Without the sweeper's progress
    file (a sweeper other than ours) it returns, and the process ends with exit 75."""
    progress = Path(sweep_dir) / PROGRESS

    def act(message: str) -> None:
        if progress.is_file():
            log.warning("[sweep] job #%d stalled: re-executing the sweep", index)
            re_execute({"progress": str(progress), "stalled": index}, own_command())

    return act


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

    return act

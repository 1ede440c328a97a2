"""One compiled job run in the process it got: a single run's, the sweep's own, or a submitit task's.

The job comes as a value, its run specs built once by preflight (``rfig_exp.spec.stack.Job``),
with a :class:`JobContext` that says where it runs; nothing is composed or read back from files.
:func:`run_single` is ``python launch.py`` without ``-m``: errors end the process with their exit
code (``rfig_exp.config.errors``). :func:`run_in_sweep` is a ``-m`` sweep's job: errors come back in
its :class:`~rfig_exp.launch.hydra_adapter.JobOutcome` for the sweep's runner to count, so the other
jobs go on; a job in the sweep's own process trains on a thread of its own, which a stall leaves
behind for the runner to launch the job again; a submitit task requeues itself
(``rfig_exp.launch.retry``). Nothing here imports JAX before the job is placed on its cores or GPU.
"""

from __future__ import annotations

import functools
import logging
import sys
from dataclasses import dataclass
from typing import Callable

from omegaconf import DictConfig

from rfig_exp.config.errors import ConfigError, ExitCode, Interrupted, RunFailed, Stalled
from rfig_exp.launch import hydra_adapter
from rfig_exp.launch.hydra_adapter import IN_PROCESS, LOCAL, SLURM, JobOutcome
from rfig_exp.spec.stack import Job

log = logging.getLogger("rfig_exp")


@dataclass(frozen=True)
class JobContext:
    """Where a sweep's job runs: its index in the sweep, the jobs that run beside it (None: all, or
    not known), the launcher (:data:`IN_PROCESS`, :data:`LOCAL` or :data:`SLURM`), the keys the sweep
    varies (its console label shows them first), its logging config (``hydra.job_logging`` with its
    own log file; None: the process's as it is) and the stall retries a submitit task may use."""

    index: int = 0
    jobs_in_parallel: int | None = None
    launcher: str = IN_PROCESS
    varying: tuple[str, ...] = ()
    logging: dict | None = None
    stall_retries: int = 0

    @property
    def submitit(self) -> bool:
        """A task of its own under submitit (hydra/launcher=local or slurm)."""
        return self.launcher in (LOCAL, SLURM)


def _message(err: BaseException, job: Job) -> tuple[str, int]:
    """The one line that says why ``job`` failed, and its exit code."""
    if isinstance(err, ConfigError):
        return str(err), ExitCode.BAD_CONFIG
    if isinstance(err, RunFailed):
        return f"run failed: {err}", ExitCode.RUN_FAILED
    # a full disk, a folder gone or read-only: the run is not complete, resumable
    return (f"cannot write the results under results_dir={job.first.results_dir}: {err}; the run is not marked "
            "complete: fix that and relaunch the same command to resume it", ExitCode.RUN_FAILED)


def run_single(job: Job, config: DictConfig) -> None:
    """``python launch.py`` without ``-m``: ``job`` (one run spec) trained in this process, logging
    as ``config``'s ``hydra`` node says (its log file in ``hydra.run.dir``); a stall ends the
    process with exit 75, an error with its code and one line."""
    from pathlib import Path

    from rfig_exp.run.experiment import run_job

    hydra_adapter.configure_logging(hydra_adapter.job_logging(config, Path(str(config.hydra.run.dir))))
    logging.getLogger("jax").setLevel(logging.WARNING)  # hides "Unable to initialize backend 'tpu'"
    try:
        run_job(job)
    except (ConfigError, RunFailed, OSError) as err:
        message, code = _message(err, job)
        print(f"error: {message}", file=sys.stderr)
        sys.exit(code)
    except Interrupted as stop:
        print(str(stop), file=sys.stderr)
        sys.exit(stop.exit_code)


def run_in_sweep(job: Job, context: JobContext) -> JobOutcome:
    """A ``-m`` sweep's ``job`` in this process (the sweep's own, or a submitit task): placed on its
    GPU or cores first (a local submitit task), then trained; how it went comes back, its error
    included. A stop signal (Ctrl-C, SIGTERM) ends the process with its exit code."""
    if context.logging is not None:
        hydra_adapter.configure_logging(context.logging)
    logging.getLogger("jax").setLevel(logging.WARNING)
    spec = job.first
    try:
        if context.launcher == LOCAL:  # its own GPU or cores, before JAX starts its threads
            from rfig_exp.run.placement import place_job

            log.info(place_job(context.index, context.jobs_in_parallel, local=True, mode=spec.placement.mode,
                               cores_per_job=spec.placement.cores_per_job, jobs_per_gpu=spec.placement.jobs_per_gpu,
                               gpus=None if spec.placement.gpus is None else list(spec.placement.gpus)))
        return _train(job, context)
    except Stalled as err:
        return JobOutcome(error=str(err), error_type="Stalled", stalled=True, stall_retries=err.stall_retries)
    except (ConfigError, RunFailed, OSError) as err:
        return JobOutcome(error=_message(err, job)[0], error_type=type(err).__name__)
    except Interrupted as stop:
        print(str(stop), file=sys.stderr)
        sys.exit(stop.exit_code)
    except Exception as err:  # noqa: BLE001 - a bug in one job: reported, and the sweep goes on
        log.exception("[sweep] job #%d raised", context.index)
        return JobOutcome(error=str(err) or type(err).__name__, error_type=type(err).__name__)


def _train(job: Job, context: JobContext) -> JobOutcome:
    """Train ``job`` as ``context`` runs it: a submitit task requeues itself when it stalls; a job in
    the sweep's own process trains on a thread of its own (rfig_exp.run.watchdog.on_own_thread)."""
    from rfig_exp.launch import retry
    from rfig_exp.run.experiment import run_job
    from rfig_exp.run.observers import StopSignals
    from rfig_exp.run.watchdog import on_own_thread

    run: Callable = functools.partial(run_job, job, context.varying)
    if context.submitit:
        with StopSignals(submitit=True) as signals:
            summaries = run(signals=signals, after_stall=retry.submitit_stall_action(
                context.stall_retries, lambda error: JobOutcome(error=str(error), error_type="Stalled", stalled=True,
                                                                stall_retries=getattr(error, "stall_retries", 0))))
    else:
        with StopSignals() as signals:
            summaries = on_own_thread(functools.partial(run, signals=signals))
    return JobOutcome(skipped=not summaries, resumed=any(s.resumed_from_windows for s in summaries),
                      stall_retries=retry.submitit_retries_used() if context.submitit else 0)


class SubmititTask:
    """What submitit runs in each task: :func:`run_in_sweep`. At a time limit or a preemption,
    submitit asks it for its :meth:`checkpoint` (after the run's own SIGUSR2 handling has saved the
    current window): the same job, submitted again, resumes from its checkpoints."""

    def __call__(self, job: Job, context: JobContext) -> JobOutcome:
        return run_in_sweep(job, context)

    def checkpoint(self, *args, **kwargs):
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)

"""One compiled job, supervised: trained in a process of its own that the process which got the job
(a single run's, the sweep's own, or a submitit task's) watches, times out and starts again.

Why a child process: jaxlib 0.10 on a CPU can wedge for ever inside a jitted call (README, *XLA CPU
wedges*), and nothing inside a process can unwind that call; a process can be ended from outside.
So every job trains one way: :func:`supervise` spawns a child that runs
``rfig_exp.run.experiment.run_job`` in its main thread and only reports through a pipe (a pulse once
it compiled and after each window, ``rfig_exp.run.observers.Pulse``, then how it ended). The
supervisor holds the stall clock (``rfig_exp.launch.supervision``): a child whose pulse stops for
too long is killed (what it leaves is said from the disk: its runs' last checkpoints, or none yet),
and a new one takes the job up again, up to ``stall_retries`` times in a sweep (a single run's stall
ends it, exit 75). Stop signals the supervisor gets go on to
the child, which checkpoints after its window and stops; the supervisor then ends as the job would
have: with the signal's exit code, or under submitit with SIGUSR2 handed to submitit's own handler,
which requeues the task as it does for any preempted job.

:func:`run_single` is ``python launch.py`` without ``-m``: errors end the process with their exit
code (``rfig_exp.config.errors``). :func:`run_in_sweep` is a ``-m`` sweep's job: errors come back in
its :class:`JobOutcome` for the sweep's runner to count. Nothing here
imports JAX: the child does, after the job is placed on its cores or GPU; a job whose runs are all
complete already is skipped here, from the results tree, with no child (a relaunched sweep's
complete jobs cost no JAX import or compile).
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import signal
import sys
from dataclasses import dataclass
from multiprocessing import connection
from pathlib import Path
from typing import Any, Callable, Sequence

from omegaconf import DictConfig

from rfig_exp.config import variants
from rfig_exp.config.errors import ConfigError, ExitCode, Interrupted, RunFailed
from rfig_exp.launch import hydra_adapter
from rfig_exp.launch.hydra_adapter import IN_PROCESS, LOCAL, SLURM
from rfig_exp.launch.supervision import STALL_ENDS, SignalForwarder, StallClock, hand_over_to_submitit
from rfig_exp.spec.stack import Job

log = logging.getLogger("rfig_exp")

POLL_S = 1.0  # how often the supervisor looks at its stall clock while no pulse comes

# How a job's process ended (Ended.kind).
DONE, FAILED, STOPPED, STALLED, DIED = "done", "failed", "stopped", "stalled", "died"


@dataclass(frozen=True)
class JobOutcome:
    """What a sweep job tells the sweep's runner: whether everything was complete already, whether
    it resumed from a checkpoint, the stall retries it used, and why it failed (None: it did not;
    ``error_type`` the exception's class name, ``stalled`` when its supervisor ended it as stalled
    with no retry left; ``left``: runs it left to another live process that trains them, not
    complete when it ended)."""

    skipped: bool = False
    resumed: bool = False
    stall_retries: int = 0
    error: str | None = None
    error_type: str | None = None
    stalled: bool = False
    left: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobContext:
    """Where a sweep's job runs: its index in the sweep, the jobs that run beside it (None: all, or
    not known), the launcher (:data:`IN_PROCESS`, :data:`LOCAL` or :data:`SLURM`), the keys the sweep
    varies (its console label shows them first), its logging config (``hydra.job_logging`` with its
    own log file; None: the process's as it is) and the stall retries it may use."""

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


@dataclass(frozen=True)
class Ended:
    """How a supervised job ended: ``kind`` (:data:`DONE`, :data:`FAILED`, :data:`STOPPED` by a
    signal, :data:`STALLED` with no retry left, :data:`DIED` without saying why), its one line and
    exit code, whether all was complete already or it resumed, the stall retries it used, for
    a process killed by a signal, that signal, and the runs it left to another live process that
    trains them (``left``: not complete when it ended)."""

    kind: str
    message: str = ""
    code: int = 0
    error_type: str | None = None
    skipped: bool = False
    resumed: bool = False
    retries: int = 0
    signum: int | None = None
    left: tuple[str, ...] = ()


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
    """``python launch.py`` without ``-m``: ``job`` (one run spec) trained under :func:`supervise`,
    logging as ``config``'s ``hydra`` node says (its log file in ``hydra.run.dir``); a stall ends
    the process with exit 75, an error with its code and one line, a job killed by a signal ends
    this process by the same signal."""
    logging_config = hydra_adapter.job_logging(config, Path(str(config.hydra.run.dir)))
    hydra_adapter.configure_logging(logging_config)
    ended = supervise(job, JobContext(logging=logging_config), 0, STALL_ENDS)
    if ended.kind == DONE and ended.left:
        print(f"error: {left_message(ended.left)}", file=sys.stderr)
        sys.exit(ExitCode.STALLED)
    if ended.kind == DONE:
        return
    if ended.kind != STALLED:
        print(f"error: {ended.message}", file=sys.stderr)
    if ended.kind == DIED and ended.signum is not None:  # the shell sees what killed the job
        sys.stderr.flush()
        if ended.signum != signal.SIGKILL:  # SIGKILL has no handler to reset
            signal.signal(ended.signum, signal.SIG_DFL)
        os.kill(os.getpid(), ended.signum)
    sys.exit(ended.code or ExitCode.RUN_FAILED)


def run_in_sweep(job: Job, context: JobContext) -> JobOutcome:
    """A ``-m`` sweep's ``job`` under :func:`supervise` (in the sweep's own process, or a submitit
    task's): placed on its GPU or cores first (a local submitit task: the child inherits the
    placement), then trained; how it went comes back, its error included. A stop signal ends this
    process as the job's own process would have ended."""
    if context.logging is not None:
        hydra_adapter.configure_logging(context.logging)
    if context.launcher == LOCAL:  # its own GPU or cores, before any process of it starts JAX
        from rfig_exp.run.placement import place_job

        spec = job.first
        log.info(place_job(context.index, context.jobs_in_parallel, local=True, mode=spec.placement.mode,
                           cores_per_job=spec.placement.cores_per_job, jobs_per_gpu=spec.placement.jobs_per_gpu,
                           gpus=None if spec.placement.gpus is None else list(spec.placement.gpus)))
    ended = supervise(job, context, context.stall_retries,
                      f"no stall retry left (stall_retries={context.stall_retries}): the job counts failed; "
                      "relaunch the sweep to resume it")
    if ended.kind == DONE:
        return JobOutcome(skipped=ended.skipped and not ended.left, resumed=ended.resumed, stall_retries=ended.retries,
                          left=ended.left)
    return JobOutcome(error=ended.message, error_type=ended.error_type, stalled=ended.kind == STALLED,
                      stall_retries=ended.retries)


def supervise(job: Job, context: JobContext, budget: int, out_of_retries: str) -> Ended:
    """Train ``job`` in a child process, started again from its checkpoint after each stall while
    ``budget`` retries are left (then ``out_of_retries`` says what follows); how it ended. A stop
    signal (to this process or to the child) ends this process once the child has checkpointed and
    stopped (:func:`_stop`)."""
    if _all_complete(job, context.varying):
        return Ended(DONE, skipped=True)
    retries = 0
    with SignalForwarder(context.submitit) as forward:
        while True:
            ended = _attempt(job, context, forward)
            if ended.kind != STALLED:
                break
            if retries >= budget or forward.received is not None:
                log.error("%s; %s", ended.message, out_of_retries)
                break
            retries += 1
            log.error("%s; stall retry %d of %d (stall_retries): a new process takes the job up again",
                      ended.message, retries, budget)
    ended = dataclasses.replace(ended, retries=retries)
    if ended.kind == STOPPED or (ended.kind == DIED and forward.received is not None):
        _stop(ended, forward.received or ended.code - 128, context.submitit)
    return ended


def _attempt(job: Job, context: JobContext, forward: SignalForwarder) -> Ended:
    """One child process of ``job``, watched until it ends or stalls (then it is killed)."""
    spawn = multiprocessing.get_context("spawn")  # a fresh interpreter: no lock or thread of ours copied
    receive, send = spawn.Pipe(duplex=False)
    child = spawn.Process(target=_child, args=(send, job, context.varying, context.logging, context.submitit),
                          name=f"rfig-job-{context.index}")
    child.start()
    send.close()  # the child's end: the pipe reads as closed once the child is gone
    if child.pid is not None:
        forward.follow(child.pid)
    clock, tag, ended = StallClock(job.first.watch.stall_timeout_s), f"job #{context.index}", None
    try:
        while True:
            ready = connection.wait([receive, child.sentinel], timeout=POLL_S)
            if receive in ready:
                try:
                    message = receive.recv()
                except EOFError:
                    break
                if message[0] == "compiled":
                    tag = message[1]
                    clock.start()
                elif message[0] == "window":
                    clock.beat()
                else:
                    ended = Ended(**message[1])
                continue
            if child.sentinel in ready:
                break
            idle = clock.overdue()
            if idle is not None:
                _kill(child)
                return Ended(STALLED, f"{clock.message(tag, idle)}; {kept_on_disk(job)}", ExitCode.STALLED,
                             "Stalled")
    finally:
        receive.close()
        forward.follow(None)  # a signal between two attempts waits for the next child
    child.join()
    return ended or _died(child.exitcode, job)


def _all_complete(job: Job, varying: Sequence[str]) -> bool:
    """Whether every run of ``job`` is complete with its config (``rfig_exp.results.seed_plan``, from the
    tree as it is now); if so the job's skip line is logged as its process would log it. A tree the
    plan refuses (another config) is left for the job's process to report."""
    from rfig_exp.results.seed_plan import plan_seeds

    try:
        plans = [p for part in job.parts for p in plan_seeds(part.spec)]
    except ConfigError:
        return False
    if not plans or any(p.action != "skip" for p in plans):
        return False
    where = Path(os.path.commonpath([str(p.path.parent) for p in plans]))
    log.info("[%s] already complete in %s; skipping (overwrite=true re-runs it)",
             _with_seeds(job_label(job, varying), sorted({p.seed for p in plans})), where)
    return True


def job_label(job: Job, varying: Sequence[str]) -> str:
    """A job's console prefix, as its process names it (``rfig_exp.run.experiment``): env/bonus, then
    what tells it from the other jobs of its sweep (a stacked job: how many settings it trains)."""
    spec = job.first
    if len(job.parts) > 1:
        return f"{spec.env_name}/{spec.bonus_name} {len({p.spec.variant for p in job.parts})} settings"
    flat = variants.flatten(spec.resolved_config)
    values = {k: flat[k] for k in varying if flat.get(k) is not None and not isinstance(flat[k], (dict, list))}
    tag = variants.variant_tag(spec.variant_overrides, values)
    return f"{spec.env_name}/{spec.bonus_name}" + (f"/{tag}" if tag else "")


def _with_seeds(name: str, seeds: Sequence[int]) -> str:
    contiguous = list(seeds) == list(range(seeds[0], seeds[0] + len(seeds)))
    runs = f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 1 else ",".join(map(str, seeds))
    return f"{name}{' x' if ' settings' in name else ''} seeds {runs}"


def kept_on_disk(job: Job) -> str:
    """What a relaunch of ``job`` takes up, read from its run folders now: the last checkpoint of
    the runs that are not complete, or that none was written yet (``rfig_exp.run.checkpoint.on_disk``)."""
    from rfig_exp.results import contract as results
    from rfig_exp.results.seed_plan import seed_run_dir
    from rfig_exp.run import checkpoint

    left = [path for part in job.parts for s in part.spec.seeds
            if not results.is_complete(path := seed_run_dir(part.spec, s))]
    if not left:
        return "every run of it is complete"
    return checkpoint.on_disk(left, job.first.num_windows)


def _died(exitcode: int | None, job: Job) -> Ended:
    """A child that ended without saying how: killed by a signal (the kernel's OOM killer, a kill -9)."""
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        return Ended(DIED, f"the job's process was killed by signal {-exitcode} ({name}); {kept_on_disk(job)} "
                     "(relaunch the same command)", 128 - exitcode, "Killed", signum=-exitcode)
    return Ended(DIED, f"the job's process ended with exit code {exitcode} without a result; {kept_on_disk(job)} "
                 "(relaunch the same command)", int(exitcode or ExitCode.RUN_FAILED), "Died")


def _kill(child) -> None:
    """SIGKILL the child's process group (it leads one: its own helpers go with it): a wedged call
    cannot be unwound, and its checkpoints on disk are whole (each is written, then renamed)."""
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        child.kill()
    child.join()


def _stop(ended: Ended, signum: int, submitit: bool) -> None:
    """End this process as a stop signal asks, after the child has saved its checkpoint: under
    submitit, SIGUSR2 (a time limit or a preemption) goes to submitit's handler, which requeues the
    task and exits; otherwise the exit code the signal means (a requeued SLURM task is started
    again by SLURM itself)."""
    print(ended.message, file=sys.stderr)
    if submitit and signum == signal.SIGUSR2:
        log.info("SIGUSR2 (time limit or preemption): the job's checkpoint is saved; handing over to submitit to "
                 "requeue the task")
        for handler in logging.getLogger().handlers:
            handler.flush()
        hand_over_to_submitit()
    sys.exit(ended.code or 128 + signum)


def _child(send, job: Job, varying: Sequence[str], logging_config: dict | None, submitit: bool) -> None:
    """The job's process: trains and reports to its supervisor through ``send``. It leads a process
    group of its own (a terminal's Ctrl-C reaches it once, through the supervisor) and dies with its
    supervisor (nobody would watch it, and it would keep its run folders claimed)."""
    os.setpgid(0, 0)
    _die_with_parent()
    if logging_config is not None:
        hydra_adapter.configure_logging(logging_config)
    logging.getLogger("jax").setLevel(logging.WARNING)  # hides "Unable to initialize backend 'tpu'"
    ended = _train(job, varying, submitit, send.send)
    send.send(("ended", dataclasses.asdict(ended)))
    send.close()


def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG, Linux's; elsewhere the pipe breaks
    except (OSError, AttributeError):
        pass


def _train(job: Job, varying: Sequence[str], submitit: bool, pulse: Callable[[tuple], Any]) -> Ended:
    """``run_job`` in this process with its stop signals; how it ended."""
    from rfig_exp.run.experiment import run_job, runs_not_complete
    from rfig_exp.run.observers import StopSignals

    try:
        with StopSignals(submitit=submitit) as signals:
            summaries = run_job(job, tuple(varying), signals=signals, pulse=pulse)
        return Ended(DONE, skipped=not summaries, resumed=any(s.resumed_from_windows for s in summaries),
                     left=tuple(map(str, runs_not_complete(job))))
    except (ConfigError, RunFailed, OSError) as err:
        message, code = _message(err, job)
        return Ended(FAILED, message, int(code), type(err).__name__)
    except Interrupted as stop:
        return Ended(STOPPED, str(stop), int(stop.exit_code))
    except Exception as err:  # noqa: BLE001 - a bug in one job: reported, and a sweep goes on
        log.exception("the job raised")
        return Ended(FAILED, str(err) or type(err).__name__, int(ExitCode.RUN_FAILED), type(err).__name__)


def left_message(left: Sequence[str]) -> str:
    """Why a job that ended without error did not finish: runs another live process trains."""
    return (f"{len(left)} run(s) left to another process that trains them, not complete when this job ended "
            f"({left[0]}{', ...' if len(left) > 1 else ''}); relaunch once it ends to check them (exit 75)")


class SubmititTask:
    """What submitit runs in each task: :func:`run_in_sweep`. At a time limit or a preemption,
    submitit asks it for its :meth:`checkpoint` (after the job's process has saved the current
    window and stopped): the same job, submitted again, resumes from its checkpoints."""

    def __call__(self, job: Job, context: JobContext) -> JobOutcome:
        return run_in_sweep(job, context)

    def checkpoint(self, *args, **kwargs):
        import submitit

        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)

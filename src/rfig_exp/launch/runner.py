"""A ``-m`` sweep's plan run on the launcher it chose, surviving its own failures and saying how it went.

The plan (``rfig_exp.launch.sweep_plan.LaunchPlan``) holds the compiled jobs, each composed and
validated once; ``hydra/launcher=...`` chooses where they run, read from the sweep's primary
config: in this process one after another (Hydra's basic launcher, the default), or as submitit
tasks on this machine (``local``) or on SLURM (``slurm``), each task given its job as a value
(``rfig_exp.launch.task.SubmititTask``). Each failed job is reported as its result comes back, with
the path of its log; every other job runs, and the sweep ends with one summary: jobs completed,
skipped (already complete), resumed, failed, and those that left runs to another live process
that trains them (a sweep launched twice), and the stall retries. It exits 1 when a job failed,
75 when none failed but some runs were left to another process (not complete: relaunch once it
ends), 0 otherwise.

Each job trains in a process of its own under a supervisor (``rfig_exp.launch.task``: this
process for an in-process job, the task's for a submitit one), which kills a stalled one and starts
it again from its checkpoint up to ``stall_retries`` times, and reports the retries it used in the
job's outcome.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Sequence

from omegaconf import DictConfig, OmegaConf

from rfig_exp.config.errors import ExitCode
from rfig_exp.launch import hydra_adapter
from rfig_exp.launch.hydra_adapter import IN_PROCESS, LOCAL, SLURM
from rfig_exp.launch.sweep_plan import LaunchPlan
from rfig_exp.launch.task import JobContext, JobOutcome, SubmititTask, left_message, run_in_sweep
from rfig_exp.spec.stack import Job

log = logging.getLogger("rfig_exp")


class Tally:
    """How the sweep's jobs went, counted as their outcomes come back."""

    def __init__(self, sweep_dir: Path, budget: int, jobs: Sequence[Job] = ()):
        self.sweep_dir, self.budget = sweep_dir, budget
        self.counts = {"completed": 0, "skipped": 0, "resumed": 0, "failed": 0, "left": 0, "stall_retries": 0}
        self.failures: list[str] = []
        self.left: list[str] = []
        self.total_jobs, self.total_runs = len(jobs), sum(job.members for job in jobs)
        self.jobs_done = self.runs_done = 0
        self.trained_s, self.trained_jobs = 0.0, 0  # the jobs that trained (not skipped) and their time
        self.last = time.perf_counter()

    def add(self, index: int, job: Job, outcome: JobOutcome, report: bool = True) -> None:
        """Count ``outcome`` of job ``index``, then (``report``: not for all but the last of a batch that
        came back together) say where the sweep stands."""
        self._count(index, job, outcome)
        now = time.perf_counter()
        self.jobs_done += 1
        self.runs_done += job.members
        if not (outcome.error is None and outcome.skipped):
            self.trained_s += now - self.last
            self.trained_jobs += 1
        self.last = now
        if report and self.total_jobs > 1:
            log.info("[sweep] %s", self.progress())

    def progress(self) -> str:
        """``job k/n back | runs r/R | eta ...``: the ETA is the mean time of the jobs that trained (skipped
        ones take none) times the jobs left; a batch that ran side by side counts its time once over
        its jobs, so the ETA is the batches left times a batch's time."""
        left = self.total_jobs - self.jobs_done
        eta = (f"eta {_duration(self.trained_s / self.trained_jobs * left)}" if self.trained_jobs and left
               else "eta n/a" if left else "all jobs back")
        return (f"job {self.jobs_done}/{self.total_jobs} back | runs {self.runs_done}/{self.total_runs} "
                f"| {eta}")

    def _count(self, index: int, job: Job, outcome: JobOutcome) -> None:
        c = self.counts
        c["stall_retries"] += outcome.stall_retries
        if outcome.error is None and outcome.left:
            c["left"] += 1
            c["resumed"] += outcome.resumed
            self.left.append(f"{describe(job)}: {left_message(outcome.left)}")
            log.warning("[sweep] job not finished here: %s", self.left[-1])
            return
        if outcome.error is None:
            c["skipped" if outcome.skipped else "completed"] += 1
            c["resumed"] += outcome.resumed
            return
        if outcome.stalled:
            line = (f"{describe(job)}: stalled (exit 75) {outcome.stall_retries + 1} time(s), "
                    f"stall_retries={self.budget} used up; "
                    "relaunch the sweep to resume it")
        else:
            first = outcome.error.splitlines()[0] if outcome.error else outcome.error_type
            line = f"{describe(job)}: {outcome.error_type}: {first} (log: {self.log_path(index)})"
        c["failed"] += 1
        self.failures.append(line)
        log.error("[sweep] job failed: %s", line)

    def log_path(self, index: int) -> Path:
        return self.sweep_dir / str(index) / f"{hydra_adapter.JOB_NAME}.log"

    def finish(self, seconds: float, cancelled: str | None = None) -> None:
        c = self.counts
        total = c["completed"] + c["skipped"] + c["failed"] + c["left"]
        log.info("[sweep] %d job(s) in %.0fs: %d completed (%d of them resumed), %d skipped (already complete), "
                 "%d failed, %s%d stall retr%s (stall_retries=%d)", total, seconds, c["completed"], c["resumed"],
                 c["skipped"], c["failed"],
                 f"{c['left']} left runs to another process (not complete), " if c["left"] else "",
                 c["stall_retries"], "y" if c["stall_retries"] == 1 else "ies", self.budget)
        for line in self.failures:
            log.info("[sweep]   failed: %s", line)
        for line in self.left:
            log.info("[sweep]   not finished here: %s", line)
        if cancelled:
            log.error("[sweep] SLURM jobs were cancelled: %s", cancelled)
        if self.failures:
            sys.exit(ExitCode.RUN_FAILED)
        if self.left:
            sys.exit(ExitCode.STALLED)


def _duration(seconds: float) -> str:
    """``45s``, ``12m05s``, ``3h07m``."""
    s = int(round(seconds))
    return f"{s}s" if s < 60 else f"{s // 60}m{s % 60:02d}s" if s < 3600 else f"{s // 3600}h{s % 3600 // 60:02d}m"


def describe(job: Job) -> str:
    """A job as a failure line names it: its parts' overrides (a stacked job: the first and a count)."""
    first = " ".join(job.parts[0].overrides)
    return first if len(job.parts) == 1 else f"{first} (+{len(job.parts) - 1} more settings stacked)"


def run_sweep(plan: LaunchPlan) -> None:
    """Run every job of ``plan`` where its primary config's ``hydra.launcher`` says; exit 1 if any failed."""
    primary = plan.config
    kind = hydra_adapter.launcher_kind(primary.hydra.launcher)
    sweep_dir = Path(str(primary.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(primary, sweep_dir / "multirun.yaml")
    sweep_logging = hydra_adapter.job_logging(primary, sweep_dir)  # the sweep's own lines: <sweep dir>/launch.log
    hydra_adapter.configure_logging(sweep_logging)
    tally = Tally(sweep_dir, int(OmegaConf.select(primary, "stall_retries", default=0) or 0), plan.jobs)
    t0 = time.perf_counter()
    if kind == IN_PROCESS:
        _in_process(plan, tally)
        hydra_adapter.configure_logging(sweep_logging)  # each job logged to its own file
        tally.finish(time.perf_counter() - t0)
        return
    watcher = _slurm_watcher(primary, kind)
    _submitit(plan, tally, kind, watcher)
    tally.finish(time.perf_counter() - t0, watcher.reason)


def _context(plan: LaunchPlan, index: int, launcher: str, jobs_in_parallel: int | None, budget: int) -> JobContext:
    config = hydra_adapter.job_logging(plan.config, Path(str(plan.config.hydra.sweep.dir)) / str(index))
    return JobContext(index, jobs_in_parallel, launcher, plan.varying, config, budget)


def _in_process(plan: LaunchPlan, tally: Tally) -> None:
    """The jobs one after another, each supervised from this process and reported when it ends."""
    for index, job in enumerate(plan.jobs):
        tally.add(index, job, run_in_sweep(job, _context(plan, index, IN_PROCESS, None, tally.budget)))


def jobs_at_once(primary: DictConfig, kind: str) -> int | None:
    """Jobs per batch: ``hydra.sweeper.max_batch_size``, or for local jobs (placed on this machine)
    ``placement.jobs_per_gpu`` per GPU of it, as each job's placement derives it."""
    from rfig_exp.run import placement

    batch = OmegaConf.select(primary, "hydra.sweeper.max_batch_size", default=None)
    per_gpu = OmegaConf.select(primary, "placement.jobs_per_gpu", default=None)
    if per_gpu is None or kind != LOCAL:
        return int(batch) if batch else None
    pool = placement.gpu_pool(OmegaConf.select(primary, "placement.gpus", default=None))
    return placement.jobs_at_once(int(batch) if batch else None, int(per_gpu), len(pool))


def _submitit(plan: LaunchPlan, tally: Tally, kind: str, watcher) -> None:
    """The jobs as submitit tasks, a batch of :func:`jobs_at_once` at a time (SLURM: one job array
    per batch), each task given its job and context as values."""
    executor = hydra_adapter.submitit_executor(plan.config.hydra.launcher)
    step = jobs_at_once(plan.config, kind) or len(plan.jobs)
    log.info("[sweep] %d job(s) as submitit '%s' tasks, up to %d at a time; sweep output dir: %s", len(plan.jobs),
             executor.cluster, step, tally.sweep_dir)
    batch_size = OmegaConf.select(plan.config, "hydra.sweeper.max_batch_size", default=None)
    for start in range(0, len(plan.jobs), step):
        batch = list(range(start, min(start + step, len(plan.jobs))))
        # each job's slot: its index in its batch of max_batch_size (rfig_exp.run.placement)
        contexts = [_context(plan, i, kind, int(batch_size) if batch_size else None, tally.budget) for i in batch]
        with watcher:
            tasks = executor.map_array(SubmititTask(), [plan.jobs[i] for i in batch], contexts)
            for i, task in zip(batch, tasks):
                log.info("[sweep] job #%d: submitit task %s, its log %s", i, task.job_id, task.paths.stdout)
            if kind == LOCAL:  # the jobs run on this machine: their lines come to this console too
                follow_logs(tasks)
            outcomes = [_result(task) for task in tasks]
        for i, outcome in zip(batch, outcomes):
            tally.add(i, plan.jobs[i], outcome, report=i == batch[-1])


def follow_logs(tasks, poll_s: float = 1.0, out=None) -> None:
    """Echo the whole lines each task writes to its stdout and stderr logs on this console as they come,
    until every task is done (a local task's progress lines would otherwise be seen only in its log)."""
    out = out or sys.stdout
    offsets: dict[Path, int] = {}
    while True:
        finished = all(task.done() for task in tasks)
        for task in tasks:
            for path in (Path(task.paths.stdout), Path(task.paths.stderr)):
                try:
                    with open(path, "rb") as f:
                        f.seek(offsets.get(path, 0))
                        chunk = f.read()
                except FileNotFoundError:
                    continue
                whole = chunk if finished else chunk[: chunk.rfind(b"\n") + 1]
                offsets[path] = offsets.get(path, 0) + len(whole)
                lines = [line for line in whole.decode(errors="replace").splitlines() if not _submitit_chatter(line)]
                if lines:
                    out.write("\n".join(lines) + "\n")
                    out.flush()
        if finished:
            return
        time.sleep(poll_s)


def _submitit_chatter(line: str) -> bool:
    """submitit's own INFO lines (its task starting, loading its pickle, exiting), in the two forms a
    task's logs hold them: said once in the sweep's summary instead."""
    return line.startswith("submitit INFO") or "][submitit][INFO]" in line


def _result(task) -> JobOutcome:
    """A submitit task's outcome; a task that raised or died comes back as a failed outcome."""
    try:
        value = task.result()
    except Exception as err:  # noqa: BLE001 - submitit's FailedJobError, UncompletedJobError, ...
        text = str(err).strip()
        return JobOutcome(error=text.splitlines()[-1] if text else type(err).__name__, error_type=type(err).__name__)
    return value if isinstance(value, JobOutcome) else JobOutcome()


def _slurm_watcher(primary: DictConfig, kind: str):
    """A watcher of the sweep's pending jobs (rfig_exp.launch.slurm), enabled under the SLURM launcher."""
    from rfig_exp.launch import slurm

    if kind == SLURM:
        hydra_adapter.quiet_sacct()
    return slurm.PendingWatcher(str(OmegaConf.select(primary, "hydra.launcher.name", default="")),
                                enabled=kind == SLURM)


"""Hydra's basic sweeper, made to survive its own failures and to say how the sweep went.

Hydra's ``BasicSweeper`` raises at the first failed job and prints a traceback. This one
(selected in ``conf/config.yaml`` as ``hydra.sweeper._target_``; Hydra takes
plugins only from the ``hydra_plugins`` namespace package, hence this location) reports each failed job as
its result comes back, with the path of its log, lets every other job run on any launcher,
and ends with one summary: runs completed, skipped (already complete), resumed and failed, and
the stall retries. The sweep exits 1 when a job failed, 0 otherwise. With the in-process basic
launcher the jobs go one at a time, so a failure is reported when it happens.

A job the watchdog ends as stalled (exit 75) is retried from its checkpoint up to
``stall_retries`` times (rfig_exp.launch.retry): an in-process job re-executes the sweep, which picks up
here with the counts so far (saved in the sweep folder before each job) and decides whether that
job gets another try; a submitit task requeues itself and reports its retries in its result.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any, Optional

from omegaconf import OmegaConf

from rfig_exp.launch import hydra_adapter, retry, sweep_plan
from rfig_exp.launch.hydra_adapter import JobOutcome
from rfig_exp.config.errors import ExitCode

log = logging.getLogger("rfig_exp")


class ResilientSweeper(hydra_adapter.basic_sweeper()):
    def __init__(self, max_batch_size: Optional[int] = None, params: Optional[dict] = None) -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)

    def sweep(self, arguments: list[str]) -> Any:
        in_process = hydra_adapter.runs_in_process(self.launcher)
        # in-process jobs: report each one as soon as it ends (and a batch is a job, which is
        # where a sweep re-executed after a stall goes on)
        batch_size = 1 if in_process else self._jobs_at_once()
        self.overrides = self._batches(arguments, batch_size)
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")  # also where each job reads its sweep

        watcher = self._slurm_watcher()
        state = retry.SweepProgress.start()
        handed = retry.resumed_progress() if in_process else None
        if handed is not None:  # this process re-executed the sweep after a stalled job: go on from there
            state = self._after_stall(handed)
        counts, failures, retries, index = state.counts, state.failures, state.retries, state.next
        returns, t0 = [], state.start_time()
        while not self.is_done():
            batch = self.get_job_batch()
            self.validate_batch_is_legal(batch)
            if in_process:  # what a stalled job hands the sweep it re-executes (rfig_exp.launch.retry)
                retry.SweepProgress(counts, failures, retries, index, state.started_at).save(sweep_dir)
            with watcher:
                results = self.launcher.launch(batch, initial_job_idx=index)
            for job in results:
                completed, value = hydra_adapter.job_result(job)
                if completed:
                    outcome = value if isinstance(value, JobOutcome) else JobOutcome()
                    counts["skipped" if outcome.skipped else "completed"] += 1
                    counts["resumed"] += outcome.resumed
                    counts["stall_retries"] += outcome.stall_retries
                else:
                    error = value
                    counts["stall_retries"] += int(getattr(error, "stall_retries", 0))
                    first = str(error).splitlines()[0] if str(error) else type(error).__name__
                    self._failed(counts, failures,
                                 f"{' '.join(job.overrides or [])}: {type(error).__name__}: {first} "
                                 f"(log: {self._log_path(job)})")
            index += len(batch)
            returns.append(results)
        total = sum(counts[k] for k in ("completed", "skipped", "failed"))
        log.info("[sweep] %d job(s) in %.0fs: %d completed (%d of them resumed), %d skipped (already complete), "
                 "%d failed, %d stall retr%s (stall_retries=%d)", total, time.perf_counter() - t0,
                 counts["completed"], counts["resumed"], counts["skipped"], counts["failed"], counts["stall_retries"],
                 "y" if counts["stall_retries"] == 1 else "ies", int(self.config.get("stall_retries", 0)))
        for line in failures:
            log.info("[sweep]   failed: %s", line)
        if watcher.reason:
            log.error("[sweep] SLURM jobs were cancelled: %s", watcher.reason)
        if failures:
            sys.exit(ExitCode.RUN_FAILED)
        return returns

    @staticmethod
    def _failed(counts: dict, failures: list[str], line: str) -> None:
        counts["failed"] += 1
        failures.append(line)
        log.error("[sweep] job failed: %s", line)

    def _after_stall(self, handed: dict) -> retry.SweepProgress:
        """Where a sweep re-executed by a stalled in-process job goes on: that job again, resumed
        from its checkpoint, while it has ``stall_retries`` left; else the next one, this one failed."""
        state = retry.SweepProgress.load(handed)
        index = int(handed["stalled"])
        budget, used = int(self.config.get("stall_retries", 0)), state.retries.get(index, 0)
        if used < budget:
            state.retries[index] = used + 1
            state.counts["stall_retries"] += 1
            log.warning("[sweep] job #%d stalled: retry %d of %d (stall_retries), resuming it from its checkpoint",
                        index, used + 1, budget)
            state.next = index
        else:
            overrides = " ".join(self.overrides[index][0])  # one job per batch in-process
            self._failed(state.counts, state.failures, f"{overrides}: stalled (exit 75) {used + 1} time(s), "
                         f"stall_retries={budget} used up; relaunch the sweep to resume it")
            state.next = index + 1
        self.batch_index = state.next
        log.info("[sweep] going on at job #%d after a stalled job", state.next)
        return state

    def _batches(self, arguments: list[str], batch_size: Optional[int]) -> list:
        """The sweep's jobs as preflight validated them (rfig_exp.launch.sweep_plan: the preset's params and
        the command line expanded, per-env options applied, seeds grouped), cut into batches of
        ``batch_size``."""
        plan = sweep_plan.plan_sweep(self.config, arguments, config_loader=self.hydra_context.config_loader)
        for line in plan.lines:
            log.debug(line)  # launch.py's preflight already said it
        step = batch_size or len(plan.jobs) or 1
        return [plan.jobs[i:i + step] for i in range(0, len(plan.jobs), step)]

    def _jobs_at_once(self) -> Optional[int]:
        """Jobs per batch: ``max_batch_size``, or for submitit_local jobs (placed on this machine)
        ``placement.jobs_per_gpu`` per GPU of it, as each job's placement derives it."""
        from rfig_exp.run import placement

        target = str(OmegaConf.select(self.config, "hydra.launcher._target_", default=""))
        per_gpu = OmegaConf.select(self.config, "placement.jobs_per_gpu", default=None)
        if per_gpu is None or "LocalLauncher" not in target:
            return self.max_batch_size
        pool = placement.gpu_pool(OmegaConf.select(self.config, "placement.gpus", default=None))
        return placement.jobs_at_once(self.max_batch_size, int(per_gpu), len(pool))

    def _slurm_watcher(self):
        """A watcher of the sweep's pending jobs (rfig_exp.launch.slurm), enabled under the SLURM launcher."""
        from rfig_exp.launch import slurm

        target = str(OmegaConf.select(self.config, "hydra.launcher._target_", default=""))
        if "Slurm" in target:
            hydra_adapter.quiet_sacct()
        return slurm.PendingWatcher(str(OmegaConf.select(self.config, "hydra.launcher.name", default="")),
                                    enabled="Slurm" in target)

    @staticmethod
    def _log_path(job) -> str:
        runtime = OmegaConf.select(job.hydra_cfg, "hydra.runtime.output_dir") if job.hydra_cfg else None
        name = OmegaConf.select(job.hydra_cfg, "hydra.job.name") if job.hydra_cfg else None
        if runtime:
            return str(Path(runtime) / f"{name or 'launch'}.log")
        return job.working_dir or "(unknown)"

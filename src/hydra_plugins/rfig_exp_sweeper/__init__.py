"""Hydra's basic sweeper, made to survive its own failures and to say how the sweep went.

Hydra's ``BasicSweeper`` raises at the first failed job and prints a traceback. This one
(selected in ``conf/config.yaml`` as ``hydra.sweeper._target_``; Hydra takes
plugins only from the ``hydra_plugins`` namespace package, hence this location) runs the jobs that
preflight planned (launch.py hands them over: ``rfig_exp.launch.hydra_adapter.run_sweep``),
reports each failed job as its result comes back, with the path of its log, lets every other job
run on any launcher, and ends with one summary: runs completed, skipped (already complete),
resumed and failed, and the stall retries. The sweep exits 1 when a job failed, 0 otherwise.
With the in-process basic launcher the jobs go one at a time, so a failure is reported when it
happens.

A job the watchdog ends as stalled is retried from its checkpoint up to ``stall_retries`` times
(rfig_exp.launch.retry): an in-process job comes back failed with ``Stalled`` and is launched again
here; a submitit task requeues itself and reports its retries in its result.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from omegaconf import OmegaConf

from rfig_exp.config.errors import ExitCode, Stalled
from rfig_exp.launch import hydra_adapter, sweep_plan
from rfig_exp.launch.hydra_adapter import JobOutcome

log = logging.getLogger("rfig_exp")


class ResilientSweeper(hydra_adapter.basic_sweeper()):
    def __init__(self, max_batch_size: Optional[int] = None, params: Optional[dict] = None) -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)

    def sweep(self, arguments: list[str]) -> Any:
        """Hydra's own way in, for a sweep launch.py did not plan (``--config-dir``): plan it here."""
        return self.run_jobs(sweep_plan.plan_sweep(self.config, arguments,
                                                   config_loader=self.hydra_context.config_loader).jobs)

    def run_jobs(self, jobs: Sequence[Sequence[str]]) -> Any:
        """Launch ``jobs`` (override lists, in order) in batches, count how each one went, retry a
        stalled in-process job, and end with the ``[sweep]`` summary."""
        in_process = hydra_adapter.runs_in_process(self.launcher)
        # in-process jobs: report each one as soon as it ends (and a batch is a job, which is
        # what a stalled job's retry launches again)
        step = (1 if in_process else self._jobs_at_once()) or len(jobs) or 1
        batches = [list(map(list, jobs[i:i + step])) for i in range(0, len(jobs), step)]
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")

        budget = int(self.config.get("stall_retries", 0))
        watcher = self._slurm_watcher()
        counts = {"completed": 0, "skipped": 0, "resumed": 0, "failed": 0, "stall_retries": 0}
        failures: list[str] = []
        returns, index, t0 = [], 0, time.perf_counter()
        for batch in batches:
            used = 0
            while True:
                with watcher:
                    results = self.launcher.launch(batch, initial_job_idx=index)
                completed, value = hydra_adapter.job_result(results[0]) if in_process else (True, None)
                if in_process and not completed and isinstance(value, Stalled) and used < budget:
                    used += 1
                    counts["stall_retries"] += 1
                    log.warning("[sweep] job #%d stalled: retry %d of %d (stall_retries), resuming it from its "
                                "checkpoint", index, used, budget)
                    continue
                break
            for job in results:
                completed, value = hydra_adapter.job_result(job)
                if completed:
                    outcome = value if isinstance(value, JobOutcome) else JobOutcome()
                    counts["skipped" if outcome.skipped else "completed"] += 1
                    counts["resumed"] += outcome.resumed
                    counts["stall_retries"] += outcome.stall_retries
                elif in_process and isinstance(value, Stalled):
                    self._failed(counts, failures, f"{' '.join(job.overrides or [])}: stalled (exit 75) {used + 1} "
                                 f"time(s), stall_retries={budget} used up; relaunch the sweep to resume it")
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
                 "y" if counts["stall_retries"] == 1 else "ies", budget)
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

    def _jobs_at_once(self) -> Optional[int]:
        """Jobs per batch: ``max_batch_size``, or for submitit_local jobs (placed on this machine)
        ``placement.jobs_per_gpu`` per GPU of it, as each job's placement derives it."""
        from rfig_exp.run import placement

        per_gpu = OmegaConf.select(self.config, "placement.jobs_per_gpu", default=None)
        if per_gpu is None or hydra_adapter.launcher_kind(self.config.hydra.launcher) != hydra_adapter.LOCAL:
            return self.max_batch_size
        pool = placement.gpu_pool(OmegaConf.select(self.config, "placement.gpus", default=None))
        return placement.jobs_at_once(self.max_batch_size, int(per_gpu), len(pool))

    def _slurm_watcher(self):
        """A watcher of the sweep's pending jobs (rfig_exp.launch.slurm), enabled under the SLURM launcher."""
        from rfig_exp.launch import slurm

        under_slurm = hydra_adapter.launcher_kind(self.config.hydra.launcher) == hydra_adapter.SLURM
        if under_slurm:
            hydra_adapter.quiet_sacct()
        return slurm.PendingWatcher(str(OmegaConf.select(self.config, "hydra.launcher.name", default="")),
                                    enabled=under_slurm)

    @staticmethod
    def _log_path(job) -> str:
        runtime = OmegaConf.select(job.hydra_cfg, "hydra.runtime.output_dir") if job.hydra_cfg else None
        name = OmegaConf.select(job.hydra_cfg, "hydra.job.name") if job.hydra_cfg else None
        if runtime:
            return str(Path(runtime) / f"{name or 'launch'}.log")
        return job.working_dir or "(unknown)"

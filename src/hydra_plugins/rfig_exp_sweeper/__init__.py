"""Hydra's basic sweeper, made to survive its own failures and to say how the sweep went.

Hydra's ``BasicSweeper`` raises at the first failed job and prints a traceback. This one
(selected in ``conf/config.yaml`` as ``hydra.sweeper._target_``; Hydra takes
plugins only from the ``hydra_plugins`` namespace package, hence this location) reports each failed job as
its result comes back, with the path of its log, lets every other job run on any launcher,
and ends with one summary: runs completed, skipped (already complete), resumed and failed, and
the stall retries. The sweep exits 1 when a job failed, 0 otherwise. With the in-process basic
launcher the jobs go one at a time, so a failure is reported when it happens.

A job the watchdog ends as stalled (exit 75) is retried from its checkpoint up to
``stall_retries`` times (rfig_exp.retry): an in-process job by re-executing the sweep, which
picks up here at that job with the counts so far; a submitit task requeues itself and reports
its retries in its result.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Optional

from omegaconf import OmegaConf

from rfig_exp import hydra_adapter, retry, sweep_plan, variants, watchdog
from rfig_exp.hydra_adapter import JobOutcome
from rfig_exp.errors import ExitCode

log = logging.getLogger("rfig_exp")


class ResilientSweeper(hydra_adapter.basic_sweeper()):
    def __init__(self, max_batch_size: Optional[int] = None, params: Optional[dict] = None) -> None:
        super().__init__(max_batch_size=max_batch_size, params=params)

    def sweep(self, arguments: list[str]) -> Any:
        in_process = hydra_adapter.runs_in_process(self.launcher)
        # in-process jobs: report each one as soon as it ends (and a batch is a job, which is
        # where a sweep re-executed after a stall goes on)
        batch_size = 1 if in_process else self.max_batch_size
        self.overrides = self._batches(arguments, batch_size)
        # Inherited by in-process, local and SLURM jobs alike (sbatch exports the environment).
        os.environ[variants.SWEEP_VARIES_ENV] = " ".join(
            variants.varying_keys([job for batch in self.overrides for job in batch]))
        sweep_dir = Path(self.config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, sweep_dir / "multirun.yaml")

        watcher = self._slurm_watcher()
        counts = {"completed": 0, "skipped": 0, "resumed": 0, "failed": 0, "stall_retries": 0}
        failures: list[str] = []
        returns, index, t0 = [], 0, time.perf_counter()
        progress = retry.resumed_progress() if in_process else None
        if progress:  # this process re-executed the sweep after a stalled job: go on from there
            counts, failures, index = progress["counts"], progress["failures"], progress["next"]
            t0 -= progress["elapsed_s"]
            self.batch_index = index  # one job per batch in-process
            log.info("[sweep] going on at job #%d after a stalled job", index)
        retries = {int(k): v for k, v in (progress or {}).get("retries", {}).items()}
        while not self.is_done():
            batch = self.get_job_batch()
            self.validate_batch_is_legal(batch)
            if in_process:
                watchdog.stall_action = functools.partial(
                    self._retry_in_process, index, batch[0], counts, failures, retries, t0)
            try:
                with watcher:
                    results = self.launcher.launch(batch, initial_job_idx=index)
            finally:
                watchdog.stall_action = watchdog.end_process
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

    def _retry_in_process(self, index: int, overrides: list[str], counts: dict, failures: list[str],
                          retries: dict[int, int], t0: float, message: str) -> None:
        """The watchdog's stall action while job ``index`` runs in this process: re-execute the
        sweep to resume that job from its checkpoint, or, out of retries, to go on without it."""
        budget, used = int(self.config.get("stall_retries", 0)), retries.get(index, 0)
        if used < budget:
            retries[index] = used + 1
            counts["stall_retries"] += 1
            log.warning("[sweep] job #%d stalled: retry %d of %d (stall_retries), re-executing the sweep to "
                        "resume it from its checkpoint", index, used + 1, budget)
            following = index
        else:
            self._failed(counts, failures, f"{' '.join(overrides)}: stalled (exit 75) {used + 1} time(s), "
                                           f"stall_retries={budget} used up; relaunch the sweep to resume it")
            following = index + 1
        retry.re_execute({"next": following, "counts": counts, "failures": failures, "retries": retries,
                          "elapsed_s": time.perf_counter() - t0})

    def _batches(self, arguments: list[str], batch_size: Optional[int]) -> list:
        """The sweep's jobs as preflight validated them (rfig_exp.sweep_plan: the preset's params and
        the command line expanded, per-env options applied, seeds grouped), cut into batches of
        ``batch_size``."""
        plan = sweep_plan.plan_sweep(self.config, arguments, config_loader=self.hydra_context.config_loader)
        for line in plan.lines:
            log.debug(line)  # launch.py's preflight already said it
        step = batch_size or len(plan.jobs) or 1
        return [plan.jobs[i:i + step] for i in range(0, len(plan.jobs), step)]

    def _slurm_watcher(self):
        """A watcher of the sweep's pending jobs (rfig_exp.slurm), enabled under the SLURM launcher."""
        from rfig_exp import slurm

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

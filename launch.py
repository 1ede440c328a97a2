"""Hydra entry point: one experiment, or a sweep with ``-m`` (``python launch.py --help``).

    python launch.py                                   # mountaincar + rfig, 1 seed, 1M steps
    python launch.py env=minatar_breakout bonus=none num_seeds=4
    python launch.py -m env=minatar_breakout bonus=rfig,none 'seed=range(4)'

Before Hydra starts, ``rfig_exp.launch.preflight`` validates every job of the command line
(exit 2, one line per error, nothing created); then Hydra composes and runs each job.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))  # runs from a plain checkout too

import rfig_exp  # noqa: E402,F401  (sets the XLA CPU flags before jax is imported)
import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from rfig_exp.config.errors import ConfigError, ExitCode, Interrupted, PreflightError, RunFailed  # noqa: E402

log = logging.getLogger("rfig_exp")


class _SacctNoise(logging.Filter):
    """submitit polls sacct; on a cluster without accounting storage every poll fails and
    submitit falls back to its result files, logging a warning each time."""

    def filter(self, record):
        return "Bypassing sacct error" not in record.getMessage()


logging.getLogger("submitit").addFilter(_SacctNoise())


def _fail(message: str, code: int, multirun: bool):
    """One line on stderr; a sweep's failing job raises instead, so the other jobs go on."""
    if multirun:
        raise RuntimeError(message)
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig):
    """One Hydra job: its config becomes a run spec (validated, JAX-free), then it trains.

    Returns a :class:`~rfig_exp.launch.hydra_adapter.JobOutcome` for the sweeper to count."""
    logging.getLogger("jax").setLevel(logging.WARNING)  # hides "Unable to initialize backend 'tpu'"
    from rfig_exp.launch import hydra_adapter, retry

    job = hydra_adapter.current_job()
    spec = None
    try:
        from rfig_exp.config.run_spec import build_run_spec

        spec = build_run_spec(cfg, job.searchpath)
        if job.multirun:  # a local sweep job gets its own GPU or cores, before JAX starts its threads
            from rfig_exp.run.placement import place_job

            log.info(place_job(job.index, job.jobs_in_parallel, mode=spec.placement.mode,
                               cores_per_job=spec.placement.cores_per_job, jobs_per_gpu=spec.placement.jobs_per_gpu,
                               gpus=None if spec.placement.gpus is None else list(spec.placement.gpus)))
        after_stall = None  # a stalled single run ends with exit 75; a sweep job's sweep retries it
        if job.multirun and os.environ.get("SUBMITIT_EXECUTOR"):  # a task of its own: it requeues itself
            after_stall = retry.submitit_stall_action(
                spec.watch.stall_retries, lambda error: hydra_adapter.failed_job_return(cfg, error))
        elif job.multirun:  # in the sweep's process: the sweep is re-executed
            after_stall = retry.in_process_stall_action(job.sweep_dir or ".", job.index)
        from rfig_exp.run.experiment import run_spec
        from rfig_exp.launch.sweep_plan import varying_keys_of_sweep

        varies = varying_keys_of_sweep(job.sweep_dir) if job.multirun else []
        summaries = run_spec(spec, command_line=job.overrides, sweep_varies=varies, after_stall=after_stall)
        return hydra_adapter.JobOutcome(skipped=not summaries,
                                        resumed=any(s.resumed_from_windows for s in summaries),
                                        stall_retries=retry.submitit_retries_used())
    except ConfigError as err:
        _fail(str(err), ExitCode.BAD_CONFIG, job.multirun)
    except RunFailed as err:
        _fail(f"run failed: {err}", ExitCode.RUN_FAILED, job.multirun)
    except OSError as err:  # a full disk, a folder gone or read-only: the run is not complete, resumable
        results_dir = spec.results_dir if spec is not None else cfg.results_dir  # cfg: only before a spec exists
        _fail(f"cannot write the results under results_dir={results_dir}: {err}; the run is not marked "
              "complete: fix that and relaunch the same command to resume it", ExitCode.RUN_FAILED, job.multirun)
    except Interrupted as stop:
        print(str(stop), file=sys.stderr)
        sys.exit(stop.exit_code)


def cli(argv: list[str]) -> None:
    if {"--help", "-h"} & set(argv):
        from rfig_exp.launch.preflight import help_text

        print(help_text())
        return
    from rfig_exp.launch.preflight import preflight
    from rfig_exp.launch.retry import RESUME_ENV

    try:
        if RESUME_ENV not in os.environ:  # a sweep re-executed after a stall was checked already
            preflight(argv)
    except PreflightError as err:
        for line in err.lines:
            print(f"error: {line}", file=sys.stderr)
        sys.exit(ExitCode.BAD_CONFIG)
    except KeyboardInterrupt:
        print("interrupted before any job started", file=sys.stderr)
        sys.exit(ExitCode.INTERRUPTED)
    if {"-m", "--multirun"} & set(argv):
        # Hydra composes a sweep with the default env first: per-env options must not fail there.
        from rfig_exp.launch.env_options import for_primary_compose

        sys.argv = [sys.argv[0], *for_primary_compose(argv)]
    main()


if __name__ == "__main__":
    cli(sys.argv[1:])

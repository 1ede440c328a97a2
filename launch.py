"""Hydra entry point: one experiment, or a sweep with ``-m`` (``python launch.py --help``).

    python launch.py                                   # mountaincar + rfig, 1 seed, 1M steps
    python launch.py env=minatar_breakout bonus=none num_seeds=4
    python launch.py -m env=minatar_breakout bonus=rfig,none 'seed=range(4)'

Before Hydra starts, ``rfig_exp.preflight`` validates every job of the command line
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

from rfig_exp.errors import EXIT_BAD_CONFIG, EXIT_INTERRUPTED, EXIT_RUN_FAILED, ConfigError  # noqa: E402
from rfig_exp.variants import SWEEP_VARIES_ENV  # noqa: E402

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


def _failed(cfg: DictConfig, error: Exception):
    """This job's result as Hydra's launchers return a job that raised ``error``."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import JobReturn, JobStatus

    hc = HydraConfig.get()
    return JobReturn(overrides=list(hc.overrides.task), cfg=cfg, hydra_cfg=HydraConfig.instance().cfg,
                     working_dir=os.getcwd(), task_name=hc.job.name, status=JobStatus.FAILED, _return_value=error)


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    logging.getLogger("jax").setLevel(logging.WARNING)  # hides "Unable to initialize backend 'tpu'"
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    if multirun:  # a local sweep job gets its own GPU or cores, before JAX starts its threads
        from rfig_exp.placement import place_job, slot_from_hydra

        gpus = cfg.placement.gpus
        log.info(place_job(*slot_from_hydra(hc), mode=cfg.placement.mode, cores_per_job=cfg.placement.cores_per_job,
                           gpus=list(gpus) if gpus is not None else None))
    from rfig_exp import retry
    from rfig_exp.experiment import Interrupted, RunFailed, run_experiment

    if multirun and os.environ.get("SUBMITIT_EXECUTOR"):  # in-process jobs: the sweeper re-executes
        from rfig_exp import watchdog

        watchdog.stall_action = retry.submitit_stall_action(int(cfg.stall_retries), lambda error: _failed(cfg, error))
    try:
        varies = os.environ.get(SWEEP_VARIES_ENV, "").split() if multirun else []
        summaries = run_experiment(cfg, command_line=list(hc.overrides.task), sweep_varies=varies)
        # what a sweep's summary counts (hydra_plugins.rfig_exp_sweeper)
        return {"skipped": not summaries, "resumed": any(s["resumed_from_windows"] for s in summaries),
                "stall_retries": retry.submitit_retries_used()}
    except ConfigError as err:
        _fail(str(err), EXIT_BAD_CONFIG, multirun)
    except RunFailed as err:
        _fail(f"run failed: {err}", EXIT_RUN_FAILED, multirun)
    except OSError as err:  # a full disk, a folder gone or read-only: the run is not complete, resumable
        _fail(f"cannot write the results under results_dir={cfg.results_dir}: {err}; the run is not marked "
              "complete: fix that and relaunch the same command to resume it", EXIT_RUN_FAILED, multirun)
    except Interrupted as stop:
        print(str(stop), file=sys.stderr)
        sys.exit(stop.exit_code)


def cli(argv: list[str]) -> None:
    if {"--help", "-h"} & set(argv):
        from rfig_exp.preflight import help_text

        print(help_text())
        return
    from rfig_exp.preflight import PreflightError, preflight
    from rfig_exp.retry import RESUME_ENV

    try:
        if RESUME_ENV not in os.environ:  # a sweep re-executed after a stall was checked already
            preflight(argv)
    except PreflightError as err:
        for line in err.lines:
            print(f"error: {line}", file=sys.stderr)
        sys.exit(EXIT_BAD_CONFIG)
    except KeyboardInterrupt:
        print("interrupted before any job started", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    if {"-m", "--multirun"} & set(argv):
        from rfig_exp import retry

        retry.set_command(argv)  # what the sweeper re-executes to retry a stalled in-process job
        # Hydra composes a sweep with the default env first: per-env options must not fail there.
        from rfig_exp.env_options import for_primary_compose

        sys.argv = [sys.argv[0], *for_primary_compose(argv)]
    main()


if __name__ == "__main__":
    cli(sys.argv[1:])

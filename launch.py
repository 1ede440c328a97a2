"""The command line: one experiment, or a sweep with ``-m`` (``python launch.py --help``).

    python launch.py                                   # mountaincar + rfig, 1 seed, 1M steps
    python launch.py env=minatar_breakout bonus=none num_seeds=4
    python launch.py -m env=minatar_breakout bonus=rfig,none 'seed=range(4)'

The way to the trainer: ``rfig_exp.launch.preflight`` checks every job of the command line and
plans a sweep (exit 2, one line per error, nothing created); Hydra composes each job's config and
runs it (``rfig_exp.launch.hydra_adapter``: the command line and the plan are handed to it); each
job (:func:`job`) makes its run spec and trains it (``rfig_exp.run.experiment.run_spec``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))  # runs from a plain checkout too

import rfig_exp  # noqa: E402

rfig_exp.set_cpu_flags()  # before anything imports jax

import functools  # noqa: E402
import logging  # noqa: E402
from typing import Sequence  # noqa: E402

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


def job(cfg: DictConfig, varying: Sequence[str] = ()):
    """One Hydra job: its config becomes a run spec (validated, JAX-free), then it trains.
    ``varying``: the keys its sweep's plan found not the same in every job, which its console
    label shows first. Returns a :class:`~rfig_exp.launch.hydra_adapter.JobOutcome` for the sweeper."""
    logging.getLogger("jax").setLevel(logging.WARNING)  # hides "Unable to initialize backend 'tpu'"
    from rfig_exp.launch import hydra_adapter
    from rfig_exp.spec.run_spec import build_run_spec

    this = hydra_adapter.current_job()
    spec = None
    try:
        spec = build_run_spec(cfg, this.searchpath)
        if this.multirun:  # a local sweep job gets its own GPU or cores, before JAX starts its threads
            from rfig_exp.run.placement import place_job

            log.info(place_job(this.index, this.jobs_in_parallel, local=this.launcher == hydra_adapter.LOCAL,
                               mode=spec.placement.mode,
                               cores_per_job=spec.placement.cores_per_job, jobs_per_gpu=spec.placement.jobs_per_gpu,
                               gpus=None if spec.placement.gpus is None else list(spec.placement.gpus)))
        return _train(cfg, spec, this, varying)
    except ConfigError as err:
        _fail(str(err), ExitCode.BAD_CONFIG, this.multirun)
    except RunFailed as err:
        _fail(f"run failed: {err}", ExitCode.RUN_FAILED, this.multirun)
    except OSError as err:  # a full disk, a folder gone or read-only: the run is not complete, resumable
        results_dir = spec.results_dir if spec is not None else cfg.results_dir  # cfg: only before a spec exists
        _fail(f"cannot write the results under results_dir={results_dir}: {err}; the run is not marked "
              "complete: fix that and relaunch the same command to resume it", ExitCode.RUN_FAILED, this.multirun)
    except Interrupted as stop:
        print(str(stop), file=sys.stderr)
        sys.exit(stop.exit_code)


def _train(cfg, spec, this, varying: Sequence[str]):
    """Train ``spec`` as the job ``this`` is run: a single run ends with exit 75 when it stalls;
    a submitit task requeues itself; a job in the sweep's own process trains on a thread of its
    own, which a stall leaves behind for the sweeper to launch the job again (rfig_exp.launch.retry)."""
    from rfig_exp.launch import hydra_adapter, retry
    from rfig_exp.run.experiment import run_spec
    from rfig_exp.run.observers import StopSignals
    from rfig_exp.run.watchdog import on_own_thread

    run = functools.partial(run_spec, spec, command_line=this.overrides, sweep_varies=varying)
    if not this.multirun:
        summaries = run()
    elif this.submitit:
        with StopSignals(submitit=True) as signals:
            summaries = run(signals=signals, after_stall=retry.submitit_stall_action(
                spec.watch.stall_retries, lambda error: hydra_adapter.failed_job_return(cfg, error)))
    else:
        with StopSignals() as signals:
            summaries = on_own_thread(functools.partial(run, signals=signals))
    return hydra_adapter.JobOutcome(skipped=not summaries, resumed=any(s.resumed_from_windows for s in summaries),
                                    stall_retries=retry.submitit_retries_used() if this.submitit else 0)


def cli(argv: list[str]) -> None:
    if {"--help", "-h"} & set(argv):
        from rfig_exp.launch.preflight import help_text

        print(help_text())
        return
    from rfig_exp.launch import hydra_adapter
    from rfig_exp.launch.preflight import preflight

    try:
        plan = preflight(argv)
    except PreflightError as err:
        for line in err.lines:
            print(f"error: {line}", file=sys.stderr)
        sys.exit(ExitCode.BAD_CONFIG)
    except KeyboardInterrupt:
        print("interrupted before any job started", file=sys.stderr)
        sys.exit(ExitCode.INTERRUPTED)
    if plan is None:  # one run, or what Hydra does besides running (--cfg, --info)
        hydra_adapter.run(job, argv)
    else:
        here = Path(__file__).resolve()
        hydra_adapter.run_sweep(functools.partial(job, varying=plan.varying), plan.jobs, plan.overrides,
                                here.parent / "conf", task_name=here.stem)


if __name__ == "__main__":
    cli(sys.argv[1:])

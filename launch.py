"""The command line: one experiment, or a sweep with ``-m`` (``python launch.py --help``).

    python launch.py                                   # mountaincar + rfig, 1 seed, 1M steps
    python launch.py env=minatar_breakout bonus=none num_seeds=4
    python launch.py -m env=minatar_breakout bonus=rfig,none 'seed=range(4)'
    python launch.py status --experiment default         # where its runs stand (rfig_exp.results.status)

The way to the trainer: ``rfig_exp.launch.preflight`` composes and checks every job of the command
line once and plans it as compiled jobs (exit 2, one line per error, nothing created); a single
run trains in this process (``rfig_exp.launch.task.run_single``), a sweep's jobs run where
``hydra/launcher=...`` says (``rfig_exp.launch.runner``), each job given its run specs as values
(``rfig_exp.run.experiment.run_job``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))  # runs from a plain checkout too

import rfig_exp  # noqa: E402

rfig_exp.set_cpu_flags()  # before anything imports jax

import logging  # noqa: E402

from rfig_exp.config.errors import ExitCode, PreflightError  # noqa: E402


class _SacctNoise(logging.Filter):
    """submitit polls sacct; on a cluster without accounting storage every poll fails and
    submitit falls back to its result files, logging a warning each time."""

    def filter(self, record):
        return "Bypassing sacct error" not in record.getMessage()


logging.getLogger("submitit").addFilter(_SacctNoise())


def _hydra_only(cfg) -> None:
    """The task ``hydra.main`` is given for Hydra's own flags (--cfg, --info, --hydra-help): those
    never run it; a command line that would run a job goes through preflight instead."""
    raise RuntimeError("launch.py runs jobs from its own plan (rfig_exp.launch.preflight), not from hydra.main")


def cli(argv: list[str]) -> None:
    if argv[:1] == ["status"]:  # where a sweep stands, from its results tree (python launch.py status --help)
        from rfig_exp.results.status import main

        sys.exit(main(argv[1:], prog="python launch.py status"))
    if {"--help", "-h"} & set(argv):
        from rfig_exp.launch.preflight import help_text

        print(help_text(argv))
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
    if plan is None:  # what Hydra does besides running (--cfg, --info, --hydra-help)
        hydra_adapter.hydra_command_line(argv, Path(__file__).resolve().parent / "conf", _hydra_only)
    elif plan.multirun:
        from rfig_exp.launch.runner import run_sweep

        run_sweep(plan)
    else:
        from rfig_exp.launch.task import run_single

        run_single(plan.jobs[0], plan.config)


if __name__ == "__main__":
    cli(sys.argv[1:])

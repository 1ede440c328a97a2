"""What the paper's grid costs, from runs measured here: ``python -m campaign.estimate``.

    python -m campaign.estimate --results results                    # every experiment
    python -m campaign.estimate --results results --experiment bench --seeds 32 --steps 1000000

The grid (the paper's figure): 12 envs x 5 bonuses x 32 seeds at 1M env steps each,
rounded up to whole evaluation windows as training does (41 windows of 24,576 = 1,007,616
steps). For each env x bonus it reads the complete ``summary.json`` files of measured runs
and, per *training process* (the seeds of one job share one summary's timings), takes

- ``env_steps_per_second``: env steps of all the job's seeds per second of training
  (compile time excluded), and ``num_seeds_in_process`` (S, the seeds vmapped in the job);
- ``compile_time_s``.

A job of S seeds then takes ``compile + S * steps / env_steps_per_second`` seconds, and the
grid's 32 seeds per env x bonus need ``ceil(32 / S)`` such jobs: the first compiles cold (the
slowest compile measured, never a cache hit's), the others load that program from the persistent
compilation cache at a tenth of it (``WARM_COMPILE_FRACTION``). Where an env x bonus was
measured at several S, the S with the cheapest cost per seed is used (larger vmapped groups
usually are: measured in docs/scale-out.md). Medians are taken over processes with the same S.
Only runs of the ``base`` variant count, or variants that differ from it only in keys that
do not change the speed per step (:data:`SPEED_NEUTRAL`, e.g. a shorter
``agent.total_timesteps``); resumed runs are left out (their timings cover part of a run).
Each host (``summary.json["host"]``) is estimated separately: a GPU run gives GPU-hours.

The output states the basis (which runs, which host, which S) and marks every env x bonus of
the grid without a measurement; the totals cover measured pairs only. Nothing here imports
JAX. Exit status 0; 2 when the results folder does not exist.

**A sweep preset, or one's own command line, before it runs** (``--sweep NAME [--override k=v ...]``,
or ``-- k=v ...`` for ``launch.py -m k=v ...``): every job of
``python launch.py -m sweep=NAME k=v ...`` is composed as the launcher would (no JAX), and
costed from, in this order: complete runs of the same env x bonus x seeds-per-job under
``--results`` on this host (speed-neutral variants only); the committed table of measured
throughput ``benchmarks/throughput.csv`` for ``--device`` (``cpu``: this 2-core machine, one
job per core; ``h100``: one GPU); or, for an env x bonus the table lacks, the env's plain-PPO
throughput times the bonus's measured slowdown on another env of the same device (said as
*extrapolated*). It prints the total on one slot and the wall time on ``--slots`` parallel
slots (cores, GPUs or SLURM nodes: ``--slots 2`` for two one-core lanes, ``--slots 8`` for eight
GPU nodes), longest-job-first, then one line per env (its jobs, hours, and how their speeds
were found), and with ``--jobs`` each job's hours and the source of its speed.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from campaign.estimate_sweep import (
    PAPER_SWEEP,
    WARM_COMPILE_FRACTION,
    main_sweep,
    rounded_steps,
    sweep_grid,
)
from campaign.estimate_throughput import (
    THROUGHPUT_TABLE,
    Process,
    cold_compile_s,
    collect_processes,
    record_rows,
)


@dataclass
class PairEstimate:
    env: str
    bonus: str
    seeds_per_job: int
    processes: int
    steps_per_second: float
    compile_s: float
    jobs: int
    job_hours: float            # hours of one job
    total_hours: float          # all jobs of the pair, one after the other on one slot
    experiments: tuple[str, ...]


def estimate_pair(processes: list[Process], seeds: int, steps_per_seed: int) -> PairEstimate:
    """The cheapest measured job shape for one env x bonus on one host."""
    by_size: dict[int, list[Process]] = defaultdict(list)
    for p in processes:
        by_size[p.seeds].append(p)
    best = None
    for size, group in sorted(by_size.items()):
        sps = statistics.median(p.steps_per_second for p in group)
        compile_s = cold_compile_s(group)
        train_s = size * steps_per_seed / sps
        jobs = math.ceil(seeds / size)
        total_s = compile_s + (jobs - 1) * WARM_COMPILE_FRACTION * compile_s + jobs * train_s
        candidate = PairEstimate(group[0].env, group[0].bonus, size, len(group), sps, compile_s, jobs,
                                 (compile_s + train_s) / 3600, total_s / 3600,
                                 tuple(sorted({p.experiment for p in group})))
        if best is None or candidate.total_hours < best.total_hours:
            best = candidate
    assert best is not None
    return best


def estimate(processes: list[Process], envs: Iterable[str], bonuses: Iterable[str], seeds: int,
             steps_per_seed: int) -> dict[str, dict[tuple[str, str], PairEstimate | None]]:
    """Per host: ``{(env, bonus): PairEstimate or None (not measured)}`` over the grid."""
    by_host: dict[str, dict[tuple[str, str], list[Process]]] = defaultdict(lambda: defaultdict(list))
    for p in processes:
        by_host[p.host][(p.env, p.bonus)].append(p)
    out = {}
    for host, pairs in sorted(by_host.items()):
        out[host] = {(e, b): (estimate_pair(pairs[(e, b)], seeds, steps_per_seed) if pairs.get((e, b)) else None)
                     for e in envs for b in bonuses}
    return out


def _hours(h: float) -> str:
    return f"{h:.2f}" if h < 10 else f"{h:.0f}"


def format_report(estimates, processes: list[Process], skipped: dict, envs, bonuses, seeds: int,
                  steps: int, steps_per_seed: int, eval_frequency: int) -> str:
    envs, bonuses = list(envs), list(bonuses)
    lines = [f"# Compute for the grid: {len(envs)} envs x {len(bonuses)} bonuses x {seeds} seeds x "
             f"{steps:,} env steps ({steps_per_seed:,} after rounding up to whole windows of {eval_frequency:,})",
             ""]
    if not estimates:
        lines.append("No measured runs: run some of the grid first (any budget; base variant), e.g.")
        lines.append("  python launch.py -m env=mountaincar bonus=none,rfig num_seeds=8 agent.total_timesteps=98304 "
                     "experiment=bench")
    skipped_text = "; ".join(f"{n} {why}" for why, n in sorted(skipped.items()))
    for host, pairs in estimates.items():
        measured = {k: v for k, v in pairs.items() if v is not None}
        host_procs = [p for p in processes if p.host == host]
        devices = sorted({p.device for p in host_procs if p.device})
        exps = sorted({p.experiment for p in host_procs})
        lines += [f"## host {host}" + (f" ({', '.join(devices)})" if devices else ""), "",
                  f"Basis: {len(host_procs)} training processes from experiment(s) {', '.join(exps)}; "
                  f"{len(measured)} of {len(pairs)} env x bonus pairs measured. A job of S vmapped seeds takes "
                  f"compile + S x {steps_per_seed:,} / (env steps/s); {seeds} seeds need ceil({seeds}/S) jobs. "
                  "Hours are job-hours of one job slot as measured (one process with the cores or GPU it had).",
                  "",
                  "| env | bonus | S (seeds per job) | processes | env steps/s (all S seeds) | compile, cold (s) | "
                  f"hours per job | jobs | job-hours for {seeds} seeds |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for (env, bonus), est in pairs.items():
            if est is None:
                lines.append(f"| {env} | {bonus} | not measured | | | | | | |")
                continue
            lines.append(f"| {env} | {bonus} | {est.seeds_per_job} | {est.processes} | {est.steps_per_second:,.0f} | "
                         f"{est.compile_s:.1f} | {_hours(est.job_hours)} | {est.jobs} | {_hours(est.total_hours)} |")
        total = sum(e.total_hours for e in measured.values())
        missing = len(pairs) - len(measured)
        lines += ["", f"Total over the {len(measured)} measured pairs: {_hours(total)} job-hours "
                  f"({_hours(total / 24)} job-days on one slot; divide by the number of jobs run at once)."]
        if missing:
            lines.append(f"Not measured: {missing} pairs, marked in the table and not in the total.")
        lines.append("")
    lines.append(f"Runs left out: {skipped_text}." if skipped_text else "Runs left out: none.")
    return "\n".join(lines)


def _names(text: str | None, default: tuple[str, ...]) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()] if text else list(default)


def launch_overrides(line: list[str]) -> tuple[list[str], str | None]:
    """The overrides of a pasted ``[python] launch.py -m OVERRIDE...`` line, and the first word that is
    neither an override nor part of that prefix (None when all are)."""
    words = list(line)
    for prefix in (("python", "python3"), ("launch.py",), ("-m", "--multirun")):
        if words and (words[0] in prefix or (prefix == ("launch.py",) and words[0].endswith("/launch.py"))):
            words.pop(0)
    refused = next((w for w in words if w.startswith("-")), None)
    return words, refused


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m campaign.estimate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="results", help="results folder (results_dir); default: results")
    parser.add_argument("--experiment", default=None, help="comma-separated experiments to measure from; default: all")
    paper = sweep_grid()
    parser.add_argument("--envs", default=None,
                        help=f"comma-separated envs of the grid; default: the paper's {len(paper.envs)} "
                             f"(conf/sweep/{PAPER_SWEEP}.yaml)")
    parser.add_argument("--bonuses", default=None,
                        help=f"comma-separated bonuses; default: {','.join(paper.bonuses)}")
    parser.add_argument("--seeds", type=int, default=paper.seeds, help=f"seeds per env x bonus; default {paper.seeds}")
    parser.add_argument("--steps", type=int, default=paper.steps, help=f"env steps per seed; default {paper.steps:,}")
    parser.add_argument("--eval-frequency", type=int, default=paper.eval_frequency,
                        help="env steps per window (the budget is rounded up to whole windows); "
                             f"default {paper.eval_frequency}")
    parser.add_argument("--sweep", default=None,
                        help="cost the jobs of `launch.py -m sweep=NAME` (before running them) instead of the grid")
    parser.add_argument("line", nargs="*", metavar="OVERRIDE",
                        help="cost one's own `launch.py -m OVERRIDE...` command line (after --, e.g. -- "
                             "env=mountaincar bonus=rfig,rnd 'seed=range(32)'); with --sweep, added to the preset's")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="with --sweep: a command-line override of the sweep (repeatable)")
    parser.add_argument("--device", default="cpu",
                        help="with --sweep or a command line: the device rows of benchmarks/throughput.csv to use "
                             "(cpu, h100)")
    parser.add_argument("--slots", type=int, default=1,
                        help="with --sweep: jobs run at once (cores used one per job, GPUs, or SLURM nodes)")
    parser.add_argument("--jobs", action="store_true",
                        help="with --sweep: after the totals and the per-env summary, one row per job with the source "
                             "of its speed")
    parser.add_argument("--calibrate", action="store_true",
                        help="with --sweep: first measure every env x bonus x seeds-per-job of the sweep that "
                             "benchmarks/throughput.csv lacks for --device (a real launch.py run of --windows "
                             "windows each, compile cache off: cold compile), and record them")
    parser.add_argument("--windows", type=int, default=3, help="with --calibrate: windows per measured run")
    parser.add_argument("--record", default=None, metavar="SOURCE",
                        help="add the speeds measured under --results (--experiment) to benchmarks/throughput.csv "
                             "as --device rows labelled SOURCE, then exit")
    args = parser.parse_args(argv)
    results = Path(args.results)
    if args.record is not None:
        if not results.is_dir():
            print(f"error: --results {results} is not a folder", file=sys.stderr)
            return 2
        added = record_rows(results, _names(args.experiment, ()), args.device, args.record)
        for r in added:
            print(f"{r['device']},{r['env']},{r['bonus']},{r['seeds']},{r['env_steps_per_second']},{r['compile_s']}")
        print(f"{len(added)} rows recorded in {THROUGHPUT_TABLE.name}")
        return 0
    if args.line:
        args.line, refused = launch_overrides(args.line)
        if refused:
            print(f"error: LINE: {refused!r} is not a launch.py override; give the overrides of one's "
                  "`launch.py -m` line (a leading `python launch.py -m` is dropped)", file=sys.stderr)
            return 2
    if args.sweep is not None or args.line:
        return main_sweep(args, results)
    if not results.is_dir():
        print(f"error: --results {results} is not a folder", file=sys.stderr)
        return 2
    for flag, value in (("--seeds", args.seeds), ("--steps", args.steps), ("--eval-frequency", args.eval_frequency)):
        if value < 1:
            print(f"error: {flag}={value} must be >= 1", file=sys.stderr)
            return 2
    experiments = _names(args.experiment, ())
    absent = [e for e in experiments if not (results / e).is_dir()]
    if absent:
        print(f"error: --experiment: no such experiment in {results}: {', '.join(absent)}", file=sys.stderr)
        return 2
    envs, bonuses = _names(args.envs, paper.envs), _names(args.bonuses, paper.bonuses)
    steps_per_seed = rounded_steps(args.steps, args.eval_frequency)
    processes, skipped = collect_processes(results, experiments or None)
    estimates = estimate(processes, envs, bonuses, args.seeds, steps_per_seed)
    print(format_report(estimates, processes, skipped, envs, bonuses, args.seeds, args.steps, steps_per_seed,
                        args.eval_frequency))
    return 0


if __name__ == "__main__":
    sys.exit(main())

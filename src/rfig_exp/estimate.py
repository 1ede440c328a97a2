"""What the paper's grid costs, from runs measured here: ``python -m rfig_exp.estimate``.

    python -m rfig_exp.estimate --results results                    # every experiment
    python -m rfig_exp.estimate --results results --experiment bench --seeds 32 --steps 1000000

The grid (the paper's figure, issue 9): 12 envs x 5 bonuses x 32 seeds at 1M env steps each,
rounded up to whole evaluation windows as training does (41 windows of 24,576 = 1,007,616
steps). For each env x bonus it reads the complete ``summary.json`` files of measured runs
and, per *training process* (the seeds of one job share one summary's timings), takes

- ``env_steps_per_second``: env steps of all the job's seeds per second of training
  (compile time excluded), and ``num_seeds_in_process`` (S, the seeds vmapped in the job);
- ``compile_time_s``.

A job of S seeds then takes ``compile + S * steps / env_steps_per_second`` seconds, and the
grid's 32 seeds per env x bonus need ``ceil(32 / S)`` such jobs. Where an env x bonus was
measured at several S, the S with the cheapest cost per seed is used (larger vmapped groups
usually are: measured in docs/scale-out.md). Medians are taken over processes with the same S.
Only runs of the ``base`` variant count, or variants that differ from it only in keys that
do not change the speed per step (:data:`SPEED_NEUTRAL`, e.g. a shorter
``agent.total_timesteps``); resumed runs are left out (their timings cover part of a run).
Each host (``summary.json["host"]``) is estimated separately: a GPU run gives GPU-hours.

The output states the basis (which runs, which host, which S) and marks every env x bonus of
the grid without a measurement; the totals cover measured pairs only. Nothing here imports
JAX. Exit status 0; 2 when the results folder does not exist.

**A sweep preset before it runs** (``--sweep NAME [--override k=v ...]``): every job of
``python launch.py -m sweep=NAME k=v ...`` is composed as the launcher would (no JAX), and
costed from, in this order: complete runs of the same env x bonus x seeds-per-job under
``--results`` on this host (speed-neutral variants only); the committed table of measured
throughput ``benchmarks/throughput.csv`` for ``--device`` (``cpu``: this 2-core machine, one
job per core; ``h100``: one GPU); or, for an env x bonus the table lacks, the env's plain-PPO
throughput times the bonus's measured slowdown on another env of the same device (said as
*extrapolated*). It prints each job's hours, the total on one slot, and the wall time on
``--slots`` parallel slots (cores, GPUs or SLURM nodes: ``--slots 2`` for this machine's two
lanes, ``--slots 8`` for eight GPU nodes), longest-job-first.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import yaml

from rfig_exp import results as results_contract

CONF_DIR = Path(__file__).resolve().parents[2] / "conf"
PAPER_SWEEP = "paper"  # conf/sweep/paper.yaml: the paper's grid (its Figure)


@dataclass(frozen=True)
class Grid:
    """What a sweep preset runs: its envs x bonuses x seeds, each for ``steps`` env steps in
    windows of ``eval_frequency``."""

    envs: tuple[str, ...]
    bonuses: tuple[str, ...]
    seeds: int
    steps: int
    eval_frequency: int


def _sweep_values(text) -> list:
    """A sweeper parameter's values: ``a,b,c`` or ``range(start,stop[,step])``."""
    text = str(text).strip()
    if text.startswith("range(") and text.endswith(")"):
        return list(range(*(int(x) for x in text[len("range("):-1].split(","))))
    return [v.strip() for v in text.split(",") if v.strip()]


def sweep_grid(preset: str = PAPER_SWEEP, conf_dir: Path = CONF_DIR) -> Grid:
    """The grid of ``conf/sweep/<preset>.yaml``, its unset values from ``conf/config.yaml`` and
    the default agent (read as YAML: no Hydra, no JAX)."""
    def load(path: Path) -> dict:
        return yaml.safe_load(path.read_text()) or {}

    top = load(conf_dir / "config.yaml")
    agent_choice = next(d["agent"] for d in top["defaults"] if isinstance(d, dict) and "agent" in d)
    sweep = load(conf_dir / "sweep" / f"{preset}.yaml")
    params = sweep.get("hydra", {}).get("sweeper", {}).get("params", {})
    seeds_per_job = int(sweep.get("num_seeds", top["num_seeds"]))
    starts = _sweep_values(params["seed"]) if "seed" in params else [sweep.get("seed", top["seed"])]
    steps = sweep.get("agent", {}).get("total_timesteps", load(conf_dir / "agent" / f"{agent_choice}.yaml")
                                       ["total_timesteps"])
    return Grid(tuple(_sweep_values(params["env"])), tuple(_sweep_values(params["bonus"])),
                len(starts) * seeds_per_job, int(steps), int(sweep.get("eval_frequency", top["eval_frequency"])))


def default_eval_frequency(conf_dir: Path = CONF_DIR) -> int:
    """Env steps per evaluation window by default (``conf/config.yaml``'s ``eval_frequency``)."""
    return int((yaml.safe_load((conf_dir / "config.yaml").read_text()) or {})["eval_frequency"])


# Overrides that leave the cost of one env step unchanged (how long, where and how often to log).
SPEED_NEUTRAL = ("agent.total_timesteps", "eval_frequency")


@dataclass(frozen=True)
class Process:
    """The timings of one training process (all its seeds share them)."""

    experiment: str
    env: str
    bonus: str
    variant: str
    host: str
    seeds: int                  # num_seeds_in_process
    steps_per_second: float     # env steps of all seeds per second of training
    compile_s: float
    env_steps: int              # per seed
    device: str = ""


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


def rounded_steps(steps: int, eval_frequency: int | None = None) -> int:
    """Env steps per seed that training runs for a budget: up to whole windows (of the
    default window, :func:`default_eval_frequency`, unless given)."""
    eval_frequency = eval_frequency or default_eval_frequency()
    return math.ceil(steps / eval_frequency) * eval_frequency


def variant_is_speed_neutral(variant_dir: Path, variant: str, also: tuple[str, ...] = ()) -> bool:
    """True for ``base``, or a variant whose overrides (``variant.yaml``) are all speed-neutral
    (or in ``also``)."""
    if variant == "base":
        return True
    try:
        overrides = yaml.safe_load((variant_dir / results_contract.VARIANT).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(overrides, dict) and all(str(k) in SPEED_NEUTRAL + also for k in overrides)


def collect_processes(results: Path, experiments: Iterable[str] | None = None,
                      also_neutral: tuple[str, ...] = (), any_variant: bool = False) -> tuple[list[Process], dict]:
    """Timings of every measured training process under ``results``, and what was skipped
    (``any_variant``: every variant counts, as in a calibration of a sweep's own jobs)."""
    skipped = defaultdict(int)
    seen: dict[tuple, Process] = {}
    names = list(experiments) if experiments else results_contract.experiments(results)
    for name in names:
        for run in results_contract.iter_runs(results, name):
            env, bonus, variant = run.env, run.bonus, run.variant
            if not (run.path / results_contract.SUMMARY).exists():
                continue
            summary, problem = results_contract.read_summary(run.path)
            if problem:
                skipped["unreadable summary.json"] += 1
                continue
            if results_contract.incomplete_reason(run.path, summary):
                skipped["not complete"] += 1
                continue
            if not any_variant and not variant_is_speed_neutral(run.path.parent, variant, also_neutral):
                skipped["other variants (hyperparameters that change the speed)"] += 1
                continue
            if summary.get("resumed_from_windows"):
                skipped["resumed runs"] += 1
                continue
            try:
                process = Process(
                    experiment=name, env=env, bonus=bonus, variant=variant, host=str(summary.get("host") or "unknown"),
                    seeds=int(summary.get("num_seeds_in_process") or 1),
                    steps_per_second=float(summary["env_steps_per_second"]),
                    compile_s=float(summary.get("compile_time_s") or 0.0), env_steps=int(summary.get("env_steps") or 0),
                    device=str(summary.get("device") or ""))
            except (KeyError, TypeError, ValueError):
                skipped["summaries without env_steps_per_second"] += 1
                continue
            if not (process.steps_per_second > 0 and math.isfinite(process.steps_per_second)):
                skipped["summaries without env_steps_per_second"] += 1
                continue
            # The seeds of one process report the same timings: count the process once.
            key = (name, env, bonus, variant, process.host, process.seeds, round(process.steps_per_second, 6),
                   round(process.compile_s, 6), summary.get("wall_time_s"))
            seen.setdefault(key, process)
    return list(seen.values()), dict(skipped)


def estimate_pair(processes: list[Process], seeds: int, steps_per_seed: int) -> PairEstimate:
    """The cheapest measured job shape for one env x bonus on one host."""
    by_size: dict[int, list[Process]] = defaultdict(list)
    for p in processes:
        by_size[p.seeds].append(p)
    best = None
    for size, group in sorted(by_size.items()):
        sps = statistics.median(p.steps_per_second for p in group)
        compile_s = statistics.median(p.compile_s for p in group)
        job_s = compile_s + size * steps_per_seed / sps
        jobs = math.ceil(seeds / size)
        candidate = PairEstimate(group[0].env, group[0].bonus, size, len(group), sps, compile_s, jobs,
                                 job_s / 3600, jobs * job_s / 3600, tuple(sorted({p.experiment for p in group})))
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
                  "| env | bonus | S (seeds per job) | processes | env steps/s (all S seeds) | compile (s) | "
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


THROUGHPUT_TABLE = Path(__file__).resolve().parents[2] / "benchmarks" / "throughput.csv"


@dataclass(frozen=True)
class Rate:
    """Measured (or extrapolated) speed of one env x bonus at S vmapped seeds on one device."""

    steps_per_second: float     # all S seeds together
    compile_s: float
    seeds: int
    source: str                 # where the number comes from, said in the output


@dataclass(frozen=True)
class JobCost:
    job: tuple[str, ...]
    env: str
    bonus: str
    seeds: int
    steps_per_seed: int
    rate: Rate | None
    hours: float                # nan when nothing measured


def read_throughput_table(path: Path = THROUGHPUT_TABLE) -> list[dict]:
    """Rows of ``benchmarks/throughput.csv`` (device, env, bonus, seeds, env_steps_per_second,
    compile_s, source)."""
    import csv

    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    for r in rows:
        r["seeds"] = int(r["seeds"])
        r["env_steps_per_second"] = float(r["env_steps_per_second"])
        r["compile_s"] = float(r["compile_s"])
    return rows


def _closest_seeds(rows: list[dict], seeds: int) -> dict | None:
    """The row whose seed count is nearest ``seeds`` (ties: the larger one, then the row added
    last, so a newer measurement of the same thing wins)."""
    if not rows:
        return None
    return min(enumerate(rows), key=lambda ir: (abs(math.log(ir[1]["seeds"] / seeds)), -ir[1]["seeds"], -ir[0]))[1]


def suite(env: str) -> str:
    """The family whose speed an unmeasured env shares: sparse Brax, MinAtar, PointMaze, classic."""
    for prefix in ("sparse_", "minatar_", "pointmaze_"):
        if env.startswith(prefix):
            return prefix.rstrip("_")
    return "classic"


def _per_seed(row: dict) -> float:
    return row["env_steps_per_second"] / row["seeds"]


def table_rate(rows: list[dict], device: str, env: str, bonus: str, seeds: int, _cross: bool = True) -> Rate | None:
    """Speed of ``env x bonus`` at ``seeds`` seeds from the table, in this order:

    1. measured on ``device`` at the nearest seed count (per-seed speed held constant when the
       seed counts differ);
    2. *extrapolated*: the env's plain-PPO speed on ``device`` times the bonus's slowdown
       measured on the device's other envs (median over them);
    3. *extrapolated from another device*: the env x bonus speed on a device that measured it,
       times the median speed ratio of the two devices for this bonus over envs both measured;
    4. *guessed*: the bonus's median per-seed speed over the device's envs of the same family
       (sparse Brax, MinAtar, PointMaze, classic control).

    None when nothing applies (the job is then reported as not measured)."""
    mine = [r for r in rows if r["device"] == device]
    hit = _closest_seeds([r for r in mine if r["env"] == env and r["bonus"] == bonus], seeds)
    if hit is not None:
        sps = hit["env_steps_per_second"] * (seeds / hit["seeds"] if hit["seeds"] != seeds else 1.0)
        note = "" if hit["seeds"] == seeds else f" (measured at {hit['seeds']} seeds, scaled per seed)"
        return Rate(sps, hit["compile_s"], seeds, f"{device} table: {hit['source']}{note}")
    base = _closest_seeds([r for r in mine if r["env"] == env and r["bonus"] == "none"], seeds)
    if base is not None:
        ratios = []
        for other in sorted({r["env"] for r in mine if r["env"] != env}):
            b = _closest_seeds([r for r in mine if r["env"] == other and r["bonus"] == bonus], seeds)
            n = _closest_seeds([r for r in mine if r["env"] == other and r["bonus"] == "none"], seeds)
            if b is not None and n is not None:
                ratios.append(_per_seed(b) / _per_seed(n))
        if ratios:
            ratio = statistics.median(ratios)
            return Rate(_per_seed(base) * seeds * ratio, base["compile_s"], seeds,
                        f"{device} table, extrapolated: {env} PPO x {bonus}/PPO speed ratio {ratio:.2f} "
                        f"(median over {len(ratios)} other env(s))")
    if _cross:
        for other_device in sorted({r["device"] for r in rows} - {device}):
            there = table_rate(rows, other_device, env, bonus, seeds, _cross=False)
            if there is None or "guessed" in there.source:
                continue
            ratios = []
            for e in sorted({r["env"] for r in mine}):
                a = _closest_seeds([r for r in mine if r["env"] == e and r["bonus"] == bonus], seeds)
                b = _closest_seeds([r for r in rows if r["device"] == other_device and r["env"] == e
                                    and r["bonus"] == bonus], seeds)
                if a is not None and b is not None:
                    ratios.append(_per_seed(a) / _per_seed(b))
            if ratios:
                ratio = statistics.median(ratios)
                return Rate(there.steps_per_second * ratio, there.compile_s, seeds,
                            f"{device} table, extrapolated from {other_device}: {env} {bonus} there x "
                            f"{device}/{other_device} speed ratio {ratio:.1f} (median over {len(ratios)} env(s))")
    family = [r for r in (_closest_seeds([r for r in mine if r["env"] == e and r["bonus"] == bonus], seeds)
                          for e in sorted({r["env"] for r in mine if suite(r["env"]) == suite(env)})) if r is not None]
    if not family:
        return None
    return Rate(statistics.median(_per_seed(r) for r in family) * seeds,
                statistics.median(r["compile_s"] for r in family), seeds,
                f"{device} table, guessed: {env} never measured; {bonus}'s median speed over {len(family)} "
                f"measured {suite(env)} env(s)")


def measured_rate(processes: list[Process], host: str, env: str, bonus: str, seeds: int) -> Rate | None:
    """Median speed of complete runs of env x bonus with the same seeds per job on ``host``."""
    group = [p for p in processes if p.host == host and p.env == env and p.bonus == bonus and p.seeds == seeds]
    if not group:
        return None
    return Rate(statistics.median(p.steps_per_second for p in group), statistics.median(p.compile_s for p in group),
                seeds, f"measured here: {len(group)} process(es) of {', '.join(sorted({p.experiment for p in group}))}")


def sweep_jobs(preset: str, overrides: list[str], gpu: bool = False) -> list[tuple[tuple[str, ...], dict]]:
    """Every job of ``launch.py -m sweep=PRESET OVERRIDES``, composed (``(job, config dict)``),
    grouped as on a GPU machine when ``gpu`` whatever this one has; raises ``PreflightError``
    (from rfig_exp.preflight) with the errors of a bad command line."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from rfig_exp.preflight import CONF_DIR, expand_jobs

    # The sweep's seed grouping decides its jobs, and it differs on a GPU (rfig_exp.grouping).
    jobs = expand_jobs([f"sweep={preset}", *overrides, *(["hydra.launcher.gpus_per_node=1"] if gpu else [])],
                       multirun=True)
    out = []
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        for job in jobs:
            cfg = compose("config", overrides=[o for o in job if not o.lstrip("+~").startswith("hydra")])
            out.append((tuple(job), OmegaConf.to_container(cfg, resolve=False)))
    return out


# A job whose program compiled before (same env, bonus, seeds and static shapes) loads it from the
# persistent compilation cache: measured in the reproduction's sensitivity sweeps, 0.9-3.4 s
# against 20-40 s cold, so a tenth of the cold compile time.
WARM_COMPILE_FRACTION = 0.1


def _shape_key(cfg: dict) -> tuple:
    """What decides the compiled program's shapes (numeric hyperparameters are its arguments)."""
    agent, bonus = cfg["agent"], cfg["bonus"]
    static = {k: v for k, v in bonus.items()
              if k in ("num_features", "rho", "hidden", "embedding_dim", "code_dim", "hash_bits", "table_sizes",
                       "update_proportion", "num_samples", "quad_blocks", "inverse", "lengthscale_method")}
    return (cfg["env"]["name"], str(sorted(cfg["env"].items())), bonus["name"], str(sorted(static.items())),
            int(cfg["num_seeds"]), agent["num_envs"], agent["num_steps"], agent["num_minibatches"],
            agent["update_epochs"], str(agent["hidden"]), int(cfg["eval_frequency"]))


def cost_jobs(jobs, processes: list[Process], host: str, table: list[dict], device: str,
              compiled: set | None = None) -> list[JobCost]:
    """Hours of each job: compile (a tenth of it when an earlier job compiled the same program:
    ``compiled`` carries what has been compiled across calls) plus seeds x steps / speed."""
    compiled = set() if compiled is None else compiled
    costs = []
    for job, cfg in jobs:
        env, bonus = cfg["env"]["name"], cfg["bonus"]["name"]
        seeds = int(cfg["num_seeds"])
        steps = rounded_steps(int(cfg["agent"]["total_timesteps"]), int(cfg["eval_frequency"]))
        rate = measured_rate(processes, host, env, bonus, seeds) or table_rate(table, device, env, bonus, seeds)
        key = _shape_key(cfg)
        warm = WARM_COMPILE_FRACTION if key in compiled else 1.0
        compiled.add(key)
        hours = (warm * rate.compile_s + seeds * steps / rate.steps_per_second) / 3600 if rate else float("nan")
        costs.append(JobCost(job, env, bonus, seeds, steps, rate, hours))
    return costs


def wall_hours(hours: list[float], slots: int) -> float:
    """Wall time of independent jobs on ``slots`` parallel slots, longest job first (LPT)."""
    lanes = [0.0] * max(1, slots)
    for h in sorted(hours, reverse=True):
        lanes[lanes.index(min(lanes))] += h
    return max(lanes)


def format_sweep_report(preset: str, overrides: list[str], costs: list[JobCost], device: str, slots: int,
                        host: str) -> str:
    head = f"python launch.py -m sweep={preset}" + "".join(f" {o}" for o in overrides)
    lines = [f"# Cost of `{head}` on {device} ({len(costs)} jobs; measured rates from host {host} first)", "",
             "| job | seeds | env steps per seed | env steps/s (all seeds) | compile (s) | minutes | source |",
             "|---|---|---|---|---|---|---|"]
    for c in costs:
        shown = " ".join(o for o in c.job if not o.startswith("sweep="))
        if c.rate is None:
            lines.append(f"| {shown} | {c.seeds} | {c.steps_per_seed:,} | not measured | | | |")
            continue
        lines.append(f"| {shown} | {c.seeds} | {c.steps_per_seed:,} | {c.rate.steps_per_second:,.0f} | "
                     f"{c.rate.compile_s:.0f} | {c.hours * 60:.1f} | {c.rate.source} |")
    known = [c.hours for c in costs if c.rate is not None]
    unknown = len(costs) - len(known)
    total = sum(known)
    lines += ["", f"Total: {total:.2f} job-hours on one slot; wall time on {slots} slot(s): "
              f"{wall_hours(known, slots):.2f} h (jobs spread longest first)."]
    if unknown:
        lines.append(f"Not measured on {device}: {unknown} job(s), left out of the totals.")
    return "\n".join(lines)


def _names(text: str | None, default: tuple[str, ...]) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()] if text else list(default)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rfig_exp.estimate", description=__doc__.split("\n\n")[0])
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
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="with --sweep: a command-line override of the sweep (repeatable)")
    parser.add_argument("--device", default="cpu",
                        help="with --sweep: the device rows of benchmarks/throughput.csv to use (cpu, h100)")
    parser.add_argument("--slots", type=int, default=1,
                        help="with --sweep: jobs run at once (cores used one per job, GPUs, or SLURM nodes)")
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
    if args.sweep is not None:
        return _main_sweep(args, results)
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


def record_rows(results: Path, experiments: list[str], device: str, source: str,
                path: Path = THROUGHPUT_TABLE, any_variant: bool = False) -> list[dict]:
    """Add the median speed of every env x bonus x seeds-per-job measured under ``results``
    (base variants, or a Brax backend) to the throughput table, replacing earlier rows of the
    same device, env, bonus, seeds and source; returns the rows added."""
    import csv

    processes, _ = collect_processes(results, experiments or None, also_neutral=("env.backend",),
                                     any_variant=any_variant)
    groups: dict[tuple, list[Process]] = defaultdict(list)
    for p in processes:
        groups[(p.env, p.bonus, p.seeds)].append(p)
    added = [{"device": device, "env": env, "bonus": bonus, "seeds": seeds,
              "env_steps_per_second": round(statistics.median(p.steps_per_second for p in ps)),
              "compile_s": round(statistics.median(p.compile_s for p in ps), 1),
              "source": f"{source} ({len(ps)} process(es))"} for (env, bonus, seeds), ps in sorted(groups.items())]
    text = path.read_text()
    header = [line for line in text.splitlines(keepends=True) if line.startswith("#")]
    keep = [r for r in read_throughput_table(path)
            if not (r["device"] == device and r["source"].split(" (")[0] == source
                    and (r["env"], r["bonus"], r["seeds"]) in groups)]
    columns = ["device", "env", "bonus", "seeds", "env_steps_per_second", "compile_s", "source"]
    with open(path, "w", newline="") as f:
        f.writelines(header)
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for r in keep + added:
            writer.writerow({k: (f"{r[k]:.10g}" if isinstance(r[k], (int, float)) else r[k]) for k in columns})
    return added


# Overrides of a sweep's job that a calibration run replaces with its own.
_CALIBRATION_REPLACES = ("seed", "agent.total_timesteps", "experiment", "results_dir", "compile_cache", "wandb.mode",
                         "overwrite", "checkpoint.every_seconds", "checkpoint.every_windows")


def missing_pairs(jobs, table: list[dict], device: str) -> list[tuple[tuple[str, ...], dict]]:
    """One job per env x bonus x seeds-per-job of ``jobs`` that has no row of ``device``."""
    have = {(r["env"], r["bonus"], r["seeds"]) for r in table if r["device"] == device}
    out, seen = [], set()
    for job, cfg in jobs:
        key = (cfg["env"]["name"], cfg["bonus"]["name"], int(cfg["num_seeds"]))
        if key not in have and key not in seen:
            seen.add(key)
            out.append((job, cfg))
    return out


def calibrate(jobs, table: list[dict], device: str, windows: int, path: Path = THROUGHPUT_TABLE) -> list[dict]:
    """Measure the pairs the table lacks with short real runs (``launch.py`` in a subprocess,
    the compile cache off so that compile times are cold ones) and record them."""
    import datetime
    import os
    import subprocess
    import tempfile

    todo = missing_pairs(jobs, table, device)
    if not todo:
        print(f"calibrate: every env x bonus x seeds of the sweep has a {device} row already")
        return []
    launch = Path(__file__).resolve().parents[2] / "launch.py"
    source = f"calibrate {datetime.date.today().isoformat()} {windows} window(s), cold compile"
    with tempfile.TemporaryDirectory(prefix="rfig-calibrate-") as tmp:
        for i, (job, cfg) in enumerate(todo, 1):
            keep = [o for o in job if o.split("=", 1)[0].lstrip("+") not in _CALIBRATION_REPLACES]
            # -m: a job of a preset keeps the preset (sweep=NAME) and its settings; one job all the same
            command = [sys.executable, str(launch), "-m", *keep, "seed=0", "experiment=calibrate", f"results_dir={tmp}",
                       f"agent.total_timesteps={windows * int(cfg['eval_frequency'])}", "compile_cache=null",
                       "wandb.mode=disabled", "checkpoint.every_seconds=null", "checkpoint.every_windows=null"]
            name = f"{cfg['env']['name']} {cfg['bonus']['name']} {cfg['num_seeds']} seed(s)"
            print(f"calibrate {i}/{len(todo)}: {name} ...", flush=True)
            t0 = time.perf_counter()
            out = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, WANDB_MODE="disabled"))
            tail = (out.stderr or out.stdout).strip().splitlines()[-1:] if out.returncode else []
            print(f"calibrate {i}/{len(todo)}: {name}: {time.perf_counter() - t0:.0f} s"
                  + (f", failed (exit {out.returncode}): {tail[0] if tail else ''}" if out.returncode else ""),
                  flush=True)
        added = record_rows(Path(tmp), ["calibrate"], device, source, path, any_variant=True) if (Path(tmp) / "calibrate").is_dir() else []
    print(f"calibrate: {len(added)} row(s) recorded in {path.name}")
    return added


def _main_sweep(args, results: Path) -> int:
    import socket

    from rfig_exp.preflight import PreflightError

    if args.slots < 1:
        print(f"error: --slots={args.slots} must be >= 1", file=sys.stderr)
        return 2
    table = read_throughput_table()
    devices = sorted({r["device"] for r in table})
    if args.device not in devices:
        print(f"error: --device={args.device} has no rows in {THROUGHPUT_TABLE.name}; valid: {', '.join(devices)}",
              file=sys.stderr)
        return 2
    try:
        jobs = sweep_jobs(args.sweep, args.override, gpu=args.device != "cpu")
    except PreflightError as err:
        for line in err.lines:
            print(f"error: {line}", file=sys.stderr)
        return 2
    if args.calibrate:
        if args.windows < 1:
            print(f"error: --windows={args.windows} must be >= 1", file=sys.stderr)
            return 2
        calibrate(jobs, table, args.device, args.windows)
        table = read_throughput_table()
    processes, _ = collect_processes(results) if results.is_dir() else ([], {})
    host = socket.gethostname()
    costs = cost_jobs(jobs, processes if args.device == "cpu" else [], host, table, args.device)
    print(format_sweep_report(args.sweep, args.override, costs, args.device, args.slots, host))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measured speeds for ``python -m campaign.estimate``: the timings of complete runs under a
results folder (:func:`collect_processes`, through the results contract) and the committed table
of measured throughput ``benchmarks/throughput.csv`` (:func:`table_rate`, :func:`record_rows`).
Nothing here imports JAX."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import yaml

from rfig_exp.results import contract as results_contract

SPEED_NEUTRAL = ("agent.total_timesteps", "eval_frequency")
# Env options that change the cost of a step: a Brax physics backend (spring is 1.6-2.6x faster
# than generalized on a CPU), DeepSea's size (N x N observations). A speed is kept per *task*, the
# env with these options (:func:`task_key`).
SPEED_ENV_OPTIONS = ("backend", "size")


def task_key(env: str, options: dict | None = None) -> str:
    """``sparse_ant`` + ``{"backend": "spring"}`` -> ``sparse_ant[backend=spring]``; an env with
    none of :data:`SPEED_ENV_OPTIONS` is its name alone."""
    options = options or {}
    opts = [f"{k}={options[k]}" for k in SPEED_ENV_OPTIONS if options.get(k) is not None]
    return f"{env}[{','.join(opts)}]" if opts else env


def base_env(task: str) -> str:
    """The env of a task key (``deepsea[size=30]`` -> ``deepsea``)."""
    return task.split("[", 1)[0]


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
            options = ((results_contract.read_config(run.path) or {}).get("env") or {})
            if not any_variant and not variant_is_speed_neutral(run.path.parent, variant, also_neutral + tuple(
                    f"env.{k}" for k in SPEED_ENV_OPTIONS)):
                skipped["other variants (hyperparameters that change the speed)"] += 1
                continue
            assert summary is not None  # read without a problem
            if summary.resumed_from_windows:
                skipped["resumed runs"] += 1
                continue
            sps = summary.env_steps_per_second
            if sps is None or not (sps > 0 and math.isfinite(sps)):
                skipped["summaries without env_steps_per_second"] += 1
                continue
            process = Process(
                experiment=name, env=task_key(env, options), bonus=bonus, variant=variant,
                host=summary.host or "unknown",
                seeds=summary.num_seeds_in_process or 1, steps_per_second=sps,
                compile_s=summary.compile_time_s or 0.0, env_steps=summary.env_steps or 0,
                device=summary.device or "")
            # The seeds of one process report the same timings: count the process once.
            key = (name, env, bonus, variant, process.host, process.seeds, round(process.steps_per_second, 6),
                   round(process.compile_s, 6), summary.wall_time_s)
            seen.setdefault(key, process)
    return list(seen.values()), dict(skipped)


THROUGHPUT_TABLE = Path(__file__).resolve().parents[1] / "benchmarks" / "throughput.csv"


@dataclass(frozen=True)
class Rate:
    """Measured (or extrapolated) speed of one env x bonus at S vmapped seeds on one device."""

    steps_per_second: float     # all S seeds together
    compile_s: float
    seeds: int
    source: str                 # where the number comes from, said in the output
    kind: str = "measured"      # measured | measured here | extrapolated | extrapolated from another device | guessed


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


def seed_scaling(rows: list[dict], device: str) -> float:
    """How a process's throughput grows with its vmapped seeds on ``device``, as the exponent
    ``a`` of ``steps/s(S) ~ S^a``: the median over every env x bonus the table measured at two
    seed counts or more (smallest against largest). A CPU is compute-bound (a = 0.0-0.3 measured:
    8 vmapped seeds train little faster than 1), a GPU is not (a = 0.9-1.0). 1.0 (per-seed
    speed held) when the device has no such pair."""
    by: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if r["device"] == device:
            by[(r["env"], r["bonus"])].append(r)
    exps = []
    for group in by.values():
        lo, hi = min(group, key=lambda r: r["seeds"]), max(group, key=lambda r: r["seeds"])
        if hi["seeds"] > lo["seeds"]:
            exps.append(math.log(hi["env_steps_per_second"] / lo["env_steps_per_second"])
                        / math.log(hi["seeds"] / lo["seeds"]))
    return statistics.median(exps) if exps else 1.0


def _same_task_or_env(mine: list[dict], env: str, bonus: str, seeds: int) -> tuple[dict | None, str]:
    """The row of exactly this task, else one of the same env with other options (a note says so)."""
    hit = _closest_seeds([r for r in mine if r["env"] == env and r["bonus"] == bonus], seeds)
    if hit is not None:
        return hit, ""
    others = [r for r in mine if base_env(r["env"]) == base_env(env) and r["bonus"] == bonus]
    plain = [r for r in others if r["env"] == base_env(env)]
    hit = _closest_seeds(plain or others, seeds)
    return hit, (f" (measured as {hit['env']}: other env options)" if hit is not None else "")


def table_rate(rows: list[dict], device: str, env: str, bonus: str, seeds: int, _cross: bool = True) -> Rate | None:
    """Speed of ``env x bonus`` at ``seeds`` seeds from the table (``env``: a task key,
    :func:`task_key`), in this order:

    1. measured on ``device`` at the nearest seed count (scaled by the device's measured seed
       scaling, :func:`seed_scaling`, when the seed counts differ); a task measured only with
       other env options (another DeepSea size, another Brax backend) takes that row, said so;
    2. *extrapolated*: the env's plain-PPO speed on ``device`` times the bonus's slowdown
       measured on the device's other envs (median over them);
    3. *extrapolated from another device*: the env x bonus speed on a device that measured it,
       times the median speed ratio of the two devices for this bonus over envs both measured;
    4. *guessed*: the bonus's median per-seed speed over the device's envs of the same family
       (sparse Brax, MinAtar, PointMaze, classic control).

    None when nothing applies (the job is then reported as not measured)."""
    mine = [r for r in rows if r["device"] == device]
    hit, other_options = _same_task_or_env(mine, env, bonus, seeds)
    if hit is not None:
        alpha = seed_scaling(rows, device)
        sps = hit["env_steps_per_second"] * ((seeds / hit["seeds"]) ** alpha if hit["seeds"] != seeds else 1.0)
        note = "" if hit["seeds"] == seeds else (f" (measured at {hit['seeds']} seeds, scaled as seeds^{alpha:.2f}, "
                                                 f"the {device}'s measured seed scaling)")
        return Rate(sps, hit["compile_s"], seeds, f"{device} table: {hit['source']}{note}{other_options}")
    base, other_options = _same_task_or_env(mine, env, "none", seeds)
    if base is not None:
        ratios = []
        for other in sorted({r["env"] for r in mine if base_env(r["env"]) != base_env(env)}):
            b = _closest_seeds([r for r in mine if r["env"] == other and r["bonus"] == bonus], seeds)
            n = _closest_seeds([r for r in mine if r["env"] == other and r["bonus"] == "none"], seeds)
            if b is not None and n is not None:
                ratios.append(_per_seed(b) / _per_seed(n))
        if ratios:
            ratio = statistics.median(ratios)
            return Rate(_per_seed(base) * seeds * ratio, base["compile_s"], seeds,
                        f"{device} table, extrapolated: {env} PPO x {bonus}/PPO speed ratio {ratio:.2f} "
                        f"(median over {len(ratios)} other env(s)){other_options}", "extrapolated")
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
                            f"{device}/{other_device} speed ratio {ratio:.1f} (median over {len(ratios)} env(s))",
                            "extrapolated from another device")
    family = [r for r in (_closest_seeds([r for r in mine if r["env"] == e and r["bonus"] == bonus], seeds)
                          for e in sorted({r["env"] for r in mine if suite(r["env"]) == suite(env)})) if r is not None]
    if not family:
        return None
    return Rate(statistics.median(_per_seed(r) for r in family) * seeds,
                statistics.median(r["compile_s"] for r in family), seeds,
                f"{device} table, guessed: {env} never measured; {bonus}'s median speed over {len(family)} "
                f"measured {suite(env)} env(s)", "guessed")


def cold_compile_s(group: list[Process]) -> float:
    """The compile time a new program costs: the slowest of ``group``'s, a cold compile. A process whose
    program was compiled before loads it from the persistent compilation cache (0.9-3.4 s against
    20-40 s cold in the reproduction's sweeps), so the median of a relaunched sweep is a cache hit's."""
    return max(p.compile_s for p in group)


def measured_rate(processes: list[Process], host: str, env: str, bonus: str, seeds: int) -> Rate | None:
    """Median speed of complete runs of env x bonus with the same seeds per job on ``host``."""
    group = [p for p in processes if p.host == host and p.env == env and p.bonus == bonus and p.seeds == seeds]
    if not group:
        return None
    return Rate(statistics.median(p.steps_per_second for p in group), cold_compile_s(group),
                seeds, f"measured here: {len(group)} process(es) of {', '.join(sorted({p.experiment for p in group}))}",
                "measured here")


def record_rows(results: Path, experiments: list[str], device: str, source: str,
                path: Path = THROUGHPUT_TABLE, any_variant: bool = False) -> list[dict]:
    """Add the median speed of every env x bonus x seeds-per-job measured under ``results``
    (base variants, or a Brax backend) to the throughput table, replacing earlier rows of the
    same device, env, bonus, seeds and source; returns the rows added."""
    import csv

    processes, _ = collect_processes(results, experiments or None, any_variant=any_variant)
    groups: dict[tuple, list[Process]] = defaultdict(list)
    for p in processes:
        groups[(p.env, p.bonus, p.seeds)].append(p)
    added = [{"device": device, "env": env, "bonus": bonus, "seeds": seeds,
              "env_steps_per_second": round(statistics.median(p.steps_per_second for p in ps)),
              "compile_s": round(cold_compile_s(ps), 1),
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

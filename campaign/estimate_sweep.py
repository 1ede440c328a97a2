"""A sweep preset for ``python -m campaign.estimate``: its grid read from its YAML without Hydra
(:func:`sweep_grid`: the paper's grid is ``conf/sweep/paper.yaml``; the window is the config's
``eval_frequency``), and the cost of each of its jobs, composed as the launcher would
(:func:`cost_jobs`), measuring first what the throughput table lacks (:func:`calibrate`). A preset
is a user's (``conf/sweep/``) or the campaign's (``campaign/conf/sweep/``, campaign.presets): the
campaign's folder is on the search path of every sweep composed here. Nothing here imports JAX."""

from __future__ import annotations

import math
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from campaign import presets
from campaign.estimate_throughput import (
    THROUGHPUT_TABLE,
    Process,
    Rate,
    collect_processes,
    measured_rate,
    read_throughput_table,
    record_rows,
    table_rate,
    task_key,
)
from rfig_exp.config.folders import CONF_DIR, group_file

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
    """The grid of ``<conf_dir>/sweep/<preset>.yaml`` (else the campaign's preset of that name), its
    unset values from ``<conf_dir>/config.yaml`` and the default agent (read as YAML: no Hydra, no JAX)."""
    def load(path: Path) -> dict:
        return yaml.safe_load(path.read_text()) or {}

    top = load(conf_dir / "config.yaml")
    agent_choice = next(d["agent"] for d in top["defaults"] if isinstance(d, dict) and "agent" in d)
    sweep = load(group_file("sweep", preset, (conf_dir, presets.CONF_DIR)))
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


def rounded_steps(steps: int, eval_frequency: int | None = None) -> int:
    """Env steps per seed that training runs for a budget: up to whole windows (of the
    default window, :func:`default_eval_frequency`, unless given)."""
    eval_frequency = eval_frequency or default_eval_frequency()
    return math.ceil(steps / eval_frequency) * eval_frequency


@dataclass(frozen=True)
class JobCost:
    job: tuple[str, ...]
    env: str
    bonus: str
    seeds: int
    steps_per_seed: int
    rate: Rate | None
    hours: float                # nan when nothing measured


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def launch_plan(preset: str | None, overrides: list[str], gpu: bool = False, say=_to_stderr):
    """The plan of ``launch.py -m sweep=PRESET OVERRIDES`` (``launch.py -m OVERRIDES`` when ``preset``
    is None: one's own command line), as launch.py makes it (``rfig_exp.launch.preflight.plan_launch``:
    nothing written, no env made), grouped and stacked as on a GPU machine when ``gpu`` whatever this
    one has; ``say`` gets its console lines (stderr: stdout is the report; None: unsaid). Raises ``PreflightError``
    with the errors of a bad command line."""
    from rfig_exp.launch.preflight import plan_launch

    # the campaign's presets, and the user's folders
    line = presets.with_searchpath([*([f"sweep={preset}"] if preset else []), *overrides])
    if say is None:
        return plan_launch(line, multirun=True, gpu=gpu, make_envs=False)
    return plan_launch(line, multirun=True, gpu=gpu, make_envs=False, say=say)


def sweep_jobs(plan) -> list[tuple[tuple[str, ...], dict]]:
    """Every job of ``plan`` (a :func:`launch_plan`) as the sweep expanded it, before stacking (each
    compiled job's parts in turn): its overrides and its config as each of its runs saves it
    (``num_seeds`` its seeds)."""
    return [(part.overrides, part.spec.resolved_config) for job in plan.jobs for part in job.parts]


def stack_jobs(plan) -> list[tuple[tuple[str, ...], dict]]:
    """The compiled jobs of ``plan`` (``rfig_exp.launch.stacking``: one program, different traced
    settings stacked): each one job whose ``num_seeds`` is its members, named by its first job's
    overrides (and how many settings it stacks)."""
    out = []
    for compiled in plan.jobs:
        more = len(compiled.parts) - 1
        job = compiled.parts[0].overrides
        out.append(((*job, f"(+{more} settings stacked)") if more else job,
                    {**compiled.first.resolved_config, "num_seeds": compiled.members}))
    return out


# A job whose program compiled before (the same program key and members: _program) loads it from the
# persistent compilation cache: measured in the reproduction's sensitivity sweeps, 0.9-3.4 s
# against 20-40 s cold, so a tenth of the cold compile time.
WARM_COMPILE_FRACTION = 0.1


def _program(cfg: dict) -> tuple[str, int]:
    """What decides a job's compiled program: its run spec's ``rfig_exp.spec.stack.program_key`` (the
    launcher's own, by which it stacks jobs) and its member count, which the key leaves out (the
    vmapped seeds are the program's leading axis)."""
    from omegaconf import OmegaConf

    from rfig_exp.spec.run_spec import build_run_spec
    from rfig_exp.spec.stack import program_key

    spec = build_run_spec(OmegaConf.create(cfg))
    return program_key(spec), len(spec.seeds)


def cost_jobs(jobs, processes: list[Process], host: str, table: list[dict], device: str,
              compiled: set | None = None) -> list[JobCost]:
    """Hours of each job: compile (a tenth of it when an earlier job compiled the same program:
    ``compiled`` carries what has been compiled across calls) plus seeds x steps / speed."""
    compiled = set() if compiled is None else compiled
    costs = []
    for job, cfg in jobs:
        env, bonus = task_key(cfg["env"]["name"], cfg["env"]), cfg["bonus"]["name"]
        seeds = int(cfg["num_seeds"])
        steps = rounded_steps(int(cfg["agent"]["total_timesteps"]), int(cfg["eval_frequency"]))
        rate = measured_rate(processes, host, env, bonus, seeds) or table_rate(table, device, env, bonus, seeds)
        key = _program(cfg)
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


def format_sweep_report(preset: str | None, overrides: list[str], costs: list[JobCost], device: str, slots: int,
                        host: str, job_rows: bool = False) -> str:
    """The totals, then one row per env (its jobs, job-hours and how their speeds were found), then,
    with ``job_rows``, one row per job with its source."""
    search = f"{shlex.quote(presets.SEARCHPATH)} " if preset in presets.preset_names() else ""  # as it runs
    head = f"python launch.py -m {search}" + " ".join([*([f"sweep={preset}"] if preset else []),
                                                      *(shlex.quote(o) for o in overrides)])
    known = [c.hours for c in costs if c.rate is not None]
    unknown = len(costs) - len(known)
    total = sum(known)
    runs, most = sum(c.seeds for c in costs), max((c.seeds for c in costs), default=0)
    lines = [f"# Cost of `{head}` on {device} ({len(costs)} compiled jobs, {runs} runs, up to {most} per job; "
             f"measured rates from host {host} first)", "",
             f"Total: {total:.2f} job-hours on one slot; wall time on {slots} slot(s): "
             f"{wall_hours(known, slots):.2f} h (jobs spread longest first)."]
    if unknown:
        lines.append(f"Not measured on {device}: {unknown} job(s), left out of the totals.")
    lines += ["", "| env | jobs | seeds | job-hours | share | speeds |", "|---|---|---|---|---|---|"]
    for env, group in _by_env(costs).items():
        hours = sum(c.hours for c in group if c.rate is not None)
        kinds: dict[str, int] = {}
        for c in group:
            kind = c.rate.kind if c.rate is not None else "not measured"
            kinds[kind] = kinds.get(kind, 0) + 1
        share = f"{100 * hours / total:.0f}%" if total > 0 else "-"
        lines.append(f"| {env} | {len(group)} | {sum(c.seeds for c in group)} | {hours:.2f} | {share} | "
                     + ", ".join(f"{n} {kind}" for kind, n in kinds.items()) + " |")
    if not job_rows:
        lines += ["", "Each job with the source of its speed: --jobs (make estimate ... JOBS=1)."]
        return "\n".join(lines)
    lines += ["", "| job | seeds | env steps per seed | env steps/s (all seeds) | compile, cold (s) | minutes "
                  "| source |", "|---|---|---|---|---|---|---|"]
    for c in costs:
        shown = " ".join(o for o in c.job if not o.startswith("sweep="))
        if c.rate is None:
            lines.append(f"| {shown} | {c.seeds} | {c.steps_per_seed:,} | not measured | | | |")
            continue
        lines.append(f"| {shown} | {c.seeds} | {c.steps_per_seed:,} | {c.rate.steps_per_second:,.0f} | "
                     f"{c.rate.compile_s:.0f} | {c.hours * 60:.1f} | {c.rate.source} |")
    return "\n".join(lines)


def _by_env(costs: list[JobCost]) -> dict[str, list[JobCost]]:
    """The jobs of each env, in the order the sweep first runs each env."""
    out: dict[str, list[JobCost]] = {}
    for c in costs:
        out.setdefault(c.env, []).append(c)
    return out


_CALIBRATION_REPLACES = ("seed", "agent.total_timesteps", "experiment", "results_dir", "compile_cache", "wandb.mode",
                         "overwrite", "checkpoint.every_seconds", "checkpoint.every_windows")


def missing_pairs(jobs, table: list[dict], device: str) -> list[tuple[tuple[str, ...], dict]]:
    """One job per env x bonus x seeds-per-job of ``jobs`` that has no row of ``device``."""
    have = {(r["env"], r["bonus"], r["seeds"]) for r in table if r["device"] == device}
    out, seen = [], set()
    for job, cfg in jobs:
        key = (task_key(cfg["env"]["name"], cfg["env"]), cfg["bonus"]["name"], int(cfg["num_seeds"]))
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
    launch = Path(__file__).resolve().parents[1] / "launch.py"
    source = f"calibrate {datetime.date.today().isoformat()} {windows} window(s), cold compile"
    with tempfile.TemporaryDirectory(prefix="rfig-calibrate-") as tmp:
        for i, (job, cfg) in enumerate(todo, 1):
            keep = [o for o in job if o.split("=", 1)[0].lstrip("+") not in _CALIBRATION_REPLACES]
            # -m: a job of a preset keeps the preset (sweep=NAME) and its settings; one job all the same
            command = [sys.executable, str(launch), "-m", *presets.with_searchpath(keep), "seed=0",
                       "experiment=calibrate", f"results_dir={tmp}",
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
        ran = (Path(tmp) / "calibrate").is_dir()
        added = record_rows(Path(tmp), ["calibrate"], device, source, path, any_variant=True) if ran else []
    print(f"calibrate: {len(added)} row(s) recorded in {path.name}")
    return added


def main_sweep(args, results: Path) -> int:
    import socket

    from rfig_exp.launch.preflight import PreflightError

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
        plan = launch_plan(args.sweep, [*args.override, *args.line], gpu=args.device != "cpu")
    except PreflightError as err:
        for line in err.lines:
            print(f"error: {line}", file=sys.stderr)
        return 2
    if args.calibrate:
        if args.windows < 1:
            print(f"error: --windows={args.windows} must be >= 1", file=sys.stderr)
            return 2
        calibrate(sweep_jobs(plan), table, args.device, args.windows)
        table = read_throughput_table()
    processes, _ = collect_processes(results) if results.is_dir() else ([], {})
    host = socket.gethostname()
    compiled = stack_jobs(plan)
    costs = cost_jobs(compiled, processes if args.device == "cpu" else [], host, table, args.device)
    print(format_sweep_report(args.sweep, [*args.override, *args.line], costs, args.device, args.slots, host,
                              job_rows=args.jobs))
    return 0

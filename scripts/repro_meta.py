"""Write ``docs/results/repro/data/meta.json``: how the reproduction's data was made.

    python scripts/repro_meta.py --clone PATH_OF_THE_RUN_CLONE --logs LOGS_DIR

It records the commit the runs used (the clone they ran from), this machine, the commands of
``scripts/repro.sh`` per lane, the first and last timestamps of the lane logs, every reduction
from the paper, and the estimate of each stage made from the committed throughput table alone
(``rfig_exp.estimate``, no measured runs: what ``make estimate`` printed before the runs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from rfig_exp import estimate  # noqa: E402

# The reproduction as it ran (2026-11-26): two lanes of one core each. Each lane started as
# scripts/repro.sh (lane A: `core ...`, lane B: `brax ...`); once DeepSea's cost at 1M steps was
# measured (size 20: 3-6 min per bonus, growing with N^2 inputs) the rest was re-planned so the
# main knob of every bonus came first, and run with the same retry loop over explicit commands.
# `sweep=deepsea_scaling env.size=10` alone fails in Hydra (the sweep's primary config composes
# the default env, which has no `size`; issue 18, item 4): `env=deepsea` on the command line is the
# workaround these commands use.
LANES = {
    "lane A (core 0)": ["sweep=repro",
                        "sweep=sensitivity bonus=rnd bonus.lr=1e-5,1e-4,1e-3",
                        "sweep=sensitivity bonus=vime bonus.lr=1e-5,1e-4,1e-3",
                        "sweep=sensitivity bonus=hashexplo bonus.lr=1e-5,1e-4,1e-3",
                        "sweep=deepsea_scaling env=deepsea env.size=30",
                        "sweep=sensitivity bonus=rnd bonus.update_proportion=0.25,0.5",
                        "sweep=sensitivity bonus=vime bonus.step_size=0.001,0.1",
                        "sweep=sensitivity bonus=hashexplo bonus.hash_bits=16,64"],
    "lane B (core 1)": ["sweep=repro_brax",
                        "sweep=sensitivity bonus=rfig bonus.lengthscale_scale=0.25,0.5,1,2,4",
                        "sweep=sensitivity bonus=rfig bonus.lengthscale_method=valko_fixed_point,participation_ratio",
                        "sweep=sensitivity bonus=rfig bonus.reg=0.1,10",
                        "sweep=sensitivity bonus=rfig bonus.rho=0.03125,0.125",
                        "sweep=sensitivity bonus=rfig bonus.num_features=256,512",
                        "sweep=deepsea_scaling env=deepsea env.size=10",
                        "sweep=sensitivity bonus=rfig bonus.beta=0.25,1"],
}
COMMON = "results_dir=RESULTS wandb.mode=disabled stall_timeout_s=300"


def stage_of(command: str) -> str:
    preset = command.split()[0].split("=", 1)[1]
    return {"repro": "core", "repro_brax": "brax", "deepsea_scaling": "deepsea"}.get(preset, preset)


REDUCTIONS = [
    "8 seeds per env x bonus instead of the paper's 32 (8 vmapped in one process).",
    "7 of the paper's 12 envs (the 4 other MinAtar games and 3 other sparse Brax envs did not fit 2 CPU cores "
    "in one session); DeepSea is not in the paper's figure.",
    "Sparse-HalfCheetah on brax's `spring` backend (2.2x faster than the default `generalized` on CPU, same rewards "
    "and termination rules; the paper names no backend).",
    "Sensitivity at 500k env steps (half the budget), 2 envs (MountainCar, PointMaze-UMaze), one knob at a time.",
    "wandb off (`wandb.mode=disabled`): the CSV files are the record.",
]


def job_is_complete(cfg: dict, results: Path) -> bool:
    """Did every seed of this composed job finish (complete by the results contract)?"""
    from rfig_exp import results as contract
    from rfig_exp import variants

    choices = {g: cfg[g]["name"] for g in variants.GROUPS}
    name = variants.variant_name(variants.variant_overrides(cfg, choices))
    seeds = range(int(cfg["seed"]), int(cfg["seed"]) + int(cfg["num_seeds"]))
    return all(contract.is_complete(contract.run_dir(results, cfg["experiment"], choices["env"], choices["bonus"],
                                                     name, seed)) for seed in seeds)


def stage_minutes(table, results: Path | None = None) -> tuple[dict[str, float], list[str]]:
    """Minutes of every stage on one slot from the table alone (what the estimate says), over
    the jobs that completed under ``results`` (all jobs when None), and the jobs left out."""
    out: dict[str, float] = {}
    missing = []
    compiled: set = set()  # one compilation cache for the whole reproduction, as it ran
    for commands in LANES.values():
        for command in commands:
            preset, *overrides = command.split()
            jobs = estimate.sweep_jobs(preset.split("=", 1)[1], overrides)
            if results is not None:
                missing += [" ".join(j) for j, cfg in jobs if not job_is_complete(cfg, results)]
                jobs = [(j, cfg) for j, cfg in jobs if job_is_complete(cfg, results)]
            costs = estimate.cost_jobs(jobs, [], "", table, "cpu", compiled)
            stage = stage_of(command)
            out[stage] = round(out.get(stage, 0.0) + sum(c.hours for c in costs if c.rate is not None) * 60, 1)
    return out, missing


def log_span(logs: Path) -> tuple[str | None, str | None]:
    stamps = []
    for log in sorted(logs.glob("stream*.log")):
        stamps += re.findall(r"\[repro\] (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)", log.read_text())
    return (min(stamps), max(stamps)) if stamps else (None, None)


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or "unknown CPU")
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} CPU cores ({cpu}), {mem:.0f} GiB memory, no GPU; jax on CPU"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clone", type=Path, required=True, help="the clone the runs used")
    p.add_argument("--logs", type=Path, required=True, help="folder of the lane logs (stream*.log)")
    p.add_argument("--results", type=Path, required=True, help="the results the runs wrote")
    p.add_argument("--out", type=Path, default=ROOT / "docs/results/repro/data/meta.json")
    p.add_argument("--note", action="append", default=[], help="a line for the report (repeatable)")
    args = p.parse_args()
    commit = subprocess.run(["git", "-C", str(args.clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    full = estimate.read_throughput_table()
    table = [r for r in full if not r["source"].startswith("repro")]  # the pre-run rows
    before, missing = stage_minutes(table, args.results)
    after, _ = stage_minutes(full, args.results)
    started, finished = log_span(args.logs)
    wall = None
    if started and finished:
        from datetime import datetime

        span = datetime.fromisoformat(finished.replace("Z", "+00:00")) - datetime.fromisoformat(
            started.replace("Z", "+00:00"))
        wall = f"{span.total_seconds() / 3600:.2f} h for both lanes together (2 cores)"
    meta = {"commit": commit, "machine": machine(), "started": started, "finished": finished, "wall_time": wall,
            "commands": [f"{lane}: " + " ; ".join(f"python launch.py -m {c} {COMMON}" for c in cmds)
                         for lane, cmds in LANES.items()],
            "reductions": REDUCTIONS, "estimate_before_minutes": before,
            "estimate_after_minutes": after if len(full) > len(table) else None,
            "not_run": missing,
            "estimate_note": ("Each estimate is the sum of the costs of the stage's jobs that completed, on one "
                              "slot; each lane ran on one core while the other lane ran on the other, and other "
                              "work (tests, development) shared the machine for most of the time."),
            "notes": args.note}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(meta, indent=1) + "\n")
    print(json.dumps(meta, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

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

# The sweeps of each stage, as scripts/repro.sh runs them.
STAGES = {
    "core": [("repro", [])],
    "brax": [("repro_brax", [])],
    "deepsea": [("deepsea_scaling", ["env.size=10,30,40"])],  # size 20 is the core stage's DeepSea
    "sensitivity": [("sensitivity", ["bonus=rfig", "bonus.lengthscale_scale=0.25,0.5,1,2,4"]),
                    ("sensitivity", ["bonus=rfig", "bonus.lengthscale_method=valko_fixed_point,participation_ratio"]),
                    ("sensitivity", ["bonus=rfig", "bonus.reg=0.1,10"]),
                    ("sensitivity", ["bonus=rfig", "bonus.beta=0.25,1"]),
                    ("sensitivity", ["bonus=rfig", "bonus.num_features=256,512"]),
                    ("sensitivity", ["bonus=rfig", "bonus.rho=0.03125,0.125"]),
                    ("sensitivity", ["bonus=rnd", "bonus.lr=1e-5,1e-4,1e-3"]),
                    ("sensitivity", ["bonus=rnd", "bonus.update_proportion=0.25,0.5"]),
                    ("sensitivity", ["bonus=vime", "bonus.lr=1e-5,1e-4,1e-3"]),
                    ("sensitivity", ["bonus=vime", "bonus.step_size=0.001,0.1"]),
                    ("sensitivity", ["bonus=hashexplo", "bonus.lr=1e-5,1e-4,1e-3"]),
                    ("sensitivity", ["bonus=hashexplo", "bonus.hash_bits=16,64"])],
}
LANES = ["taskset -c 0 scripts/repro.sh core deepsea sens-rnd sens-vime sens-hashexplo",
         "taskset -c 1 scripts/repro.sh brax sens-rfig"]
REDUCTIONS = [
    "8 seeds per env x bonus instead of the paper's 32 (8 vmapped in one process).",
    "7 of the paper's 12 envs (the 4 other MinAtar games and 3 other sparse Brax envs did not fit 2 CPU cores "
    "in one session); DeepSea is not in the paper's figure.",
    "Sparse-HalfCheetah on brax's `spring` backend (2.2x faster than the default `generalized` on CPU, same rewards "
    "and termination rules; the paper names no backend).",
    "Sensitivity at 500k env steps (half the budget), 2 envs (MountainCar, PointMaze-UMaze), one knob at a time.",
    "wandb off (`wandb.mode=disabled`): the CSV files are the record.",
]


def stage_minutes(table) -> dict[str, float]:
    out = {}
    for stage, sweeps in STAGES.items():
        hours = 0.0
        for preset, overrides in sweeps:
            costs = estimate.cost_jobs(estimate.sweep_jobs(preset, overrides), [], "", table, "cpu")
            hours += sum(c.hours for c in costs if c.rate is not None)
        out[stage] = round(hours * 60, 1)
    return out


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
    p.add_argument("--out", type=Path, default=ROOT / "docs/results/repro/data/meta.json")
    p.add_argument("--note", action="append", default=[], help="a line for the report (repeatable)")
    args = p.parse_args()
    commit = subprocess.run(["git", "-C", str(args.clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    table = [r for r in estimate.read_throughput_table() if not r["source"].startswith("repro")]  # the pre-run rows
    started, finished = log_span(args.logs)
    wall = None
    if started and finished:
        from datetime import datetime

        span = datetime.fromisoformat(finished.replace("Z", "+00:00")) - datetime.fromisoformat(
            started.replace("Z", "+00:00"))
        wall = f"{span.total_seconds() / 3600:.2f} h for both lanes together (2 cores)"
    meta = {"commit": commit, "machine": machine(), "started": started, "finished": finished, "wall_time": wall,
            "commands": LANES, "reductions": REDUCTIONS, "estimate_before_minutes": stage_minutes(table),
            "estimate_note": ("The estimate is the sum of the stage's job costs on one slot; each lane ran its "
                              "stages on one core while the other lane ran on the other."),
            "notes": args.note}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(meta, indent=1) + "\n")
    print(json.dumps(meta, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

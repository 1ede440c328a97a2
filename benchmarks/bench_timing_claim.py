"""The paper's timing claim, measured under control: RFIG (with its full inverse, as the paper's
final experiments, and with the Woodbury update the campaign ran) against RND, VIME and #Explo.

    python benchmarks/bench_timing_claim.py                      # the report's table (~10 min here)
    python benchmarks/bench_timing_claim.py --envs mountaincar --rounds 3 --out /tmp/timing

Each (env, variant) is compiled once in this process (its compile time is measured then), then
every round runs one warm window of every variant, in a new shuffled order each round, so a slow
spell of the machine falls on all of them alike: the rounds are paired. Per round and variant it
writes the seconds of one window (6 PPO updates of the paper's 32 envs x 128 steps), the cost per
update, and a run's wall time = compile + the paper's 41 windows at that speed. Pin it to one core
(``taskset -c 1``) to measure what one campaign lane sees.

The rows go to ``OUT/timing.csv`` and what made them to ``OUT/timing.json``; the report
(``python -m campaign.repro build``) reads them from the data folder and judges the claim by the
rule book (campaign/claims/verdicts.py).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import rfig_exp  # noqa: E402

rfig_exp.set_cpu_flags()  # before jax is imported

import jax  # noqa: E402
from bench_throughput import build  # noqa: E402

from rfig_exp.run import provenance  # noqa: E402

# variant -> (bonus, overrides): RFIG as the campaign ran it, and with the full inverse every update
VARIANTS = {"none": ("none", []), "rnd": ("rnd", []), "vime": ("vime", []), "hashexplo": ("hashexplo", []),
            "rfig": ("rfig", []), "rfig_exact": ("rfig", ["bonus.inverse=exact"])}
RUN_WINDOWS = 41  # the paper's 1M steps: 41 windows of 24,576 env steps


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", default="mountaincar,minatar_breakout")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"of {', '.join(VARIANTS)}")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--seeds", type=int, default=1, help="vmapped seeds per process")
    p.add_argument("--out", type=Path, default=ROOT / "docs/results/repro/data")
    args = p.parse_args()
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variant(s) {', '.join(unknown)}; valid: {', '.join(VARIANTS)}")
    rows = []
    rng = random.Random(0)
    for env in args.envs.split(","):
        built = {}
        for v in variants:
            bonus, overrides = VARIANTS[v]
            t0 = time.perf_counter()
            window, states, hp, spec = build(env, bonus, args.seeds, overrides)
            states, metrics = window(states, hp)  # the first call after compiling is slower
            jax.block_until_ready(metrics)
            built[v] = [window, states, hp, time.perf_counter() - t0, spec.train.updates_per_window]
            print(f"[timing] {env} {v}: compiled in {built[v][3]:.1f} s", flush=True)
        for r in range(args.rounds):
            order = list(variants)
            rng.shuffle(order)
            for v in order:
                window, states, hp, compile_s, updates = built[v]
                t0 = time.perf_counter()
                states, metrics = window(states, hp)
                jax.block_until_ready(metrics)
                seconds = time.perf_counter() - t0
                built[v][1] = states
                rows.append({"round": r, "env": env, "variant": v, "window_s": f"{seconds:.5f}",
                             "update_s": f"{seconds / updates:.6f}", "compile_s": f"{compile_s:.2f}",
                             "run_s": f"{compile_s + RUN_WINDOWS * seconds:.2f}"})
            print(f"[timing] {env} round {r + 1}/{args.rounds}: "
                  + ", ".join(f"{row['variant']} {float(row['update_s']) * 1e3:.1f} ms/update"
                              for row in rows[-len(order):]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "timing.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    m = provenance.machine()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    pinned = len(__import__("os").sched_getaffinity(0))
    meta = {"command": "python benchmarks/bench_timing_claim.py " + " ".join(sys.argv[1:]),
            "machine": f"{m['cores']} CPU cores ({m['cpu']}), {pinned} of them for this process, jax "
                       f"{jax.__version__} on the CPU",
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "commit": commit, "seeds": args.seeds}
    (args.out / "timing.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"[timing] {len(rows)} rows -> {args.out / 'timing.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

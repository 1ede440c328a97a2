"""Cost of a per-seed checkpoint of the real run state, against the window it protects.

    python benchmarks/bench_checkpoint.py [--envs mountaincar] [--bonuses none,rfig] [--seeds 1,8]

Builds the real trainer (paper defaults), times one training window (6 updates) and the
checkpoint the launcher writes after it (every seed's slice of the RunState, ``np.savez`` +
fsync + rename + checksummed json), and prints both and their ratio (medians of --repeats).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import rfig_exp  # noqa: E402,F401  (XLA CPU flags before jax)
import jax  # noqa: E402
import numpy as np  # noqa: E402

from bench_throughput import build  # noqa: E402
from rfig_exp import checkpoint  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", default="mountaincar")
    p.add_argument("--bonuses", default="none,rfig")
    p.add_argument("--seeds", default="1,8")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    print("| env | bonus | seeds | state MB | window s | checkpoint s | checkpoint / window |")
    print("|---|---|---|---|---|---|---|")
    for env in args.envs.split(","):
        for bonus in args.bonuses.split(","):
            for n in map(int, args.seeds.split(",")):
                run_window, states, hp, _ = build(env, bonus, n, [])
                states, _ = run_window(states, hp)
                jax.block_until_ready(states)
                win, ckpt = [], []
                with tempfile.TemporaryDirectory() as d:
                    for r in range(args.repeats):
                        t0 = time.perf_counter()
                        states, metrics = run_window(states, hp)
                        jax.device_get(metrics)
                        win.append(time.perf_counter() - t0)
                        t0 = time.perf_counter()
                        leaves = jax.device_get(jax.tree.leaves(states))
                        for i in range(n):
                            checkpoint.save(Path(d) / f"seed_{i}", r + 1, [np.asarray(x[i]) for x in leaves], {})
                        ckpt.append(time.perf_counter() - t0)
                    size = sum(np.asarray(x).nbytes for x in leaves) / 2**20
                w, c = statistics.median(win), statistics.median(ckpt)
                print(f"| {env} | {bonus} | {n} | {size:.1f} | {w:.3f} | {c:.4f} | {100 * c / w:.1f}% |", flush=True)


if __name__ == "__main__":
    main()

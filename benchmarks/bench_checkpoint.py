"""Cost of a per-seed checkpoint of the real run state, against the window it protects.

    python benchmarks/bench_checkpoint.py [--envs mountaincar] [--bonuses none,rfig] [--seeds 1,8]

Builds the real trainer (paper defaults), times one training window (6 updates) and the
checkpoint the launcher writes after it (every seed's slice of the RunState, ``np.savez`` +
fsync + rename + checksummed json), and prints both and their ratio (medians of --repeats).

Beside it, two asynchronous ways to save (on a GPU the copy to the host is what a synchronous save
waits for), each split into the part that blocks the training loop and the whole save:

- ours (``checkpoint.BackgroundWriter``): the loop blocks only to dispatch a device copy of
  the state; a background thread brings it to the host and writes the files;
- orbax-checkpoint's ``StandardCheckpointer`` (asynchronous; installed with flax): the loop
  blocks until ``save`` returns, the rest finishes in orbax's threads (``wait_until_finished``).
  It saves the stacked state of all seeds as one pytree (no per-seed folders).
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

import rfig_exp  # noqa: E402

rfig_exp.set_cpu_flags()  # before jax is imported

import jax  # noqa: E402
import numpy as np  # noqa: E402
from bench_throughput import build  # noqa: E402

from rfig_exp.run import checkpoint, observers  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", default="mountaincar")
    p.add_argument("--bonuses", default="none,rfig")
    p.add_argument("--seeds", default="1,8")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    import orbax.checkpoint as ocp

    orbax = ocp.StandardCheckpointer()
    print("| env | bonus | seeds | state MB | window s | checkpoint s | checkpoint / window "
          "| ours: blocks / whole s | orbax async: blocks / whole s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for env in args.envs.split(","):
        for bonus in args.bonuses.split(","):
            for n in map(int, args.seeds.split(",")):
                run_window, states, hp, _ = build(env, bonus, n, [])
                states, _ = run_window(states, hp)
                jax.block_until_ready(states)
                win, ckpt, copy, ob_block, ob_whole = [], [], [], [], []
                with tempfile.TemporaryDirectory() as d:
                    for r in range(args.repeats):
                        t0 = time.perf_counter()
                        states, metrics = run_window(states, hp)
                        jax.device_get(metrics)
                        win.append(time.perf_counter() - t0)
                        t0 = time.perf_counter()
                        snapshot = observers.device_copy(states)  # as the training loop does
                        copy.append(time.perf_counter() - t0)
                        leaves = [np.asarray(x) for x in jax.device_get(snapshot)]  # the writer thread's part
                        for i in range(n):
                            checkpoint.save(Path(d) / f"seed_{i}", r + 1, [x[i] for x in leaves], {})
                        ckpt.append(time.perf_counter() - t0)
                        t0 = time.perf_counter()
                        orbax.save(Path(d) / "orbax" / f"window_{r + 1}", states)
                        ob_block.append(time.perf_counter() - t0)
                        orbax.wait_until_finished()
                        ob_whole.append(time.perf_counter() - t0)
                    size = sum(np.asarray(x).nbytes for x in leaves) / 2**20
                w, c = statistics.median(win), statistics.median(ckpt)
                m = statistics.median
                print(f"| {env} | {bonus} | {n} | {size:.1f} | {w:.3f} | {c:.4f} | {100 * c / w:.1f}% "
                      f"| {m(copy):.4f} / {c:.4f} | {m(ob_block):.4f} / {m(ob_whole):.4f} |", flush=True)


if __name__ == "__main__":
    main()

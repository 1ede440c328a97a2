"""Whole-run wall time at each checkpoint cadence, against checkpoints off.

    python benchmarks/bench_checkpoint_runs.py [--env mountaincar] [--bonus rfig] [--seeds 8]
        [--windows 12] [--rounds 2]

Runs the real launcher path (``run_experiment``, in this process, compile cache warm after the
first run) with the same config and only the cadence changed: ``off`` (no checkpoint),
``default`` (conf/config.yaml: every 300 s, written in the background), ``every5`` (every 5
windows, the cadence before the background writer) and ``every1`` (every window, the worst
case of the background writer); ``--cadences`` picks some. Each round runs the
cadences back to back in a rotated order; it prints every run's wall time and each cadence's
median over rounds divided by the median of ``off`` (the default cadence should cost at most 5%),
and the share of training time the loop spent blocked by checkpoints (host copies and waits
for a previous write; ``checkpoint_wait_s`` in summary.json), which other processes on the
machine disturb far less than the wall-time ratio.
Works on a GPU as is (the runs are short: windows x 24,576 steps per seed).
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

import rfig_exp  # noqa: E402

rfig_exp.set_cpu_flags()  # before jax is imported

CADENCES = {
    "off": ["checkpoint.every_seconds=null", "checkpoint.every_windows=null"],
    "default": [],
    "every5": ["checkpoint.every_seconds=null", "checkpoint.every_windows=5"],  # the old default
    "every1": ["checkpoint.every_windows=1"],
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="mountaincar")
    p.add_argument("--bonus", default="rfig")
    p.add_argument("--seeds", type=int, default=8)
    p.add_argument("--windows", type=int, default=12)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--cadences", default=",".join(CADENCES), help=f"comma-separated, of {', '.join(CADENCES)}")
    args = p.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    cadences = {name: CADENCES[name] for name in ["off", *args.cadences.split(",")]}
    from hydra import compose, initialize_config_dir

    from rfig_exp.run.experiment import run_experiment

    def compose_config(*overrides):
        with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
            return compose(config_name="config", overrides=list(overrides))

    walls: dict[str, list[float]] = {c: [] for c in cadences}
    waits: dict[str, list[float]] = {c: [] for c in cadences}
    with tempfile.TemporaryDirectory() as tmp:
        common = [f"env={args.env}", f"bonus={args.bonus}", f"num_seeds={args.seeds}", "wandb.mode=disabled",
                  f"agent.total_timesteps={args.windows * 24576}", f"results_dir={tmp}", "overwrite=true",
                  f"compile_cache={tmp}/.jax_cache"]
        run_experiment(compose_config(*common, "experiment=warmup", *CADENCES["off"]))  # fill the compile cache
        names = list(cadences)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                t0 = time.perf_counter()
                (summary, *_) = run_experiment(compose_config(*common, f"experiment=r{r}", *cadences[name]))
                walls[name].append(time.perf_counter() - t0)
                waits[name].append(summary["checkpoint_wait_s"] / summary["train_time_s"])
                print(f"round {r} {name:>12}: {walls[name][-1]:.1f} s wall, {summary['train_time_s']:.1f} s training, "
                      f"{summary['checkpoints_written']} checkpoints, training blocked by them "
                      f"{summary['checkpoint_wait_s']:.2f} s", flush=True)
    off = statistics.median(walls["off"])
    print(f"\n{args.env} {args.bonus}, {args.seeds} seeds, {args.windows} windows, median of {args.rounds} rounds:")
    print("| cadence | wall s | / off | training blocked by checkpoints |")
    print("|---|---|---|---|")
    for name in cadences:
        m = statistics.median(walls[name])
        print(f"| {name} | {m:.1f} | {m / off:.3f} | {100 * statistics.median(waits[name]):.2f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The throughput of examples/dqn_bonus.py (a DQN in PureJaxRL's dqn.py shape on Breakout-MinAtar) with
each bonus beside the same DQN without one (``none``), and its intrinsic reward: finite, and varying
over the run.

    python benchmarks/bench_dqn_bonus.py                                 # none, rnd, rfig; 1 seed, 50k steps
    python benchmarks/bench_dqn_bonus.py --bonuses none rfig --timesteps 20000 --rounds 3 --clock cpu

Each bonus at its defaults (``conf/bonus/<name>.yaml``), with the example's DQN settings. Each case is
compiled first (the compile time printed apart), then run ``--rounds`` times: the median run's env
steps per second. ``--clock cpu`` times this process's CPU time instead of elapsed time (less
disturbed by other processes on a shared machine).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import rfig_exp

rfig_exp.set_cpu_flags()  # before jax is imported

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def example():
    """examples/dqn_bonus.py as a module."""
    spec = importlib.util.spec_from_file_location("dqn_bonus_example", ROOT / "examples" / "dqn_bonus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # flax's dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def clock(kind: str) -> float:
    return time.process_time() if kind == "cpu" else time.perf_counter()


def measure(module, bonus: str, config: dict, seeds: int, rounds: int, kind: str) -> dict:
    """One bonus's compile time, median steps/s over ``rounds`` runs, and its scaled intrinsic reward."""
    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
    start = clock(kind)
    compiled = jax.jit(jax.vmap(module.make_train(config, bonus, {}))).lower(keys).compile()
    compile_s = clock(kind) - start
    times = []
    for _ in range(rounds):
        start = clock(kind)
        metrics = jax.block_until_ready(compiled(keys))
        times.append(clock(kind) - start)
    steps = module.num_iterations(config) * config["num_envs"] * seeds
    r_int = np.asarray(metrics["r_int_scaled"])[:, config["warmup_steps"]:]  # after the statistics' warm-up
    return {"bonus": bonus, "seeds": seeds, "env_steps": steps, "compile_s": round(compile_s, 1),
            "run_s": round(statistics.median(times), 2), "steps_per_s": round(steps / statistics.median(times)),
            "r_int_finite": bool(np.isfinite(r_int).all()), "r_int_scaled_mean": float(r_int.mean()),
            "r_int_scaled_std_over_iterations": float(r_int.std()),
            "exact_refreshes": int(np.asarray(metrics["refreshes"]).sum())}  # RFIG's, all seeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bonuses", nargs="+", default=["none", "rnd", "rfig"])
    parser.add_argument("--timesteps", type=int, default=50_000, help="env steps per seed")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    module = example()
    config = {**module.CONFIG, "total_timesteps": args.timesteps}
    rows = [measure(module, bonus, config, args.seeds, args.rounds, args.clock) for bonus in args.bonuses]
    base = next((r["steps_per_s"] for r in rows if r["bonus"] == "none"), None)
    for row in rows:
        if base:
            row["throughput_vs_none"] = round(row["steps_per_s"] / base, 3)
        print(json.dumps(row))


if __name__ == "__main__":
    main()

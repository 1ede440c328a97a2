"""The cost per seed of examples/ppo_bonus.py under PureJaxRL's ``jax.jit(jax.vmap(train))``, at 1
and at S seeds, against one seed without a vmap (``jax.jit(train)``, ``seeds=1 plain``), with RFIG's
refresh as ``IntrinsicReward.step`` does it (``refresh_if_needed``: under vmap one ``lax.cond`` on
whether any seed needs a refresh) and, for comparison, as a plain per-seed
``lax.cond(needs_refresh(state), refresh, identity)`` that the vmap turns into a select running
the exact inverse for every seed on every update (``--refresh naive``).

    python benchmarks/bench_library_vmap.py                                  # 1 and 8 seeds, both ways
    python benchmarks/bench_library_vmap.py --seeds 1 2 --timesteps 49152 --refresh helper

Each case is compiled first (its compile time printed apart), then run ``--rounds`` times; the
median run, per seed. ``--clock cpu`` times this process's CPU time instead of elapsed time (less
disturbed by other processes on a shared machine). RFIG's refresh is rarely due with its defaults (no
exact refresh in a 1M-step MountainCar run, docs/rfig_speed.md), so the helper's way costs about
nothing for it, and the naive way one exact inverse per seed and update.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import rfig_exp

rfig_exp.set_cpu_flags()  # before jax is imported

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from rfig_exp.agents import intrinsic  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def example():
    """examples/ppo_bonus.py as a module."""
    spec = importlib.util.spec_from_file_location("ppo_bonus_example", ROOT / "examples" / "ppo_bonus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # flax's dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def naive_refresh(bonus, state, hp):
    """The refresh as a training loop without the helper writes it, inside the per-seed function."""
    if bonus.refresh is None:
        return state
    return jax.lax.cond(bonus.needs_refresh(state), bonus.refresh, lambda s, h: s, state, hp)


def clock(kind: str) -> float:
    return time.process_time() if kind == "cpu" else time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--refresh", nargs="+", choices=("helper", "naive"), default=["naive", "helper"])
    parser.add_argument("--timesteps", type=int, default=98_304, help="env steps per seed (24 updates)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="as the example's --set")
    args = parser.parse_args()
    ex = example()
    config, overrides = ex.parse_settings([f"total_timesteps={args.timesteps}", *args.set])
    helper = intrinsic.refresh_if_needed
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; RFIG {overrides or 'defaults'}, "
          f"{ex.num_updates(config)} updates of {config['num_envs']} x {config['num_steps']} steps per seed; "
          f"{args.clock} clock")
    for way in args.refresh:
        intrinsic.refresh_if_needed = helper if way == "helper" else naive_refresh
        for seeds in [0, *args.seeds]:  # 0: one seed, no vmap
            keys = jnp.stack([jax.random.PRNGKey(s) for s in range(max(seeds, 1))])
            train = ex.make_train(config, "rfig", overrides)
            if seeds == 0:
                keys = keys[0]
            else:
                train = jax.vmap(train)
            start = clock(args.clock)
            compiled = jax.jit(train).lower(keys).compile()
            compile_s = clock(args.clock) - start
            runs = []
            for _ in range(args.rounds):
                start = clock(args.clock)
                jax.block_until_ready(compiled(keys))
                runs.append(clock(args.clock) - start)
            run_s = statistics.median(runs)
            label = "1 plain" if seeds == 0 else f"{seeds} vmap "
            print(f"refresh={way:6s} seeds={label}: {run_s:7.2f} s a run, {run_s / max(seeds, 1):6.2f} s per seed "
                  f"(runs {', '.join(f'{r:.2f}' for r in runs)}; compile {compile_s:.1f} s)", flush=True)
    intrinsic.refresh_if_needed = helper


if __name__ == "__main__":
    main()

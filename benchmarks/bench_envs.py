"""Random-policy env steps per second of the environments alone (no agent), compile excluded.

    python benchmarks/bench_envs.py                                  # every PointMaze, both dynamics
    python benchmarks/bench_envs.py --envs pointmaze_medium --dynamics pointax --repeats 5
    python benchmarks/bench_envs.py --envs mountaincar,deepsea       # any registered env

Each case vmaps ``--envs-per-seed`` (32) envs over ``--seeds`` (8) seeds, as the agent does,
and steps them ``--steps`` times in one jitted ``lax.scan`` with uniformly random actions.
As in the agent's rollout, the actions and the per-env step keys of a call are drawn up front,
vectorised (inside the timed call). Reported: the median over ``--repeats`` timed calls (after
one warm-up call) of env steps/s summed over all envs, and the compile time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import rfig_exp  # noqa: E402

rfig_exp.set_cpu_flags()  # before jax is imported

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from rfig_exp.envs import BoxSpace, make_env  # noqa: E402

POINTMAZES = ("pointmaze_umaze", "pointmaze_open", "pointmaze_medium", "pointmaze_large", "pointmaze_giant")


def rollout_fn(env, seeds: int, per_seed: int, steps: int):
    """``run(key, states) -> (states, reward_sum)``: ``steps`` random steps of ``seeds x per_seed`` envs."""
    step = jax.vmap(jax.vmap(env.step))
    space = env.action_space

    def run(key, states):
        k_act, k_env = jax.random.split(key)
        if isinstance(space, BoxSpace):
            actions = jax.random.uniform(k_act, (steps, seeds, per_seed, space.dim), minval=space.low,
                                         maxval=space.high)
        else:
            actions = jax.random.randint(k_act, (steps, seeds, per_seed), 0, space.num_actions)
        keys = jax.random.split(k_env, (steps, seeds, per_seed))

        def body(carry, xs):
            states, total = carry
            action, key = xs
            out = step(key, states, action)
            # Consume every output the agent reads, so nothing is dead code.
            total = total + out.reward.sum() + out.final_obs.sum() * 0.0 + out.terminated.sum() + out.truncated.sum()
            if out.cell is not None:
                total = total + out.cell.sum() * 0
            return (out.state, total), None

        (states, total), _ = jax.lax.scan(body, (states, jnp.zeros(())), (actions, keys))
        return states, total

    return run


def measure(env_cfg, seeds: int, per_seed: int, steps: int, repeats: int) -> dict:
    env = make_env(env_cfg)
    t0 = time.perf_counter()
    reset = jax.jit(jax.vmap(jax.vmap(env.reset)))
    states = reset(jax.random.split(jax.random.PRNGKey(0), (seeds, per_seed)))[1]
    run = jax.jit(rollout_fn(env, seeds, per_seed, steps)).lower(jax.random.PRNGKey(0), states).compile()
    compile_s = time.perf_counter() - t0
    states, total = run(jax.random.PRNGKey(1), states)
    jax.block_until_ready(total)
    rates = []
    for r in range(repeats):
        t0 = time.perf_counter()
        states, total = run(jax.random.PRNGKey(2 + r), states)
        jax.block_until_ready(total)
        rates.append(steps * seeds * per_seed / (time.perf_counter() - t0))
    return {"steps_per_s": statistics.median(rates), "min": min(rates), "max": max(rates), "compile_s": compile_s}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default=",".join(POINTMAZES))
    parser.add_argument("--dynamics", default="pointax,mujoco", help="PointMaze dynamics to run (pointmaze envs only)")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--envs-per-seed", type=int, default=32)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    cases = []
    for name in args.envs.split(","):
        if name.startswith("pointmaze"):
            cases += [({"name": name, "dynamics": d}, f"{name} ({d})") for d in args.dynamics.split(",")]
        else:
            cases.append(({"name": name}, name))
    print(f"random policy, {args.seeds} seeds x {args.envs_per_seed} envs vmapped, {args.steps} steps per call, "
          f"median of {args.repeats} calls; jax {jax.__version__} on {jax.devices()[0].platform}")
    print("| env | env steps/s (median) | min - max | compile s |\n|---|---:|---:|---:|")
    for cfg, label in cases:
        r = measure(cfg, args.seeds, args.envs_per_seed, args.steps, args.repeats)
        print(f"| {label} | {r['steps_per_s'] / 1e6:.2f}M | {r['min'] / 1e6:.2f}M - {r['max'] / 1e6:.2f}M | "
              f"{r['compile_s']:.1f} |", flush=True)


if __name__ == "__main__":
    main()

"""Env steps per second on the sparse Brax envs, per physics backend (docs/brax.md).

    python benchmarks/bench_brax.py                                  # sparse_ant, every backend, 1 and 8 seeds
    python benchmarks/bench_brax.py --envs sparse_halfcheetah --backends spring,generalized --seeds 1

Two measurements per (env, backend):

- ``random``: the env alone, ``32`` envs x ``--random-steps`` steps of uniform random actions
  in one jitted ``lax.scan`` (``vmap`` over the envs and over the seeds), auto-reset included;
- ``ppo``: the real training loop (the same approach as ``bench_throughput.py``: the Hydra
  config, paper defaults 32 envs x 128 steps, 4 epochs x 32 minibatches, ``bonus=none``),
  with short windows of ``--updates`` PPO updates: compile, one warm-up window, then
  ``--windows`` timed ones; the median window is reported.

Steps/s are summed over the vmapped seeds; compile time is excluded and reported apart.
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
from bench_throughput import compile_window, time_windows  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from hydra import compose, initialize_config_dir  # noqa: E402

from rfig_exp.bonuses import make_bonus  # noqa: E402
from rfig_exp.envs import make_env  # noqa: E402
from rfig_exp.envs.base import random_actions  # noqa: E402
from rfig_exp.spec.run_spec import build_run_spec  # noqa: E402

NUM_ENVS = 32


def compose_cfg(env_name: str, backend: str, overrides: list[str]):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=[f"env={env_name}", f"env.backend={backend}", "bonus=none",
                                            "wandb.mode=disabled", *overrides])


def measure_random(env_name: str, backend: str, num_seeds: int, steps: int) -> dict:
    env = make_env(compose_cfg(env_name, backend, []).env)

    def one_seed(key):
        k_reset, k_run = jax.random.split(key)
        obs, state = jax.vmap(env.reset)(jax.random.split(k_reset, NUM_ENVS))

        def body(state, k):
            k_act, k_env = jax.random.split(k)
            out = jax.vmap(env.step)(jax.random.split(k_env, NUM_ENVS), state,
                                     random_actions(k_act, env.action_space, NUM_ENVS))
            return out.state, out.reward.sum()

        state, rewards = jax.lax.scan(body, state, jax.random.split(k_run, steps))
        return rewards.sum()

    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(num_seeds)])
    t0 = time.perf_counter()
    run = jax.jit(jax.vmap(one_seed)).lower(keys).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(run(keys))
    t0 = time.perf_counter()
    jax.block_until_ready(run(keys + 1))
    seconds = time.perf_counter() - t0
    return dict(compile_s=compile_s, steps_per_s=num_seeds * NUM_ENVS * steps / seconds)


def measure_ppo(env_name: str, backend: str, num_seeds: int, updates: int, windows: int,
                overrides: list[str]) -> dict:
    cfg = compose_cfg(env_name, backend, overrides)
    batch = int(cfg.agent.num_envs) * int(cfg.agent.num_steps)
    cfg = compose_cfg(env_name, backend, [*overrides, f"eval_frequency={updates * batch}",
                                          f"agent.total_timesteps={(windows + 1) * updates * batch}"])
    spec = build_run_spec(cfg)
    t0 = time.perf_counter()
    env = make_env(cfg.env)
    bonus, bonus_hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    run_window, states, hp = compile_window(cfg, spec, env, bonus, bonus_hp, num_seeds)
    compile_s = time.perf_counter() - t0
    seconds = time_windows(run_window, states, hp, windows)
    steps = spec.train.updates_per_window * spec.train.batch_size * num_seeds
    return dict(compile_s=compile_s, steps_per_s=steps / statistics.median(seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default="sparse_ant")
    parser.add_argument("--backends", default="spring,positional,generalized,mjx")
    parser.add_argument("--seeds", default="1,8", help="vmapped seeds per process, comma-separated")
    parser.add_argument("--modes", default="random,ppo")
    parser.add_argument("--random-steps", type=int, default=200, help="steps per env in the random-policy scan")
    parser.add_argument("--updates", type=int, default=1, help="PPO updates (of 32 x 128 steps) per timed window")
    parser.add_argument("--windows", type=int, default=3,
                        help="timed windows after one warm-up; the median is reported")
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides for the PPO runs")
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; {NUM_ENVS} envs per seed; "
          f"overrides: {args.overrides or 'none'}")
    print(f"{'env':<20} {'backend':<12} {'mode':<7} {'seeds':>5} {'compile s':>9} {'env steps/s':>12}")
    for env_name in args.envs.split(","):
        for backend in args.backends.split(","):
            for mode in args.modes.split(","):
                for seeds in (int(s) for s in args.seeds.split(",")):
                    if mode == "random":
                        r = measure_random(env_name, backend, seeds, args.random_steps)
                    else:
                        r = measure_ppo(env_name, backend, seeds, args.updates, args.windows, args.overrides)
                    print(f"{env_name:<20} {backend:<12} {mode:<7} {seeds:>5} {r['compile_s']:>9.1f} "
                          f"{r['steps_per_s']:>12,.0f}", flush=True)


if __name__ == "__main__":
    main()

"""Env steps per second of the training loop (compile excluded), as quoted in docs/speed.md.

    python benchmarks/bench_throughput.py                       # the table of docs/speed.md
    python benchmarks/bench_throughput.py --envs cartpole --bonuses none --seeds 1 --windows 3

Each case composes the real Hydra config (paper defaults: 32 envs x 128 steps, 4 epochs
x 32 minibatches), compiles one window (6 updates = 24,576 steps per seed), runs one
warm-up window and then ``--windows`` timed ones, and reports, for the median window,
env steps/s summed over the vmapped seeds and the seconds per PPO update per seed.
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
from hydra import compose, initialize_config_dir  # noqa: E402

from rfig_exp.agents.ppo.train import as_arrays, make_trainer  # noqa: E402
from rfig_exp.bonuses import make_bonus  # noqa: E402
from rfig_exp.envs import make_env  # noqa: E402
from rfig_exp.spec.run_spec import build_run_spec  # noqa: E402


def build(env_name: str, bonus_name: str, num_seeds: int, overrides: list[str]):
    """Compile one window of the real training loop: ``(run_window, states, hparams, spec)``."""
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[f"env={env_name}", f"bonus={bonus_name}", *overrides])
    spec = build_run_spec(cfg)
    env = make_env(cfg.env)
    bonus, bonus_hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    return (*compile_window(cfg, spec, env, bonus, bonus_hp, num_seeds), spec)


def compile_window(cfg, spec, env, bonus, bonus_hp, num_seeds: int):
    """Initialise ``num_seeds`` vmapped seeds and compile one window of the training loop, as
    ``run_loop.py`` does: ``(run_window, states, hparams)``. Shared by the other benchmarks."""
    hp = as_arrays(spec.agent.hparams(spec.bonus.beta, bonus_hp))
    trainer = make_trainer(spec.train, env, bonus)
    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(num_seeds)])
    states = jax.block_until_ready(jax.jit(jax.vmap(trainer.init, in_axes=(0, None)))(keys, hp))
    run_window = jax.jit(trainer.run_window, donate_argnums=0).lower(states, hp).compile()
    return run_window, states, hp


def time_windows(run_window, states, hp, windows: int) -> list[float]:
    """Seconds of each of ``windows`` windows, after one warm-up (the first call after compiling
    is slower). Shared by the other benchmarks."""
    states, metrics = run_window(states, hp)
    jax.block_until_ready(metrics)
    seconds = []
    for _ in range(windows):
        t0 = time.perf_counter()
        states, metrics = run_window(states, hp)
        jax.block_until_ready(metrics)
        seconds.append(time.perf_counter() - t0)
    return seconds


def measure(env_name: str, bonus_name: str, num_seeds: int, windows: int, overrides: list[str]) -> dict:
    t0 = time.perf_counter()
    run_window, states, hp, spec = build(env_name, bonus_name, num_seeds, overrides)
    compile_s = time.perf_counter() - t0
    window_s = statistics.median(time_windows(run_window, states, hp, windows))
    updates = spec.train.updates_per_window
    steps = updates * spec.train.batch_size * num_seeds
    return dict(env=env_name, bonus=bonus_name, seeds=num_seeds, compile_s=compile_s,
                steps_per_s=steps / window_s, s_per_update_per_seed=window_s / (updates * num_seeds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default="mountaincar,minatar_breakout")
    parser.add_argument("--bonuses", default="none,rfig")
    parser.add_argument("--seeds", default="1,8", help="vmapped seeds per process, comma-separated")
    parser.add_argument("--windows", type=int, default=5,
                        help="timed windows after one warm-up window (24,576 steps per seed each); "
                             "the median is reported")
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides, e.g. bonus.inverse=exact")
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; overrides: {args.overrides or 'none'}")
    print(f"{'env':<18} {'bonus':<6} {'seeds':>5} {'compile s':>9} {'env steps/s':>12} {'s/update/seed':>14}")
    for env_name in args.envs.split(","):
        for bonus_name in args.bonuses.split(","):
            for seeds in (int(s) for s in args.seeds.split(",")):
                r = measure(env_name, bonus_name, seeds, args.windows, args.overrides)
                print(f"{r['env']:<18} {r['bonus']:<6} {r['seeds']:>5} {r['compile_s']:>9.1f} "
                      f"{r['steps_per_s']:>12,.0f} {r['s_per_update_per_seed']:>14.4f}", flush=True)


if __name__ == "__main__":
    main()

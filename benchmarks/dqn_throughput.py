"""Env steps per second of the DQN's training loop (``agent=dqn``), compile excluded, with each bonus.

    python benchmarks/dqn_throughput.py                                  # MinAtar Breakout: none, rnd, rfig
    python benchmarks/dqn_throughput.py --env cartpole --bonuses none --seeds 2 --windows 5

Each case composes the real Hydra config (``agent=dqn`` and its defaults: 16 envs, one env step and
one TD step per update), compiles one window of ``--window-steps`` env steps per seed as the run loop
does, runs one warm-up window, then ``--windows`` timed ones, and prints, for the median window, the
env steps per second summed over the vmapped seeds. ``--warm-windows`` windows run untimed first, so
that every timed window is past ``learning_starts`` (5,000 env steps) and takes a TD step per update.
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

from rfig_exp.agents import trainer_module  # noqa: E402
from rfig_exp.bonuses import make_bonus  # noqa: E402
from rfig_exp.envs import make_env  # noqa: E402
from rfig_exp.spec.run_spec import build_run_spec  # noqa: E402


def measure(env_name: str, bonus_name: str, seeds: int, window_steps: int, windows: int, warm: int) -> dict:
    """One case: compile seconds and the median timed window's env steps/s over ``seeds`` seeds."""
    overrides = ["agent=dqn", f"env={env_name}", f"bonus={bonus_name}", f"eval_frequency={window_steps}",
                 f"agent.total_timesteps={window_steps * (windows + warm + 1)}"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        spec = build_run_spec(compose("config", overrides=overrides))
    env = make_env(spec.env)
    bonus, bonus_hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    agent = trainer_module(spec.agent)
    hp = agent.as_arrays(spec.hparams(bonus_hp))
    trainer = agent.make_trainer(spec.train, env, bonus)
    t0 = time.perf_counter()
    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(seeds)])
    states = jax.block_until_ready(jax.jit(jax.vmap(trainer.init, in_axes=(0, None)))(keys, hp))
    run_window = jax.jit(trainer.run_window, donate_argnums=0).lower(states, hp).compile()
    compile_s = time.perf_counter() - t0
    for _ in range(warm + 1):  # past learning_starts, and the first call after compiling
        states, metrics = run_window(states, hp)
        jax.block_until_ready(metrics)
    seconds = []
    for _ in range(windows):
        t0 = time.perf_counter()
        states, metrics = run_window(states, hp)
        jax.block_until_ready(metrics)
        seconds.append(time.perf_counter() - t0)
    return dict(env=env_name, bonus=bonus_name, seeds=seeds, compile_s=compile_s,
                steps_per_s=spec.eval_frequency * seeds / statistics.median(seconds))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="minatar_breakout")
    parser.add_argument("--bonuses", default="none,rnd,rfig")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--window-steps", type=int, default=8192, help="env steps per window and seed")
    parser.add_argument("--windows", type=int, default=3, help="timed windows")
    parser.add_argument("--warm-windows", type=int, default=1, help="untimed windows past learning_starts")
    args = parser.parse_args(argv)
    print(f"agent=dqn env={args.env}, {args.seeds} seed(s), windows of {args.window_steps} env steps per seed, "
          f"{jax.devices()[0].platform}")
    for bonus in args.bonuses.split(","):
        r = measure(args.env, bonus, args.seeds, args.window_steps, args.windows, args.warm_windows)
        print(f"{r['env']:<18} {r['bonus']:<10} seeds {r['seeds']}  compile {r['compile_s']:6.1f}s  "
              f"{r['steps_per_s']:>10,.0f} env steps/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

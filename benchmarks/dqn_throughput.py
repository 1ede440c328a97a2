"""Env steps per second of the DQN's training loop (``agent=dqn``), compile excluded, with each bonus.

    python benchmarks/dqn_throughput.py                                  # MinAtar Breakout: none, rnd, rfig
    python benchmarks/dqn_throughput.py --env cartpole --bonuses none --seeds 2 --windows 5

Each case composes the real Hydra config (``agent=dqn`` and its defaults: 16 envs, one env step and
one TD step per update), compiles one window of ``--window-steps`` env steps per seed as the run loop
does, runs one warm-up window, then ``--windows`` timed ones, and prints, for the median window, the
env steps per second summed over the vmapped seeds. ``--warm-windows`` windows run untimed first, so
that every timed window is past ``learning_starts`` (5,000 env steps) and takes a TD step per update.

``--purejaxrl PATH`` adds PureJaxRL's own ``dqn.py`` beside ours (a checkout of
github.com/luchris429/purejaxrl; docs/library-dqn.md's first diff, the one that runs it on gymnax 1.0
and jax 0.10, applied to a copy), with ``--python`` an environment that has flashbax (default: a fresh
one, as ``scripts/check_purejaxrl_diff.py`` makes it). Its config is set to ours where the two share a
setting (16 envs, a 50,000-transition buffer, batches of 128, a (120, 84) ReLU Q-network, one TD step
per update from 5,000 env steps, the env); what stays its own: no observation normalisation, no
gradient clip, the target copied every 512 env steps. Its whole run is one ``jit(vmap(train))``
scan, so it is compiled at two lengths and timed at both; the difference of the two times is
``--windows`` windows past the first ``--warm-windows + 1``, the span our median window is drawn from.

    python benchmarks/dqn_throughput.py --purejaxrl PATH/TO/purejaxrl --python ENV/bin/python
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
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


# PureJaxRL's dqn.py, its make_train compiled at two lengths and each timed once; JSON on stdout
REFERENCE_DRIVER = """
import json, sys, time
sys.path.insert(0, "purejaxrl")
import dqn, jax
config, seeds, lengths = {config}, {seeds}, {lengths}
keys = jax.random.split(jax.random.PRNGKey(0), seeds)
out = {{}}
for steps in lengths:
    start = time.perf_counter()
    train = jax.jit(jax.vmap(dqn.make_train(dict(config, TOTAL_TIMESTEPS=steps)))).lower(keys).compile()
    compiled = time.perf_counter() - start
    start = time.perf_counter()
    jax.block_until_ready(train(keys))
    out[steps] = dict(compile_s=compiled, run_s=time.perf_counter() - start)
print(json.dumps(out))
"""
# PureJaxRL's Breakout-MinAtar names, and its config where ours has the same setting (conf/agent/dqn.yaml)
REFERENCE_ENVS = {"minatar_breakout": "Breakout-MinAtar", "minatar_asterix": "Asterix-MinAtar",
                  "minatar_freeway": "Freeway-MinAtar", "minatar_space_invaders": "SpaceInvaders-MinAtar",
                  "cartpole": "CartPole-v1", "acrobot": "Acrobot-v1", "mountaincar": "MountainCar-v0"}
REFERENCE_CONFIG = {"NUM_ENVS": 16, "BUFFER_SIZE": 50_000, "BUFFER_BATCH_SIZE": 128, "EPSILON_START": 1.0,
                    "EPSILON_FINISH": 0.05, "EPSILON_ANNEAL_TIME": 100_000, "TARGET_UPDATE_INTERVAL": 512,
                    "LR": 2.5e-4, "LEARNING_STARTS": 5000, "TRAINING_INTERVAL": 16, "LR_LINEAR_DECAY": False,
                    "GAMMA": 0.99, "TAU": 1.0, "WANDB_MODE": "disabled"}


def measure_reference(checkout: Path, python: str | None, env_name: str, seeds: int, window_steps: int,
                      windows: int, warm: int) -> dict:
    """PureJaxRL's dqn.py on ``env_name``: compile seconds and env steps/s over the timed span."""
    if env_name not in REFERENCE_ENVS:
        sys.exit(f"--purejaxrl: no PureJaxRL name for env {env_name!r}; one of {', '.join(REFERENCE_ENVS)}")
    sys.path.insert(0, str(ROOT / "scripts"))
    import check_purejaxrl_diff as diff_check

    work = Path(tempfile.mkdtemp(prefix="rfig-purejaxrl-dqn."))
    try:
        (work / "purejaxrl").mkdir()
        shutil.copy(checkout / "purejaxrl" / "dqn.py", work / "purejaxrl" / "dqn.py")
        compat = diff_check.diffs(diff_check.PAGES["dqn"])[0]  # gymnax 1.0 and jax 0.10 only, no bonus
        (work / "compat.diff").write_text(compat)
        subprocess.run(["git", "apply", "--unidiff-zero", "compat.diff"], cwd=work, check=True)
        python = python or diff_check.environment(work, ["dqn"])
        short, long = (warm + 1) * window_steps, (warm + 1 + windows) * window_steps
        config = dict(REFERENCE_CONFIG, ENV_NAME=REFERENCE_ENVS[env_name])
        (work / "time_dqn.py").write_text(REFERENCE_DRIVER.format(config=repr(config), seeds=seeds,
                                                                   lengths=repr([short, long])))
        out = subprocess.run([python, "time_dqn.py"], cwd=work, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"PureJaxRL's dqn.py failed:\n{out.stderr[-3000:]}")
        timed = {int(k): v for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    span_s = timed[long]["run_s"] - timed[short]["run_s"]
    return dict(env=env_name, bonus="none", seeds=seeds, compile_s=timed[long]["compile_s"],
                steps_per_s=(long - short) * seeds / span_s)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="minatar_breakout")
    parser.add_argument("--bonuses", default="none,rnd,rfig")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--window-steps", type=int, default=8192, help="env steps per window and seed")
    parser.add_argument("--windows", type=int, default=3, help="timed windows")
    parser.add_argument("--warm-windows", type=int, default=1, help="untimed windows past learning_starts")
    parser.add_argument("--purejaxrl", type=Path, default=None,
                        help="a PureJaxRL checkout: its dqn.py (no bonus) timed beside ours")
    parser.add_argument("--python", default=None,
                        help="with --purejaxrl: a python with gymnax 1.0 and flashbax (default: a fresh environment)")
    args = parser.parse_args(argv)
    print(f"agent=dqn env={args.env}, {args.seeds} seed(s), windows of {args.window_steps} env steps per seed, "
          f"{jax.devices()[0].platform}")
    for bonus in args.bonuses.split(","):
        r = measure(args.env, bonus, args.seeds, args.window_steps, args.windows, args.warm_windows)
        print(f"{'ours':<10} {r['env']:<18} {r['bonus']:<10} seeds {r['seeds']}  compile {r['compile_s']:6.1f}s  "
              f"{r['steps_per_s']:>10,.0f} env steps/s", flush=True)
    if args.purejaxrl is not None:
        r = measure_reference(args.purejaxrl, args.python, args.env, args.seeds, args.window_steps, args.windows,
                              args.warm_windows)
        print(f"{'purejaxrl':<10} {r['env']:<18} {r['bonus']:<10} seeds {r['seeds']}  compile {r['compile_s']:6.1f}s  "
              f"{r['steps_per_s']:>10,.0f} env steps/s  (dqn.py, its whole run one scan)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

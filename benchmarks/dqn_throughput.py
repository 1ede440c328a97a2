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

``--rfig-floor`` adds RFIG's cost per DQN update against what its matrix work needs, one seed:

- ``dqn``: the milliseconds per update (one env step of every env, one TD step) of the timed windows
  above, with bonus ``none`` and with ``rfig``; their difference is what RFIG adds to a DQN.
- ``rfig step``: RFIG alone in the DQN's shape, ``--floor-updates`` updates in one ``lax.scan``, each
  on its own batch of ``num_envs`` random-policy next states of the real env (normalised, clipped to
  [-5, 5]): ``reward`` on the batch, ``update`` (``floor(num_envs * rho)`` states into Sigma and the
  configured inverse, the residual check), and a refresh when ``needs_refresh`` says so
  (``rfig_exp.agents.intrinsic.refresh_if_needed``), as the agent calls them.
- ``floor``: the matrix work an update cannot avoid, written out here apart from the project code on
  the same features: ``Sigma + Phi^T Phi`` and a bare rank-k Woodbury update of Lambda (k states),
  and the dense quadratic form of the ``num_envs`` states on the Lambda before it. Features are not
  part of it. Interleaved rounds, the median.

    python benchmarks/dqn_throughput.py --bonuses none,rfig --rfig-floor
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
    return dict(env=env_name, bonus=bonus_name, seeds=seeds, compile_s=compile_s, num_envs=spec.train.num_envs,
                steps_per_s=spec.eval_frequency * seeds / statistics.median(seconds))


def rfig_floor(env_name: str, updates: int, rounds: int) -> dict:
    """Milliseconds per update of RFIG alone in the DQN's shape and of its matrix floor (one seed)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_rfig import bonus_batch, floor_quadratic_form, floor_woodbury, random_policy_sampler, timed_rounds

    from rfig_exp.agents.intrinsic import refresh_if_needed
    from rfig_exp.bonuses.rfig.features import rff_features

    overrides = ["agent=dqn", f"env={env_name}", "bonus=rfig"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        spec = build_run_spec(compose("config", overrides=overrides))
    env = make_env(spec.env)
    bonus, hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    settings = spec.bonus
    num_envs, k = spec.train.num_envs, settings.subsample
    obs = random_policy_sampler(env, updates, num_envs, 1)(jax.random.PRNGKey(1))[0]  # [U, B, *obs]
    warm = random_policy_sampler(env, 129, num_envs, 1)(jax.random.PRNGKey(2))[0]
    state = jax.jit(bonus.init)(jax.random.PRNGKey(0), warm.reshape((-1,) + warm.shape[2:]), hp)
    batches = bonus_batch(obs[:, None])  # [U, 1, B, ...]: one env step of every env per update

    @jax.jit
    def step_loop(state, batches, key):
        def one(state, xs):
            batch, key = xs
            r, _ = bonus.reward(state, batch, hp)
            state, _ = bonus.update(state, batch, key, hp)
            state = refresh_if_needed(bonus, state, hp)  # as the agent: a refresh when needs_refresh says so
            return state, r.sum()
        return jax.lax.scan(one, state, (batches, jax.random.split(key, updates)))

    flat = obs.reshape(updates, num_envs, -1)
    phi = jax.vmap(lambda x: rff_features(x, state.omega_unit, state.bias, state.lengthscale))(flat)  # [U, B, D]
    phi_in = phi[:, :k]

    @jax.jit
    def floor_loop(sigma, lam, phi, phi_in):
        def one(carry, xs):
            sigma, lam = carry
            p, p_in = xs
            quad = floor_quadratic_form(p, lam)
            return (sigma + p_in.T @ p_in, floor_woodbury(lam, p_in)), quad.sum()
        return jax.lax.scan(one, (sigma, lam), (phi, phi_in))

    cases = {"rfig step": lambda: step_loop(state, batches, jax.random.PRNGKey(3)),
             "floor": lambda: floor_loop(state.sigma, state.precision, phi, phi_in)}
    seconds = timed_rounds(cases, rounds, time.perf_counter)
    return {name: 1e3 * statistics.median(values) / updates for name, values in seconds.items()} | {
        "num_envs": num_envs, "states_in": k, "features": int(state.precision.shape[0]), "inverse": settings.inverse}


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
    parser.add_argument("--rfig-floor", action="store_true",
                        help="RFIG's milliseconds per DQN update against its matrix floor (needs none and rfig)")
    parser.add_argument("--floor-updates", type=int, default=512, help="with --rfig-floor: updates per timed call")
    parser.add_argument("--floor-rounds", type=int, default=5, help="with --rfig-floor: interleaved rounds")
    args = parser.parse_args(argv)
    if args.rfig_floor and not {"none", "rfig"} <= set(args.bonuses.split(",")):
        parser.error(f"--rfig-floor compares the DQN with and without RFIG: --bonuses needs none and rfig, "
                     f"not {args.bonuses}")
    if args.rfig_floor and args.seeds != 1:
        parser.error(f"--rfig-floor times one seed: --seeds={args.seeds} must be 1")
    print(f"agent=dqn env={args.env}, {args.seeds} seed(s), windows of {args.window_steps} env steps per seed, "
          f"{jax.devices()[0].platform}")
    per_update = {}
    for bonus in args.bonuses.split(","):
        r = measure(args.env, bonus, args.seeds, args.window_steps, args.windows, args.warm_windows)
        per_update[bonus] = 1e3 * r["num_envs"] / r["steps_per_s"]  # one update: an env step of every env
        print(f"{'ours':<10} {r['env']:<18} {r['bonus']:<10} seeds {r['seeds']}  compile {r['compile_s']:6.1f}s  "
              f"{r['steps_per_s']:>10,.0f} env steps/s", flush=True)
    if args.purejaxrl is not None:
        r = measure_reference(args.purejaxrl, args.python, args.env, args.seeds, args.window_steps, args.windows,
                              args.warm_windows)
        print(f"{'purejaxrl':<10} {r['env']:<18} {r['bonus']:<10} seeds {r['seeds']}  compile {r['compile_s']:6.1f}s  "
              f"{r['steps_per_s']:>10,.0f} env steps/s  (dqn.py, its whole run one scan)", flush=True)
    if args.rfig_floor:
        f = rfig_floor(args.env, args.floor_updates, args.floor_rounds)
        added = per_update["rfig"] - per_update["none"]
        print(f"per update ({f['num_envs']} envs, {f['states_in']} state(s) into RFIG's {f['features']} features, "
              f"{f['inverse']}): dqn none {per_update['none']:.2f} ms, dqn rfig {per_update['rfig']:.2f} ms "
              f"(RFIG adds {added:.2f} ms); rfig step alone {f['rfig step']:.2f} ms; its matrix floor "
              f"{f['floor']:.2f} ms; added / floor {added / f['floor']:.2f}x, step / floor "
              f"{f['rfig step'] / f['floor']:.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

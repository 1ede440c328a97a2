"""Cost of each exploration bonus: training throughput against ``none`` in the same run, and
the bonus's own ``reward`` and ``update`` timed alone on a realistic [128, 32] batch.

    python benchmarks/bench_bonuses.py                                   # every bonus, both envs, 1 and 8 seeds
    python benchmarks/bench_bonuses.py --envs mountaincar --bonuses rnd --seeds 1 --rounds 3   # quick

Throughput: the real training loop (Hydra config with the paper's defaults, 32 envs x 128
steps, 4 epochs x 32 minibatches) for ``none`` and for the bonus are both compiled, then
timed window by window in alternation (one warm-up window each, then ``--rounds`` pairs);
a round's ratio is bonus steps/s over ``none`` steps/s of the same round, and the table
gives medians. Alternating pairs keep the ratio honest on a shared, noisy machine.

Per update: ``reward`` and ``update`` each jitted alone, and both together as the agent
calls them (``reward`` then ``update`` on the same pre-update state, in one function, which
lets XLA share their common forward passes), on a batch of 128 x 32 random-policy
transitions normalised and clipped to [-5, 5] like the agent's; ``update`` donates its
state as the training loop does. Median over ``--reps`` calls, all vmapped seeds at once.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import rfig_exp  # noqa: E402

rfig_exp.set_cpu_flags()  # before jax is imported

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from bench_throughput import build  # noqa: E402
from hydra import compose, initialize_config_dir  # noqa: E402

from rfig_exp.agents.warmup import env_rollout  # noqa: E402
from rfig_exp.bonuses import BonusBatch, bonus_names, make_bonus, parse_bonus  # noqa: E402
from rfig_exp.envs import make_env  # noqa: E402

NUM_STEPS, NUM_ENVS = 128, 32


def timed_window(run_window, states, hp):
    t0 = time.perf_counter()
    states, metrics = run_window(states, hp)
    jax.block_until_ready(metrics)
    return states, time.perf_counter() - t0


def paired_throughput(env_name, bonus_name, seeds, rounds, overrides, baseline):
    """Median env steps/s of the bonus, of ``none`` in the same rounds, and of their ratio."""
    t0 = time.perf_counter()
    run_window, states, hp, spec = build(env_name, bonus_name, seeds, overrides)
    compile_s = time.perf_counter() - t0
    base_window, base_states, base_hp, _ = baseline
    steps = spec.train.updates_per_window * spec.train.batch_size * seeds
    states, _ = timed_window(run_window, states, hp)            # warm-up
    base_states, _ = timed_window(base_window, base_states, base_hp)
    ours, theirs = [], []
    for _ in range(rounds):
        base_states, s_base = timed_window(base_window, base_states, base_hp)
        states, s_ours = timed_window(run_window, states, hp)
        theirs.append(steps / s_base)
        ours.append(steps / s_ours)
    baseline[1] = base_states  # the donated buffers are gone: keep the live ones
    return dict(compile_s=compile_s, steps_per_s=statistics.median(ours), none_steps_per_s=statistics.median(theirs),
                ratio=statistics.median(o / t for o, t in zip(ours, theirs)))


def random_policy_batch(env, key, seeds):
    """A ``BonusBatch`` ``[S, 128, 32, ...]`` of random-policy transitions, normalised as the agent does."""
    def one(key):
        _, (obs, actions, final_obs, term, trunc) = env_rollout(
            key, env, NUM_ENVS, NUM_STEPS, keep=lambda o, a, out: (o, a, out.final_obs, out.terminated, out.truncated))
        flat = obs.reshape((-1,) + env.obs_shape)
        mean, std = flat.mean(0), flat.std(0) + 1e-8
        norm = lambda x: jnp.clip((x - mean) / std, -5.0, 5.0)  # noqa: E731
        return BonusBatch(obs=norm(obs), actions=actions, next_obs=norm(final_obs), terminated=term, truncated=trunc)

    return jax.jit(jax.vmap(one))(jax.random.split(key, seeds))


def per_update_cost(env_name, bonus_name, seeds, reps, overrides):
    """Median seconds of ``reward``, ``update`` and both as the agent calls them, all seeds at once."""
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=[f"env={env_name}", f"bonus={bonus_name}", *overrides])
    env = make_env(cfg.env.name)
    bonus, hp = make_bonus(parse_bonus(cfg.bonus, NUM_STEPS * NUM_ENVS), env.obs_shape, env.action_space)
    batch = random_policy_batch(env, jax.random.PRNGKey(0), seeds)
    keys = jax.random.split(jax.random.PRNGKey(1), seeds)
    warmup = batch.obs.reshape((seeds, -1) + env.obs_shape)
    states = jax.jit(jax.vmap(bonus.init, in_axes=(0, 0, None)))(keys, warmup, hp)
    if seeds == 1:  # a lone seed runs unbatched, as in the training loop
        states, batch, keys = jax.tree.map(lambda x: x[0], (states, batch, keys))
        lift = lambda f, axes: f  # noqa: E731
    else:
        lift = lambda f, axes: jax.vmap(f, in_axes=axes)  # noqa: E731
    reward = jax.jit(lift(bonus.reward, (0, 0, None)))

    def both(state, batch, key, hp):
        r, _ = bonus.reward(state, batch, hp)
        new_state, _ = bonus.update(state, batch, key, hp)
        return new_state, r

    # Each returns (new state, rewards or None); the rewards are kept as an output so that XLA
    # cannot drop the ``reward`` half of ``both``.
    steps = {name: jax.jit(lift(fn, (0, 0, 0, None)), donate_argnums=0)
             for name, fn in (("update_s", lambda s, b, k, h: (bonus.update(s, b, k, h)[0], None)),
                              ("both_s", both))}
    live = {name: jax.tree.map(jnp.copy, states) for name in steps}
    jax.block_until_ready(reward(states, batch, hp))           # compile and warm up
    for name, step in steps.items():
        live[name] = jax.block_until_ready(step(live[name], batch, keys, hp))[0]
    # Interleaved, so that the three see the same contention on a shared machine.
    times = {"reward_s": [], **{name: [] for name in steps}}
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(reward(states, batch, hp))
        times["reward_s"].append(time.perf_counter() - t0)
        for name, step in steps.items():
            t0 = time.perf_counter()
            live[name] = jax.block_until_ready(step(live[name], batch, keys, hp))[0]
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default="mountaincar,minatar_breakout")
    parser.add_argument("--bonuses", default=",".join(b for b in bonus_names() if b != "none"),
                        help="comma-separated; each is paired with `none` in the same run")
    parser.add_argument("--seeds", default="1,8", help="vmapped seeds per process, comma-separated")
    parser.add_argument("--rounds", type=int, default=5, help="timed (none, bonus) window pairs after one warm-up each")
    parser.add_argument("--reps", type=int, default=10, help="timed calls of reward / update for the per-update split")
    parser.add_argument("--no-train", action="store_true", help="only the per-update split (no training loop)")
    parser.add_argument("overrides", nargs="*",
                        help="extra Hydra overrides for every case, e.g. bonus.update_proportion=0.25")
    args = parser.parse_args()
    bonuses = [b for b in args.bonuses.split(",") if b]
    unknown = [b for b in bonuses if b not in bonus_names()]
    if unknown:
        parser.error(f"unknown bonus {unknown}; registered: {', '.join(bonus_names())}")
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; overrides: {args.overrides or 'none'}; "
          f"{args.rounds} rounds, {args.reps} reps")
    print(f"{'env':<17} {'bonus':<10} {'seeds':>5} {'compile s':>9} {'steps/s':>9} {'none steps/s':>12} "
          f"{'ratio':>6} {'reward ms':>9} {'update ms':>9} {'both ms':>8}")
    for env_name in args.envs.split(","):
        for seeds in (int(s) for s in args.seeds.split(",")):
            baseline = None if args.no_train else list(build(env_name, "none", seeds, args.overrides))
            for bonus_name in bonuses:
                r = {"compile_s": float("nan"), "steps_per_s": float("nan"), "none_steps_per_s": float("nan"),
                     "ratio": float("nan")}
                try:
                    if baseline is not None:
                        r.update(paired_throughput(env_name, bonus_name, seeds, args.rounds, args.overrides,
                                                   baseline))
                    r.update(per_update_cost(env_name, bonus_name, seeds, args.reps, args.overrides))
                except Exception as e:  # one broken bonus must not hide the others' numbers
                    print(f"{env_name:<17} {bonus_name:<10} {seeds:>5} failed: {type(e).__name__}: {e}", flush=True)
                    continue
                print(f"{env_name:<17} {bonus_name:<10} {seeds:>5} {r['compile_s']:>9.1f} {r['steps_per_s']:>9,.0f} "
                      f"{r['none_steps_per_s']:>12,.0f} {r['ratio']:>6.2f} {1e3 * r['reward_s']:>9.1f} "
                      f"{1e3 * r['update_s']:>9.1f} {1e3 * r['both_s']:>8.1f}", flush=True)


if __name__ == "__main__":
    main()

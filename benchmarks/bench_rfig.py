"""RFIG's cost per PPO update against its matrix floor, and the whole update.

    python benchmarks/bench_rfig.py --clock cpu            # the docs/rfig_speed.md tables
    python benchmarks/bench_rfig.py --envs mountaincar --seeds 1 --inverses woodbury \
        --rounds 3 --agent-rounds 2 --stream-updates 4    # a short run (a few minutes)

**Part 1, the bonus alone**, for each env, number of vmapped seeds S and inverse method:
the real bonus from the Hydra config on PPO batches of N = num_steps * num_envs = 4,096
random-policy next states of the real environment (normalised per dimension, clipped to
[-5, 5], as the agent does), its state warmed up by ``--history`` updates. Timed in
interleaved rounds:

- ``bonus``: ``--loop`` (6) updates in one ``lax.scan``, as in a training window, each on
  its own batch: ``reward`` and ``update`` per seed, then ``needs_refresh`` and a
  ``lax.cond`` refresh outside the seed vmap, exactly as ``train.py`` calls them; plus the
  refresh's cost times the refresh rate (below). Per update.
- ``floor``: the matrix work RFIG cannot avoid (docs/rfig_speed.md), written out here
  independently of the project code,
  in the same kind of loop: the dense quadratic form ``sum((phi @ Lambda) * phi, -1)`` over
  the N states' features plus a bare rank-k Woodbury update (``U = Phi Lambda``, Cholesky
  of ``I + U Phi^T``, one triangular solve, ``Lambda - V^T V``; k = floor(N rho) = 256),
  chained through Lambda. Features are not part of it (by definition). For S > 1
  seeds, one seed after another (``rfig_exp.bonuses.rfig.linalg.sequential_vmap``, the faster way on CPU; the
  ``batched`` column is the same floor with XLA's batched matmuls under a plain vmap).
- the parts, each one call jitted alone: ``features`` (RFF map of the N states), ``quad``
  (the bonus's quadratic form on given features), ``sigma`` (subsample, features of the k
  states, ``Sigma + Phi^T Phi``), ``inverse`` (the configured inverse method), ``resid``
  (the residual check), ``refresh`` (amortised); ``else`` = bonus - their sum (negative
  when the loop does the same work cheaper than separate calls); and ``reward`` and
  ``update`` each alone, against the loop ("together").

The refresh rate is ``--refresh-rate`` if given, else ``1 / refresh_every`` when a fixed
period is configured, else the rate measured over ``--stream-updates`` bonus updates on
fresh random-policy batches (the real ``needs_refresh`` / ``refresh``), less the refreshes
that already ran inside the timed loop (noted beside the row). A real run's count
is in its summary.json (``bonus_refreshes``); docs/rfig_speed.md reports a 1M-step one.

**Part 2, the agent**: one evaluation window (6 PPO updates) of the real training loop,
interleaved over ``--agent-rounds`` rounds after a warm-up window, for plain PPO
(``bonus=none``: no intrinsic stream), PPO with a zero-cost bonus that keeps the intrinsic
stream (``zero``: reward 0 but ``intrinsic=True``: second value head in the loss, intrinsic
GAE and return filter), and PPO + RFIG (default config). Per update of all S seeds: each
case's median, the intrinsic stream's own cost (zero - none) and ``rfig / (floor + zero)``.

Ratios are medians over rounds of ratios measured in the same round; the spread is the
inter-quartile range of those per-round ratios. Other processes share the machine: with
``--clock cpu`` this process's CPU time (all its threads) is timed instead of elapsed time,
which other processes disturb far less (but it counts threads that spin while waiting).
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
import numpy as np  # noqa: E402
from bench_throughput import compile_window  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from hydra import compose, initialize_config_dir  # noqa: E402
from jax.scipy.linalg import solve_triangular  # noqa: E402

from rfig_exp.agents.warmup import env_rollout  # noqa: E402
from rfig_exp.bonuses import make_bonus  # noqa: E402
from rfig_exp.bonuses.base import Bonus, BonusBatch, flat_states  # noqa: E402
from rfig_exp.bonuses.rfig import precision  # noqa: E402
from rfig_exp.bonuses.rfig.features import rff_features  # noqa: E402
from rfig_exp.bonuses.rfig.linalg import sequential_vmap  # noqa: E402
from rfig_exp.bonuses.shuffle import subsample  # noqa: E402
from rfig_exp.envs import make_env  # noqa: E402
from rfig_exp.spec.run_spec import build_run_spec  # noqa: E402


def compose_cfg(env_name: str, bonus_name: str, overrides=()):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=[f"env={env_name}", f"bonus={bonus_name}", "wandb.mode=disabled",
                                             *overrides])


# ---------------------------------------------------------------------------------- floor


def floor_quadratic_form(phi, lam):
    """The dense quadratic form the floor is defined by, [N, D] x [D, D] -> [N]."""
    return jnp.sum((phi @ lam) * phi, axis=-1)


def floor_woodbury(lam, phi):
    """A bare rank-k Woodbury update, [D, D] x [k, D] -> [D, D]: no checks, no symmetrising."""
    u = phi @ lam
    c = jnp.linalg.cholesky(jnp.eye(phi.shape[0], dtype=lam.dtype) + u @ phi.T)
    v = solve_triangular(c, u, lower=True)
    return lam - v.T @ v


# ---------------------------------------------------------------------------------- helpers


def per_seed(fn, num_seeds: int, batched: bool = False):
    """``fn`` over stacked ``[S, ...]`` arguments: unbatched for one seed (as train.py), else
    vmapped through ``sequential_vmap`` (one seed after another on CPU, as the bonus runs), or
    as a plain ``jax.vmap`` (XLA's batched matmuls) with ``batched``."""
    if num_seeds > 1:
        return jax.vmap(fn if batched else sequential_vmap(fn))

    def one(*args):
        out = fn(*jax.tree.map(lambda x: x[0], args))
        return jax.tree.map(lambda x: x[None], out)

    return one


def random_policy_sampler(env, num_steps: int, num_envs: int, num_seeds: int):
    """``key -> [S, T, B, *obs]`` true next observations of a random policy, normalised per
    dimension by their own mean and std and clipped to [-5, 5] (as the agent normalises them).
    Compiled once per case (a fresh jit per batch cost a compile each, minutes on a GPU)."""
    def one(k):
        _, final = env_rollout(k, env, num_envs, num_steps)
        final = final.astype(jnp.float32)
        mean = final.mean(axis=(0, 1))
        std = final.std(axis=(0, 1))
        return jnp.clip((final - mean) / jnp.sqrt(std**2 + 1e-8), -5.0, 5.0)

    rollout = jax.jit(jax.vmap(one))
    return lambda key: rollout(jax.random.split(key, num_seeds))


def bonus_batch(next_obs):
    lead = next_obs.shape[:3]  # [S, T, B]
    zeros = jnp.zeros(lead, bool)
    return BonusBatch(obs=next_obs, actions=jnp.zeros(lead, jnp.int32), next_obs=next_obs,
                      terminated=zeros, truncated=zeros)


def quartiles(values):
    q = np.percentile(np.asarray(values), [25, 50, 75])
    return float(q[0]), float(q[1]), float(q[2])


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def timed_rounds(cases: dict, rounds: int, clock) -> dict:
    """Each callable once per round, interleaved; returns seconds per call, ``{name: [rounds]}``.
    Every callable runs once before the first round (compile and warm-up excluded)."""
    for fn in cases.values():
        jax.block_until_ready(fn())
    out = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            t0 = clock()
            jax.block_until_ready(fn())
            out[name].append(clock() - t0)
    return out


# ---------------------------------------------------------------------------------- part 1


def bonus_case(env_name: str, num_seeds: int, inverse: str, args) -> dict:
    # length: one case read top to bottom as the module docstring describes it (setup, refresh rate, the
    # timed loop and its parts): its closures share the case's states and batches.
    cfg = compose_cfg(env_name, "rfig", [f"bonus.inverse={inverse}", *args.overrides])
    spec = build_run_spec(cfg)
    env = make_env(cfg.env)
    num_steps, num_envs = spec.train.num_steps, spec.train.num_envs
    bonus, hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    obs_ndim = len(env.obs_shape)
    num_blocks, k = spec.bonus.quad_blocks, spec.bonus.subsample

    random_policy_batches = random_policy_sampler(env, num_steps, num_envs, num_seeds)
    key = jax.random.PRNGKey(args.seed)
    k_warm, k_init, k_hist, k_batch, k_upd, k_stream = jax.random.split(key, 6)
    warm = random_policy_batches(k_warm)
    warm = warm.reshape((num_seeds, -1) + env.obs_shape)
    states = jax.jit(jax.vmap(bonus.init, in_axes=(0, 0, None)))(jax.random.split(k_init, num_seeds), warm, hp)

    # train.py's order: the per-seed reward and update, then a refresh outside the seed vmap.
    per_update = per_seed(lambda s, b, kk: (bonus.reward(s, b, hp)[0],) + bonus.update(s, b, kk, hp), num_seeds)

    def agent_step(states, batch, keys):
        r, states, metrics = per_update(states, batch, keys)
        need = jax.vmap(bonus.needs_refresh)(states)

        def refresh(bs):
            fresh = jax.vmap(bonus.refresh, in_axes=(0, None))(bs, hp)
            mask = lambda x: need.reshape(need.shape + (1,) * (x.ndim - 1))  # noqa: E731
            return jax.tree.map(lambda a, b: jnp.where(mask(a), a, b), fresh, bs)

        states = jax.lax.cond(need.any(), refresh, lambda bs: bs, states)
        return r, states, metrics

    step = jax.jit(agent_step)
    refresh_all = jax.jit(jax.vmap(bonus.refresh, in_axes=(0, None)), static_argnums=())

    def keys_for(k_):
        return jax.random.split(k_, num_seeds)

    # History: the precision is not the trivial I / reg any more.
    for i in range(args.history):
        batch = bonus_batch(random_policy_batches(jax.random.fold_in(k_hist, i)))
        _, states, _ = step(states, batch, keys_for(jax.random.fold_in(k_upd, i)))
    states = jax.block_until_ready(refresh_all(states, hp))

    # Refresh rate.
    if args.refresh_rate is not None:
        rate, rate_source = args.refresh_rate, "--refresh-rate"
    elif inverse == "woodbury" and spec.bonus.refresh_every > 0:
        rate, rate_source = 1.0 / spec.bonus.refresh_every, f"1/refresh_every={spec.bonus.refresh_every}"
    else:
        stream = states
        for i in range(args.stream_updates):
            batch = bonus_batch(random_policy_batches(jax.random.fold_in(k_stream, i)))
            _, stream, _ = step(stream, batch, keys_for(jax.random.fold_in(k_stream, 10_000 + i)))
        refreshes = np.asarray(stream.refreshes) - np.asarray(states.refreshes)
        rate = float(refreshes.mean()) / max(args.stream_updates, 1)
        rate_source = f"measured: {refreshes.tolist()} refreshes in {args.stream_updates} updates per seed"

    # The timed batch and its pieces.
    batch = bonus_batch(random_policy_batches(k_batch))
    keys = keys_for(k_upd)
    loop = args.loop
    key_seq = jax.vmap(keys_for)(jax.random.split(jax.random.fold_in(k_upd, 1), loop))  # [U, S, 2]

    def features_of(s, x):
        return rff_features(flat_states(x, obs_ndim), s.omega_unit, s.bias, s.lengthscale)

    phi = jax.jit(per_seed(features_of, num_seeds))(states, batch.next_obs)
    idx_fn = lambda kk: subsample(kk, num_steps * num_envs, k)  # noqa: E731

    def sigma_piece(s, x, kk):
        phi_k = features_of(s, flat_states(x, obs_ndim)[idx_fn(kk)])
        return s.sigma + phi_k.T @ phi_k, phi_k

    sigma_new, phi_k = jax.jit(per_seed(sigma_piece, num_seeds))(states, batch.next_obs, keys)
    if inverse == "woodbury":
        inverse_fn = lambda s, sig, p: precision.woodbury_update(s.precision, p)  # noqa: E731
    elif inverse == "exact":
        inverse_fn = lambda s, sig, p: precision.exact_inverse(sig)  # noqa: E731
    else:
        iters = spec.bonus.newton_schulz_iters
        inverse_fn = lambda s, sig, p: precision.newton_schulz(  # noqa: E731
            sig, precision.newton_schulz_warm_start(s.precision, p), iters)
    lam_new = jax.jit(per_seed(inverse_fn, num_seeds))(states, sigma_new, phi_k)

    loop_batches = jax.tree.map(  # [U, S, T, B, ...]: a different batch for every update in the loop
        lambda *xs: jnp.stack(xs),
        *[bonus_batch(random_policy_batches(jax.random.fold_in(k_batch, 1 + i)))
          for i in range(loop)])

    @jax.jit
    def bonus_loop(states, batches, key_seq):
        """``loop`` bonus updates exactly as train.py runs them, on their own batches, in one
        ``lax.scan`` as in a training window (temporary buffers allocated once per call)."""
        def body(states, xs):
            batch, kk = xs
            r, states, _ = agent_step(states, batch, kk)
            return states, r

        return jax.lax.scan(body, states, (batches, key_seq))

    @jax.jit
    def floor_loop(lam, phi, phi_k):
        """``loop`` floor updates: the dense quadratic form with the current Lambda, then the
        bare Woodbury update of it (chained through Lambda, so XLA cannot hoist either)."""
        def body(lam, _):
            q = per_seed(floor_quadratic_form, num_seeds)(phi, lam)
            return per_seed(floor_woodbury, num_seeds)(lam, phi_k), q

        return jax.lax.scan(body, lam, None, length=loop)

    @jax.jit
    def floor_loop_batched(lam, phi, phi_k):
        """The same with XLA's batched matmuls under a plain vmap over seeds."""
        def body(lam, _):
            q = per_seed(floor_quadratic_form, num_seeds, batched=True)(phi, lam)
            return per_seed(floor_woodbury, num_seeds, batched=True)(lam, phi_k), q

        return jax.lax.scan(body, lam, None, length=loop)

    after_loop = bonus_loop(states, loop_batches, key_seq)[0]
    refreshed_in_loop = int(np.asarray(after_loop.refreshes - states.refreshes).sum())
    jit = lambda f: jax.jit(per_seed(f, num_seeds))  # noqa: E731
    f_features = jit(features_of)
    f_quad = jit(lambda p, lam: precision.quadratic_form(p, lam, num_blocks))
    f_floor_quad = jit(floor_quadratic_form)
    f_floor_wb = jit(floor_woodbury)
    f_sigma = jit(sigma_piece)
    f_inverse = jit(inverse_fn)
    f_resid = jit(precision.inverse_residual)
    f_reward = jit(lambda s, b: bonus.reward(s, b, hp)[0])
    f_update = jit(lambda s, b, kk: bonus.update(s, b, kk, hp))
    f_refresh = jit(lambda s: bonus.refresh(s, hp))
    # The loops do `loop` updates per call, the parts one; all are divided to one update below.
    per_call = {"floor": loop, "floor_batched": loop, "bonus_step": loop}
    cases = {
        "floor": lambda: floor_loop(states.precision, phi, phi_k),
        **({"floor_batched": lambda: floor_loop_batched(states.precision, phi, phi_k)} if num_seeds > 1 else {}),
        "bonus_step": lambda: bonus_loop(states, loop_batches, key_seq),
        "floor_quad": lambda: f_floor_quad(phi, states.precision),
        "floor_update": lambda: f_floor_wb(states.precision, phi_k),
        "features": lambda: f_features(states, batch.next_obs),
        "quad": lambda: f_quad(phi, states.precision),
        "sigma": lambda: f_sigma(states, batch.next_obs, keys),
        "inverse": lambda: f_inverse(states, sigma_new, phi_k),
        "resid": lambda: f_resid(sigma_new, lam_new, states.probes),
        "refresh": lambda: f_refresh(states),
        "reward": lambda: f_reward(states, batch),
        "update": lambda: f_update(states, batch, keys),
    }
    t = {name: np.asarray(v) / per_call.get(name, 1)
         for name, v in timed_rounds(cases, args.rounds, CLOCKS[args.clock]).items()}
    floor = t["floor"]
    # Refreshes that ran inside the timed loop are already in it: amortise only the rest.
    rate = max(0.0, rate - refreshed_in_loop / (loop * num_seeds))
    bonus_total = t["bonus_step"] + rate * t["refresh"]
    parts = t["features"] + t["quad"] + t["sigma"] + t["inverse"] + t["resid"] + rate * t["refresh"]
    med = {name: float(np.median(v)) for name, v in t.items()}
    return dict(
        env=env_name, seeds=num_seeds, inverse=inverse, rate=rate, rate_source=rate_source,
        refreshed_in_loop=refreshed_in_loop,
        med=med, floor=float(np.median(floor)), bonus=float(np.median(bonus_total)),
        other=float(np.median(bonus_total - parts)), ratio=quartiles(bonus_total / floor),
        joint=quartiles(t["bonus_step"] / (t["reward"] + t["update"])),
        floor_joint=quartiles(t["floor"] / (t["floor_quad"] + t["floor_update"])),
        refresh_amortised=rate * med["refresh"],
    )


def print_bonus_table(rows) -> None:
    print("\nPart 1: the bonus alone, ms per PPO update of all S seeds (median over rounds)")
    cols = ("features", "quad", "sigma", "inverse", "resid")
    print(f"{'env':<17} {'S':>2} {'inverse':<13} " + " ".join(f"{c:>8}" for c in cols)
          + f" {'refresh':>8} {'else':>8} {'bonus':>8} {'floor':>8}   bonus/floor (IQR)")
    for r in rows:
        m = r["med"]
        print(f"{r['env']:<17} {r['seeds']:>2} {r['inverse']:<13} "
              + " ".join(f"{m[c] * 1e3:8.2f}" for c in cols)
              + f" {r['refresh_amortised'] * 1e3:8.2f} {r['other'] * 1e3:8.2f} {r['bonus'] * 1e3:8.2f}"
              f" {r['floor'] * 1e3:8.2f}   {r['ratio'][1]:.3f} ({r['ratio'][0]:.3f}-{r['ratio'][2]:.3f})")
    print("\nThe floor's parts (each alone) and the floor with XLA's batched matmuls (plain vmap); the refresh per"
          " call and its rate; reward and update each alone and jitted together:")
    print(f"{'env':<17} {'S':>2} {'inverse':<13} {'quad':>8} {'woodbury':>8} {'batched':>8} {'refresh':>8}"
          f" {'rate':>7} {'reward':>8} {'update':>8} {'together':>8}  together/sum (IQR)   rate source")
    for r in rows:
        m = r["med"]
        batched = f"{m['floor_batched'] * 1e3:8.2f}" if "floor_batched" in m else f"{'-':>8}"
        flag = (f"  ({r['refreshed_in_loop']} refreshes inside the timed loop: the bonus column includes them)"
                if r["refreshed_in_loop"] else "")
        print(f"{r['env']:<17} {r['seeds']:>2} {r['inverse']:<13} {m['floor_quad'] * 1e3:8.2f}"
              f" {m['floor_update'] * 1e3:8.2f} {batched} {m['refresh'] * 1e3:8.2f} {r['rate']:7.4f}"
              f" {m['reward'] * 1e3:8.2f} {m['update'] * 1e3:8.2f} {m['bonus_step'] * 1e3:8.2f}  {r['joint'][1]:.3f}"
              f" ({r['joint'][0]:.3f}-{r['joint'][2]:.3f})   {r['rate_source']}{flag}")


# ---------------------------------------------------------------------------------- part 2


def zero_bonus() -> Bonus:
    """Reward 0 but ``intrinsic=True``: PPO with the whole intrinsic stream and no bonus work."""
    def init(key, warmup_obs, hp):
        return ()

    def reward(state, batch, hp):
        return jnp.zeros(batch.terminated.shape, jnp.float32), {}

    def update(state, batch, key, hp):
        return state, {}

    return Bonus("zero", init, reward, update, intrinsic=True)


def build_agent(env_name: str, case: str, num_seeds: int, overrides):
    if case in ("none", "zero"):  # the bonus=none config has none of rfig's bonus.* keys
        overrides = [o for o in overrides if not o.lstrip("+~").startswith("bonus.")]
    cfg = compose_cfg(env_name, "none" if case in ("none", "zero") else "rfig", overrides)
    spec = build_run_spec(cfg)
    env = make_env(cfg.env)
    if case == "zero":
        bonus, bonus_hp = zero_bonus(), ()
    else:
        bonus, bonus_hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    window, states, hp = compile_window(cfg, spec, env, bonus, bonus_hp, num_seeds)
    return window, states, hp, spec.train.updates_per_window


def agent_case(env_name: str, num_seeds: int, floor_s: float, args) -> dict:
    built = {case: build_agent(env_name, case, num_seeds, args.overrides) for case in ("none", "zero", "rfig")}
    carry = {case: b[1] for case, b in built.items()}
    times = {case: [] for case in built}
    for rnd in range(args.agent_rounds + 1):  # the first round is a warm-up
        for case, (window, _, hp, updates) in built.items():
            t0 = CLOCKS[args.clock]()
            carry[case], metrics = window(carry[case], hp)
            jax.block_until_ready(metrics)
            if rnd:
                times[case].append((CLOCKS[args.clock]() - t0) / updates)
    t = {case: np.asarray(v) for case, v in times.items()}
    return dict(env=env_name, seeds=num_seeds, med={c: float(np.median(v)) for c, v in t.items()},
                stream=quartiles(t["zero"] - t["none"]), floor=floor_s,
                ratio=quartiles(t["rfig"] / (floor_s + t["zero"])),
                bonus_in_agent=quartiles(t["rfig"] - t["zero"]))


def print_agent_table(rows) -> None:
    print("\nPart 2: the whole PPO update, ms per update of all S seeds (median over rounds)")
    print(f"{'env':<17} {'S':>2} {'none':>8} {'zero':>8} {'stream':>8} {'rfig':>8} {'rfig-zero':>9} {'floor':>8}"
          "   rfig/(floor+zero) (IQR)")
    for r in rows:
        m = r["med"]
        print(f"{r['env']:<17} {r['seeds']:>2} {m['none'] * 1e3:8.2f} {m['zero'] * 1e3:8.2f}"
              f" {r['stream'][1] * 1e3:8.2f} {m['rfig'] * 1e3:8.2f} {r['bonus_in_agent'][1] * 1e3:9.2f}"
              f" {r['floor'] * 1e3:8.2f}   {r['ratio'][1]:.3f} ({r['ratio'][0]:.3f}-{r['ratio'][2]:.3f})")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", default="mountaincar,minatar_breakout")
    p.add_argument("--seeds", default="1,8", help="vmapped seeds, comma-separated")
    p.add_argument("--inverses", default="woodbury,exact,newton_schulz")
    p.add_argument("--rounds", type=int, default=11, help="interleaved timing rounds of the bonus parts")
    p.add_argument("--agent-rounds", type=int, default=7, help="interleaved windows per agent case (after a warm-up)")
    p.add_argument("--skip-agent", action="store_true", help="part 1 only")
    p.add_argument("--history", type=int, default=8, help="bonus updates before timing")
    p.add_argument("--loop", type=int, default=6,
                   help="updates per timed call (one lax.scan), like the 6 updates of a training window")
    p.add_argument("--stream-updates", type=int, default=48, help="updates that measure the refresh rate")
    p.add_argument("--refresh-rate", type=float, default=None, help="amortise the refresh at this rate instead")
    p.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                   help="wall: elapsed time; cpu: this process's CPU time (all its threads), which other "
                        "processes on the machine disturb much less, but which counts spin-waiting threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("overrides", nargs="*", help="extra Hydra overrides for every case, e.g. bonus.quad_blocks=1")
    args = p.parse_args(argv)
    envs = args.envs.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    inverses = args.inverses.split(",")
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; overrides: {args.overrides or 'none'}; "
          f"{args.rounds} rounds (bonus), {args.agent_rounds} rounds (agent); {args.clock} clock", flush=True)
    bonus_rows, agent_rows = [], []
    for env_name in envs:
        for s in seeds:
            for inverse in inverses:
                row = bonus_case(env_name, s, inverse, args)
                bonus_rows.append(row)
                print(f"  done: {env_name} S={s} {inverse}: bonus/floor {row['ratio'][1]:.3f}", flush=True)
            if not args.skip_agent:
                floor = statistics.median(r["floor"] for r in bonus_rows if r["env"] == env_name and r["seeds"] == s)
                agent_rows.append(agent_case(env_name, s, floor, args))
                print(f"  done: {env_name} S={s} agent: rfig/(floor+zero) {agent_rows[-1]['ratio'][1]:.3f}",
                      flush=True)
    print_bonus_table(bonus_rows)
    if agent_rows:
        print_agent_table(agent_rows)


if __name__ == "__main__":
    main()

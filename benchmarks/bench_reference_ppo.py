"""rfig-exp's plain PPO against a minimal PureJaxRL-style PPO, timed in pairs.

The reference is written from scratch here with the same settings as our PPO (32 envs x
128 steps, 4 epochs x 32 minibatches, separate (64, 64) tanh actor and critic MLPs, Adam
eps 1e-5 with global-norm clipping 0.5, linear lr annealing, clipped value loss) but one
value head, no observation normalisation and no intrinsic stream, and PureJaxRL's
``jax.random.permutation`` shuffle. Two variants: every episode end cuts the trace
(PureJaxRL's choice), and truncation-aware (bootstraps from V(final observation), the
extra critic pass rfig-exp does).

Each round times ``--windows`` evaluation windows (6 updates, 24,576 env steps per seed
each) of each of the three, interleaved, so that the machine's drift hits all of them alike;
compile is excluded. Ours runs as the training loop drives it (one jitted window at a time,
the next dispatched before the last one's metrics are read back); the reference runs the
same number of updates in one jitted ``vmap(train)`` over the seeds, PureJaxRL's form.
The ratio column is the median over rounds of (ours / reference) steps/s.

    python benchmarks/bench_reference_ppo.py                     # mountaincar, 1 seed, 20 rounds
    python benchmarks/bench_reference_ppo.py --env minatar_breakout --seeds 1,8 --rounds 10
    python benchmarks/bench_reference_ppo.py --env mountaincar,minatar_breakout --seeds 1,8,32 \
        --windows 8 --rounds 5                                   # on a GPU (see benchmarks/gpu_check.sh)
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

import flax.linen as nn  # noqa: E402
import gymnax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402


class Net(nn.Module):
    num_actions: int
    obs_ndim: int

    @nn.compact
    def __call__(self, x):
        x = x.reshape(x.shape[: x.ndim - self.obs_ndim] + (-1,))  # MinAtar grids, flattened

        def mlp(h):
            for _ in range(2):
                h = nn.tanh(nn.Dense(64, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(h))
            return h

        logits = nn.Dense(self.num_actions, kernel_init=nn.initializers.orthogonal(0.01))(mlp(x))
        value = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))(mlp(x))[..., 0]
        return logits, value


def make_train(gymnax_id, num_updates, num_envs=32, num_steps=128, epochs=4, minibatches=32, lr=3e-4, gamma=0.99,
               lam=0.95, clip_eps=0.2, vf_coef=0.5, ent_coef=0.01, max_grad_norm=0.5, truncation_aware=False):
    """``truncation_aware``: bootstrap from V(final observation) on a time-limit truncation (an
    extra critic pass over the batch, as rfig-exp does); otherwise every episode end is terminal."""
    # length: the reference is PureJaxRL's single-function layout on purpose, so that it reads as the
    # independent implementation it is compared with, not as a copy of our modules.
    env, env_params = gymnax.make(gymnax_id)
    n_act = env.action_space(env_params).n
    net = Net(n_act, len(env.observation_space(env_params).shape))
    batch = num_envs * num_steps
    mb_size = batch // minibatches
    schedule = lambda count: lr * (1.0 - (count // (minibatches * epochs)) / num_updates)  # noqa: E731
    tx = optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(schedule, eps=1e-5))
    v_reset = jax.vmap(env.reset, in_axes=(0, None))
    v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def loss_fn(params, obs, act, old_logp, old_v, adv, target):
        logits, v = net.apply(params, obs)
        logp_all = jax.nn.log_softmax(logits)
        logp = jnp.take_along_axis(logp_all, act[:, None], axis=-1)[:, 0]
        v_clip = old_v + jnp.clip(v - old_v, -clip_eps, clip_eps)
        v_loss = 0.5 * jnp.maximum((v - target) ** 2, (v_clip - target) ** 2).mean()
        ratio = jnp.exp(logp - old_logp)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv).mean()
        ent = -(jnp.exp(logp_all) * logp_all).sum(-1).mean()
        return pg + vf_coef * v_loss - ent_coef * ent

    def update(carry, _):
        params, opt_state, env_state, obs, key = carry

        def step(c, _):
            env_state, obs, key = c
            key, k_act, k_env = jax.random.split(key, 3)
            logits, v = net.apply(params, obs)
            act = jax.random.categorical(k_act, logits)
            logp = jnp.take_along_axis(jax.nn.log_softmax(logits), act[:, None], axis=-1)[:, 0]
            nobs, env_state, rew, term, trunc, _info = v_step(jax.random.split(k_env, num_envs), env_state, act,
                                                              env_params)
            done = jnp.logical_or(term, trunc)  # PureJaxRL-style: every episode end cuts the trace
            return (env_state, nobs, key), (obs, act, logp, v, rew, done.astype(jnp.float32),
                                            term.astype(jnp.float32), _info["final_observation"])

        (env_state, obs, key), (t_obs, t_act, t_logp, t_v, t_rew, t_done, t_term, t_final) = jax.lax.scan(
            step, (env_state, obs, key), None, num_steps)
        _, last_v = net.apply(params, obs)
        if truncation_aware:
            _, v_final = net.apply(params, t_final)
            boot_v, boot_mask = v_final, 1 - t_term
        else:
            boot_v = jnp.concatenate([t_v[1:], last_v[None]])
            boot_mask = 1 - t_done

        def gae_step(adv_next, x):
            rew, v, v_next, mask, done = x
            delta = rew + gamma * v_next * mask - v
            adv = delta + gamma * lam * (1 - done) * adv_next
            return adv, adv

        _, adv = jax.lax.scan(gae_step, jnp.zeros_like(last_v), (t_rew, t_v, boot_v, boot_mask, t_done),
                              reverse=True)
        target = adv + t_v
        data = tuple(x.reshape((batch,) + x.shape[2:]) for x in (t_obs, t_act, t_logp, t_v, adv, target))

        def epoch(c, k):
            perm = jax.random.permutation(k, batch)
            mbs = tuple(x[perm].reshape((minibatches, mb_size) + x.shape[1:]) for x in data)

            def sgd(c, mb):
                params, opt_state = c
                grads = jax.grad(loss_fn)(params, *mb)
                upd, opt_state = tx.update(grads, opt_state, params)
                return (optax.apply_updates(params, upd), opt_state), None

            return jax.lax.scan(sgd, c, mbs)[0], None

        key, k_sgd = jax.random.split(key)
        (params, opt_state), _ = jax.lax.scan(epoch, (params, opt_state), jax.random.split(k_sgd, epochs))
        return (params, opt_state, env_state, obs, key), t_rew.sum()

    def train(key):
        k_init, k_reset, key = jax.random.split(key, 3)
        params = net.init(k_init, jnp.zeros(env.observation_space(env_params).shape))
        obs, env_state = v_reset(jax.random.split(k_reset, num_envs), env_params)
        carry = (params, tx.init(params), env_state, obs, key)
        carry, rewards = jax.lax.scan(update, carry, None, num_updates)
        return carry[0], rewards

    return train


OURS = "rfig-exp PPO (bonus=none)"


def pipelined_windows(run_window, hp, windows: int):
    """Our training loop's device work as ``run_loop.py`` drives it: window w+1 is dispatched
    before window w's metrics come back to the host, which they do every window."""
    def run(states):
        pending = run_window(states, hp)
        for w in range(windows):
            states, metrics = pending
            if w + 1 < windows:
                pending = run_window(states, hp)
            jax.device_get(metrics)
        return states
    return run


def compare(env_name: str, num_seeds: int, windows: int, rounds: int) -> dict:
    """Steps/s of ours and the two references at ``num_seeds`` vmapped seeds, in interleaved
    rounds of ``windows`` windows each (6 updates, 24,576 steps per seed per window)."""
    from bench_throughput import build  # noqa: E402  (benchmarks/ is on sys.path when run as a script)

    from rfig_exp.envs import declared_envs

    suite, gymnax_id = declared_envs()[env_name].settings.suite, declared_envs()[env_name].suite_id
    if suite != "gymnax":
        raise SystemExit(f"the reference PPO runs gymnax environments, not {suite} ({env_name})")
    t0 = time.perf_counter()
    run_window, states, hp, spec = build(env_name, "none", num_seeds, [])
    updates = spec.train.updates_per_window
    ours_run = pipelined_windows(run_window, hp, windows)
    holder = [states]

    def ours():
        holder[0] = jax.block_until_ready(ours_run(holder[0]))

    cases = {OURS: ours}
    keys = jax.random.split(jax.random.PRNGKey(1), num_seeds)
    for truncation_aware in (False, True):
        # PureJaxRL's form: the whole stretch is one jitted function, vmapped over seeds.
        train = jax.jit(jax.vmap(make_train(gymnax_id, updates * windows, truncation_aware=truncation_aware)))
        compiled = train.lower(keys).compile()
        name = "reference, truncation-aware" if truncation_aware else "reference, done = terminal"
        cases[name] = lambda c=compiled: jax.block_until_ready(c(keys))
    print(f"  {env_name} S={num_seeds}: compiled in {time.perf_counter() - t0:.1f} s; timing {rounds} rounds",
          flush=True)
    steps = windows * updates * spec.train.batch_size * num_seeds
    rates = {name: [] for name in cases}
    for run in cases.values():  # warm caches and allocators
        run()
    for _ in range(rounds):
        for name, run in cases.items():
            t0 = time.perf_counter()
            run()
            rates[name].append(steps / (time.perf_counter() - t0))
    ours_rates = np.asarray(rates[OURS])
    return {name: (statistics.median(r), statistics.median(ours_rates / np.asarray(r))) for name, r in rates.items()}


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="mountaincar",
                        help="rfig-exp env names of gymnax environments, comma-separated")
    parser.add_argument("--seeds", default="1", help="vmapped seeds, comma-separated (e.g. 1,8,32 on a GPU)")
    parser.add_argument("--windows", type=int, default=1, help="windows per timed round (more on a GPU)")
    parser.add_argument("--rounds", type=int, default=20, help="interleaved timing rounds")
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; {args.windows} window(s) of 6 updates "
          f"(24,576 env steps per seed) per round, {args.rounds} rounds")
    table = []
    for env_name in args.env.split(","):
        for num_seeds in (int(s) for s in args.seeds.split(",")):
            for name, (rate, ratio) in compare(env_name, num_seeds, args.windows, args.rounds).items():
                table.append((env_name, num_seeds, name, rate, ratio))
    print(f"\n{'env':<17} {'S':>3} {'':30s} {'median steps/s':>15} {'ours / this':>12}")
    for env_name, num_seeds, name, rate, ratio in table:
        print(f"{env_name:<17} {num_seeds:>3} {name:30s} {rate:>15,.0f} {ratio:>12.2f}")


if __name__ == "__main__":
    main()

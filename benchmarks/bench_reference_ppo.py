"""rfig-exp's plain PPO against a minimal PureJaxRL-style PPO, timed in pairs.

The reference is written from scratch here with the same settings as our PPO (32 envs x
128 steps, 4 epochs x 32 minibatches, separate (64, 64) tanh actor and critic MLPs, Adam
eps 1e-5 with global-norm clipping 0.5, linear lr annealing, clipped value loss) but one
value head, no observation normalisation and no intrinsic stream, and PureJaxRL's
``jax.random.permutation`` shuffle. Two variants: every episode end cuts the trace
(PureJaxRL's choice), and truncation-aware (bootstraps from V(final observation), the
extra critic pass rfig-exp does).

Each round times one evaluation window (6 updates, 24,576 env steps) of each of the
three, interleaved, so that the machine's drift hits all of them alike; compile is
excluded. The ratio column is the median over rounds of (ours / reference) steps/s.

    python benchmarks/bench_reference_ppo.py                     # mountaincar, 20 rounds
    python benchmarks/bench_reference_ppo.py --env minatar_breakout --rounds 10
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import rfig_exp  # noqa: E402,F401  (XLA CPU flags before jax)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="mountaincar", help="rfig-exp env name of a gymnax environment")
    parser.add_argument("--rounds", type=int, default=20, help="interleaved timing rounds")
    args = parser.parse_args()

    from bench_throughput import build  # noqa: E402  (benchmarks/ is on sys.path when run as a script)

    from rfig_exp.envs import REGISTRY

    suite, gymnax_id = REGISTRY[args.env]
    assert suite == "gymnax", f"the reference PPO runs gymnax environments, not {suite}"
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; {args.env}, 1 seed, "
          f"one window (6 updates, 24,576 env steps) per round, {args.rounds} rounds")

    run_window, states, hp, spec = build(args.env, "none", 1, [])
    updates = spec.train.updates_per_window
    holder = [states]

    def ours():
        holder[0], metrics = run_window(holder[0], hp)
        jax.block_until_ready(metrics)

    cases = {OURS: ours}
    for truncation_aware in (False, True):
        train = jax.jit(make_train(gymnax_id, updates, truncation_aware=truncation_aware))
        compiled = train.lower(jax.random.PRNGKey(0)).compile()
        name = "reference, truncation-aware" if truncation_aware else "reference, done = terminal"
        cases[name] = lambda c=compiled: jax.block_until_ready(c(jax.random.PRNGKey(1)))

    steps = updates * spec.train.batch_size
    rates = {name: [] for name in cases}
    for _ in range(2):  # warm caches and allocators
        for run in cases.values():
            run()
    for _ in range(args.rounds):
        for name, run in cases.items():
            t0 = time.perf_counter()
            run()
            rates[name].append(steps / (time.perf_counter() - t0))
    ours_rates = np.asarray(rates[OURS])
    print(f"{'':30s} {'median steps/s':>15} {'best':>10} {'ours / this (median of rounds)':>31}")
    for name, r in rates.items():
        ratio = statistics.median(ours_rates / np.asarray(r))
        print(f"{name:30s} {statistics.median(r):>15,.0f} {max(r):>10,.0f} {ratio:>31.2f}")


if __name__ == "__main__":
    main()

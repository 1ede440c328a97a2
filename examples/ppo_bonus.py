"""PPO with an exploration bonus from ``rfig_exp.bonuses`` on gymnax MountainCar-v0, in one file.

A PureJaxRL-style training loop (one jitted ``lax.scan`` of PPO updates, seeds vmapped) that uses
nothing of rfig_exp but its bonuses' public API: ``create`` makes a bonus by name, and the loop
does around it what docs/library.md says an agent must do (observation normalisation, the
intrinsic-reward scaling, a second value head, a non-episodic intrinsic return)::

    python examples/ppo_bonus.py                         # RFIG, 1 seed, 1M steps
    python examples/ppo_bonus.py --bonus rnd --seeds 3 --set hidden=[64,64]
"""

from __future__ import annotations

import argparse
import ast
import json
import time

import rfig_exp

rfig_exp.set_cpu_flags()  # XLA's CPU flags and one OpenBLAS thread, before jax is imported

import flax.linen as nn  # noqa: E402
import gymnax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

from rfig_exp.bonuses import BonusBatch, DiscreteSpace, bonus_names, create  # noqa: E402

CONFIG = dict(total_timesteps=1_000_000, num_envs=32, num_steps=128, update_epochs=4, num_minibatches=32,
              lr=3e-4, anneal_lr=True, clip_eps=0.2, vf_coef=0.5, ent_coef=0.01, max_grad_norm=0.5, gamma=0.99,
              gamma_int=0.99, gae_lambda=0.95, ext_coef=1.0, beta=0.5, obs_clip=5.0, warmup_steps=128,
              final_updates=6)  # final_updates: the updates the final return is averaged over (24576 steps)


class ActorCritic(nn.Module):
    """``obs [..., d] -> (logits [..., A], values [..., 2])``: separate 64-64 tanh MLPs; the critic's
    two heads are the extrinsic (column 0) and intrinsic (column 1) values."""

    num_actions: int

    @nn.compact
    def __call__(self, x):
        def mlp(x):
            for _ in range(2):
                x = nn.tanh(nn.Dense(64, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x))
            return x

        logits = nn.Dense(self.num_actions, kernel_init=nn.initializers.orthogonal(0.01))(mlp(x))
        return logits, nn.Dense(2, kernel_init=nn.initializers.orthogonal(1.0))(mlp(x))


def rms_update(rms, x):
    """Running mean/var/count merged with a batch ``x [N, ...]`` (parallel variance)."""
    mean, var, count = rms
    n = x.shape[0]
    delta, total = x.mean(0) - mean, count + n
    m2 = var * count + x.var(0) * n + delta**2 * count * n / total
    return mean + delta * n / total, m2 / total, total


def normalize(rms, x, clip):
    return jnp.clip((x - rms[0]) / jnp.sqrt(rms[1] + 1e-8), -clip, clip)


def gae(rewards, values, next_values, bootstrap, trace, gamma, lam):
    """``A_t = delta_t + gamma lam trace_t A_{t+1}``, ``delta_t = r_t + gamma bootstrap_t V'_t - V_t``; ``[T, B]``."""
    def step(adv, xs):
        delta, tr = xs
        adv = delta + gamma * lam * tr * adv
        return adv, adv

    deltas = rewards + gamma * bootstrap * next_values - values
    return jax.lax.scan(step, jnp.zeros_like(deltas[0]), (deltas, trace), reverse=True)[1]


# length: PureJaxRL's shape, a factory of closures (init, update, train) that share the env, network and
# bonus, so that jit sees them as constants
def make_train(config, bonus_name, overrides):
    """``train(keys [S, 2]) -> (returns, episodes) [updates, S]``: the summed returns of the episodes
    that ended in each update, and their number, per seed."""
    c = config
    env, env_params = gymnax.make("MountainCar-v0")
    obs_shape, num_actions = env.observation_space(env_params).shape, env.action_space(env_params).n
    batch_size, num_envs, num_steps = c["num_envs"] * c["num_steps"], c["num_envs"], c["num_steps"]
    num_updates = c["total_timesteps"] // batch_size
    bonus, bonus_hp = create(bonus_name, obs_shape, DiscreteSpace(num_actions), batch_size, **overrides)
    network = ActorCritic(num_actions)
    steps_per_update = c["num_minibatches"] * c["update_epochs"]
    lr = (lambda n: c["lr"] * (1.0 - (n // steps_per_update) / num_updates)) if c["anneal_lr"] else c["lr"]
    tx = optax.chain(optax.clip_by_global_norm(c["max_grad_norm"]), optax.adam(lr, eps=1e-5))
    v_reset = jax.vmap(env.reset, in_axes=(0, None))
    v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def init(key):
        k_net, k_warm, k_bonus, k_reset, k_run = jax.random.split(key, 5)
        obs, env_state = v_reset(jax.random.split(k_warm, num_envs), env_params)

        def warm_step(carry, k):  # a random policy's states set the first observation statistics
            k_act, k_env = jax.random.split(k)
            action = jax.random.randint(k_act, (num_envs,), 0, num_actions)
            _, state, _, _, _, info = v_step(jax.random.split(k_env, num_envs), carry, action, env_params)
            return state, info["final_observation"]

        _, warm = jax.lax.scan(warm_step, env_state, jax.random.split(k_warm, c["warmup_steps"]))
        warm = jnp.concatenate([obs[None], warm]).reshape((-1,) + obs_shape)
        obs_rms = rms_update((jnp.zeros(obs_shape), jnp.ones(obs_shape), 0.0), warm)
        bonus_state = bonus.init(k_bonus, normalize(obs_rms, warm, c["obs_clip"]), bonus_hp)
        params = network.init(k_net, jnp.zeros(obs_shape))
        obs, env_state = v_reset(jax.random.split(k_reset, num_envs), env_params)
        int_rms = (jnp.zeros(()), jnp.ones(()), 0.0)
        return (params, tx.init(params), obs_rms, int_rms, jnp.zeros(num_envs), bonus_state, env_state, obs,
                jnp.zeros(num_envs), k_run)

    def update(runner, _):
        params, opt_state, obs_rms, int_rms, int_filter, bonus_state, env_state, obs, ep_ret, key = runner
        key, k_roll, k_bonus, k_sgd = jax.random.split(key, 4)

        def step(carry, k):
            env_state, obs, ep_ret = carry
            k_act, k_env = jax.random.split(k)
            logits, values = network.apply(params, normalize(obs_rms, obs, c["obs_clip"]))
            action = jax.random.categorical(k_act, logits)
            obs2, env_state, reward, term, trunc, info = v_step(jax.random.split(k_env, num_envs), env_state,
                                                                action, env_params)
            ep_ret = ep_ret + reward
            done = term | trunc
            out = dict(obs=obs, action=action, logp=jax.nn.log_softmax(logits)[jnp.arange(num_envs), action],
                       values=values, reward=reward, term=term, trunc=trunc & ~term,
                       final_obs=info["final_observation"], ended=jnp.where(done, ep_ret, 0.0), done=done)
            return (env_state, obs2, jnp.where(done, 0.0, ep_ret)), out

        (env_state, last_obs, ep_ret), tr = jax.lax.scan(step, (env_state, obs, ep_ret),
                                                        jax.random.split(k_roll, num_steps))
        # The bonus sees states normalised by the statistics updated with this batch, and rewards
        # with its state from before the batch's update (as the project's trainer does).
        new_obs_rms = rms_update(obs_rms, tr["obs"].reshape((-1,) + obs_shape))
        batch = BonusBatch(obs=normalize(new_obs_rms, tr["obs"], c["obs_clip"]), actions=tr["action"],
                           next_obs=normalize(new_obs_rms, tr["final_obs"], c["obs_clip"]),
                           terminated=tr["term"], truncated=tr["trunc"])
        r_int, _ = bonus.reward(bonus_state, batch, bonus_hp)
        bonus_state, _ = bonus.update(bonus_state, batch, k_bonus, bonus_hp)

        def values_of(x):  # with the parameters and statistics the rollout acted with
            return network.apply(params, normalize(obs_rms, x, c["obs_clip"]))[1]

        # extrinsic: episodic, bootstraps from V(s') of the true next state unless terminated
        term, trunc = tr["term"].astype(jnp.float32), tr["trunc"].astype(jnp.float32)
        adv_ext = gae(tr["reward"], tr["values"][..., 0], values_of(tr["final_obs"])[..., 0], 1.0 - term,
                      1.0 - jnp.maximum(term, trunc), c["gamma"], c["gae_lambda"])
        # intrinsic: divided by the running std of its discounted return, one stream per env across
        # episode ends (non-episodic), bootstrapped from the intrinsic value of the next observation
        int_filter, returns = jax.lax.scan(lambda f, r: (c["gamma_int"] * f + r,) * 2, int_filter, r_int)
        int_rms = rms_update(int_rms, returns.reshape(-1))
        r_int = r_int / jnp.sqrt(int_rms[1] + 1e-8)
        v_int = tr["values"][..., 1]
        next_v_int = jnp.concatenate([v_int[1:], values_of(last_obs)[None, :, 1]])
        ones = jnp.ones_like(r_int)
        adv_int = gae(r_int, v_int, next_v_int, ones, ones, c["gamma_int"], c["gae_lambda"])
        if not bonus.intrinsic:  # bonus "none": plain PPO, no intrinsic stream at all
            adv_int = jnp.zeros_like(adv_int)
        data = dict(obs=normalize(obs_rms, tr["obs"], c["obs_clip"]), action=tr["action"], logp=tr["logp"],
                    adv=c["ext_coef"] * adv_ext + c["beta"] * adv_int, values=tr["values"],
                    targets=jnp.stack([adv_ext + tr["values"][..., 0], adv_int + v_int], -1))
        data = jax.tree.map(lambda x: x.reshape((batch_size,) + x.shape[2:]), data)

        def loss_fn(params, mb):
            logits, values = network.apply(params, mb["obs"])
            logp = jax.nn.log_softmax(logits)
            ratio = jnp.exp(jnp.take_along_axis(logp, mb["action"][:, None], 1)[:, 0] - mb["logp"])
            adv = (mb["adv"] - mb["adv"].mean()) / (mb["adv"].std() + 1e-8)
            pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - c["clip_eps"], 1 + c["clip_eps"]) * adv).mean()
            clipped = mb["values"] + jnp.clip(values - mb["values"], -c["clip_eps"], c["clip_eps"])
            v_loss = 0.5 * jnp.maximum((values - mb["targets"]) ** 2, (clipped - mb["targets"]) ** 2).mean(0)
            v_loss = v_loss.sum() if bonus.intrinsic else v_loss[0]
            entropy = -(jnp.exp(logp) * logp).sum(-1).mean()
            return pg + c["vf_coef"] * v_loss - c["ent_coef"] * entropy

        def epoch(carry, k):
            perm = jax.random.permutation(k, batch_size)
            mbs = jax.tree.map(lambda x: x[perm].reshape((c["num_minibatches"], -1) + x.shape[1:]), data)

            def sgd(carry, mb):
                params, opt_state = carry
                updates, opt_state = tx.update(jax.grad(loss_fn)(params, mb), opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), None

            return jax.lax.scan(sgd, carry, mbs)[0], None

        (params, opt_state), _ = jax.lax.scan(epoch, (params, opt_state), jax.random.split(k_sgd, c["update_epochs"]))
        finished = (tr["ended"].sum(), tr["done"].sum())  # the returns of episodes that ended, and how many
        runner = (params, opt_state, new_obs_rms, int_rms, int_filter, bonus_state, env_state, last_obs, ep_ret, key)
        return runner, finished

    def train(keys):
        def body(runners, _):
            runners, finished = jax.vmap(update)(runners, None)
            if bonus.refresh is not None:  # outside the vmap, so the costly branch runs only when asked for
                # runners[5]: the seeds' bonus states
                need = jax.vmap(bonus.needs_refresh)(runners[5])
                refreshed = jax.lax.cond(need.any(), lambda b: jax.tree.map(
                    lambda new, old: jnp.where(need.reshape((-1,) + (1,) * (old.ndim - 1)), new, old),
                    jax.vmap(bonus.refresh, in_axes=(0, None))(b, bonus_hp), b), lambda b: b, runners[5])
                runners = runners[:5] + (refreshed,) + runners[6:]
            return runners, finished

        return jax.lax.scan(body, jax.vmap(init)(keys), None, length=num_updates)[1]

    return train


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bonus", default="rfig", help=f"one of {', '.join(bonus_names())}")
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1, vmapped")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="a setting of the bonus, or of CONFIG (total_timesteps=200000)")
    args = parser.parse_args(argv)
    config, overrides = dict(CONFIG), {}
    for item in args.set:
        key, _, text = item.partition("=")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text  # a word, e.g. inverse=exact
        (config if key in config else overrides)[key] = value
    start = time.time()
    keys = jnp.stack([jax.random.PRNGKey(seed) for seed in range(args.seeds)])
    finished_returns, finished_count = jax.jit(make_train(config, args.bonus, overrides))(keys)
    last = slice(-config["final_updates"], None)  # [updates, seeds]: the last updates' finished episodes
    returns, counts = np.asarray(finished_returns[last].sum(0)), np.asarray(finished_count[last].sum(0))
    for seed, (total, count) in enumerate(zip(returns, counts)):
        ret = round(float(total / count), 2) if count else None  # None: no episode ended in those updates
        print(json.dumps({"bonus": args.bonus, "seed": seed, "final_return": ret,
                          "success": ret is not None and ret > -200.0}))
    print(f"{args.seeds} seeds x {config['total_timesteps']} steps in {time.time() - start:.0f}s")


if __name__ == "__main__":
    main()

"""PPO with an exploration bonus on gymnax MountainCar-v0, in one file and in PureJaxRL's shape:
``jax.jit(jax.vmap(make_train(...)))(keys)``, one ``lax.scan`` of PPO updates per seed.

The bonus, and what the agent does around it (observation and intrinsic-reward normalisation, the
order of reward and update, RFIG's refresh, the non-episodic intrinsic advantage and its weight),
come from ``rfig_exp.agents.intrinsic.IntrinsicReward``; the rest is plain PPO with a second value
head for the intrinsic return (docs/library.md)::

    python examples/ppo_bonus.py                                   # RFIG, 1 seed, 1M steps
    python examples/ppo_bonus.py --bonus rnd --seeds 3 --set total_timesteps=200000 hidden=[64,64]
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

from rfig_exp.agents.intrinsic import IntrinsicReward  # noqa: E402
from rfig_exp.bonuses import bonus_names, settings_class  # noqa: E402
from rfig_exp.config.errors import ConfigError  # noqa: E402

# One call trains every seed, so no host work overlaps it: run it inline. Dispatched asynchronously,
# jaxlib 0.10's CPU client left that call waiting for ever (every thread idle) in 7 of 64 runs of a
# 2-seed RND case on a loaded 2-core machine; inline, in none of 30 (docs/speed.md, XLA CPU wedges).
# launch.py keeps asynchronous dispatch: it dispatches window w+1 before reading window w.
jax.config.update("jax_cpu_enable_async_dispatch", False)

# name: (default, meaning); the agent's share of these is the paper's (conf/agent/ppo.yaml)
SETTINGS = {
    "total_timesteps": (1_000_000, "env steps per seed (whole updates of num_envs * num_steps)"),
    "num_envs": (32, "parallel envs"), "num_steps": (128, "steps per env per rollout"),
    "update_epochs": (4, "epochs over each rollout"), "num_minibatches": (32, "minibatches per epoch"),
    "lr": (3e-4, "Adam's learning rate"), "anneal_lr": (True, "anneal the learning rate linearly to 0"),
    "clip_eps": (0.2, "PPO's clip, of the ratio and of both value heads"),
    "vf_coef": (0.5, "value loss weight"), "ent_coef": (0.01, "entropy bonus weight"),
    "max_grad_norm": (0.5, "global gradient-norm clip"), "gamma": (0.99, "extrinsic discount"),
    "gae_lambda": (0.95, "GAE lambda of both advantages"), "gamma_int": (0.99, "intrinsic discount"),
    "ext_coef": (1.0, "extrinsic advantage weight (0: reward-free)"), "beta": (0.5, "intrinsic advantage weight"),
    "obs_clip": (5.0, "clip of the normalised observations"),
    "warmup_steps": (128, "random-policy steps per env that start the observation statistics"),
    "final_updates": (6, "updates whose finished episodes give the final return (6: 24,576 steps)"),
}
CONFIG = {name: default for name, (default, _) in SETTINGS.items()}
AGENT_SIDE = ("beta", "gamma_int", "ext_coef", "obs_clip", "warmup_steps")  # IntrinsicReward's settings


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


def gae(rewards, values, next_values, bootstrap, trace, gamma, lam):
    """``A_t = delta_t + gamma lam trace_t A_{t+1}``, ``delta_t = r_t + gamma bootstrap_t V'_t - V_t``; ``[T, B]``."""
    def step(adv, xs):
        delta, tr = xs
        adv = delta + gamma * lam * tr * adv
        return adv, adv

    deltas = rewards + gamma * bootstrap * next_values - values
    return jax.lax.scan(step, jnp.zeros_like(deltas[0]), (deltas, trace), reverse=True)[1]


def num_updates(config) -> int:
    """Whole updates in the budget; ConfigError when it holds none."""
    batch = config["num_envs"] * config["num_steps"]
    if config["total_timesteps"] < batch:
        raise ConfigError(f"total_timesteps={config['total_timesteps']} is smaller than one update "
                          f"(num_envs * num_steps = {batch} steps)")
    return config["total_timesteps"] // batch


# length: PureJaxRL's shape, a factory of closures (train, update, loss) that share the env, network
# and bonus, so that jit sees them as constants
def make_train(config, bonus_name, overrides):
    """``train(key) -> (returns, episodes, r_int) [updates]``: the summed returns of the episodes that
    ended in each update, their number, and the mean scaled intrinsic reward, for one seed."""
    c = config
    env, env_params = gymnax.make("MountainCar-v0")
    num_envs, num_steps, updates = c["num_envs"], c["num_steps"], num_updates(c)
    batch_size = num_envs * num_steps
    explore = IntrinsicReward.create(bonus_name, env.observation_space(env_params), env.action_space(env_params),
                                     num_envs, num_steps, **{k: c[k] for k in AGENT_SIDE}, **overrides)
    network = ActorCritic(env.action_space(env_params).n)
    steps_per_update = c["num_minibatches"] * c["update_epochs"]
    lr = (lambda n: c["lr"] * (1.0 - (n // steps_per_update) / updates)) if c["anneal_lr"] else c["lr"]
    tx = optax.chain(optax.clip_by_global_norm(c["max_grad_norm"]), optax.adam(lr, eps=1e-5))
    v_reset = jax.vmap(env.reset, in_axes=(0, None))
    v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def train(key):
        k_net, k_warm, k_bonus, k_reset, k_run = jax.random.split(key, 5)
        x_state = explore.init(k_bonus, explore.warmup(k_warm, env, env_params))
        params = network.init(k_net, jnp.zeros(env.observation_space(env_params).shape))
        obs, env_state = v_reset(jax.random.split(k_reset, num_envs), env_params)

        def update(runner, _):
            params, opt_state, x_state, env_state, obs, ep_ret, key = runner
            key, k_roll, k_bonus, k_sgd = jax.random.split(key, 4)

            def step(carry, k):
                env_state, obs, ep_ret = carry
                k_act, k_env = jax.random.split(k)
                logits, values = network.apply(params, explore.normalize(x_state, obs))
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
            new_x_state, r_int, _ = explore.step(x_state, tr["obs"], tr["action"], tr["final_obs"], tr["term"],
                                                 tr["trunc"], k_bonus)

            def values_of(x):  # with the parameters and statistics the rollout acted with
                return network.apply(params, explore.normalize(x_state, x))[1]

            # extrinsic: episodic, bootstraps from V(s') of the true next state unless terminated
            term, trunc = tr["term"].astype(jnp.float32), tr["trunc"].astype(jnp.float32)
            adv_ext = gae(tr["reward"], tr["values"][..., 0], values_of(tr["final_obs"])[..., 0], 1.0 - term,
                          1.0 - jnp.maximum(term, trunc), c["gamma"], c["gae_lambda"])
            adv, adv_int = explore.advantage(adv_ext, r_int, tr["values"][..., 1], values_of(last_obs)[..., 1],
                                             c["gae_lambda"])
            data = dict(obs=explore.normalize(x_state, tr["obs"]), action=tr["action"], logp=tr["logp"], adv=adv,
                        values=tr["values"], targets=tr["values"] + jnp.stack([adv_ext, adv_int], -1))
            data = jax.tree.map(lambda x: x.reshape((batch_size,) + x.shape[2:]), data)

            def loss_fn(params, mb):
                logits, values = network.apply(params, mb["obs"])
                logp = jax.nn.log_softmax(logits)
                ratio = jnp.exp(jnp.take_along_axis(logp, mb["action"][:, None], 1)[:, 0] - mb["logp"])
                adv = (mb["adv"] - mb["adv"].mean()) / (mb["adv"].std() + 1e-8)
                pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - c["clip_eps"], 1 + c["clip_eps"]) * adv).mean()
                clipped = mb["values"] + jnp.clip(values - mb["values"], -c["clip_eps"], c["clip_eps"])
                v_loss = 0.5 * jnp.maximum((values - mb["targets"]) ** 2, (clipped - mb["targets"]) ** 2).mean(0)
                v_loss = v_loss.sum() if explore.bonus.intrinsic else v_loss[0]  # bonus "none": plain PPO
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

            (params, opt_state), _ = jax.lax.scan(epoch, (params, opt_state),
                                                  jax.random.split(k_sgd, c["update_epochs"]))
            finished = (tr["ended"].sum(), tr["done"].sum(), r_int.mean())
            return (params, opt_state, new_x_state, env_state, last_obs, ep_ret, key), finished

        runner = (params, tx.init(params), x_state, env_state, obs, jnp.zeros(num_envs), k_run)
        return jax.lax.scan(update, runner, None, length=updates)[1]

    return train


def parse_settings(items):
    """``KEY=VALUE`` items -> (the agent's settings, the bonus's): a key of SETTINGS is the agent's."""
    config, overrides = dict(CONFIG), {}
    for item in items:
        key, _, text = item.partition("=")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text  # a word, e.g. inverse=exact
        (config if key in config else overrides)[key] = value
    num_updates(config)
    return config, overrides


def main(argv=None):
    agent = "\n".join(f"  {k}={default}: {meaning}" for k, (default, meaning) in SETTINGS.items())
    own = "\n".join(f"  {name}: {', '.join(k for k in settings_class(name).defaults() if k != 'beta') or '-'}"
                    for name in bonus_names())
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=f"the agent's settings (--set KEY=VALUE), with their defaults:\n{agent}\n"
                                            f"each bonus's own settings (--set KEY=VALUE; their defaults and meanings: "
                                            f"conf/bonus/<name>.yaml in the project's checkout):\n{own}")
    parser.add_argument("--bonus", default="rfig", help=f"one of {', '.join(bonus_names())} (default: rfig)")
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1, vmapped (default: 1)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="a setting of the agent or of the bonus (below)")
    args = parser.parse_args(argv)
    try:
        config, overrides = parse_settings(args.set)
        train = jax.jit(jax.vmap(make_train(config, args.bonus, overrides)))
    except ConfigError as err:
        parser.exit(2, f"{parser.prog}: error: {err}\n")
    start = time.time()
    returns, counts, r_int = jax.block_until_ready(train(jnp.stack([jax.random.PRNGKey(s) for s in range(args.seeds)])))
    last = slice(-config["final_updates"], None)  # [seeds, updates]: the last updates' finished episodes
    returns, counts = np.asarray(returns[:, last].sum(1)), np.asarray(counts[:, last].sum(1))
    for seed, (total, count) in enumerate(zip(returns, counts)):
        ret = round(float(total / count), 2) if count else None  # None: no episode ended in those updates
        print(json.dumps({"bonus": args.bonus, "seed": seed, "final_return": ret,
                          "success": ret is not None and ret > -200.0,
                          "r_int_first_last": [float(r_int[seed, 0]), float(r_int[seed, -1])]}))
    print(f"{args.seeds} seeds x {num_updates(config) * config['num_envs'] * config['num_steps']} steps in "
          f"{time.time() - start:.0f}s")


if __name__ == "__main__":
    main()

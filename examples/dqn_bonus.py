"""DQN with an exploration bonus on gymnax Breakout-MinAtar, in one file and in the shape of PureJaxRL's
``dqn.py``: ``jax.jit(jax.vmap(make_train(...)))(keys)``, one ``lax.scan`` per seed whose every
iteration steps each env once, adds the transitions to a replay buffer and takes a TD step on a
minibatch sampled from it, against a target network.

The bonus comes from ``rfig_exp.agents.replay.ReplayIntrinsic``: as the transitions are added, it
gives the reward to store in their place, ``ext_coef * r_ext + beta * r_int``, and learns from them
once (docs/library-dqn.md says why there, and not per sampled minibatch)::

    python examples/dqn_bonus.py                                   # RFIG, 1 seed, 200k steps
    python examples/dqn_bonus.py --bonus rnd --seeds 2 --set total_timesteps=50000 hidden=[64,64]
    python examples/dqn_bonus.py --bonus none                      # the same DQN without a bonus
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

from rfig_exp.agents.replay import ReplayIntrinsic  # noqa: E402
from rfig_exp.bonuses import bonus_names, settings_class  # noqa: E402
from rfig_exp.config.errors import ConfigError  # noqa: E402

# name: (default, meaning); the DQN's are PureJaxRL dqn.py's, but for 16 envs (RFIG keeps
# floor(16 * 0.0625) = 1 state of each step), a larger buffer, and learning from 5k steps
SETTINGS = {
    "env": ("Breakout-MinAtar", "a gymnax env with discrete actions"),
    "total_timesteps": (200_000, "env steps per seed (whole iterations of num_envs steps)"),
    "num_envs": (16, "parallel envs, each stepped once per iteration"),
    "buffer_size": (50_000, "transitions the replay buffer keeps (the oldest overwritten)"),
    "batch_size": (128, "transitions per TD step"), "lr": (2.5e-4, "Adam's learning rate"),
    "eps_start": (1.0, "epsilon-greedy at the start"), "eps_finish": (0.05, "epsilon-greedy after the anneal"),
    "eps_anneal": (100_000, "env steps over which epsilon falls linearly"),
    "learning_starts": (5_000, "env steps before the first TD step"),
    "target_update_interval": (500, "env steps between target-network updates"), "tau": (1.0, "target update rate"),
    "gamma": (0.99, "discount of the TD target"),
    "beta": (0.5, "intrinsic reward weight"), "ext_coef": (1.0, "extrinsic reward weight (0: reward-free)"),
    "gamma_int": (0.99, "discount of the intrinsic return whose std scales the intrinsic reward"),
    "obs_clip": (5.0, "clip of the normalised observations the bonus sees"),
    "warmup_steps": (128, "random-policy steps per env that start the observation statistics"),
    "final_iterations": (1_000, "iterations whose finished episodes give the final return"),
}
CONFIG = {name: default for name, (default, _) in SETTINGS.items()}
AGENT_SIDE = ("beta", "gamma_int", "ext_coef", "obs_clip", "warmup_steps")  # ReplayIntrinsic's settings


class QNetwork(nn.Module):
    """``obs [N, *obs] -> Q [N, A]``: dqn.py's 120-84 ReLU MLP over the flattened observation."""

    num_actions: int

    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], -1)).astype(jnp.float32)
        x = nn.relu(nn.Dense(84)(nn.relu(nn.Dense(120)(x))))
        return nn.Dense(self.num_actions)(x)


def num_iterations(config) -> int:
    """Whole iterations in the budget; ConfigError when it holds none."""
    if config["total_timesteps"] < config["num_envs"]:
        raise ConfigError(f"total_timesteps={config['total_timesteps']} is smaller than one iteration "
                          f"(num_envs = {config['num_envs']} steps)")
    return config["total_timesteps"] // config["num_envs"]


def buffer_add(buffer, index, transitions):
    """The buffer ``{name: [rows, B, ...]}`` with row ``index % rows`` replaced by ``transitions [B, ...]``."""
    rows = jax.tree.leaves(buffer)[0].shape[0]
    return jax.tree.map(lambda b, x: b.at[index % rows].set(x.astype(b.dtype)), buffer, transitions)


def buffer_sample(buffer, filled, key, n):
    """``n`` transitions drawn uniformly from the ``filled`` rows of every env."""
    rows, envs = jax.tree.leaves(buffer)[0].shape[:2]
    k_row, k_env = jax.random.split(key)
    row = jax.random.randint(k_row, (n,), 0, jnp.minimum(filled, rows))
    env = jax.random.randint(k_env, (n,), 0, envs)
    return jax.tree.map(lambda b: b[row, env], buffer)


# length: dqn.py's shape, a factory of closures (train, iteration, learn) that share the env, network and
# bonus, so that jit sees them as constants
def make_train(config, bonus_name, overrides):
    """``train(key) -> metrics [iterations]``: the summed returns of the episodes that ended in each
    iteration and their number, the raw and scaled intrinsic reward's means, and the TD loss."""
    c = config
    env, env_params = gymnax.make(c["env"])
    num_envs, iterations = c["num_envs"], num_iterations(c)
    obs_space, num_actions = env.observation_space(env_params), env.action_space(env_params).n
    replay = ReplayIntrinsic.create(bonus_name, obs_space, env.action_space(env_params), num_envs,
                                    **{k: c[k] for k in AGENT_SIDE}, **overrides)
    network = QNetwork(num_actions)
    tx = optax.adam(c["lr"])
    v_reset = jax.vmap(env.reset, in_axes=(0, None))
    v_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    rows = max(c["buffer_size"] // num_envs, 1)

    def train(key):
        k_net, k_warm, k_bonus, k_reset, k_run = jax.random.split(key, 5)
        x_state = replay.init(k_bonus, replay.warmup(k_warm, env, env_params))
        params = network.init(k_net, jnp.zeros((1,) + obs_space.shape))
        obs, env_state = v_reset(jax.random.split(k_reset, num_envs), env_params)
        buffer = {"obs": jnp.zeros((rows, num_envs) + obs_space.shape, obs.dtype), "action": jnp.zeros((rows, num_envs),
                  jnp.int32), "reward": jnp.zeros((rows, num_envs)), "next_obs": jnp.zeros((rows, num_envs) +
                  obs_space.shape, obs.dtype), "terminated": jnp.zeros((rows, num_envs), bool)}

        def learn(params, target, opt_state, buffer, filled, key):
            batch = buffer_sample(buffer, filled, key, c["batch_size"])
            q_next = network.apply(target, batch["next_obs"]).max(-1)
            td_target = batch["reward"] + c["gamma"] * (1.0 - batch["terminated"]) * q_next

            def loss_fn(params):
                q = network.apply(params, batch["obs"])[jnp.arange(c["batch_size"]), batch["action"]]
                return ((q - td_target) ** 2).mean()

            loss, grads = jax.value_and_grad(loss_fn)(params)
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

        def iteration(runner, i):
            params, target, opt_state, x_state, buffer, env_state, obs, ep_ret, key = runner
            key, k_eps, k_act, k_env, k_bonus, k_learn = jax.random.split(key, 6)
            steps = (i + 1) * num_envs  # env steps after this iteration
            eps = jnp.clip(c["eps_start"] + (c["eps_finish"] - c["eps_start"]) * i * num_envs / c["eps_anneal"],
                           c["eps_finish"], c["eps_start"])
            greedy = network.apply(params, obs).argmax(-1)
            explore = jax.random.uniform(k_eps, (num_envs,)) < eps
            action = jnp.where(explore, jax.random.randint(k_act, (num_envs,), 0, num_actions), greedy)
            next_obs, env_state, reward, term, trunc, info = v_step(jax.random.split(k_env, num_envs), env_state,
                                                                    action, env_params)
            final = info["final_observation"]  # the true s' (the reset one is next_obs at an episode end)
            x_state, mixed, x_metrics = replay.step(x_state, obs, action, final, term, trunc, reward, k_bonus)
            buffer = buffer_add(buffer, i, {"obs": obs, "action": action, "reward": mixed, "next_obs": final,
                                            "terminated": term})
            params, opt_state, loss = jax.lax.cond(
                steps > c["learning_starts"], learn,
                lambda p, t, o, b, f, k: (p, o, jnp.zeros(())), params, target, opt_state, buffer, i + 1, k_learn)
            update_target = steps % c["target_update_interval"] < num_envs
            target = jax.lax.cond(update_target, lambda: optax.incremental_update(params, target, c["tau"]),
                                  lambda: target)
            ep_ret, done = ep_ret + reward, term | trunc
            metrics = {"returns": jnp.where(done, ep_ret, 0.0).sum(), "episodes": done.sum(), "loss": loss,
                       "r_int": x_metrics["intrinsic_reward"], "r_int_scaled": x_metrics["intrinsic_reward_normalized"],
                       "refreshes": x_metrics.get("refresh_count", jnp.zeros(()))}  # RFIG's exact inverses
            ep_ret = jnp.where(done, 0.0, ep_ret)
            return (params, target, opt_state, x_state, buffer, env_state, next_obs, ep_ret, key), metrics

        runner = (params, params, tx.init(params), x_state, buffer, env_state, obs, jnp.zeros(num_envs), k_run)
        return jax.lax.scan(iteration, runner, jnp.arange(iterations))[1]

    return train


def parse_settings(items):
    """``KEY=VALUE`` items -> (the DQN's settings, the bonus's): a key of SETTINGS is the DQN's."""
    config, overrides = dict(CONFIG), {}
    for item in items:
        key, _, text = item.partition("=")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text  # a word, e.g. inverse=exact or an env's name
        (config if key in config else overrides)[key] = value
    num_iterations(config)
    return config, overrides


def summary(metrics, config, seed: int, bonus: str) -> dict:
    """One seed's line: the final return, and the scaled intrinsic reward's first and last iteration's
    mean after the warm-up, its spread over the iterations and whether every one was finite."""
    last = slice(-config["final_iterations"], None)
    count = float(metrics["episodes"][last].sum())
    ret = round(float(metrics["returns"][last].sum()) / count, 2) if count else None
    r_int = np.asarray(metrics["r_int_scaled"])
    scaled = r_int[config["warmup_steps"]:]  # zero before: the return statistics' warm-up (ReplayIntrinsic)
    return {"bonus": bonus, "seed": seed, "final_return": ret, "episodes": int(metrics["episodes"].sum()),
            "r_int_scaled_first_last": [float(scaled[0]), float(scaled[-1])] if scaled.size else None,
            "r_int_scaled_std": float(scaled.std()) if scaled.size else None,
            "r_int_finite": bool(np.isfinite(r_int).all()), "td_loss_last": float(metrics["loss"][-1]),
            "exact_refreshes": int(metrics["refreshes"].sum())}


def main(argv=None):
    agent = "\n".join(f"  {k}={default}: {meaning}" for k, (default, meaning) in SETTINGS.items())
    own = "\n".join(f"  {name}: {', '.join(settings_class(name).defaults()) or '-'}" for name in bonus_names())
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=f"the DQN's settings (--set KEY=VALUE), with their defaults:\n{agent}\n"
                                            f"each bonus's own settings (--set KEY=VALUE):\n{own}")
    parser.add_argument("--bonus", default="rfig", help=f"one of {', '.join(bonus_names())} (default: rfig)")
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1, vmapped (default: 1)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="a setting of the DQN or of the bonus (below)")
    args = parser.parse_args(argv)
    try:
        config, overrides = parse_settings(args.set)
        train = jax.jit(jax.vmap(make_train(config, args.bonus, overrides)))
        keys = jnp.stack([jax.random.PRNGKey(s) for s in range(args.seeds)])
        start = time.time()
        compiled = train.lower(keys).compile()
    except ConfigError as err:
        parser.exit(2, f"{parser.prog}: error: {err}\n")
    compile_s, start = time.time() - start, time.time()
    metrics = jax.block_until_ready(compiled(keys))
    seconds = time.time() - start
    for seed in range(args.seeds):
        print(json.dumps(summary({k: v[seed] for k, v in metrics.items()}, config, seed, args.bonus)))
    steps = num_iterations(config) * config["num_envs"] * args.seeds
    print(f"{args.seeds} seeds x {steps // args.seeds} steps in {seconds:.1f}s after {compile_s:.1f}s of compilation: "
          f"{steps / seconds:,.0f} env steps/s")


if __name__ == "__main__":
    main()

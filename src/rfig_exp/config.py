"""Validate a composed config into a frozen run spec, before anything is compiled.

The Hydra config is never mutated; every derived value (loop lengths, the seed list,
hyperparameter arrays) lives in :class:`RunSpec`. Each error names the config key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp

from rfig_exp.agents.ppo.train import AGENT_HPARAMS, TrainSpec
from rfig_exp.errors import ConfigError

ACTIVATIONS = ("tanh", "relu")


@dataclass(frozen=True)
class RunSpec:
    env_name: str
    bonus_name: str
    experiment: str
    results_dir: str
    seeds: tuple[int, ...]
    eval_frequency: int
    overwrite: bool
    train: TrainSpec

    @property
    def num_windows(self) -> int:
        return self.train.num_updates // self.train.updates_per_window

    @property
    def total_env_steps(self) -> int:
        return self.train.num_updates * self.train.batch_size


def _int(cfg, key: str, minimum: int) -> int:
    value = _select(cfg, key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key}={value!r} must be an integer")
    if value < minimum:
        raise ConfigError(f"{key}={value} must be >= {minimum}")
    return value


def _float(cfg, key: str, low: float | None = None, high: float | None = None,
           low_open: bool = False) -> float:
    value = _select(cfg, key)
    if isinstance(value, bool):
        raise ConfigError(f"{key}={value!r} must be a number")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}={value!r} must be a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"{key}={value} must be finite")
    if low is not None and (value <= low if low_open else value < low):
        raise ConfigError(f"{key}={value} must be {'>' if low_open else '>='} {low}")
    if high is not None and value > high:
        raise ConfigError(f"{key}={value} must be <= {high}")
    return value


def _select(cfg, key: str) -> Any:
    node = cfg
    for part in key.split("."):
        if part not in node:
            raise ConfigError(f"{key} is missing from the config")
        node = node[part]
    return node


def build_run_spec(cfg) -> RunSpec:
    """Check the composed config and derive the run's static structure."""
    num_envs = _int(cfg, "agent.num_envs", 1)
    num_steps = _int(cfg, "agent.num_steps", 1)
    batch = num_envs * num_steps
    num_minibatches = _int(cfg, "agent.num_minibatches", 1)
    if batch % num_minibatches:
        raise ConfigError(f"agent.num_minibatches={num_minibatches} must divide the batch "
                          f"agent.num_envs * agent.num_steps = {batch}")
    total = _int(cfg, "agent.total_timesteps", 1)
    if total < batch:
        raise ConfigError(f"agent.total_timesteps={total} is smaller than one batch "
                          f"(agent.num_envs * agent.num_steps = {batch})")
    eval_frequency = _int(cfg, "eval_frequency", 1)
    if eval_frequency % batch:
        raise ConfigError(f"eval_frequency={eval_frequency} must be a multiple of the batch "
                          f"agent.num_envs * agent.num_steps = {batch}")
    if eval_frequency > total:
        raise ConfigError(f"eval_frequency={eval_frequency} exceeds agent.total_timesteps={total}")
    updates_per_window = eval_frequency // batch
    num_windows = math.ceil(total / eval_frequency)  # at least the requested budget, in whole windows

    hidden = _select(cfg, "agent.hidden")
    try:
        hidden = tuple(int(h) for h in hidden)
    except (TypeError, ValueError):
        raise ConfigError(f"agent.hidden={hidden!r} must be a list of layer widths") from None
    if not hidden or min(hidden) < 1:
        raise ConfigError(f"agent.hidden={list(hidden)} must be a non-empty list of positive widths")
    activation = _select(cfg, "agent.activation")
    if activation not in ACTIVATIONS:
        raise ConfigError(f"agent.activation={activation!r} is not known; valid: {', '.join(ACTIVATIONS)}")

    hparams = agent_hparams(cfg)  # validates every numeric value before anything compiles
    if str(_select(cfg, "bonus.name")) == "none" and float(hparams["ext_coef"]) == 0.0:
        raise ConfigError("agent.ext_coef=0 with bonus=none leaves no reward to learn from "
                          "(reward-free exploration needs a bonus, e.g. bonus=rfig)")
    seed = _int(cfg, "seed", 0)
    num_seeds = _int(cfg, "num_seeds", 1)
    train = TrainSpec(
        num_envs=num_envs, num_steps=num_steps, num_minibatches=num_minibatches,
        update_epochs=_int(cfg, "agent.update_epochs", 1),
        num_updates=num_windows * updates_per_window, updates_per_window=updates_per_window,
        hidden=hidden, activation=activation, anneal_lr=bool(_select(cfg, "agent.anneal_lr")),
        obs_norm_init_steps=_int(cfg, "agent.obs_norm_init_steps", 1),
    )
    return RunSpec(
        env_name=str(_select(cfg, "env.name")), bonus_name=str(_select(cfg, "bonus.name")),
        experiment=str(_select(cfg, "experiment")), results_dir=str(_select(cfg, "results_dir")),
        seeds=tuple(range(seed, seed + num_seeds)), eval_frequency=eval_frequency,
        overwrite=bool(_select(cfg, "overwrite")), train=train,
    )


def agent_hparams(cfg) -> dict:
    """The agent's numeric hyperparameters as float32 scalars (arguments of the jit)."""
    values = {
        "lr": _float(cfg, "agent.lr", 0.0, low_open=True),
        "clip_eps": _float(cfg, "agent.clip_eps", 0.0, low_open=True),
        "vf_coef": _float(cfg, "agent.vf_coef", 0.0),
        "ent_coef": _float(cfg, "agent.ent_coef", 0.0),
        "max_grad_norm": _float(cfg, "agent.max_grad_norm", 0.0, low_open=True),
        "gamma": _float(cfg, "agent.gamma", 0.0, 1.0),
        "gae_lambda": _float(cfg, "agent.gae_lambda", 0.0, 1.0),
        "gamma_int": _float(cfg, "agent.gamma_int", 0.0, 1.0),
        "ext_coef": _float(cfg, "agent.ext_coef", 0.0),
        "beta": _float(cfg, "bonus.beta", 0.0),
        "obs_clip": _float(cfg, "agent.obs_clip", 0.0, low_open=True),
    }
    assert set(values) == set(AGENT_HPARAMS)
    return {k: jnp.asarray(v, jnp.float32) for k, v in values.items()}

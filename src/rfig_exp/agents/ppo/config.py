"""The PPO agent's settings, read and checked from the ``agent`` config node without JAX.

- :class:`AgentSettings` ``.parse(node)``: every ``agent.*`` value, checked (each error names
  its key); nothing here imports JAX, so a config is refused before any compiler starts.
- :class:`TrainSpec`: the static structure of a run (shapes, loop lengths, switches), fixed
  when the trainer is made (``AgentSettings.train_spec``).
- :class:`PPOHparams`: the numeric hyperparameters, arguments of the compiled function so a
  sweep could vmap over them (``AgentSettings.hparams``; Python floats here, float32 scalars
  after ``rfig_exp.agents.ppo.train.as_arrays``).

See conf/agent/ppo.yaml for each value's meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from rfig_exp.errors import ConfigError
from rfig_exp.validation import choice, integer, number, require, select

ACTIVATIONS = ("tanh", "relu")


@dataclass(frozen=True)
class TrainSpec:
    """Static structure of a run: shapes, loop lengths and structural switches."""

    num_envs: int
    num_steps: int
    num_minibatches: int
    update_epochs: int
    num_updates: int
    updates_per_window: int
    hidden: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    anneal_lr: bool = True
    obs_norm_init_steps: int = 128

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps


class PPOHparams(NamedTuple):
    """The agent's numeric hyperparameters and the bonus's own (``bonus``, a NamedTuple)."""

    lr: Any
    clip_eps: Any
    vf_coef: Any
    ent_coef: Any
    max_grad_norm: Any
    gamma: Any
    gae_lambda: Any
    gamma_int: Any
    ext_coef: Any
    beta: Any          # bonus.beta: the intrinsic advantage's weight
    obs_clip: Any
    bonus: Any = ()


# agent.<name>: (low, high, low_open), in the order they are checked
_NUMBERS = {
    "lr": (0.0, None, True), "clip_eps": (0.0, None, True), "vf_coef": (0.0, None, False),
    "ent_coef": (0.0, None, False), "max_grad_norm": (0.0, None, True), "gamma": (0.0, 1.0, False),
    "gae_lambda": (0.0, 1.0, False), "gamma_int": (0.0, 1.0, False), "ext_coef": (0.0, None, False),
    "obs_clip": (0.0, None, True),
}


@dataclass(frozen=True)
class AgentSettings:
    num_envs: int
    num_steps: int
    num_minibatches: int
    total_timesteps: int
    update_epochs: int
    hidden: tuple[int, ...]
    activation: str
    anneal_lr: bool
    obs_norm_init_steps: int
    lr: float
    clip_eps: float
    vf_coef: float
    ent_coef: float
    max_grad_norm: float
    gamma: float
    gae_lambda: float
    gamma_int: float
    ext_coef: float
    obs_clip: float

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @classmethod
    def parse(cls, node, prefix: str = "agent.") -> AgentSettings:
        """Check the ``agent`` config node; every error names its key (``prefix`` + name)."""
        def get(key):
            return select(node, key, prefix)

        def int_(key, minimum):
            return integer(get(key), prefix + key, minimum)

        num_envs, num_steps = int_("num_envs", 1), int_("num_steps", 1)
        batch = num_envs * num_steps
        num_minibatches = int_("num_minibatches", 1)
        require(batch % num_minibatches == 0,
                f"{prefix}num_minibatches={num_minibatches} must divide the batch "
                f"{prefix}num_envs * {prefix}num_steps = {batch}")
        total = int_("total_timesteps", 1)
        require(total >= batch, f"{prefix}total_timesteps={total} is smaller than one batch "
                                f"({prefix}num_envs * {prefix}num_steps = {batch})")
        hidden = get("hidden")
        try:
            hidden = tuple(int(h) for h in hidden)
        except (TypeError, ValueError):
            raise ConfigError(f"{prefix}hidden={hidden!r} must be a list of layer widths") from None
        require(bool(hidden) and min(hidden) >= 1,
                f"{prefix}hidden={list(hidden)} must be a non-empty list of positive widths")
        activation = choice(get("activation"), prefix + "activation", ACTIVATIONS)
        numbers = {k: number(get(k), prefix + k, low, high, low_open) for k, (low, high, low_open) in _NUMBERS.items()}
        return cls(num_envs=num_envs, num_steps=num_steps, num_minibatches=num_minibatches,
                   total_timesteps=total, update_epochs=int_("update_epochs", 1), hidden=hidden,
                   activation=activation, anneal_lr=bool(get("anneal_lr")),
                   obs_norm_init_steps=int_("obs_norm_init_steps", 1), **numbers)

    def train_spec(self, num_updates: int, updates_per_window: int) -> TrainSpec:
        return TrainSpec(
            num_envs=self.num_envs, num_steps=self.num_steps, num_minibatches=self.num_minibatches,
            update_epochs=self.update_epochs, num_updates=num_updates, updates_per_window=updates_per_window,
            hidden=self.hidden, activation=self.activation, anneal_lr=self.anneal_lr,
            obs_norm_init_steps=self.obs_norm_init_steps)

    def hparams(self, beta: float, bonus: Any = ()) -> PPOHparams:
        """Python floats (``bonus``: the bonus's hparams NamedTuple, as it comes)."""
        return PPOHparams(beta=float(beta), bonus=bonus, **{k: getattr(self, k) for k in _NUMBERS})

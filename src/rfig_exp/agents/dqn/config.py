"""The DQN agent's settings (``agent=dqn``), each declared once (``rfig_exp.config.settings``), read without JAX.

A DQN in purejaxql's shape (docs/agents/dqn.md): every update steps each env once (epsilon-greedy,
epsilon falling linearly), adds the transitions to a replay buffer with the bonus's mixed reward
(``rfig_exp.agents.replay``), then takes one TD step on a minibatch sampled from the buffer against a
target network copied every ``target_update_interval`` env steps.

- :class:`DQNStructure`: the static ``agent.*`` settings (shapes, sizes, the loss);
- :class:`DQNSettings`: those, the budget and the numeric hyperparameters (``agent=dqn``'s every key);
- :class:`DQNSpec`: what the trainer is made from, the static settings and the loop's lengths;
- :class:`DQNHparams`: the compiled function's arguments, ``(agent, beta, bonus)`` as PPO's.

Each setting's doc is declared with it; conf/agent/dqn.yaml is written from these declarations.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, NamedTuple

from rfig_exp.agents.contract import (
    AgentSettingsBase,
    LoopSpec,
    ext_coef_setting,
    gamma_int_setting,
    obs_clip_setting,
    warmup_steps_setting,
)
from rfig_exp.bonuses.settings import BonusSettings
from rfig_exp.config.errors import ConfigError
from rfig_exp.config.settings import STATIC, Settings, declared, setting, static, traced
from rfig_exp.config.validation import Choice, Integer, Number, require

LOSSES = ("huber", "mse")


def _widths(value: Any, key: str, earlier: Mapping[str, Any]) -> tuple[int, ...]:
    try:
        hidden = tuple(int(h) for h in value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}={value!r} must be a list of layer widths") from None
    require(bool(hidden) and min(hidden) >= 1, f"{key}={list(hidden)} must be a non-empty list of positive widths")
    return hidden


def _buffer_holds_a_step(values: Mapping[str, Any], prefix: str) -> None:
    size, envs = values["buffer_size"], values["num_envs"]
    require(size >= envs, f"{prefix}buffer_size={size} must hold one step of every env ({prefix}num_envs = {envs})")


def _at_least_one_update(values: Mapping[str, Any], prefix: str) -> None:
    total, envs = values["total_timesteps"], values["num_envs"]
    require(total >= envs, f"{prefix}total_timesteps={total} is smaller than one update ({prefix}num_envs = {envs})")


@dataclass(frozen=True)
class DQNStructure(Settings):
    """The DQN's static settings: they set shapes and the structure of the compiled loop."""

    PREFIX: ClassVar[str] = "agent."

    num_envs: int = static(16, Integer(1), doc="parallel environments per seed, each stepped once per update")
    buffer_size: int = static(50_000, Integer(1), check=_buffer_holds_a_step,
                              doc="transitions the replay buffer keeps, the oldest overwritten (whole steps of "
                                  "every env)")
    buffer_batch_size: int = static(128, Integer(1), doc="transitions per TD step, drawn uniformly from the buffer")
    hidden: tuple[int, ...] = static((120, 84), _widths, doc="hidden widths of the Q-network's ReLU MLP")
    loss: str = static("mse", Choice(LOSSES), doc="TD loss: mse (purejaxql's DQN) | huber (Mnih et al. 2015)")
    learning_starts: int = static(5_000, Integer(0), doc="env steps before the first TD step")
    target_update_interval: int = static(500, Integer(1), doc="env steps between target-network updates")
    eps_anneal: int = static(100_000, Integer(1), doc="env steps over which epsilon falls linearly to eps_finish")
    obs_norm_init_steps: int = warmup_steps_setting()


@dataclass(frozen=True)
class DQNSpec(DQNStructure):
    """Static structure of a run: the DQN's static settings and the loop's lengths."""

    num_updates: int = dataclasses.field(kw_only=True)
    updates_per_window: int = dataclasses.field(kw_only=True)


@dataclass(frozen=True)
class DQNSettings(DQNStructure, AgentSettingsBase):
    """Every ``agent.*`` setting of ``agent=dqn``: the static ones, the budget and the hyperparameters."""

    name: ClassVar[str] = "dqn"
    label: ClassVar[str] = "DQN"
    UPDATE_KEYS: ClassVar[str] = "agent.num_envs"

    total_timesteps: int = setting(1_000_000, Integer(1), check=_at_least_one_update,
                                   doc="env steps per seed, rounded up to whole evaluation windows")
    lr: float = traced(2.5e-4, Number(0.0, low_open=True), doc="Adam learning rate")
    max_grad_norm: float = traced(10.0, Number(0.0, low_open=True), doc="global gradient norm clip")
    gamma: float = traced(0.99, Number(0.0, 1.0), doc="discount of the TD target")
    eps_start: float = traced(1.0, Number(0.0, 1.0), doc="epsilon-greedy's epsilon at the start")
    eps_finish: float = traced(0.05, Number(0.0, 1.0), doc="epsilon after eps_anneal env steps")
    tau: float = traced(1.0, Number(0.0, 1.0), doc="target update rate (1: a copy of the online network)")
    gamma_int: float = gamma_int_setting()
    ext_coef: float = ext_coef_setting("stored reward = ext_coef * r_ext + bonus.beta * r_int; 0: reward-free")
    obs_clip: float = obs_clip_setting()

    # the agent contract (rfig_exp.agents.contract): an update is one step of every env
    @property
    def steps_per_update(self) -> int:
        return self.num_envs

    @property
    def bonus_batch_size(self) -> int:
        return self.num_envs

    @property
    def parallel_envs(self) -> int:
        return self.num_envs

    @property
    def warmup_env_steps(self) -> int:
        return self.obs_norm_init_steps * self.num_envs

    def train_spec(self, loop: LoopSpec) -> DQNSpec:
        structure = {name: getattr(self, name) for name, _ in declared(DQNStructure)}
        return DQNSpec(**structure, num_updates=loop.num_updates, updates_per_window=loop.updates_per_window)

    def hparams(self, beta: float, bonus: BonusSettings) -> DQNHparams:
        return DQNHparams(self, float(beta), bonus)


class DQNHparams(NamedTuple):
    """The compiled function's hyperparameters: the DQN's traced settings (``hp.agent.lr``), the
    intrinsic reward's weight and the bonus's traced settings; the properties are what the agent's
    side of a bonus reads (``rfig_exp.agents.intrinsic``)."""

    agent: DQNSettings
    beta: float     # bonus.beta: stored reward = ext_coef * r_ext + beta * r_int
    bonus: BonusSettings

    @property
    def obs_clip(self) -> float:
        return self.agent.obs_clip

    @property
    def gamma_int(self) -> float:
        return self.agent.gamma_int

    @property
    def ext_coef(self) -> float:
        return self.agent.ext_coef


assert all(d.kind == STATIC for _, d in declared(DQNStructure))  # DQNSpec is the static part

"""The PPO agent's settings, each declared once (``rfig_exp.config.settings``), read without JAX.

- :class:`PPOStructure`: the static ``agent.*`` settings (shapes, structural switches);
- :class:`AgentSettings`: those, the budget and the numeric hyperparameters: every ``agent.*``
  value, checked by ``AgentSettings.parse(node)`` (each error names its key);
- :class:`TrainSpec`: what the trainer is made from, the static settings and the loop lengths
  (``AgentSettings.train_spec``);
- :class:`PPOHparams`: the arguments of the compiled function, so a sweep could vmap over them:
  the agent's settings, ``bonus.beta`` and the bonus's settings, each settings object a JAX
  pytree whose leaves are its traced settings (``AgentSettings.hparams``; Python floats here,
  float32 scalars after ``rfig_exp.agents.ppo.train.as_arrays``).

Each setting's doc is declared with it; conf/agent/ppo.yaml is written from these declarations.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, NamedTuple

from rfig_exp.agents.contract import (
    NOVELTY_NEIGHBOUR,
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
from rfig_exp.config.validation import Boolean, Choice, Integer, Number, require

ACTIVATIONS = ("tanh", "relu")
# How the agent treats the intrinsic stream and the episode: the paper's text first (the default), then
# the RFIG authors' code (github.com/riiswa/rejax at b16e24a; docs/fidelity.md has each line).
INTRINSIC_RETURNS = ("nonepisodic", "episodic")
INTRINSIC_SCALES = ("return_std", "reward_std")
ADVANTAGE_MIXES = ("joint", "separate")
TIME_LIMITS = ("truncation", "terminal")
WARMUPS = ("trajectories", "reset_steps")
NETWORK_LAYOUTS = ("joint", "separate")
INITS = ("orthogonal", "lecun")


def _batch(values: Mapping[str, Any]) -> int:
    return values["num_envs"] * values["num_steps"]


def _minibatches_divide_the_batch(values: Mapping[str, Any], prefix: str) -> None:
    batch, n = _batch(values), values["num_minibatches"]
    require(batch % n == 0, f"{prefix}num_minibatches={n} must divide the batch "
                            f"{prefix}num_envs * {prefix}num_steps = {batch}")


def _at_least_one_batch(values: Mapping[str, Any], prefix: str) -> None:
    batch, total = _batch(values), values["total_timesteps"]
    require(total >= batch, f"{prefix}total_timesteps={total} is smaller than one batch "
                            f"({prefix}num_envs * {prefix}num_steps = {batch})")


def _layer_widths(value: Any, key: str, earlier: Mapping[str, Any]) -> tuple[int, ...]:
    try:
        hidden = tuple(int(h) for h in value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}={value!r} must be a list of layer widths") from None
    require(bool(hidden) and min(hidden) >= 1, f"{key}={list(hidden)} must be a non-empty list of positive widths")
    return hidden


def _reservoir_size(value: Any, key: str, earlier: Mapping[str, Any]) -> int:
    size = Integer(0)(value, key, earlier)
    require(size == 0 or size >= NOVELTY_NEIGHBOUR,
            f"{key}={size} must be 0 (no novelty statistics) or at least {NOVELTY_NEIGHBOUR}, the neighbour "
            f"whose distance is a state's novelty")
    return size


@dataclass(frozen=True)
class PPOStructure(Settings):
    """The agent's static settings: they set shapes and the structure of the compiled loop."""

    PREFIX: ClassVar[str] = "agent."

    num_envs: int = static(32, Integer(1), doc="parallel environments per seed")
    num_steps: int = static(128, Integer(1), doc="rollout length per env; batch = num_envs * num_steps")
    num_minibatches: int = static(32, Integer(1), check=_minibatches_divide_the_batch,
                                  doc="minibatches per epoch; divides the batch")
    update_epochs: int = static(4, Integer(1), doc="epochs over each batch")
    hidden: tuple[int, ...] = static((64, 64), _layer_widths, doc="hidden widths of the actor and critic MLPs")
    activation: str = static("tanh", Choice(ACTIVATIONS), doc="tanh | relu, after every hidden layer")
    networks: str = static("joint", Choice(NETWORK_LAYOUTS),
                           doc="joint: actor + one critic torso with both value heads, one gradient clip | separate: "
                               "actor and one critic per stream, each gradient clipped alone (the authors' code)")
    weight_init: str = static("orthogonal", Choice(INITS),
                              doc="orthogonal (sqrt 2 hidden, 0.01 policy head, 1 value head; PureJaxRL) | lecun: "
                                  "flax's default, LeCun-normal kernels and zero biases everywhere (the authors' code)")
    anneal_lr: bool = static(True, Boolean(), doc="decay the learning rate linearly to 0 over the run")
    obs_norm_init_steps: int = warmup_steps_setting()
    warmup: str = static("trajectories", Choice(WARMUPS),
                         doc="trajectories: the warm-up carries each env's state (the paper) | reset_steps: every "
                             "warm-up step starts from the initial states, as the authors' code runs it")
    intrinsic_return: str = static("nonepisodic", Choice(INTRINSIC_RETURNS),
                                   doc="nonepisodic: one intrinsic stream per env through episode ends (the paper, "
                                       "Burda et al.) | episodic: the intrinsic GAE cut at every episode end (the "
                                       "authors' code)")
    intrinsic_scale: str = static("return_std", Choice(INTRINSIC_SCALES),
                                  doc="r_int divided by the running std of return_std: its discounted return (the "
                                      "paper, RND) | reward_std: the raw per-step reward (the authors' code)")
    advantage_mix: str = static("joint", Choice(ADVANTAGE_MIXES),
                                doc="joint: ext_coef * A_ext + beta * A_int, standardised per minibatch (the paper, "
                                    "RND) | separate: each standardised per minibatch, then weighted; A_ext alone "
                                    "without a bonus (the authors' code)")
    time_limit: str = static("truncation", Choice(TIME_LIMITS),
                             doc="an episode's time limit is a truncation (bootstrapped from V(s')) | terminal, as "
                                 "gymnax 0.0.8 and the authors' code treat it")
    eval_episodes: int = static(0, Integer(0),
                                doc="fresh episodes per seed with the sampled policy, parameters and statistics "
                                    "frozen, at step 0 and after every window (0: none; the authors' code: 128)")
    novelty_reservoir: int = static(1024, _reservoir_size,
                                    doc="earlier next states kept (a uniform sample) to measure each bonus's rank "
                                        "correlation with novelty in its own input space, signal/novelty_rank_corr "
                                        "(0: not measured); changes no other number")

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps


@dataclass(frozen=True)
class TrainSpec(PPOStructure):
    """Static structure of a run: the agent's static settings and the loop lengths."""

    num_updates: int = dataclasses.field(kw_only=True)
    updates_per_window: int = dataclasses.field(kw_only=True)


@dataclass(frozen=True)
class AgentSettings(PPOStructure, AgentSettingsBase):
    """Every ``agent.*`` setting: the static ones, the budget and the hyperparameters."""

    name: ClassVar[str] = "ppo"
    label: ClassVar[str] = "PPO"
    UPDATE_KEYS: ClassVar[str] = "agent.num_envs * agent.num_steps"

    total_timesteps: int = setting(1_000_000, Integer(1), check=_at_least_one_batch,
                                   doc="env steps per seed, rounded up to whole evaluation windows")
    lr: float = traced(3e-4, Number(0.0, low_open=True), doc="Adam learning rate")
    clip_eps: float = traced(0.2, Number(0.0, low_open=True), doc="policy and value clipping")
    vf_coef: float = traced(0.5, Number(0.0), doc="value loss weight")
    ent_coef: float = traced(0.01, Number(0.0), doc="entropy bonus weight")
    max_grad_norm: float = traced(0.5, Number(0.0, low_open=True), doc="global gradient norm clip")
    gamma: float = traced(0.99, Number(0.0, 1.0), doc="extrinsic discount")
    gae_lambda: float = traced(0.95, Number(0.0, 1.0), doc="GAE lambda of both advantages")
    gamma_int: float = gamma_int_setting()
    ext_coef: float = ext_coef_setting("advantage = ext_coef * A_ext + bonus.beta * A_int; 0: reward-free")
    obs_clip: float = obs_clip_setting()

    # the agent contract (rfig_exp.agents.contract): an update is one rollout of every env, the bonus's batch
    @property
    def steps_per_update(self) -> int:
        return self.batch_size

    @property
    def bonus_batch_size(self) -> int:
        return self.batch_size

    @property
    def parallel_envs(self) -> int:
        return self.num_envs

    @property
    def warmup_env_steps(self) -> int:
        return self.obs_norm_init_steps * self.num_envs

    def train_spec(self, loop: LoopSpec) -> TrainSpec:
        structure = {name: getattr(self, name) for name, _ in declared(PPOStructure)}
        return TrainSpec(**structure, num_updates=loop.num_updates, updates_per_window=loop.updates_per_window)

    def hparams(self, beta: float, bonus: BonusSettings) -> PPOHparams:
        """:class:`PPOHparams` of Python floats (``bonus``: the bonus's hyperparameters, as
        ``make_bonus`` returns them)."""
        return PPOHparams(self, float(beta), bonus)


class PPOHparams(NamedTuple):
    """The compiled function's hyperparameters: the agent's traced settings (``hp.agent.lr``), the
    intrinsic advantage's weight and the bonus's traced settings (``hp.bonus``, what the bonus's
    functions take), in that order as the function's arguments."""

    agent: AgentSettings
    beta: float     # bonus.beta: advantage = ext_coef * A_ext + beta * A_int
    bonus: BonusSettings

    # what the agent's side of a bonus reads (rfig_exp.agents.intrinsic: obs_clip, gamma_int, beta,
    # ext_coef, bonus), so the trainer runs those functions on these hyperparameters as they are
    @property
    def obs_clip(self) -> float:
        return self.agent.obs_clip

    @property
    def gamma_int(self) -> float:
        return self.agent.gamma_int

    @property
    def ext_coef(self) -> float:
        return self.agent.ext_coef


assert all(d.kind == STATIC for _, d in declared(PPOStructure))  # TrainSpec is the static part

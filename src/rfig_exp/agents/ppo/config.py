"""The PPO agent's settings, each declared once (``rfig_exp.config.settings``), read without JAX.

- :class:`PPOStructure`: the static ``agent.*`` settings (shapes, structural switches);
- :class:`AgentSettings`: those, the budget and the numeric hyperparameters: every ``agent.*``
  value, checked by ``AgentSettings.parse(node)`` (each error names its key);
- :class:`TrainSpec`: what the trainer is made from, the static settings and the loop lengths
  (``AgentSettings.train_spec``);
- :data:`PPOHparams`: the traced settings and the bonus's (``bonus.beta`` and the bonus's own
  ``Hparams``), arguments of the compiled function so a sweep could vmap over them
  (``AgentSettings.hparams``; Python floats here, float32 scalars after
  ``rfig_exp.agents.ppo.train.as_arrays``).

See conf/agent/ppo.yaml for each value's meaning (``tests/test_settings.py`` holds it to the
defaults declared here).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from rfig_exp.bonuses.settings import OBS_CLIP
from rfig_exp.config.errors import ConfigError
from rfig_exp.config.settings import STATIC, TRACED, Settings, declared, named_tuple, setting, static, traced
from rfig_exp.config.validation import Boolean, Choice, Integer, Number, require

ACTIVATIONS = ("tanh", "relu")


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


@dataclass(frozen=True)
class PPOStructure(Settings):
    """The agent's static settings: they set shapes and the structure of the compiled loop."""

    PREFIX: ClassVar[str] = "agent."

    num_envs: int = static(32, Integer(1))
    num_steps: int = static(128, Integer(1))            # rollout length per env; batch = num_envs * num_steps
    num_minibatches: int = static(32, Integer(1), check=_minibatches_divide_the_batch)
    update_epochs: int = static(4, Integer(1))
    hidden: tuple[int, ...] = static((64, 64), _layer_widths)
    activation: str = static("tanh", Choice(ACTIVATIONS))
    anneal_lr: bool = static(True, Boolean())
    obs_norm_init_steps: int = static(128, Integer(1))

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps


@dataclass(frozen=True)
class TrainSpec(PPOStructure):
    """Static structure of a run: the agent's static settings and the loop lengths."""

    num_updates: int = dataclasses.field(kw_only=True)
    updates_per_window: int = dataclasses.field(kw_only=True)


@dataclass(frozen=True)
class AgentSettings(PPOStructure):
    """Every ``agent.*`` setting: the static ones, the budget and the hyperparameters."""

    total_timesteps: int = setting(1_000_000, Integer(1), check=_at_least_one_batch)  # rounded up to whole windows
    lr: float = traced(3e-4, Number(0.0, low_open=True))
    clip_eps: float = traced(0.2, Number(0.0, low_open=True))
    vf_coef: float = traced(0.5, Number(0.0))
    ent_coef: float = traced(0.01, Number(0.0))
    max_grad_norm: float = traced(0.5, Number(0.0, low_open=True))
    gamma: float = traced(0.99, Number(0.0, 1.0))
    gae_lambda: float = traced(0.95, Number(0.0, 1.0))
    gamma_int: float = traced(0.99, Number(0.0, 1.0))
    ext_coef: float = traced(1.0, Number(0.0))
    obs_clip: float = traced(OBS_CLIP, Number(0.0, low_open=True))

    def train_spec(self, num_updates: int, updates_per_window: int) -> TrainSpec:
        structure = {name: getattr(self, name) for name, _ in declared(PPOStructure)}
        return TrainSpec(**structure, num_updates=num_updates, updates_per_window=updates_per_window)

    def hparams(self, beta: float, bonus: Any = ()) -> Any:
        """:data:`PPOHparams` of Python floats (``bonus``: the bonus's ``Hparams``, as it comes)."""
        return PPOHparams(*self.traced_values(), beta=float(beta), bonus=bonus)


assert all(d.kind == STATIC for _, d in declared(PPOStructure))  # TrainSpec is the static part
# The agent's traced settings, then bonus.beta (the intrinsic advantage's weight) and the bonus's
# own hyperparameters (a NamedTuple).
PPOHparams = named_tuple("PPOHparams", [*AgentSettings.Hparams._fields, "beta", "bonus"], defaults=((),))
assert all(d.kind == TRACED for name, d in declared(AgentSettings) if name in PPOHparams._fields)

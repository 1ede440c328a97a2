"""What an agent is to the rest of the project: its settings' base, its loop's lengths and its trainer.

The run loop (``rfig_exp.run``) and the run spec (``rfig_exp.spec``) know an agent only through
this module, and find it by name (``rfig_exp.agents``: ``agent=<name>`` is the package
``rfig_exp.agents.<name>``, as ``bonus=<name>`` is a bonus's module):

- :class:`AgentSettingsBase`: what every agent's settings have, beside the settings it declares
  (``agents/<name>/config.py``, without JAX): its ``name`` and ``label``, the budget
  ``total_timesteps`` and ``obs_clip`` (declared by each agent in its own place, so that a
  declaration's order, and with it ``conf/agent/<name>.yaml``, stays the agent's), the env steps
  of one update (:attr:`~AgentSettingsBase.steps_per_update`), the states the bonus sees per update
  (:attr:`~AgentSettingsBase.bonus_batch_size`), the static spec its trainer is made from and the
  hyperparameters its compiled function takes;
- :class:`LoopSpec`: the loop's lengths (updates, updates per window, env steps per update), what
  the run loop reads instead of an agent's own structure;
- :class:`IntrinsicSide`: the agent's settings its side of a bonus reads (``rfig_exp.agents.intrinsic``),
  declared once here and by each agent with the same functions (:func:`obs_clip_setting`, ...);
- :class:`Trainer` and :class:`Readout`: ``init``, ``run_window``, an optional ``evaluate``, and the
  one summary of the states the loop may read (the bonus's state, the coverage grid's visits).

An agent's ``train.py`` (JAX) holds ``make_trainer(train_spec, env, bonus) -> Trainer`` and
``as_arrays(hparams)`` (the hyperparameters as float32 scalars). Nothing here imports JAX.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, NamedTuple

from rfig_exp.bonuses.settings import OBS_CLIP
from rfig_exp.config.errors import ConfigError
from rfig_exp.config.settings import Settings, static, traced
from rfig_exp.config.validation import Integer, Interval, Number

# the metrics.csv columns of an agent's evaluation episodes (agent.eval_episodes), at step 0 in summary.json
EVAL_RETURN, EVAL_LENGTH = "eval/episode_return", "eval/episode_length"
# the signal check's novelty of a state: its distance to the k-th nearest earlier state of a reservoir
# (rfig_exp.agents.signal.novelty_step), so a reservoir holds at least this many
NOVELTY_NEIGHBOUR = 10


@dataclass(frozen=True)
class LoopSpec:
    """The training loop's lengths, per seed: ``num_updates`` updates of ``steps_per_update`` env steps,
    in windows of ``updates_per_window`` (one metrics.csv row each)."""

    num_updates: int
    updates_per_window: int
    steps_per_update: int

    @property
    def num_windows(self) -> int:
        return self.num_updates // self.updates_per_window

    @property
    def total_env_steps(self) -> int:
        return self.num_updates * self.steps_per_update


@dataclass(frozen=True)
class AgentSettingsBase(Settings):
    """The settings of an agent (a frozen dataclass of declared fields, ``agent.*``). A subclass sets
    ``name`` (its package's and its YAML's), ``label`` (reports) and ``UPDATE_KEYS`` (how an error
    names :attr:`steps_per_update`), declares ``total_timesteps`` (a :func:`~rfig_exp.config.settings.setting`)
    and ``obs_clip`` (the clip of the normalised observations the bonus sees), and defines the
    properties and methods below, whose names no agent's setting may take (a field of the same name
    would meet the base's property)."""

    PREFIX: ClassVar[str] = "agent."
    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    UPDATE_KEYS: ClassVar[str] = ""  # e.g. "agent.num_envs * agent.num_steps"

    if TYPE_CHECKING:  # declared by each agent in its own order (a base class's fields would come first)
        @property
        def total_timesteps(self) -> int: ...

        @property
        def obs_clip(self) -> float: ...

    @property
    def steps_per_update(self) -> int:
        """Env steps of one update, per seed (the budget and a window are whole updates)."""
        raise NotImplementedError

    @property
    def bonus_batch_size(self) -> int:
        """States the bonus sees per update (``BonusSettings.batch_size``: its derived sizes)."""
        raise NotImplementedError

    @property
    def parallel_envs(self) -> int:
        """Envs per seed (summary.json: survivor bias of the first windows' returns)."""
        raise NotImplementedError

    @property
    def warmup_env_steps(self) -> int:
        """Random-policy env steps per seed before the first update (summary.json)."""
        raise NotImplementedError

    def loop_spec(self, eval_frequency: int) -> LoopSpec:
        """The budget in whole windows of ``eval_frequency`` env steps: at least ``total_timesteps``."""
        step, total = self.steps_per_update, self.total_timesteps
        if eval_frequency % step:
            raise ConfigError(f"eval_frequency={eval_frequency} must be a multiple of the batch "
                              f"{self.UPDATE_KEYS} = {step}")
        if eval_frequency > total:
            raise ConfigError(f"eval_frequency={eval_frequency} exceeds agent.total_timesteps={total}")
        per_window = eval_frequency // step
        return LoopSpec(math.ceil(total / eval_frequency) * per_window, per_window, step)

    def train_spec(self, loop: LoopSpec) -> Any:
        """The static spec its ``make_trainer`` takes: its static settings and ``loop``'s lengths."""
        raise NotImplementedError

    def hparams(self, beta: float, bonus: Any) -> Any:
        """The compiled function's hyperparameters of Python floats: a NamedTuple ``(agent, beta,
        bonus)`` whose ``beta`` is ``bonus.beta`` (``bonus``: as ``make_bonus`` returns it)."""
        raise NotImplementedError


def obs_clip_setting() -> Any:
    return traced(OBS_CLIP, Interval(0.0, "must be > 0 (inf: no clipping)", low_open=True),
                  doc="normalised observations are clipped to [-obs_clip, obs_clip] (inf: not clipped, "
                      "the authors' code)")


def gamma_int_setting() -> Any:
    return traced(0.99, Number(0.0, 1.0), doc="intrinsic (non-episodic) discount")


def ext_coef_setting(doc: str) -> Any:
    return traced(1.0, Number(0.0), doc=doc)


def warmup_steps_setting() -> Any:
    return static(128, Integer(1), doc="random-policy steps per env that initialise the observation statistics")


@dataclass(frozen=True)
class IntrinsicSide(Settings):
    """The agent's settings that its side of a bonus reads (``IntrinsicReward.create``'s arguments,
    checked by these rules, with these defaults): every agent declares them with the same functions."""

    obs_clip: float = obs_clip_setting()
    gamma_int: float = gamma_int_setting()
    ext_coef: float = ext_coef_setting("the extrinsic reward's weight beside bonus.beta's intrinsic one; 0: "
                                       "reward-free")
    obs_norm_init_steps: int = warmup_steps_setting()


class Readout(NamedTuple):
    """What the run loop reads of the stacked states ``[S]`` after training: the bonus's state (its
    ``describe``) and the coverage grid's visit counts (``[S, num_cells]``; ``[S, 0]`` without a grid; None:
    an agent that counts none, whose runs then have no visits.npy)."""

    bonus_state: Any
    visits: Any


class Trainer(NamedTuple):
    """An agent's compiled core, pure functions of arrays: ``init(key, hparams) -> state`` of one seed;
    ``run_window(states, hparams) -> (states, {metric: [S]})`` of the stacked seeds (one jitted scan of
    ``updates_per_window`` updates); ``readout(states) -> Readout``; and ``evaluate(states, hparams) ->
    {eval/*: [S]}`` or None (``agent.eval_episodes``: at step 0 and, inside ``run_window``, after each window)."""

    init: Callable[..., Any]
    run_window: Callable[..., Any]
    readout: Callable[[Any], Readout]
    evaluate: Callable[..., Any] | None = None

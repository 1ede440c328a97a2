"""What every bonus declares beside its code, and the pieces their declarations share. No JAX.

A bonus's module (``rfig_exp.bonuses.<name>``, a package for RFIG) declares one subclass of
:class:`BonusSettings`: its settings, each once (``rfig_exp.config.settings``: default, rule, static
or traced), how reports show it (``label``, ``colour``, ``role`` and its ``order`` among the
bonuses of its role) and the settings of a small model of it for quick checks (``small``). The
top level of that module imports no JAX, so a config is checked, and a report drawn, without
it; its ``make(settings, obs_shape, action_space) -> Bonus`` imports what the bonus computes with.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Mapping

from rfig_exp.config.settings import Settings, traced
from rfig_exp.config.validation import Interval, Number

# the activation names the neural bonuses' MLPs know (nets.ACTIVATIONS holds the functions)
ACTIVATIONS = ("relu", "tanh")
# finite and above zero (inf and nan refused by the same message)
ABOVE_ZERO = Interval(0.0, "must be > 0", high=math.inf, low_open=True, high_open=True)
AT_LEAST_ZERO = Interval(0.0, "must be >= 0", high=math.inf, high_open=True)

# The agent's default clip of normalised observations (agent.obs_clip): a bonus's inputs lie in
# [-obs_clip, obs_clip] (BonusSettings.obs_clip).
OBS_CLIP = 5.0

# a bonus's part in a comparison of bonuses, in the order reports list them (and draw them: the
# proposed method last, on top): plain PPO; a bonus without information (the control); the methods
# compared with; the proposed one
ROLES = ("reference", "control", "baseline", "method")


@dataclass(frozen=True)
class BonusSettings(Settings):
    """A bonus's settings: what the agent gives it (``batch_size``, the rollout's states, and
    ``obs_clip``, the bound of the normalised observations it sees), ``bonus.beta`` (the intrinsic
    advantage's weight, which the agent reads) and the bonus's own declared settings."""

    PREFIX: ClassVar[str] = "bonus."
    HPARAMS_ELSEWHERE: ClassVar[tuple[str, ...]] = ("beta",)  # PPOHparams.beta, not a leaf here
    name: ClassVar[str]           # bonus.name, its module's name and its conf/bonus/<name>.yaml
    label: ClassVar[str]          # in figures and tables
    colour: ClassVar[str]         # the same in every figure of every report
    role: ClassVar[str]           # one of ROLES
    # a built-in bonus's place among those of its role in every figure and table (None: after the
    # placed ones, by name), as an env's `order` places it; a bonus of a user's own module follows
    # the built-ins of its role (analysis.names)
    order: ClassVar[int | None] = None
    # settings that make a small model of it, for a quick check of its code (the tests run every
    # bonus on every kind of observation with them); empty where the defaults are small already
    small: ClassVar[Mapping[str, Any]] = MappingProxyType({})

    batch_size: int               # states of one rollout (agent.num_envs * agent.num_steps)
    beta: float = traced(0.5, Number(0.0), doc="intrinsic advantage weight (the paper: 0.5 for every method)")
    # |normalised observation| <= obs_clip (agent.obs_clip, as the run's config sets it)
    obs_clip: float = dataclasses.field(default=OBS_CLIP, kw_only=True)


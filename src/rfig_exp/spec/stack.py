"""A compiled job as a value: the runs that share one compiled program, and what decides that program.

A run's compiled program is fixed by its static settings (shapes, widths, the env, the bonus and
its structure, the loop lengths); its numeric hyperparameters, the traced settings, are arguments
of that program (the agent's ``hparams``, PPO's ``PPOHparams``). So runs that differ only in their seed
and their traced settings can train as one vmapped job: each is a *member* of it, a (seed,
settings) pair, and writes the run directory it would write alone. :func:`program_key` says which
runs those are; a :class:`Job` is the list of :class:`JobPart` s a sweep's planner put together
(``rfig_exp.launch.stacking``) and a job's process trains (``rfig_exp.run.experiment.run_job``).

Nothing here imports JAX.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, TypeVar

from rfig_exp.config.settings import TRACED, Settings, declared
from rfig_exp.spec.run_spec import RunSpec

S = TypeVar("S", bound=Settings)


def _untraced(settings: S) -> S:
    """``settings`` with every traced setting blanked (None): what its program sees of it."""
    return dataclasses.replace(settings, **{name: None for name, d in declared(type(settings)) if d.kind == TRACED})


def traced_values(spec: RunSpec) -> dict[str, Any]:
    """The traced settings of a run, by config key (``agent.lr``, ``bonus.beta``, ``bonus.reg``)."""
    out = {}
    for prefix, settings in (("agent.", spec.agent), ("bonus.", spec.bonus)):
        out.update({prefix + name: getattr(settings, name) for name, d in declared(type(settings))
                    if d.kind == TRACED})
    return out


def program_key(spec: RunSpec) -> str:
    """What tells one compiled job from another: every setting of ``spec`` but its seeds, its variant's
    name and its traced settings. Runs with equal keys compile the same program and share a job's
    settings (where results go, checkpoints, wandb, the stall clock), so they may train as one job."""
    blank = dataclasses.replace(spec, seeds=(), variant="", variant_overrides={}, resolved_config={},
                                agent=_untraced(spec.agent), bonus=_untraced(spec.bonus))
    return repr(blank)


@dataclass(frozen=True)
class JobPart:
    """One setting's runs in a job: its run spec (its seeds, vmapped) and the overrides a job of
    its own would have been launched with (each of its summaries records them)."""

    spec: RunSpec
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Job:
    """The runs of one compiled job, in the order they are stacked: each part's seeds in turn.
    Every part has the same :func:`program_key`; parts whose traced settings differ are trained with
    a hyperparameter row per member (the agent's trainer's ``run_window``, ``rfig_exp.agents.contract``)."""

    parts: tuple[JobPart, ...]

    def __post_init__(self) -> None:
        keys = {program_key(p.spec) for p in self.parts}
        if len(keys) > 1:
            raise ValueError("a job's parts must share one compiled program (rfig_exp.spec.stack.program_key)")

    @property
    def members(self) -> int:
        """The runs the job trains side by side: one per (seed, settings) pair."""
        return sum(len(p.spec.seeds) for p in self.parts)

    @property
    def first(self) -> RunSpec:
        """The spec whose job-wide settings (the program, where results go, checkpoints) the job uses."""
        return self.parts[0].spec

    @property
    def stacked(self) -> bool:
        """Whether its members differ in traced settings (one hyperparameter row each)."""
        return len({repr(traced_values(p.spec)) for p in self.parts}) > 1

"""Display names, panel order and colours: the one source of every label and colour of a report.

Everything keyed by the *bonus name* or *env name* as written in the results tree (``none``,
``rfig``, ``minatar_breakout``, ...), so a method or an env keeps the same label, colour and place
in every figure of every report, whatever subset a report happens to contain. Both come from the
declarations: each bonus's (rfig_exp.bonuses) and each env suite's (rfig_exp.envs). A bonus's
declared role (reference, control, baseline, method) is also what a report treats it as: the
reference normalisation divides by the reference, the probability of improvement is the method's.
Last, the names of the normalisations a report offers and the words that state each.
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from rfig_exp.bonuses import ROLES, BonusSettings, declared_bonuses, settings_class
from rfig_exp.config.errors import ConfigError
from rfig_exp.envs import DeclaredEnv, declared_envs

# Every colour that no bonus declares: a method that is a variant of a bonus (analysis.methods picks
# one per variant), or a bonus this checkout does not declare (picked by a stable hash of its name,
# so the choice does not depend on which other methods are in the report). Colour-blind-friendly
# colours (Paul Tol's muted / bright sets) that are none of the five declared bonus colours.
OTHER_COLOURS: tuple[str, ...] = (
    "#E69F00", "#56B4E9", "#882255", "#44AA99", "#332288", "#999933", "#AA4499", "#117733",
    "#88CCEE", "#DDCC77", "#8C564B", "#17BECF", "#BCBD22", "#9467BD", "#EE6677", "#228833",
)


def _or_last(order: int | None) -> float:
    """A declared place, or after every placed one (None)."""
    return math.inf if order is None else order


@dataclass(frozen=True)
class Names:
    """How a report names and colours each bonus, from the bonuses' declarations (label, colour,
    role and order among the bonuses of its role, declared with their settings: rfig_exp.bonuses;
    no JAX).

    ``declared``: bonus name -> its settings class, the built-in bonuses (:data:`BUILT_IN`) and,
    for a report whose runs used bonuses of users' own modules, those too
    (:meth:`with_user_bonuses` makes a new ``Names``; nothing here changes). Legend / table order
    (:attr:`order`, the built-in bonuses): by role (plain PPO first, then the control, the
    baselines in their declared order, the proposed method last so it is drawn on top and reads as
    "the new row" in tables). A user's bonus follows the built-ins of its role."""

    declared: Mapping[str, type[BonusSettings]]
    order: tuple[str, ...]

    @classmethod
    def of(cls, declared: Mapping[str, type[BonusSettings]]) -> Names:
        order = tuple(sorted(declared, key=lambda b: (ROLES.index(declared[b].role),
                                                      _or_last(declared[b].order), b)))
        return cls(MappingProxyType(dict(declared)), order)

    def label(self, bonus: str) -> str:
        return self.declared[bonus].label if bonus in self.declared else bonus

    def colour(self, bonus: str) -> str:
        if bonus in self.declared:
            return self.declared[bonus].colour
        return OTHER_COLOURS[zlib.crc32(bonus.encode()) % len(OTHER_COLOURS)]

    def sort_key(self, bonus: str) -> tuple[float, str]:
        if bonus in self.order:
            return (float(self.order.index(bonus)), "")
        # A user's bonus follows the built-ins of its role; an unknown one sits between the baselines
        # and the proposed method; either alphabetically.
        rank = ROLES.index(self.declared[bonus].role if bonus in self.declared else "baseline")
        before = [i for i, b in enumerate(self.order) if ROLES.index(self.declared[b].role) <= rank]
        return ((before[-1] if before else -1) + 0.5, bonus)

    def sort(self, bonuses) -> list[str]:
        return sorted(set(bonuses), key=self.sort_key)

    def with_role(self, role: str) -> tuple[str, ...]:
        """The built-in bonuses that declare ``role``, in order."""
        return tuple(b for b in self.order if self.declared[b].role == role)

    def role(self, bonus: str) -> str | None:
        """A bonus's declared role (one of ROLES); None for one whose module this checkout cannot
        import (shown by its name, it stands for no role: a report compares it as one more method)."""
        return self.declared[bonus].role if bonus in self.declared else None

    def of_role(self, role: str, bonuses) -> list[str]:
        """Those of ``bonuses`` (a report's) that declare ``role``, in report order: a report
        treats its methods by their part in the comparison, never by their names."""
        return [b for b in self.sort(bonuses) if self.role(b) == role]

    def role_label(self, role: str, bonuses=()) -> str:
        """The name a report gives the bonus of ``role``: the label of the first of ``bonuses`` that
        declares it, else of the first built-in one (how a report that lacks it names what it lacks)."""
        here = self.of_role(role, bonuses) or list(self.with_role(role))
        return self.label(here[0]) if here else role

    def with_user_bonuses(self, modules: Mapping[str, str]) -> tuple[Names, dict[str, str]]:
        """These names and those of the bonuses of users' own modules (bonus name -> ``bonus.module``,
        from the runs' saved configs). A module that cannot be imported here leaves its bonus shown
        by its name: the second value says why, by bonus."""
        declared, unknown = dict(self.declared), {}
        for bonus, module in sorted(modules.items()):
            if bonus in self.order:
                continue
            try:
                declared[bonus] = settings_class(bonus, module)
            except ConfigError as err:
                unknown[bonus] = str(err)
        return Names(MappingProxyType(declared), self.order), unknown


BUILT_IN = Names.of(declared_bonuses())
METHOD_ORDER: tuple[str, ...] = BUILT_IN.order
PALETTE: Mapping[str, str] = MappingProxyType({b: BUILT_IN.colour(b) for b in METHOD_ORDER})
REFERENCES: tuple[str, ...] = BUILT_IN.with_role("reference")  # plain PPO
BASELINES: tuple[str, ...] = BUILT_IN.with_role("baseline")
CONTROLS: tuple[str, ...] = BUILT_IN.with_role("control")  # the noise control: in no claim of the paper

# Each env's label and place in the figures, as its suite declares them (rfig_exp.envs; no JAX): the
# paper's names ("Sparse-Ant", "PointMaze-UMaze", "Breakout") and its figure order (classic control,
# sparse Brax, PointMaze by size, MinAtar), then the envs it does not show. A name a suite declares as
# an alias of an env (MinAtar's bare "breakout") takes that env's label and place.
_ENVS: Mapping[str, DeclaredEnv] = MappingProxyType(
    {name: env for env in declared_envs().values() for name in (env.name, *env.aliases)})

def method_label(bonus: str) -> str:
    """A built-in bonus's label (a report's own bonuses: its ``Collection.names``)."""
    return BUILT_IN.label(bonus)


def method_colour(bonus: str) -> str:
    return BUILT_IN.colour(bonus)


def method_sort_key(bonus: str) -> tuple[float, str]:
    return BUILT_IN.sort_key(bonus)


def sort_methods(bonuses) -> list[str]:
    return BUILT_IN.sort(bonuses)


def split_task(env: str) -> tuple[str, str]:
    """``deepsea[size=30]`` -> (``deepsea``, ``size=30``); a plain env name -> (name, ``""``).

    A task is an env with env options (analysis.collect.split_env_options)."""
    if env.endswith("]") and "[" in env:
        base, opts = env[:-1].split("[", 1)
        return base, opts
    return env, ""


def _option_key(opts: str) -> tuple:
    """Option values in order: numbers by value (size 9 before 10), text alphabetically."""
    out = []
    for part in opts.split(","):
        k, _, v = part.partition("=")
        try:
            out.append((k, 0, float(v), ""))
        except ValueError:
            out.append((k, 1, 0.0, v))
    return tuple(out)


def env_sort_key(env: str) -> tuple:
    """Its declared place in the figures (an env's own options after it, numbers by value); an env
    that no suite places, after every placed one, by name."""
    base, opts = split_task(env)
    declared = _ENVS.get(base)
    options = _option_key(opts) if opts else ()
    if declared is None or declared.order is None:
        return (1, 0, base, options)
    return (0, declared.order, base, options)


def sort_envs(envs) -> list[str]:
    return sorted(set(envs), key=env_sort_key)


def env_label(env: str) -> str:
    """Its declared label (with its options: ``DeepSea (size=30)``); an env no suite declares, its
    name's words capitalised."""
    base, opts = split_task(env)
    if opts:
        return f"{env_label(base)} ({opts.replace(',', ', ')})"
    if env in _ENVS:
        return _ENVS[env].label
    return " ".join(p.capitalize() for p in re.split(r"[_\-]+", env) if p)


# The per-env normalisations of the cross-env aggregates (analysis.aggregate), as --normalisation
# lists them. "ppo" is the reference normalisation's name from when it was named after plain PPO:
# command lines and docs that use it keep working, with the same numbers.
NORMALISATIONS: tuple[str, ...] = ("minmax", "reference", "ppo")
NORMALISATION_ALIASES: Mapping[str, str] = MappingProxyType({"ppo": "reference"})
NORMALISATION_HELP: Mapping[str, str] = MappingProxyType({
    "minmax": "(x - min) / (max - min) per env, over every evaluation point of every counted run (1 = the best "
              "window any run reached)",
    "reference": "(x - min) / (IQM of the reference's final scores - min) per env, the reference being the "
                 "bonus of role reference, plain PPO (1 = its final IQM)",
    "ppo": "the reference normalisation, by its older name"})


def normalisation_kind(kind: str) -> str:
    """The normalisation that ``kind`` names (an alias: its canonical name); a one-line ValueError
    that lists the valid names for any other."""
    if kind not in NORMALISATIONS:
        aliases = ", ".join(f"{a} = {k}" for a, k in NORMALISATION_ALIASES.items())
        raise ValueError(f"normalisation must be one of {', '.join(NORMALISATIONS)} ({aliases}), got {kind!r}")
    return NORMALISATION_ALIASES.get(kind, kind)


def describe_normalisation(kind: str, reference: str | None = None) -> str:
    """What normalisation ``kind`` computes, as a report states it; reference: the label of the
    report's reference (default: the built-in bonus of role reference's, PPO)."""
    if normalisation_kind(kind) == "minmax":
        return ("min-max per env: (x - min) / (max - min), min and max taken over every evaluation point "
                "of every counted run of every method in this report (1 = best window any run reached)")
    ref = BUILT_IN.role_label("reference") if reference is None else reference
    return (f"{ref}-normalised per env: (x - min) / (IQM of {ref} final scores - min), min over every evaluation "
            f"point of every counted run of every method in this report (1 = {ref}'s final IQM)")

"""The baselines whose defaults the campaign changed after runs had been made at the old ones.

A fix changes what a bonus's base variant means, so the runs made before it must never be read as
runs of the fixed bonus. Each fix is declared here once, with the old values of the settings it
changed; every way runs enter the committed data (``export``, ``merge``) files a run made at those
values (its recorded config says so, :func:`campaign.repro.data.made_at`) under the variant the old
values name, numbers unchanged, before it is merged. The report reads the same declarations to tell
a bonus's runs before a fix from those after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class BaselineFix:
    """One change of a bonus's defaults, and why."""

    bonus: str
    """The bonus's config name (``bonus=NAME``)."""
    old_defaults: Mapping[str, object] = field(default_factory=dict)
    """``bonus.KEY`` -> its value before the fix; a key the fix added takes the value that leaves the
    bonus as it was (a run whose config lacks the key was made before it existed)."""
    note: str = ""
    """Why, kept in the record of every run filed under the old values."""

    def __post_init__(self):
        if not self.old_defaults or not all(k.startswith("bonus.") for k in self.old_defaults):
            raise ValueError(f"{self.bonus}: old_defaults must be bonus.KEY -> value, got {dict(self.old_defaults)}")
        object.__setattr__(self, "old_defaults", MappingProxyType(dict(self.old_defaults)))

    def is_old(self, overrides: Mapping[str, object]) -> bool:
        """Whether a variant's overrides are this fix's old values (its runs from before the fix)."""
        return all(overrides.get(k) == v for k, v in self.old_defaults.items())


FIXES: tuple[BaselineFix, ...] = (
    BaselineFix(
        "vime", {"bonus.init_sigma": 0.5, "bonus.kl_ratio_len": 0},
        "VIME before its defaults changed (posterior std 0.05, the reference's KL ratio): at the reference's "
        "std 0.5 its information gain sat at the clip of 1000 on every MinAtar transition (docs/bonuses/vime.md)"),
    BaselineFix(
        "hashexplo", {"bonus.bin_penalty": 10},
        "made at #Explo's old default bin_penalty 10, under which its code collapsed to one bucket on the "
        "MinAtar panels (docs/bonuses/hashexplo.md); its runs at the new default 0.1 go under the base variant"),
)


def fix_of(bonus: str) -> BaselineFix | None:
    """The declared fix of ``bonus``, if its defaults were changed."""
    return next((f for f in FIXES if f.bonus == bonus), None)


def fix_methods(coll, fix: BaselineFix) -> dict[str, str]:
    """"before" / "after" -> the method key in ``coll`` (an analysis.collect.Collection) of ``fix``'s
    bonus at the fix's old values and at the defaults (its base variant); a key is absent where
    ``coll`` has no such runs."""
    out = {}
    for m in coll.methods:
        info = coll.method_info.get(m)
        if info is None or info.bonus != fix.bonus:
            continue
        overrides = info.overrides_dict
        if fix.is_old(overrides):
            out["before"] = m
        elif not any(k.startswith("bonus.") for k in overrides):
            out["after"] = m
    return out

"""Which method of the as-run grid (campaign ``paper32_as_run``) made a run, from what made it.

The grid's variant folders are protocol override lists cut with a hash, and our VIME under the
protocol shares its folder with PPO's (its bonus settings are the defaults, so its overrides are the
protocol's alone): a folder name says nothing. What a run is follows from the campaign's own
declaration instead (:func:`campaign.repro.protocol_stages.as_run_stages`): each stage command of a
panel (the preset's sweep of its six bonuses, and :data:`AS_RUN_OWN_BONUSES` with
:func:`own_bonus_overrides`) is composed as launch.py composes it, and the hyperparameters that
differ from the defaults (``rfig_exp.spec.defaults.variant_overrides``, what names a run's variant)
are the overrides its runs carry. A run whose bonus and ``variant_overrides`` equal one command's is
that command's method (:func:`method_of`); any other run is of neither, and :func:`sort_runs` lists it
with the reason instead of mixing it in. Nothing here imports JAX.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Mapping

from analysis.names import method_label
from rfig_exp.config.variants import BASE, same_value

from .protocol_stages import AS_RUN_OWN_BONUSES, as_run_stages, own_bonus_overrides
from .stage_parts import AS_RUN, Stage, command_overrides, paper32_envs, stage_bonuses

OWN_VARIANT = "own_settings"  # the report tree's variant of a bonus run with its own settings
OWN_LABEL = "{} (ours; as-run protocol)"  # no comma: rliable splits a pair of labels at one


@dataclass(frozen=True)
class Declared:
    """One method of the as-run grid on one panel: the stage command that makes it and the variant
    overrides its runs carry (``overrides``: key -> value, as ``variant_overrides`` holds them)."""

    env: str
    bonus: str
    own: bool  # the bonus with its own settings under the protocol (AS_RUN_OWN_BONUSES), else the preset's
    command: str
    overrides: tuple[tuple[str, Any], ...]

    @property
    def key(self) -> str:
        """The method's key in the report: the bonus for the preset's, ``<bonus>/own_settings`` for ours."""
        return f"{self.bonus}/{OWN_VARIANT}" if self.own else self.bonus

    @property
    def variant(self) -> str:
        """The variant folder of the report's tree (the preset's methods: ``base``, so the claims find them)."""
        return OWN_VARIANT if self.own else BASE

    @property
    def label(self) -> str:
        return OWN_LABEL.format(method_label(self.bonus)) if self.own else method_label(self.bonus)

    @property
    def overrides_dict(self) -> dict[str, Any]:
        return dict(self.overrides)


def _is_own(bonus: str, words: Mapping[str, str]) -> bool:
    """Whether a command runs ``bonus`` with its own settings: it is one of :data:`AS_RUN_OWN_BONUSES`
    and the command sets every one of :func:`own_bonus_overrides` (the declaration, read back)."""
    if bonus not in AS_RUN_OWN_BONUSES:
        return False
    own = dict(w.split("=", 1) for w in own_bonus_overrides(bonus))
    return bool(own) and all(words.get(k) == v for k, v in own.items())


def _composed_overrides(preset: str, words: Mapping[str, str], bonus: str) -> dict[str, Any]:
    """The variant overrides of ``bonus`` in a stage command (``preset`` and its other overrides):
    the command composed as launch.py composes it, against the declared defaults."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from campaign.presets import CONF_DIR as CAMPAIGN_CONF
    from rfig_exp.config.folders import CONF_DIR
    from rfig_exp.spec import defaults
    from rfig_exp.spec.run_spec import choices

    kept = [f"{k}={v}" for k, v in words.items() if k not in ("seed", "num_seeds", "bonus")]
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        cfg = compose("config", [f"hydra.searchpath=[file://{CAMPAIGN_CONF}]", f"sweep={preset}", *kept,
                                 f"bonus={bonus}"])
        return defaults.variant_overrides(OmegaConf.to_container(cfg, resolve=True), choices(cfg))


@functools.lru_cache(maxsize=None)
def declared(env: str) -> tuple[Declared, ...]:
    """The methods of the as-run grid on ``env``, from its first stage's commands (a seed block
    changes no variant); empty for an env the grid does not run."""
    stage = next((s for s in as_run_stages() if f" env={env} " in f" {s.commands[0]} "), None)
    if stage is None:
        return ()
    out = []
    for line in stage.commands:
        preset, words = command_overrides(line)
        for bonus in stage_bonuses(Stage(stage.name, (line,))):
            ov = _composed_overrides(preset, words, bonus)
            out.append(Declared(env, bonus, _is_own(bonus, words), line, tuple(sorted(ov.items()))))
    return tuple(out)


def same_overrides(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """The same keys, each with the same value (``1e6 == 1000000``; an infinite value written to
    JSON as null reads back as None, and matches only an infinite one)."""
    def norm(v):
        return float("inf") if v is None else v
    return a.keys() == b.keys() and all(same_value(norm(a[k]), norm(b[k])) for k in a)


def method_of(env: str, bonus: str, variant_overrides: Mapping[str, Any]) -> Declared | None:
    """The as-run method that made a run of ``bonus`` on ``env`` with ``variant_overrides``, or None."""
    hits = [d for d in declared(env) if d.bonus == bonus and same_overrides(d.overrides_dict, variant_overrides)]
    return hits[0] if len(hits) == 1 else None


def why_not(env: str, bonus: str, variant_overrides: Mapping[str, Any]) -> str:
    """Why a run is of no as-run method: its panel, its bonus, or the overrides nearest to its."""
    if env not in paper32_envs():
        return f"{env} is not a panel of the as-run grid"
    same = [d for d in declared(env) if d.bonus == bonus]
    if not same:
        return f"no command of the as-run grid runs {bonus} on {env}"
    have = dict(variant_overrides)

    def differing(want: Mapping[str, Any]) -> list[str]:
        return sorted(k for k in want.keys() | have.keys()
                      if k not in want or k not in have or not same_overrides({k: want[k]}, {k: have[k]}))

    best = min(same, key=lambda d: len(differing(d.overrides_dict)))
    want = best.overrides_dict
    keys = differing(want)
    diff = ", ".join(f"{k}: {have.get(k, '(unset)')!r} where {best.label} has {want.get(k, '(unset)')!r}"
                     for k in keys[:4])
    return f"its overrides match no command of the as-run grid ({diff}{', ...' if len(keys) > 4 else ''})"


def sort_runs(stored: Mapping[tuple, Any], experiment: str = AS_RUN) -> tuple[dict, list[tuple[tuple, str]]]:
    """The runs of ``experiment`` in ``stored`` (campaign.repro.data.StoredRun by run key) by method:
    ``(run key -> Declared, [(run key, why it is of no method), ...])``."""
    assigned: dict[tuple, Declared] = {}
    refused: list[tuple[tuple, str]] = []
    for key, run in sorted(stored.items()):
        if key[0] != experiment:
            continue
        rec = run.record
        overrides = rec.get("variant_overrides")
        if overrides is None:
            overrides = (rec.get("summary") or {}).get("variant_overrides")
        if overrides is None:
            refused.append((key, "it records no variant overrides"))
            continue
        made = method_of(rec["env"], rec["bonus"], overrides)
        if made is None:
            refused.append((key, why_not(rec["env"], rec["bonus"], overrides)))
        else:
            assigned[key] = made
    return assigned, refused


__all__ = ["Declared", "OWN_LABEL", "OWN_VARIANT", "declared", "method_of", "same_overrides", "sort_runs", "why_not"]

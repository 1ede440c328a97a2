"""Bonus factory keyed by ``bonus.name``. Each bonus lives in the module of its name."""

from __future__ import annotations

import importlib

from rfig_exp.bonuses.base import Bonus, BonusBatch
from rfig_exp.errors import ConfigError

# name -> (module, factory); modules are imported only when their bonus is made
REGISTRY: dict[str, tuple[str, str]] = {
    "none": ("rfig_exp.bonuses.none", "make_none_bonus"),
    "rfig": ("rfig_exp.bonuses.rfig", "make_rfig_bonus"),
    "vime": ("rfig_exp.bonuses.vime", "make_vime_bonus"),
    "rnd": ("rfig_exp.bonuses.rnd", "make_rnd_bonus"),
    "hashexplo": ("rfig_exp.bonuses.hashexplo", "make_hashexplo_bonus"),
}


def bonus_names() -> list[str]:
    return sorted(REGISTRY)


def make_bonus(cfg, obs_shape, action_space, batch_shape):
    """Validate the ``bonus`` config node and build ``(Bonus, hparams)``.

    ``batch_shape`` is ``(num_steps, num_envs)`` of one rollout.
    """
    name = cfg.get("name")
    if name not in REGISTRY:
        raise ConfigError(f"bonus.name={name!r} is not a known bonus; valid names: {', '.join(bonus_names())}")
    module, factory = REGISTRY[name]
    return getattr(importlib.import_module(module), factory)(cfg, obs_shape, action_space, batch_shape)


__all__ = ["Bonus", "BonusBatch", "REGISTRY", "bonus_names", "make_bonus"]

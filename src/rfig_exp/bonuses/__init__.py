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


def check_bonus(cfg, batch_shape) -> None:
    """The bonus's own checks that need no environment, so that a bad value is refused before
    an environment suite's imports (brax alone takes 10-20 s)."""
    validate = getattr(_module(cfg), "validate", None)
    if validate is not None:
        validate(cfg, batch_shape[0] * batch_shape[1])


def make_bonus(cfg, obs_shape, action_space, batch_shape):
    """Validate the ``bonus`` config node and build ``(Bonus, hparams)``.

    ``batch_shape`` is ``(num_steps, num_envs)`` of one rollout.
    """
    factory = getattr(_module(cfg), REGISTRY[cfg.get("name")][1])
    return factory(cfg, obs_shape, action_space, batch_shape)


def _module(cfg):
    name = cfg.get("name")
    if name not in REGISTRY:
        raise ConfigError(f"bonus.name={name!r} is not a known bonus; valid names: {', '.join(bonus_names())}")
    return importlib.import_module(REGISTRY[name][0])


__all__ = ["Bonus", "BonusBatch", "REGISTRY", "bonus_names", "check_bonus", "make_bonus"]

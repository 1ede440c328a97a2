"""The exploration bonuses: names, settings and the factory, keyed by ``bonus.name``.

Nothing here imports JAX: ``parse_bonus`` checks a ``bonus`` config node into that bonus's
settings (``rfig_exp.bonuses.settings``) before anything compiles; ``make_bonus`` imports the
bonus's own module (named after it; RFIG's is a package) only when the bonus is made.
``Bonus`` and ``BonusBatch`` live in ``rfig_exp.bonuses.base`` (read from here on first use).
"""

from __future__ import annotations

import importlib

from rfig_exp.bonuses.settings import SETTINGS, BonusSettings, parse_bonus

# name -> (module, factory); modules are imported only when their bonus is made
REGISTRY: dict[str, tuple[str, str]] = {
    "none": ("rfig_exp.bonuses.none", "make_none_bonus"),
    "rfig": ("rfig_exp.bonuses.rfig", "make_rfig_bonus"),
    "vime": ("rfig_exp.bonuses.vime", "make_vime_bonus"),
    "rnd": ("rfig_exp.bonuses.rnd", "make_rnd_bonus"),
    "hashexplo": ("rfig_exp.bonuses.hashexplo", "make_hashexplo_bonus"),
}
assert set(REGISTRY) == set(SETTINGS)


def bonus_names() -> list[str]:
    return sorted(REGISTRY)


def check_bonus(node, batch_shape) -> BonusSettings:
    """``parse_bonus`` for a rollout of ``batch_shape = (num_steps, num_envs)``: the bonus's checks
    that need no environment, so that a bad value is refused before an environment suite's
    imports (brax alone takes 10-20 s)."""
    return parse_bonus(node, batch_shape[0] * batch_shape[1])


def make_bonus(settings, obs_shape, action_space, batch_shape):
    """``(Bonus, hparams)`` for ``settings`` (from ``parse_bonus``; a ``bonus`` config node is
    parsed first); ``hparams`` is the bonus's NamedTuple of float32 scalars.

    ``batch_shape`` is ``(num_steps, num_envs)`` of one rollout.
    """
    if not isinstance(settings, BonusSettings):
        settings = check_bonus(settings, batch_shape)
    module, factory = REGISTRY[settings.name]
    return getattr(importlib.import_module(module), factory)(settings, obs_shape, action_space, batch_shape)


def __getattr__(name):  # Bonus, BonusBatch: from the JAX side, imported when first asked for
    if name in ("Bonus", "BonusBatch"):
        return getattr(importlib.import_module("rfig_exp.bonuses.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Bonus", "BonusBatch", "BonusSettings", "REGISTRY", "bonus_names", "check_bonus", "make_bonus",
           "parse_bonus"]

"""gymnax's envs: classic control, MinAtar and bsuite's DeepSea, declared without JAX.

Only DeepSea takes an option (its size). Labels are the paper's names; the order is its figures'
(classic control first, MinAtar after Brax and PointMaze), then CartPole and DeepSea, which it
does not show, and the continuous-action envs after every placed one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rfig_exp.config.settings import setting
from rfig_exp.config.validation import Count
from rfig_exp.envs.settings import DeclaredEnv, EnvSettings

if TYPE_CHECKING:
    from rfig_exp.envs.base import Env

DEEPSEA_ID = "DeepSea-bsuite"


@dataclass(frozen=True)
class GymnaxSettings(EnvSettings):
    """gymnax envs take no options, except DeepSea (:class:`DeepSeaSettings`)."""

    suite: ClassVar[str] = "gymnax"


@dataclass(frozen=True)
class DeepSeaSettings(GymnaxSettings):
    """bsuite's DeepSea through gymnax: its board size."""

    section: ClassVar[str | None] = "DeepSea: `env=deepsea`"
    size: int = setting(20, Count(2), doc="board size N: N steps per episode, N x N observation")


def _minatar(game: str, gymnax_id: str, label: str, order: int) -> DeclaredEnv:
    """A MinAtar game, also known by its bare name (``breakout``)."""
    return DeclaredEnv(f"minatar_{game}", gymnax_id, GymnaxSettings, label, order, aliases=(game,))


ENVS = (
    DeclaredEnv("acrobot", "Acrobot-v1", GymnaxSettings, "Acrobot", 1),
    DeclaredEnv("mountaincar", "MountainCar-v0", GymnaxSettings, "MountainCar", 2),
    _minatar("breakout", "Breakout-MinAtar", "Breakout", 14),
    _minatar("asterix", "Asterix-MinAtar", "Asterix", 15),
    _minatar("freeway", "Freeway-MinAtar", "Freeway", 16),
    _minatar("space_invaders", "SpaceInvaders-MinAtar", "SpaceInvaders", 17),
    DeclaredEnv("cartpole", "CartPole-v1", GymnaxSettings, "CartPole", 18),
    DeclaredEnv("deepsea", DEEPSEA_ID, DeepSeaSettings, "DeepSea", 19),
    DeclaredEnv("pendulum", "Pendulum-v1", GymnaxSettings, "Pendulum"),
    DeclaredEnv("mountaincar_continuous", "MountainCarContinuous-v0", GymnaxSettings, "MountainCarContinuous"),
)


def make(settings: GymnaxSettings) -> Env:
    """The env of ``settings``, made by ``envs/gymnax_suite.py`` (gymnax and JAX: imported here)."""
    from rfig_exp.envs.gymnax_suite import make_gymnax_env

    return make_gymnax_env(settings)

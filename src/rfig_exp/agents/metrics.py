"""A training loop's per-update metrics, grouped by how a window reduces them (any agent's).

Every update returns an :class:`UpdateMetrics`: each metric sits in the group that says how
the ``[U, S]`` values of a window's ``U`` updates become one value per seed (``[S]``):

- ``means``: averaged over the window (losses, rewards, the learning rate, most bonus metrics);
- ``counts``: summed over the window (``episodes_finished``, a bonus's event counts);
- ``episode_sums``: sums over the episodes that ended, reported per finished episode
  (``episode_return``, ``episode_length``, ``env/<info>``; NaN when none ended in the window);
- ``final``: the value after the window's last update (``coverage``, a state, not a rate).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

EPISODES_FINISHED = "episodes_finished"


class UpdateMetrics(NamedTuple):
    means: dict
    counts: dict
    episode_sums: dict
    final: dict


def reduce_window(metrics: UpdateMetrics) -> dict:
    """``[U, S]`` per-update metrics -> ``{name: [S]}`` for the window (rules in the module doc)."""
    out = {k: v.mean(0) for k, v in metrics.means.items()}
    out.update({k: v.sum(0) for k, v in metrics.counts.items()})
    out.update({k: v[-1] for k, v in metrics.final.items()})
    n = out[EPISODES_FINISHED]
    out.update({k: jnp.where(n > 0, v.sum(0) / jnp.maximum(n, 1), jnp.nan) for k, v in metrics.episode_sums.items()})
    return out

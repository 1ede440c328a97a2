"""PPO's SGD metrics: the SGD loop's metrics travel as one stacked vector per minibatch (one scan
output instead of one per metric); :class:`SGDMetrics` names its entries. How a window reduces
an update's metrics is :mod:`rfig_exp.agents.metrics` (any agent's).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class SGDMetrics(NamedTuple):
    policy_loss: jax.Array
    value_loss_ext: jax.Array
    value_loss_int: jax.Array
    entropy: jax.Array
    approx_kl: jax.Array
    clip_frac: jax.Array
    grad_norm: jax.Array

    def stacked(self) -> jax.Array:
        """``[7]``: the entries in field order (a scan stacks one array instead of seven)."""
        return jnp.stack(self)

    @classmethod
    def mean_of(cls, stacked: jax.Array) -> SGDMetrics:
        """Each metric's mean over every minibatch of every epoch (``stacked``: ``[..., 7]``)."""
        return cls(*stacked.reshape(-1, len(cls._fields)).mean(0))

"""Does a bonus carry a signal? Per-batch statistics of its *raw* reward, computed beside training.

A bonus can train without error and still tell the agent nothing: pinned at its clip, constant
across the batch, or blind to how often a state was seen. These statistics of one batch of raw
intrinsic rewards ``r [T, B]`` (before the agent's scaling) make that visible in every run's
``metrics.csv`` (``signal/<name>``, averaged over a window's updates); ``campaign/claims/signal.py``
judges them by a rule fixed in advance (docs/analysis.md, *Signal check and the control*):

- ``at_max_fraction``: the fraction of the batch within a relative ``1e-6`` of its largest value.
  An informative continuous bonus has one transition there (``1 / (T B)``); a clip that binds puts
  every clipped transition there, and a constant bonus the whole batch.
- ``cv``: the coefficient of variation ``std(r) / mean(r)`` over the batch (0 where the mean is 0):
  0 for a constant, whatever its value. Bonuses are non-negative, so the ratio is defined.
- ``visit_rank_corr`` (envs with a coverage grid): Spearman's rank correlation between each
  transition's raw bonus and the visit count, before this batch, of the coverage cell of its next
  state. A novelty bonus falls as a cell is revisited, so it is negative; ties get average ranks;
  0 where either side is constant (the first update of a run, when every count is 0).

Each is a few sorts and reductions over ``T B`` numbers, nothing beside a bonus's own cost.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

AT_MAX_RTOL = 1e-6


def average_ranks(x: jax.Array) -> jax.Array:
    """``[N] -> [N]`` float32 ranks from 0, tied values sharing the mean of their ranks."""
    ordered = jnp.sort(x)
    low = jnp.searchsorted(ordered, x, side="left")
    high = jnp.searchsorted(ordered, x, side="right")
    return 0.5 * (low + high - 1).astype(jnp.float32)


def pearson(a: jax.Array, b: jax.Array) -> jax.Array:
    """Pearson correlation of two ``[N]`` vectors; 0 where either is constant."""
    a = a - a.mean()
    b = b - b.mean()
    denom = jnp.sqrt(jnp.sum(a * a) * jnp.sum(b * b))
    return jnp.where(denom > 0, jnp.sum(a * b) / jnp.where(denom > 0, denom, 1.0), 0.0)


def spearman(a: jax.Array, b: jax.Array) -> jax.Array:
    """Spearman's rank correlation of two ``[N]`` vectors (average ranks for ties)."""
    return pearson(average_ranks(a), average_ranks(b))


def batch_signal(raw: jax.Array, visits_before: jax.Array | None = None) -> dict[str, jax.Array]:
    """The signal statistics of one batch: ``raw`` ``[T, B]`` raw intrinsic rewards; ``visits_before``
    ``[T, B]`` the visit count of each transition's next-state cell before this batch (None: the env
    has no coverage grid, and ``visit_rank_corr`` is left out)."""
    r = raw.reshape(-1).astype(jnp.float32)
    top = jnp.max(r)
    mean = jnp.mean(r)
    out = {
        "at_max_fraction": jnp.mean((r >= top - AT_MAX_RTOL * jnp.abs(top)).astype(jnp.float32)),
        "cv": jnp.where(mean > 0, jnp.std(r) / jnp.where(mean > 0, mean, 1.0), 0.0),
    }
    if visits_before is not None:
        out["visit_rank_corr"] = spearman(r, visits_before.reshape(-1).astype(jnp.float32))
    return out


__all__ = ["AT_MAX_RTOL", "average_ranks", "batch_signal", "pearson", "spearman"]

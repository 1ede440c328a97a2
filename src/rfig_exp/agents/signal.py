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


# --------------------------------------------------------------------------- the non-learning reference
# A bonus that learns nothing can still fall with visits: a state's distance from where the agent
# mostly is, which is what an untrained network's output tends to track, is larger in rarely visited
# cells. ``campaign/claims/signal.py`` compares each bonus's ``visit_rank_corr`` with this score's
# (docs/analysis.md, *Signal check and the control*); ``distance_reference`` computes it on a batch
# (the trainer could record it as ``signal/distance_rank_corr``), ``campaign/claims/signal_calibration.py``
# on transitions drawn from a run's final visit map.


def cell_centres(cell: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """Flat row-major coverage cells ``[...]`` -> their centres ``[..., 2]`` in cell units
    (``(i + 0.5, j + 0.5)``, ``i`` along the grid's first axis)."""
    cell = jnp.asarray(cell)
    return jnp.stack([cell // shape[1], cell % shape[1]], axis=-1).astype(jnp.float32) + 0.5


def distance_score(coords: jax.Array, visits: jax.Array) -> jax.Array:
    """``[N, 2]`` positions in cell units -> ``[N]`` standardised distance from the visit-weighted
    mean cell of ``visits`` ``[H, W]``: ``|| (x - mu) / sigma ||`` with ``mu`` and ``sigma`` the
    per-axis mean and standard deviation of the cell centres weighted by their counts (an axis with
    no spread keeps scale 1; no visits at all weigh every cell alike). Non-negative; learns nothing."""
    v = jnp.asarray(visits, jnp.float32)
    total = jnp.sum(v)
    w = jnp.where(total > 0, v / jnp.where(total > 0, total, 1.0), 1.0 / v.size)
    centres = cell_centres(jnp.arange(v.size), v.shape)                      # [H W, 2]
    flat = w.reshape(-1, 1)
    mu = jnp.sum(flat * centres, axis=0)
    sigma = jnp.sqrt(jnp.sum(flat * (centres - mu) ** 2, axis=0))
    sigma = jnp.where(sigma > 0, sigma, 1.0)
    return jnp.sqrt(jnp.sum(((jnp.asarray(coords, jnp.float32) - mu) / sigma) ** 2, axis=-1))


def distance_reference(cell: jax.Array, visits: jax.Array, shape: tuple[int, ...]) -> dict[str, jax.Array]:
    """The reference statistic of one batch: ``distance_rank_corr``, Spearman's rank correlation
    between the distance score of each transition's next-state cell (its centre) and that cell's
    visit count before the batch. ``cell`` ``[T, B]`` flat cells, ``visits`` ``[H W]`` the counts
    before the batch, ``shape`` the grid's ``(H, W)``. Computed beside :func:`batch_signal`, it
    changes none of that function's values."""
    flat = jnp.asarray(cell).reshape(-1)
    counts = jnp.asarray(visits).reshape(shape)
    score = distance_score(cell_centres(flat, shape), counts)
    return {"distance_rank_corr": spearman(score, jnp.asarray(visits).reshape(-1)[flat].astype(jnp.float32))}


__all__ = ["AT_MAX_RTOL", "average_ranks", "batch_signal", "cell_centres", "distance_reference", "distance_score",
           "pearson", "spearman"]

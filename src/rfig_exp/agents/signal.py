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

Where the coverage grid is a projection of what a bonus sees (Acrobot's two angles of six
observations, Brax's torso of 11-27 dimensions), or there is no grid (MinAtar), visits cannot
say whether a state was novel. :func:`novelty_step` measures novelty in the bonus's own input
space instead (``agent.novelty_reservoir``): a reservoir holds a uniform sample of earlier next
states, and a state's novelty is the distance, in the normalised observations a bonus is given,
to its ``k``-th nearest reservoir state (a nearest-neighbour density estimate: far from its
neighbours, rarely seen). Two statistics of ``NOVELTY_QUERIES`` transitions drawn from the batch:

- ``novelty_rank_corr``: Spearman's rank correlation between the raw bonus and that novelty
  (a novelty bonus's is positive);
- ``distance_novelty_rank_corr``: the same for a score that learns nothing, the state's
  standardised distance from the reservoir's mean, the reference a working bonus must beat.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from rfig_exp.agents.contract import NOVELTY_NEIGHBOUR

AT_MAX_RTOL = 1e-6
NOVELTY_QUERIES = 256   # transitions per batch whose novelty is measured, then offered to the reservoir


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
    return weighted_standardised_distance(jnp.asarray(coords, jnp.float32), centres, w.reshape(-1))


def weighted_standardised_distance(x: jax.Array, points: jax.Array, weights: jax.Array) -> jax.Array:
    """``[..., D]`` -> ``[...]``: ``|| (x - mu) / sigma ||`` with ``mu`` and ``sigma`` the per-axis mean and
    standard deviation of ``points`` ``[N, D]`` under ``weights`` ``[N]`` (summing to 1; an axis with
    no spread keeps scale 1)."""
    flat = weights[:, None]
    mu = jnp.sum(flat * points, axis=0)
    sigma = jnp.sqrt(jnp.sum(flat * (points - mu) ** 2, axis=0))
    sigma = jnp.where(sigma > 0, sigma, 1.0)
    return jnp.sqrt(jnp.sum(((x - mu) / sigma) ** 2, axis=-1))


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


# --------------------------------------------------------------------------- novelty in the bonus's input space


class Reservoir(NamedTuple):
    """A uniform sample of the states offered so far (Vitter's algorithm R, a batch at a time)."""

    states: jax.Array   # [K, *obs] raw observations; slots at or past ``offered`` are empty
    offered: jax.Array  # [] int32, states offered so far


def reservoir_init(size: int, obs_shape: tuple[int, ...], dtype=jnp.float32) -> Reservoir:
    """An empty reservoir of ``size`` states of ``obs_shape``."""
    return Reservoir(jnp.zeros((size,) + tuple(obs_shape), dtype), jnp.zeros((), jnp.int32))


def reservoir_offer(reservoir: Reservoir, states: jax.Array, key: jax.Array) -> Reservoir:
    """``states`` ``[M, *obs]`` offered in turn: the ``n``-th state offered (from 0) fills slot ``n``
    while the reservoir has room, then replaces a slot drawn uniformly from ``[0, n]`` when that
    draw is below the size ``K``, so each state offered so far is held with probability ``K / n``.
    Two of one batch drawing the same slot: one of them is kept (which, the scatter decides); with
    ``M`` draws among ``n`` of which ``K`` land, that is rare once ``n >> M``."""
    size = reservoir.states.shape[0]
    index = reservoir.offered + jnp.arange(states.shape[0], dtype=jnp.int32)
    drawn = jax.random.randint(key, index.shape, 0, index + 1)
    slot = jnp.where(index < size, index, drawn)
    slot = jnp.where(slot < size, slot, size)  # past the end: dropped
    return Reservoir(reservoir.states.at[slot].set(states.astype(reservoir.states.dtype), mode="drop"),
                     reservoir.offered + states.shape[0])


def _squared_distances(queries: jax.Array, points: jax.Array) -> jax.Array:
    """``[M, D]``, ``[K, D]`` -> ``[M, K]`` squared Euclidean distances, centred on the points' mean
    first so that equal states come out at 0 rather than at float32 cancellation noise."""
    centre = points.mean(axis=0)
    q, p = queries - centre, points - centre
    qq, pp = jnp.sum(q * q, axis=1)[:, None], jnp.sum(p * p, axis=1)[None, :]
    d2 = qq + pp - 2.0 * q @ p.T
    return jnp.where(d2 > 1e-6 * (qq + pp), d2, 0.0)


def knn_distance(queries: jax.Array, points: jax.Array, valid: jax.Array, k: int = NOVELTY_NEIGHBOUR) -> jax.Array:
    """``[M]`` distance from each of ``queries`` ``[M, D]`` to its ``k``-th nearest of the ``valid``
    ``[K]`` rows of ``points`` ``[K, D]`` (inf with fewer than ``k`` valid)."""
    d2 = jnp.where(valid[None, :], _squared_distances(queries, points), jnp.inf)

    def next_distance(_, carry):  # the next larger distance and its multiplicity: k masked mins over K, with
        below, seen, kth = carry  # no sort (XLA's top_k sorts each row: 30 ms a seed per batch on a CPU)
        value = jnp.min(jnp.where(d2 > below[:, None], d2, jnp.inf), axis=1)
        count = jnp.sum(d2 == value[:, None], axis=1)
        kth = jnp.where((seen < k) & (seen + count >= k), value, kth)
        return value, seen + count, kth

    start = (jnp.full(d2.shape[0], -1.0, d2.dtype), jnp.zeros(d2.shape[0], jnp.int32), jnp.full(d2.shape[0], jnp.inf))
    return jnp.sqrt(jax.lax.fori_loop(0, k, next_distance, start)[2])


def standardised_distance(queries: jax.Array, points: jax.Array, valid: jax.Array) -> jax.Array:
    """``[M]`` distance of ``queries`` ``[M, D]`` from the mean of the ``valid`` rows of ``points``,
    each dimension divided by their standard deviation (1 where they do not spread): a score that
    learns nothing."""
    return weighted_standardised_distance(queries, points, valid.astype(points.dtype) / jnp.maximum(valid.sum(), 1))


def novelty_signal(raw: jax.Array, queries: jax.Array, points: jax.Array, valid: jax.Array,
                   k: int = NOVELTY_NEIGHBOUR) -> dict[str, jax.Array]:
    """The novelty statistics of ``raw`` ``[M]`` bonuses of states ``queries`` ``[M, D]`` against the
    earlier states ``points`` ``[K, D]`` (rows ``valid``), both in the bonus's input space. Both 0
    until the reservoir holds ``k`` states (every novelty then infinite: one tied rank)."""
    novelty = knn_distance(queries, points, valid, k)
    return {"novelty_rank_corr": spearman(raw, novelty),
            "distance_novelty_rank_corr": spearman(standardised_distance(queries, points, valid), novelty)}


def novelty_step(reservoir: Reservoir, raw: jax.Array, next_obs: jax.Array,
                 to_input: Callable[[jax.Array], jax.Array], key: jax.Array,
                 num_queries: int = NOVELTY_QUERIES,
                 k: int = NOVELTY_NEIGHBOUR) -> tuple[Reservoir, dict[str, jax.Array]]:
    """One batch: ``raw`` ``[T, B]`` raw bonuses of next states ``next_obs`` ``[T, B, *obs]`` (raw);
    ``to_input`` maps raw states ``[N, *obs]`` to the bonus's input ``[N, D]`` (the normalisation it
    was given, applied to the reservoir too, so earlier states are measured as the bonus sees them
    now). ``num_queries`` transitions, evenly spaced from a random start, are measured against the reservoir
    before this batch, then offered to it. Returns the reservoir after and :func:`novelty_signal`."""
    n = raw.size
    m = min(num_queries, n)
    k_pick, k_offer = jax.random.split(key)
    # every (n // m)-th transition from a random start: each equally likely, spread over the batch's envs
    # and steps, and no sort (a draw without replacement permutes all n)
    pick = (jax.random.randint(k_pick, (), 0, n) + jnp.arange(m) * (n // m)) % n
    states = next_obs.reshape((n,) + next_obs.shape[2:])[pick]
    valid = jnp.arange(reservoir.states.shape[0]) < reservoir.offered
    metrics = novelty_signal(raw.reshape(-1)[pick].astype(jnp.float32), to_input(states), to_input(reservoir.states),
                             valid, k)
    return reservoir_offer(reservoir, states, k_offer), metrics


__all__ = ["AT_MAX_RTOL", "NOVELTY_NEIGHBOUR", "NOVELTY_QUERIES", "Reservoir", "average_ranks", "batch_signal",
           "cell_centres", "distance_reference", "distance_score", "knn_distance", "novelty_signal", "novelty_step",
           "pearson", "reservoir_init", "reservoir_offer", "spearman", "standardised_distance",
           "weighted_standardised_distance"]

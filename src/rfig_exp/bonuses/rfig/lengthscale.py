"""RFIG's length-scale heuristics: ``l = sqrt(d_eff)`` from the random-policy warm-up states
(``bonus.lengthscale=auto``; the estimator is ``bonus.lengthscale_method``).

Shapes: ``N`` = states, ``d`` = state dimension. Pure jitted functions in the input dtype.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from rfig_exp.bonuses.rfig.linalg import rbf_gram, sq_distances

__all__ = ["median_distance", "effective_dimension", "linear_effective_dimension", "participation_ratio",
           "auto_lengthscale", "LENGTHSCALE_METHODS"]

# The estimators implemented here: the names bonus.lengthscale_method accepts (the declaration,
# rfig/__init__.py, lists the same; tests/test_linalg.py holds them equal). Named here rather than
# imported from the declaration, which imports this module when the bonus is made.
LENGTHSCALE_METHODS = ("valko", "valko_fixed_point", "participation_ratio", "linear_valko")


@jax.jit
def median_distance(x: jax.Array) -> jax.Array:
    """Median pairwise Euclidean distance over pairs i < j.

    Args:
      x: [N, d].
    Returns:
      scalar; 0 when N < 2 (no pairs).
    """
    n = x.shape[0]
    if n < 2:  # static shape: no pairs
        return jnp.zeros((), x.dtype)
    iu, ju = jnp.triu_indices(n, k=1)
    d2 = sq_distances(x, x)[iu, ju]
    return jnp.sqrt(jnp.median(d2))  # sqrt is monotone: median of d2 then sqrt


@jax.jit
def effective_dimension(x: jax.Array, base_lengthscale, gamma=1.0) -> jax.Array:
    """Effective dimension of Valko et al. (2013, Sec. 4) of the RBF Gram matrix.

    With ``mu_1 >= mu_2 >= ... >= mu_N`` the eigenvalues of the RBF Gram matrix of the
    N states at length-scale ``base_lengthscale``::

        d_eff = min { j >= 1 : j * gamma * ln N >= sum_{i > j} mu_i }.

    This is *not* ``tr(K (K + gamma I)^-1)``. The set is never empty (j = N has an
    empty tail), so ``1 <= d_eff <= N``. Negative eigenvalues (rounding) are clamped to
    0. The tail sums are accumulated from the smallest eigenvalue upwards (a reversed
    cumsum), which equals ``trace - cumsum`` but without its cancellation error in the
    small tails that decide the result.

    Guards: N = 1 returns 1 (ln 1 = 0; the definition gives 1 too). ``gamma = 0``
    returns the numerical rank of K: the smallest j whose tail is at most
    ``N * eps * mu_1`` (the usual matrix_rank tolerance), instead of N from rounding
    noise in an exact-zero test.

    Args:
      x: [N, d] (normalised) states.
      base_lengthscale: scalar RBF length-scale ``l0``.
      gamma: scalar ridge (>= 0).
    Returns:
      int32 scalar array.
    """
    n = x.shape[0]
    if n <= 1:
        return jnp.ones((), jnp.int32)
    k = rbf_gram(x, base_lengthscale)
    mu_asc = jnp.maximum(jnp.linalg.eigvalsh(k), 0.0)  # ascending
    return _valko_rule(mu_asc, gamma, math.log(n))


@jax.jit
def linear_effective_dimension(x: jax.Array, gamma=1.0) -> jax.Array:
    """Valko et al.'s rule on the *linear* covariance, as the RFIG authors' code applies it
    (rejax b16e24a, ``rnk.py:36-53``; docs/bonuses/rfig.md).

    With ``e_1 >= ... >= e_d`` the eigenvalues of ``X^T X + gamma I`` (d x d) and ``T = N``
    the number of states::

        d_eff = min { j >= 1 : j * gamma * ln T >= sum_{i > j} e_i },

    so ``1 <= d_eff <= d``. Every dimension adds gamma to the tail, a constant one (normalised
    to 0) too, so ``d_eff >= d / (1 + ln T)``. X is not centred (the authors' is not: its states
    are normalised). Same tail sums and ``gamma = 0`` guard as :func:`effective_dimension`.

    Args:
      x: [N, d] (normalised) states.
      gamma: scalar ridge (>= 0).
    Returns:
      int32 scalar array.
    """
    n, d = x.shape
    c = x.T @ x + jnp.asarray(gamma, x.dtype) * jnp.eye(d, dtype=x.dtype)
    e_asc = jnp.maximum(jnp.linalg.eigvalsh(c), 0.0)  # ascending
    return _valko_rule(e_asc, gamma, math.log(n))


def _valko_rule(mu_asc: jax.Array, gamma, log_t: float) -> jax.Array:
    """``min { j >= 1 : j * gamma * log_t >= sum_{i > j} mu_i }`` over the ``m`` eigenvalues
    ``mu_asc`` (ascending, >= 0), int32; ``m`` when no smaller j qualifies (an empty tail)."""
    m = mu_asc.shape[0]
    # tail[j-1] = sum_{i>j} mu_i for j = 1..m: sum of the m - j smallest eigenvalues.
    small_cumsum = jnp.cumsum(mu_asc)  # small_cumsum[k-1] = sum of k smallest
    tail = jnp.concatenate([small_cumsum[: m - 1][::-1], jnp.zeros((1,), mu_asc.dtype)])
    j = jnp.arange(1, m + 1, dtype=mu_asc.dtype)
    gamma = jnp.asarray(gamma, mu_asc.dtype)
    rank_tol = m * jnp.finfo(mu_asc.dtype).eps * mu_asc[-1]
    tol = jnp.where(gamma == 0, rank_tol, 0.0)
    ok = j * gamma * log_t >= tail - tol
    # ok[-1] is always True, so argmax finds the first True.
    return (jnp.argmax(ok) + 1).astype(jnp.int32)


@jax.jit
def participation_ratio(x: jax.Array) -> jax.Array:
    """Participation ratio of the covariance: ``(sum_i c_i)^2 / sum_i c_i^2``.

    ``c_i`` are the eigenvalues of the (biased) covariance of x; computed without an
    eigendecomposition as ``tr(C)^2 / ||C||_F^2`` (C symmetric). Equals k for isotropic
    data on a k-dimensional subspace; scale invariant. Degenerate data (N = 1 or all
    points equal) return 1.0, the smallest non-degenerate value, so ``sqrt(PR)`` stays a
    usable length-scale.

    Args:
      x: [N, d].
    Returns:
      scalar in [1, d].
    """
    xc = x - jnp.mean(x, axis=0)
    c = (xc.T @ xc) / x.shape[0]  # [d, d]
    tr = jnp.trace(c)
    fro2 = jnp.sum(c * c)
    safe = fro2 > 0
    return jnp.where(safe, tr * tr / jnp.where(safe, fro2, 1.0), 1.0)


def auto_lengthscale(x: jax.Array, method: str, gamma=1.0, num_fixed_point_iters: int = 5):
    """Length-scale ``l = sqrt(d_eff)`` from states, with a named estimator.

    Methods (the paper cites Valko et al. but motivates an *input* dimension; the
    estimators disagree by up to 2x, see specs/baselines.md):

    * ``"valko"``: ``l0`` = median pairwise distance, ``d_eff`` = Valko effective
      dimension at ``l0`` and ridge ``gamma``, ``l = sqrt(d_eff)``.
    * ``"valko_fixed_point"``: start at ``l0`` = median distance and iterate
      ``l <- sqrt(d_eff(l))`` ``num_fixed_point_iters`` (static) times. d_eff is integer,
      so the map can end in a 2-cycle; the last iterate is returned, with the d_eff it
      came from.
    * ``"participation_ratio"``: ``d_eff`` = participation ratio of the covariance,
      ``l = sqrt(d_eff)``.
    * ``"linear_valko"``: the RFIG authors' code: ``d_eff`` = Valko's rule on the linear
      covariance ``X^T X + gamma I`` (:func:`linear_effective_dimension`), ``l = sqrt(d_eff)``.

    A zero median distance (all states equal) falls back to ``l0 = 1``.

    Args:
      x: [N, d] normalised states.
      method: one of ``LENGTHSCALE_METHODS`` (static; checked before tracing). Under an
        outer ``jax.jit`` pass it (and ``num_fixed_point_iters``) as static.
      gamma: ridge for the Valko methods.
      num_fixed_point_iters: static iteration count for ``"valko_fixed_point"``.
    Returns:
      ``(lengthscale, d_eff)``: scalar in x's dtype; d_eff is an int32 scalar for the
      Valko methods (linear_valko too) and a float scalar for ``"participation_ratio"``.
    Raises:
      ValueError: unknown method.
    """
    # Checked here, in plain Python, before anything is traced.
    if method not in LENGTHSCALE_METHODS:
        raise ValueError(
            f"unknown length-scale method {method!r}; valid: {', '.join(LENGTHSCALE_METHODS)}"
        )
    return _auto_lengthscale(x, method, gamma, int(num_fixed_point_iters))


@functools.partial(jax.jit, static_argnames=("method", "num_fixed_point_iters"))
def _auto_lengthscale(x, method, gamma, num_fixed_point_iters):
    if method == "participation_ratio":
        pr = participation_ratio(x)
        return jnp.sqrt(pr), pr
    if method == "linear_valko":
        d_lin = linear_effective_dimension(x, gamma)
        return jnp.sqrt(d_lin.astype(x.dtype)), d_lin

    med = median_distance(x)
    l0 = jnp.where(med > 0, med, jnp.ones_like(med))
    d_eff = effective_dimension(x, l0, gamma)
    ls = jnp.sqrt(d_eff.astype(x.dtype))
    if method == "valko":
        return ls, d_eff

    def body(_, carry):
        ls, _ = carry
        d = effective_dimension(x, ls, gamma)
        return jnp.sqrt(d.astype(x.dtype)), d

    # The first iterate from l0 is already computed above.
    return jax.lax.fori_loop(0, num_fixed_point_iters - 1, body, (ls, d_eff))

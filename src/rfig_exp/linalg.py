"""Linear algebra for RFIG: precision-matrix maintenance and kernel diagnostics.

Shapes: ``D`` = number of random features, ``k`` = rows added in one update,
``N`` = number of states, ``d`` = state dimension, ``p`` = probe vectors.

Everything here is a pure function of arrays, wrapped in ``jax.jit`` (one compile per
shape/dtype instead of op-by-op dispatch; nested inside a caller's jit/vmap it is simply
inlined), with Python control flow only on static values (shapes, iteration counts,
method names). It runs
in the input dtype (float32 in training), and in float64 under ``jax_enable_x64``.

Maintaining ``Lambda = Sigma^-1`` with ``Sigma = reg I + sum_t Phi_t^T Phi_t``:

* :func:`exact_inverse` -- Cholesky inverse, O(D^3), always accurate. The paper's final
  experiments use a full inversion.
* :func:`newton_schulz` -- ``X <- X (2I - A X)``, warm-started from the previous
  inverse (paper appendix, K = 20). The residual obeys ``I - A X_{j+1} = (I - A X_j)^2``,
  so it converges iff the spectral radius of ``I - A X_0`` is < 1. With ``X_0 =
  Lambda_old`` and ``A = Sigma_old + Phi^T Phi`` that radius is the largest eigenvalue of
  ``Phi Lambda_old Phi^T`` ([k, k]), which exceeds 1 whenever the new batch is large
  relative to the data already seen (e.g. the first updates from ``Lambda_0 = I / reg``):
  the iteration then blows up to inf/NaN. :func:`newton_schulz_warm_start` gives a
  scaled warm start that always converges.
* :func:`woodbury_update` -- rank-k update, O(k D^2); rounding error accumulates over
  many updates, so check it with :func:`inverse_residual` and refresh with
  :func:`exact_inverse` when the residual grows.

:func:`quadratic_form` evaluates ``phi^T Lambda phi`` for a batch of rows from the upper
block triangle of ``Lambda`` only (the bonus's dominant cost, ~5/8 of the dense matmul).
"""

from __future__ import annotations

import functools
import math
import os

# JAX runs its CPU Cholesky and triangular solves through scipy's OpenBLAS, loaded at the
# first such call, which then starts one thread per core. When the cores are shared (a
# sweep's concurrent runs, other jobs) those threads spin-wait for each other at every
# synchronisation point. Measured on the 2-core machine with other processes running, paired
# runs: a rank-256 Woodbury update took 140-190 ms instead of 24-31 ms, a 1024 x 1024 exact
# inverse 410-430 ms instead of 120-130 ms (docs/rfig_speed.md). On a quiet machine one
# thread was no slower. Set before OpenBLAS loads; an explicit setting is respected.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.custom_batching import custom_vmap  # noqa: E402
from jax.scipy.linalg import cho_factor, cho_solve, solve_triangular  # noqa: E402

__all__ = [
    "symmetrize",
    "exact_inverse",
    "newton_schulz",
    "newton_schulz_warm_start",
    "woodbury_update",
    "inverse_residual",
    "quadratic_form",
    "sequential_vmap",
    "sq_distances",
    "rbf_kernel",
    "rbf_gram",
    "median_distance",
    "effective_dimension",
    "participation_ratio",
    "auto_lengthscale",
    "LENGTHSCALE_METHODS",
]

LENGTHSCALE_METHODS = ("valko", "valko_fixed_point", "participation_ratio")


def symmetrize(a: jax.Array) -> jax.Array:
    """(A + A^T) / 2 for a [..., D, D] matrix.

    Rounding makes computed inverses slightly asymmetric; Cholesky and eigvalsh only
    read one triangle, so an asymmetric input would silently be a different matrix.
    """
    return 0.5 * (a + jnp.swapaxes(a, -1, -2))


# --------------------------------------------------------------------------------------
# Inverse maintenance
# --------------------------------------------------------------------------------------


@jax.jit
def exact_inverse(sigma: jax.Array) -> jax.Array:
    """Inverse of a symmetric positive-definite matrix via Cholesky.

    Args:
      sigma: [D, D] SPD matrix (``reg I + Phi^T Phi``).
    Returns:
      [D, D] symmetric ``sigma^-1``. A non-SPD input gives NaNs (Cholesky fails
      silently in JAX), which :func:`inverse_residual` flags.
    """
    eye = jnp.eye(sigma.shape[-1], dtype=sigma.dtype)
    factor = cho_factor(symmetrize(sigma), lower=True)
    return symmetrize(cho_solve(factor, eye))


@functools.partial(jax.jit, static_argnames=("num_iters",))
def newton_schulz(a: jax.Array, x0: jax.Array, num_iters: int) -> jax.Array:
    """Newton-Schulz inverse iteration ``X <- X (2I - A X)`` for a fixed number of steps.

    Converges quadratically iff the spectral radius of ``I - A x0`` is < 1, and
    diverges (to inf/NaN within ~20 steps) otherwise; see the module docstring and
    :func:`newton_schulz_warm_start`. There is no early exit: the step count is static so
    the loop compiles once and vmaps.

    Args:
      a: [D, D] SPD matrix to invert.
      x0: [D, D] initial guess (warm start: the previous inverse).
      num_iters: static number of iterations (paper: 20).
    Returns:
      [D, D] symmetric approximation of ``a^-1``.
    """
    a = symmetrize(a)

    def body(_, x):
        # 2X - X A X costs two matmuls. The exact iterate stays symmetric (X, A
        # symmetric => X A X symmetric); symmetrising every step (O(D^2)) keeps float32
        # rounding asymmetry from accumulating over the iterations.
        return symmetrize(2.0 * x - x @ (a @ x))

    return jax.lax.fori_loop(0, int(num_iters), body, symmetrize(x0))


@jax.jit
def newton_schulz_warm_start(lam_old: jax.Array, phi: jax.Array) -> jax.Array:
    """A warm start for :func:`newton_schulz` that converges for any rank-k update.

    With ``A = Lambda_old^-1 + Phi^T Phi`` and ``X0 = c Lambda_old`` the eigenvalues of
    ``I - A X0`` are ``1 - c (1 + mu_i)``, ``mu_i`` the eigenvalues of
    ``Phi Lambda_old Phi^T`` ([k, k], PSD). Their maximum is bounded by the trace ``t``;
    ``c = 2 / (2 + t)`` puts every eigenvalue in ``(-1, 1)``, so the iteration
    converges; the slowest direction contracts like ``(t / (2 + t))^(2^K)``, i.e. K of
    about ``log2(t) + 5`` steps suffice (t <= 2k / reg for RFF features, whose squared
    norm is at most 2). When the plain warm start would already converge fast (small
    t), ``c`` is close to 1.

    Args:
      lam_old: [D, D] previous inverse ``Sigma_old^-1``.
      phi: [k, D] features added in this update.
    Returns:
      [D, D] scaled warm start ``c * lam_old``.
    """
    trace = jnp.sum((phi @ lam_old) * phi)  # tr(Phi Lambda Phi^T), O(k D^2)
    return lam_old * (2.0 / (2.0 + trace))


@jax.jit
def woodbury_update(lam: jax.Array, phi: jax.Array) -> jax.Array:
    """Rank-k update of an inverse: ``(lam^-1 + phi^T phi)^-1``.

    ``Lam - Lam Phi^T (I_k + Phi Lam Phi^T)^-1 Phi Lam``. The k x k matrix
    ``S = I_k + Phi Lam Phi^T`` is SPD with eigenvalues >= 1 (well conditioned); with
    its Cholesky factor ``S = C C^T`` the correction is ``V^T V``, ``V = C^-1 Phi Lam``:
    one triangular solve, and the correction is symmetric PSD by construction. O(k D^2):
    two ``[k, D] x [D, D]``-sized matmuls (``Phi Lam`` and ``V^T V``), one pass over ``lam``.

    No symmetrisation afterwards: ``(V^T V)_ij`` and ``(V^T V)_ji`` are the same products
    summed in the same order by the matmul, so a symmetric ``lam`` stays bitwise symmetric
    (``tests/test_linalg.py`` checks it over 60 updates in float32 and float64). A separate
    ``(A + A^T) / 2`` pass cost about as much as the subtraction and the rank-k product
    together on CPU (transposed reads of a [D, D] matrix).

    Args:
      lam: [D, D] current inverse (symmetric).
      phi: [k, D] new feature rows.
    Returns:
      [D, D] symmetric updated inverse.
    """
    u = phi @ lam  # [k, D] = Phi Lam (= (Lam Phi^T)^T since Lam is symmetric)
    s = jnp.eye(phi.shape[0], dtype=lam.dtype) + u @ phi.T  # [k, k]
    c = jnp.linalg.cholesky(symmetrize(s))  # [k, k] lower
    v = solve_triangular(c, u, lower=True)  # [k, D] = C^-1 Phi Lam
    return lam - v.T @ v


@jax.jit
def inverse_residual(sigma: jax.Array, lam: jax.Array, probe: jax.Array) -> jax.Array:
    """Relative residual ``||Sigma (Lam V) - V||_F / ||V||_F`` on probe vectors.

    A cheap (O(D^2 p)) check that ``lam`` is still the inverse of ``sigma``; the
    product is taken as ``Sigma (Lam V)`` so no D x D x D matmul is needed. NaN or inf
    anywhere in ``lam`` makes the result non-finite, so ``~jnp.isfinite(res) | (res >
    tol)`` detects a diverged inverse.

    Args:
      sigma: [D, D] the matrix.
      lam: [D, D] its claimed inverse.
      probe: [D, p] probe vectors (e.g. Gaussian or Rademacher; must not be all zero).
    Returns:
      scalar relative residual.
    """
    r = sigma @ (lam @ probe) - probe
    return jnp.linalg.norm(r) / jnp.linalg.norm(probe)


@functools.partial(jax.jit, static_argnames=("num_blocks",))
def quadratic_form(phi: jax.Array, lam: jax.Array, num_blocks: int = 1) -> jax.Array:
    """``phi_n^T lam phi_n`` for every row of ``phi``, reading only lam's upper block triangle.

    With ``lam`` symmetric and split into ``b x b`` blocks of size ``m = D / b`` (``phi``
    into the matching column blocks ``phi_j``)::

        phi^T lam phi = sum_j phi_j^T (lam_jj phi_j + 2 sum_{i<j} lam_ij^T phi_i)

    which needs the ``b (b + 1) / 2`` blocks ``lam_ij``, ``i <= j``: ``N D^2 (b + 1) / b``
    multiply-adds instead of the dense ``2 N D^2`` of ``sum((phi @ lam) * phi, -1)``
    (0.625 of it at b = 4). Each block product is a plain ``[N, m] x [m, m]`` matmul, which
    stays a fast GEMM on CPU, also when vmapped. ``num_blocks = 1`` is the dense form.
    The result is the quadratic form of the symmetric matrix whose upper block triangle is
    ``lam``'s, so a slightly asymmetric ``lam`` (rounding) is read as a symmetric one.

    Args:
      phi: [N, D] rows.
      lam: [D, D] symmetric matrix.
      num_blocks: static number of diagonal blocks ``b``; must divide D.
    Returns:
      [N] quadratic forms.
    """
    num_features = lam.shape[-1]
    if num_blocks < 1 or num_features % num_blocks:
        raise ValueError(f"num_blocks={num_blocks} must be >= 1 and divide D={num_features}")
    if num_blocks == 1:
        # Matmul + row sum: a 3-operand einsum lowers, once vmapped over seeds, to a
        # batched contraction ~2.4x slower on CPU.
        return jnp.sum((phi @ lam) * phi, axis=-1)
    m = num_features // num_blocks
    cols = [phi[:, j * m:(j + 1) * m] for j in range(num_blocks)]  # [N, m] each
    total = jnp.zeros(phi.shape[:-1], phi.dtype)
    for j in range(num_blocks):
        block = slice(j * m, (j + 1) * m)
        diag = cols[j] @ lam[block, block]
        if j:
            off = cols[0] @ lam[:m, block]
            for i in range(1, j):
                off = off + cols[i] @ lam[i * m:(i + 1) * m, block]
            diag = diag + 2.0 * off
        total = total + jnp.sum(diag * cols[j], axis=-1)
    return total


def sequential_vmap(fn):
    """``fn`` whose ``jax.vmap`` runs one example after another (``lax.map``) on CPU.

    XLA's CPU backend turns a vmapped matmul into a batched dot that costs far more than the
    same plain matmuls one after another: for 8 seeds' ``[4096, 1024] x [1024, 1024]``
    quadratic forms, 60 ms of CPU time per seed batched against 39 ms in a loop, and the
    blocked :func:`quadratic_form` lost its whole advantage when batched (60 vs 30 ms;
    docs/rfig_speed.md). RFIG's per-seed matrices are large enough that a loop over seeds
    costs nothing in parallelism on CPU. Other backends keep the batched form.

    ``fn`` takes positional pytree arguments; under ``jax.vmap`` the unbatched ones are
    shared by every example, and every output is batched along axis 0.
    """
    wrapped = custom_vmap(fn)

    @wrapped.def_vmap
    def rule(axis_size, in_batched, *args):
        if jax.default_backend() != "cpu":
            in_axes = tuple(jax.tree.map(lambda b: 0 if b else None, flags) for flags in in_batched)
            out = jax.vmap(fn, in_axes=in_axes)(*args)
            return out, jax.tree.map(lambda _: True, out)
        leaves, treedef = jax.tree.flatten(args)
        flags = jax.tree.leaves(in_batched)
        batched = [x for x, b in zip(leaves, flags) if b]

        def one(sliced):
            it = iter(sliced)
            return wrapped(*jax.tree.unflatten(treedef, [next(it) if b else x for x, b in zip(leaves, flags)]))

        out = jax.lax.map(one, batched)
        return out, jax.tree.map(lambda _: True, out)

    return wrapped


# --------------------------------------------------------------------------------------
# Kernels and distances
# --------------------------------------------------------------------------------------


def sq_distances(x1: jax.Array, x2: jax.Array) -> jax.Array:
    """Squared Euclidean distances, [N, d] x [M, d] -> [N, M].

    Uses ``|a|^2 + |b|^2 - 2 a.b`` (memory O(N M), not O(N M d)); both sets are shifted
    by the same mean first, which leaves distances unchanged but removes most of the
    float32 cancellation when the data sit far from the origin. Clamped at 0.
    """
    shift = jnp.mean(x1, axis=0) if x1.shape[0] > 0 else 0.0
    x1 = x1 - shift
    x2 = x2 - shift
    n1 = jnp.sum(x1 * x1, axis=-1)
    n2 = jnp.sum(x2 * x2, axis=-1)
    d2 = n1[:, None] + n2[None, :] - 2.0 * (x1 @ x2.T)
    return jnp.maximum(d2, 0.0)


@jax.jit
def rbf_kernel(x1: jax.Array, x2: jax.Array, lengthscale) -> jax.Array:
    """RBF cross-kernel ``exp(-|x - x'|^2 / (2 l^2))``, [N, d] x [M, d] -> [N, M]."""
    return jnp.exp(-sq_distances(x1, x2) / (2.0 * jnp.square(lengthscale)))


@jax.jit
def rbf_gram(x: jax.Array, lengthscale) -> jax.Array:
    """RBF Gram matrix ``exp(-|x_i - x_j|^2 / (2 l^2))``.

    Args:
      x: [N, d] states.
      lengthscale: scalar (may be traced).
    Returns:
      [N, N] symmetric Gram matrix with an exact unit diagonal.
    """
    n = x.shape[0]
    # Zero the diagonal distances exactly (the |a|^2+|b|^2-2ab form leaves rounding
    # there) and symmetrise, so eigvalsh sees a true symmetric PSD-up-to-rounding matrix.
    d2 = symmetrize(sq_distances(x, x)) * (1.0 - jnp.eye(n, dtype=x.dtype))
    return jnp.exp(-d2 / (2.0 * jnp.square(lengthscale)))


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
    # tail[j-1] = sum_{i>j} mu_i for j = 1..N: sum of the N - j smallest eigenvalues.
    small_cumsum = jnp.cumsum(mu_asc)  # small_cumsum[m-1] = sum of m smallest
    tail = jnp.concatenate([small_cumsum[: n - 1][::-1], jnp.zeros((1,), mu_asc.dtype)])
    j = jnp.arange(1, n + 1, dtype=mu_asc.dtype)
    gamma = jnp.asarray(gamma, mu_asc.dtype)
    rank_tol = n * jnp.finfo(mu_asc.dtype).eps * mu_asc[-1]
    tol = jnp.where(gamma == 0, rank_tol, 0.0)
    ok = j * gamma * math.log(n) >= tail - tol
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

    A zero median distance (all states equal) falls back to ``l0 = 1``.

    Args:
      x: [N, d] normalised states.
      method: one of ``LENGTHSCALE_METHODS`` (static; checked before tracing). Under an
        outer ``jax.jit`` pass it (and ``num_fixed_point_iters``) as static.
      gamma: ridge for the Valko methods.
      num_fixed_point_iters: static iteration count for ``"valko_fixed_point"``.
    Returns:
      ``(lengthscale, d_eff)``: scalar in x's dtype; d_eff is an int32 scalar for the
      Valko methods and a float scalar for ``"participation_ratio"``.
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

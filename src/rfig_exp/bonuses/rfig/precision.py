"""RFIG's precision upkeep: ``Lambda = Sigma^-1`` with ``Sigma = reg I + sum_t Phi_t^T Phi_t``.

Shapes: ``D`` = number of random features, ``k`` = rows added in one update, ``N`` = rows
read, ``p`` = probe vectors. Each function is wrapped in ``jax.jit`` (one compile per
shape/dtype instead of op-by-op dispatch; nested inside a caller's jit/vmap it is simply
inlined), with Python control flow only on static values (shapes, iteration counts). It
runs in the input dtype (float32 in training), and in float64 under ``jax_enable_x64``.

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

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve, solve_triangular

from rfig_exp.bonuses.rfig.linalg import symmetrize  # first: it limits OpenBLAS's threads before they start

__all__ = ["exact_inverse", "newton_schulz", "newton_schulz_warm_start", "woodbury_update", "inverse_residual",
           "quadratic_form"]


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

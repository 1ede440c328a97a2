"""Generic linear algebra shared by RFIG and the theory checks: symmetrisation, RBF kernels, and
a vmap that runs one example after another on CPU.

RFIG's own pieces live in its package: the precision (inverse) upkeep in
``rfig_exp.bonuses.rfig.precision``, the length-scale heuristics in
``rfig_exp.bonuses.rfig.lengthscale``, the random Fourier features in
``rfig_exp.bonuses.rfig.features``.

Shapes: ``N``, ``M`` = numbers of states, ``d`` = state dimension. Pure functions of arrays,
in the input dtype (float32 in training, float64 under ``jax_enable_x64``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap  # noqa: E402

__all__ = ["symmetrize", "sequential_vmap", "sq_distances", "rbf_kernel", "rbf_gram"]


def symmetrize(a: jax.Array) -> jax.Array:
    """(A + A^T) / 2 for a [..., D, D] matrix.

    Rounding makes computed inverses slightly asymmetric; Cholesky and eigvalsh only
    read one triangle, so an asymmetric input would silently be a different matrix.
    """
    return 0.5 * (a + jnp.swapaxes(a, -1, -2))


# --------------------------------------------------------------------------------------
# Batching
# --------------------------------------------------------------------------------------














def sequential_vmap(fn):
    """``fn`` whose ``jax.vmap`` runs one example after another (``lax.map``) on CPU.

    XLA's CPU backend turns a vmapped matmul into a batched dot that costs far more than the
    same plain matmuls one after another: for 8 seeds' ``[4096, 1024] x [1024, 1024]``
    quadratic forms, 60 ms of CPU time per seed batched against 39 ms in a loop, and the
    blocked ``rfig.precision.quadratic_form`` lost its whole advantage when batched (60 vs 30 ms;
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











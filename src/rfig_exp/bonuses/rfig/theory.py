"""The paper's information gains and error bounds, for tests, diagnostics and the theory figure.

Reference implementations of the quantities in Sections 3-4 of the RFIG paper: RFF
information gain (Prop. 3.2), exact GP information gain (Definition 3.1), and the bounds of
Props. 4.1-4.3 / Cor. 4.4. Pure jnp functions, jittable and vmappable, in the dtype of their
inputs (float32 or float64). The random Fourier feature map itself is the bonus's
(``rfig_exp.bonuses.rfig.features``; ``rff_params`` and ``rff_features`` are importable from
here too).

Shapes: ``d`` = state dimension, ``D`` = number of features, ``n`` = data points,
``M`` = query points.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_factor, cho_solve

from rfig_exp.bonuses.rfig.features import rff_features, rff_params
from rfig_exp.bonuses.rfig.linalg import rbf_gram, rbf_kernel, symmetrize

__all__ = [
    "rff_params",
    "rff_features",
    "rff_information_gain",
    "gp_information_gain",
    "variance_error_bound",
    "ig_error_bound",
    "rbf_sigma_p",
    "rff_uniform_error_prob",
    "kernel_error_for_ig_error",
    "features_for_ig_error",
]


# --------------------------------------------------------------------------------------
# Information gain
# --------------------------------------------------------------------------------------


@jax.jit
def rff_information_gain(
    x_query: jax.Array,
    x_data: jax.Array,
    omega_unit: jax.Array,
    bias: jax.Array,
    lengthscale,
    reg,
) -> jax.Array:
    """RFF information gain (Prop. 3.2), computed directly in the primal D x D form.

    ``0.5 log(1 + phi(x)^T (Phi^T Phi + reg I)^-1 phi(x))``, ``Phi`` = features of the
    data. This equals ``0.5 log(1 + sigma_hat_n^2(x) / reg)`` for the RFF-approximated
    kernel (paper, proof of Prop. 3.2), so it is directly comparable with
    :func:`gp_information_gain` at the same ``reg``.

    Args:
      x_query: [M, d].
      x_data: [n, d] (n = 0 allowed: prior information gain).
      omega_unit, bias: from :func:`rff_params`.
      lengthscale: scalar.
      reg: scalar regularisation lambda (> 0).
    Returns:
      [M] information gains (nats).
    """
    phi_q = rff_features(x_query, omega_unit, bias, lengthscale)  # [M, D]
    phi_n = rff_features(x_data, omega_unit, bias, lengthscale)  # [n, D]
    num_features = omega_unit.shape[-1]
    sigma = phi_n.T @ phi_n + reg * jnp.eye(num_features, dtype=phi_q.dtype)
    sol = cho_solve(cho_factor(symmetrize(sigma), lower=True), phi_q.T)  # [D, M]
    quad = jnp.sum(phi_q.T * sol, axis=0)
    return 0.5 * jnp.log1p(jnp.maximum(quad, 0.0))


@jax.jit
def gp_information_gain(x_query: jax.Array, x_data: jax.Array, lengthscale, reg) -> jax.Array:
    """Exact GP information gain with an RBF kernel (Definition 3.1).

    ``0.5 log(1 + sigma_n^2(x) / reg)`` with
    ``sigma_n^2(x) = k(x, x) - k_n(x)^T (K_n + reg I)^-1 k_n(x)`` and ``k(x, x) = 1``.
    O(n^3): a reference for tests and diagnostics, not for training.

    Args:
      x_query: [M, d].
      x_data: [n, d] (n >= 1).
      lengthscale: scalar RBF length-scale.
      reg: scalar noise variance / regularisation (> 0).
    Returns:
      [M] information gains (nats).
    """
    n = x_data.shape[0]
    k_nn = rbf_gram(x_data, lengthscale) + reg * jnp.eye(n, dtype=x_data.dtype)  # [n, n]
    k_nq = rbf_kernel(x_data, x_query, lengthscale)  # [n, M]
    sol = cho_solve(cho_factor(k_nn, lower=True), k_nq)  # [n, M]
    # Clamp: the subtraction can go slightly negative by rounding for well-covered x.
    var = jnp.maximum(1.0 - jnp.sum(k_nq * sol, axis=0), 0.0)
    return 0.5 * jnp.log1p(var / reg)


# --------------------------------------------------------------------------------------
# Error bounds (Section 4). All assume the paper's lambda = n * lambda0 (Assumption 4.2)
# and eps = sup_{x, x'} |phi(x)^T phi(x') - k(x, x')| over the points involved.
# --------------------------------------------------------------------------------------


def variance_error_bound(eps, lambda0, kappa=1.0):
    """Prop. 4.1: ``|sigma_hat_n^2(x) - sigma_n^2(x)| <= eps (1 + k^2/l0^2 + 2k/l0 + eps/l0)``.

    ``k`` = kappa (kernel bound), ``l0`` = lambda0 with ``reg = n * lambda0``.
    """
    return eps * (1.0 + kappa**2 / lambda0**2 + 2.0 * kappa / lambda0 + eps / lambda0)


def ig_error_bound(eps, n, lambda0, kappa=1.0):
    """Prop. 4.2: ``|IG - IG_hat| <= (eps (l0 + k)^2 + eps^2 l0) / (2 n l0^3)``.

    Equals :func:`variance_error_bound` divided by ``2 reg = 2 n lambda0``.
    """
    return (eps * (lambda0 + kappa) ** 2 + eps**2 * lambda0) / (2.0 * n * lambda0**3)


def rbf_sigma_p(d, lengthscale):
    """``sigma_p = sqrt(E ||omega||^2) = sqrt(d) / l`` for the RBF kernel (omega ~ N(0, l^-2 I))."""
    return math.sqrt(d) / lengthscale  # d is a static int


def rff_uniform_error_prob(eps, d, num_features, sigma_p, diam, c=66.0):
    """Prop. 4.3 (Rahimi & Recht; c = 66 from Sutherland & Schneider).

    Upper bound on ``P[sup |phi^T phi - k| >= eps]`` over a compact set of diameter
    ``diam`` in R^d: ``c (sigma_p diam / eps)^2 exp(-D eps^2 / (8 (d + 2)))``, clipped
    to at most 1 (it is a probability bound; the raw expression is often > 1).
    """
    raw = c * (sigma_p * diam / eps) ** 2 * jnp.exp(-num_features * eps**2 / (8.0 * (d + 2.0)))
    return jnp.minimum(raw, 1.0)


def kernel_error_for_ig_error(ig_error, n, lambda0, kappa=1.0):
    """The largest kernel error eps for which :func:`ig_error_bound` <= ``ig_error``.

    Positive root of ``lambda0 e^2 + (lambda0 + kappa)^2 e - 2 n lambda0^3 ig_error``
    (proof of Cor. 4.4). For small ``ig_error`` it is about
    ``2 n lambda0^3 ig_error / (lambda0 + kappa)^2`` (the paper's ``epsilon_k``); the
    exact root is never larger. Written as ``2c / (b + sqrt(b^2 + 4 a c))`` to avoid
    cancellation.
    """
    b = (lambda0 + kappa) ** 2
    c2 = 2.0 * 2.0 * n * lambda0**3 * ig_error  # 2 * (2 n l0^3 ig_error)
    return c2 / (b + jnp.sqrt(b * b + 2.0 * lambda0 * c2))


def features_for_ig_error(ig_error, delta, n, lambda0, d, sigma_p, diam, kappa=1.0, c=66.0):
    """Cor. 4.4 with explicit constants: D such that ``sup_x |IG - IG_hat| <= ig_error``
    with probability at least ``1 - delta``.

    Take eps = :func:`kernel_error_for_ig_error` and the smallest D with
    :func:`rff_uniform_error_prob` ``(eps, ...) <= delta``:
    ``D = 8 (d + 2) / eps^2 * log(c (sigma_p diam / eps)^2 / delta)``, rounded up, at
    least 1. Inherits the paper's assumptions (reg = n lambda0, a compact state set of
    diameter ``diam``, which an RL state space rarely comes with).

    Returns:
      float scalar (an integer value) number of features.
    """
    eps = kernel_error_for_ig_error(ig_error, n, lambda0, kappa)
    log_term = jnp.log(c * (sigma_p * diam / eps) ** 2 / delta)
    num = 8.0 * (d + 2.0) / eps**2 * log_term
    return jnp.maximum(jnp.ceil(num), 1.0)

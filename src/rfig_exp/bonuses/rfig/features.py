"""RFIG's random Fourier features: ``phi(x) = sqrt(2/D) cos(x W + b)``, ``W ~ N(0, l^-2 I)``,
``b ~ U[0, 2 pi]``, so that ``phi(x)^T phi(x')`` estimates the RBF kernel of length-scale ``l``.

Shapes: ``d`` = state dimension, ``D`` = number of features, ``N`` = states.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from rfig_exp.bonuses.rfig import fastmath

__all__ = ["rff_params", "rff_features"]


def rff_params(key: jax.Array, d: int, num_features: int, dtype=jnp.float32):
    """Random parameters of an RBF random Fourier feature map.

    The frequencies are drawn for unit length-scale; :func:`rff_features` divides by
    ``l`` at use (``omega = omega_unit / l ~ N(0, l^-2 I)``), so the length-scale stays
    a runtime value and can be changed without resampling.

    Args:
      key: PRNG key.
      d: input dimension (static).
      num_features: D (static).
      dtype: float dtype.
    Returns:
      ``(omega_unit [d, D] ~ N(0, 1), bias [D] ~ U[0, 2 pi])``.
    """
    k_w, k_b = jax.random.split(key)
    omega_unit = jax.random.normal(k_w, (d, num_features), dtype)
    bias = jax.random.uniform(k_b, (num_features,), dtype, 0.0, 2.0 * math.pi)
    return omega_unit, bias


@jax.jit
def rff_features(x: jax.Array, omega_unit: jax.Array, bias: jax.Array, lengthscale) -> jax.Array:
    """RFF map ``phi(x) = sqrt(2 / D) cos(x W + b)``, ``W = omega_unit / l``.

    ``phi(x)^T phi(x')`` is an unbiased estimate of ``exp(-|x - x'|^2 / (2 l^2))``.

    Args:
      x: [N, d] states.
      omega_unit: [d, D].
      bias: [D].
      lengthscale: scalar (may be traced).
    Returns:
      [N, D] features.
    """
    num_features = omega_unit.shape[-1]
    # (x / l) W_unit == x (W_unit / l); scaling x is the cheaper side when N*d < d*D.
    proj = (x / lengthscale) @ omega_unit + bias
    return jnp.sqrt(jnp.asarray(2.0 / num_features, x.dtype)) * fastmath.cos(proj)

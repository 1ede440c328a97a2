"""The float32 cosine against numpy's float64 one."""

import jax.numpy as jnp
import numpy as np

from rfig_exp.bonuses.rfig import fastmath


def test_float32_cos_matches_float64_over_a_wide_range():
    x = np.concatenate([
        np.linspace(-1e4, 1e4, 1_000_001),
        np.arange(-200, 201) * np.pi / 2,          # near the zeros and extrema
        [0.0, -0.0, 1e-30, np.pi, -np.pi],
    ]).astype(np.float32)
    got = np.asarray(fastmath.cos(jnp.asarray(x))).astype(np.float64)
    want = np.cos(x.astype(np.float64))
    assert got.dtype == np.float64 and got.shape == x.shape
    np.testing.assert_array_less(np.abs(got - want), 3e-7)


def test_other_dtypes_use_the_exact_cos(x64):
    x = jnp.linspace(-50.0, 50.0, 1001, dtype=jnp.float64)
    np.testing.assert_allclose(np.asarray(fastmath.cos(x)), np.cos(np.asarray(x)), rtol=0, atol=1e-15)

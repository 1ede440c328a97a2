"""Tests for rfig_exp.bonuses.rfig.theory against independent float64 numpy computations."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rfig_exp.bonuses.rfig import theory as T

# ---------------------------------------------------------------- numpy references


def np_rbf(a, b, ls):
    return np.exp(-((a[:, None, :] - b[None, :, :]) ** 2).sum(-1) / (2 * ls**2))


def np_rff(x, omega, bias, ls):
    return math.sqrt(2.0 / omega.shape[1]) * np.cos(x @ (omega / ls) + bias)


def np_rff_ig(xq, xd, omega, bias, ls, reg):
    phi_q, phi = np_rff(xq, omega, bias, ls), np_rff(xd, omega, bias, ls)
    sigma = phi.T @ phi + reg * np.eye(omega.shape[1])
    quad = np.einsum("md,dm->m", phi_q, np.linalg.solve(sigma, phi_q.T))
    return 0.5 * np.log1p(quad)


def np_gp_ig(xq, xd, ls, reg):
    k = np_rbf(xd, xd, ls) + reg * np.eye(len(xd))
    kq = np_rbf(xd, xq, ls)
    var = 1.0 - np.einsum("nm,nm->m", kq, np.linalg.solve(k, kq))
    return 0.5 * np.log1p(var / reg)


def loop_gp_ig(xq, xd, ls, reg):
    """Plain-loop GP information gain (Definition 3.1), one query at a time."""

    def k(a, b):
        return math.exp(-sum((ai - bi) ** 2 for ai, bi in zip(a, b)) / (2 * ls**2))

    n = len(xd)
    gram = np.array([[k(xd[i], xd[j]) + (reg if i == j else 0.0) for j in range(n)] for i in range(n)])
    out = []
    for q in xq:
        kv = np.array([k(a, q) for a in xd])
        out.append(0.5 * math.log(1.0 + (k(q, q) - kv @ np.linalg.solve(gram, kv)) / reg))
    return np.array(out)


# ---------------------------------------------------------------- RFF map


def test_rff_params_shapes_and_distribution():
    om, b = T.rff_params(jax.random.PRNGKey(0), 5, 4096)
    assert om.shape == (5, 4096) and b.shape == (4096,)
    assert om.dtype == b.dtype == jnp.float32
    assert abs(float(om.mean())) < 0.03 and abs(float(om.std()) - 1.0) < 0.03
    assert float(b.min()) >= 0.0 and float(b.max()) <= 2 * math.pi
    assert abs(float(b.mean()) - math.pi) < 0.1
    with jax.enable_x64(True):
        om64, b64 = T.rff_params(jax.random.PRNGKey(0), 5, 16, jnp.float64)
        assert om64.dtype == b64.dtype == jnp.float64


def test_rff_features_match_numpy_and_approximate_rbf(x64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 3))
    om, b = T.rff_params(jax.random.PRNGKey(1), 3, 2048, jnp.float64)
    ls = 1.3
    phi = np.asarray(T.rff_features(jnp.asarray(x), om, b, ls))
    np.testing.assert_allclose(phi, np_rff(x, np.asarray(om), np.asarray(b), ls), rtol=1e-10, atol=1e-12)
    # phi phi^T is an unbiased RBF estimate with O(1/sqrt(D)) error.
    assert np.abs(phi @ phi.T - np_rbf(x, x, ls)).max() < 0.15
    # The length-scale is a runtime value: jit once, vary l.
    f = jax.jit(T.rff_features)
    for l2 in (0.5, 2.0):
        np.testing.assert_allclose(
            f(jnp.asarray(x), om, b, l2), np_rff(x, np.asarray(om), np.asarray(b), l2), atol=1e-12
        )


# ---------------------------------------------------------------- information gain


def test_rff_information_gain_matches_numpy(x64):
    rng = np.random.default_rng(2)
    xd, xq = rng.standard_normal((50, 4)), rng.standard_normal((17, 4))
    om, b = T.rff_params(jax.random.PRNGKey(2), 4, 128, jnp.float64)
    for reg in (0.1, 1.0, 10.0):
        got = T.rff_information_gain(jnp.asarray(xq), jnp.asarray(xd), om, b, 1.5, reg)
        ref = np_rff_ig(xq, xd, np.asarray(om), np.asarray(b), 1.5, reg)
        np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-10)


def test_rff_information_gain_float32_close_to_float64():
    rng = np.random.default_rng(3)
    xd, xq = rng.standard_normal((200, 4)), rng.standard_normal((17, 4))
    om, b = T.rff_params(jax.random.PRNGKey(3), 4, 256)
    got = T.rff_information_gain(jnp.asarray(xq, jnp.float32), jnp.asarray(xd, jnp.float32), om, b, 1.5, 1.0)
    assert got.dtype == jnp.float32
    ref = np_rff_ig(xq, xd, np.asarray(om, np.float64), np.asarray(b, np.float64), 1.5, 1.0)
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-4, atol=1e-6)


def test_rff_information_gain_vmaps_over_keys():
    rng = np.random.default_rng(4)
    xd, xq = jnp.asarray(rng.standard_normal((30, 2))), jnp.asarray(rng.standard_normal((5, 2)))
    keys = jax.random.split(jax.random.PRNGKey(4), 3)
    om, b = jax.vmap(lambda k: T.rff_params(k, 2, 64))(keys)
    out = jax.jit(jax.vmap(T.rff_information_gain, in_axes=(None, None, 0, 0, None, None)))(
        xq, xd, om, b, 1.0, 1.0
    )
    assert out.shape == (3, 5)
    np.testing.assert_allclose(out[1], T.rff_information_gain(xq, xd, om[1], b[1], 1.0, 1.0), rtol=1e-5)


def test_gp_information_gain_matches_numpy_and_loop(x64):
    rng = np.random.default_rng(5)
    xd, xq = rng.standard_normal((25, 3)), rng.standard_normal((9, 3))
    for ls, reg in [(1.0, 0.1), (0.5, 1.0), (2.0, 0.01)]:
        got = np.asarray(T.gp_information_gain(jnp.asarray(xq), jnp.asarray(xd), ls, reg))
        np.testing.assert_allclose(got, np_gp_ig(xq, xd, ls, reg), rtol=1e-9)
        np.testing.assert_allclose(got, loop_gp_ig(xq, xd, ls, reg), rtol=1e-9)


@pytest.mark.parametrize("method", ["rff", "gp"])
def test_information_gain_falls_on_repeated_states_and_not_on_novel(method):
    rng = np.random.default_rng(6)
    visited = rng.standard_normal((1, 3))
    novel = visited + 10.0  # far away at length-scale 1
    reg = 1.0
    om, b = T.rff_params(jax.random.PRNGKey(6), 3, 512)

    def ig(data, query):
        data, query = jnp.asarray(data, jnp.float32), jnp.asarray(query, jnp.float32)
        if method == "rff":
            return float(T.rff_information_gain(query, data, om, b, 1.0, reg)[0])
        return float(T.gp_information_gain(query, data, 1.0, reg)[0])

    prior = 0.5 * math.log(1.0 + 1.0 / reg)  # sigma_0^2 = k(x, x) = 1
    repeats = (1, 8, 64)
    seen = [ig(np.repeat(visited, n, 0), visited) for n in repeats]
    # Strictly falling in the number of repeats; for the GP exactly 0.5 log(1 + 1/(n+reg)).
    assert all(a > b for a, b in zip(seen, seen[1:])), seen
    assert seen[-1] < 0.1 * prior
    if method == "gp":
        for n, v in zip(repeats, seen):
            assert v == pytest.approx(0.5 * math.log(1 + 1 / (n + reg)), rel=1e-4)
    # A novel state keeps (almost) the prior information gain however often we revisit.
    far = ig(np.repeat(visited, 64, 0), novel)
    assert far == pytest.approx(prior, rel=0.1)


# ---------------------------------------------------------------- RFF -> GP as D grows

D_GRID = (64, 256, 1024, 4096)
N_DATA, DIM, LS = 40, 3, 1.0


@pytest.fixture(scope="module")
def convergence_data():
    """RFF vs exact GP information gain over D and 3 keys (float64)."""
    rng = np.random.default_rng(7)
    xd = rng.standard_normal((N_DATA, DIM))
    xq = 1.3 * rng.standard_normal((30, DIM))
    out = {"xd": xd, "xq": xq, "err": {}, "max_err": {}, "eps": {}}
    with jax.enable_x64(True):
        # reg = 0.1: convergence over the whole grid, 3 keys. reg = n * lambda0 with
        # lambda0 = 1 (the bound's assumption): only the large D, 2 keys (time budget).
        for reg, grid, seeds in ((0.1, D_GRID, 3), (N_DATA * 1.0, D_GRID[2:], 2)):
            gp = np_gp_ig(xq, xd, LS, reg)
            for D in grid:
                errs, maxs, epss = [], [], []
                for seed in range(seeds):
                    om, b = T.rff_params(jax.random.PRNGKey(seed), DIM, D, jnp.float64)
                    rff = np.asarray(T.rff_information_gain(jnp.asarray(xq), jnp.asarray(xd), om, b, LS, reg))
                    errs.append(np.abs(rff - gp).mean())
                    maxs.append(np.abs(rff - gp).max())
                    # Measured eps of Assumption 4.1 over every point involved (data and
                    # queries, diagonal included).
                    allx = np.concatenate([xd, xq])
                    phi = np_rff(allx, np.asarray(om), np.asarray(b), LS)
                    epss.append(np.abs(phi @ phi.T - np_rbf(allx, allx, LS)).max())
                out["err"][reg, D] = float(np.mean(errs))
                out["max_err"][reg, D] = maxs
                out["eps"][reg, D] = epss
    return out


def test_rff_ig_converges_to_gp_ig(convergence_data):
    err = [convergence_data["err"][0.1, D] for D in D_GRID]
    assert all(a > b for a, b in zip(err, err[1:])), err
    assert err[-1] < 0.02, err  # IG values here range 0.18 .. 1.19 nats
    assert err[-1] < err[0] / 4, err


def test_empirical_error_respects_ig_error_bound(convergence_data):
    """Prop. 4.2 with the paper's lambda = n * lambda0 and the measured eps."""
    reg = N_DATA * 1.0
    lambda0 = reg / N_DATA
    for D in (1024, 4096):
        for max_err, eps in zip(convergence_data["max_err"][reg, D], convergence_data["eps"][reg, D]):
            bound = float(T.ig_error_bound(eps, N_DATA, lambda0))
            assert max_err <= bound, (D, max_err, bound)
            assert bound < 0.01  # not vacuous: IG values here are ~0.01 nats


# ---------------------------------------------------------------- bound formulas


def test_bound_formulas():
    eps, n, l0 = 0.05, 100, 0.5
    v = float(T.variance_error_bound(eps, l0))
    assert v == pytest.approx(eps * (1 + 1 / l0**2 + 2 / l0 + eps / l0))
    # Prop. 4.2 = Prop. 4.1 / (2 lambda), lambda = n lambda0 (Lemma 4.x step of the proof).
    assert float(T.ig_error_bound(eps, n, l0)) == pytest.approx(v / (2 * n * l0))
    assert float(T.ig_error_bound(eps, n, l0, kappa=2.0)) == pytest.approx(
        (eps * (l0 + 2.0) ** 2 + eps**2 * l0) / (2 * n * l0**3)
    )
    # Works elementwise on arrays and under jit.
    arr = jax.jit(T.ig_error_bound)(jnp.array([0.01, 0.1]), n, l0)
    assert arr.shape == (2,) and float(arr[0]) < float(arr[1])


def test_rff_uniform_error_prob():
    sp = T.rbf_sigma_p(4, 2.0)
    assert float(sp) == pytest.approx(1.0)
    p = [float(T.rff_uniform_error_prob(0.1, 4, D, sp, 6.0)) for D in (10, 10**4, 10**5, 10**6)]
    assert p[0] == 1.0  # clipped
    assert all(a >= b for a, b in zip(p, p[1:])) and p[-1] < 1e-6
    raw = 66.0 * (1.0 * 6.0 / 0.1) ** 2 * math.exp(-(10**5) * 0.01 / (8 * 6))
    assert p[2] == pytest.approx(min(raw, 1.0), rel=1e-4)


def test_features_for_ig_error_corollary():
    n, l0, kappa, target = 1000, 0.1, 1.0, 1e-3
    eps = float(T.kernel_error_for_ig_error(target, n, l0, kappa))
    # eps is the root: the IG bound at eps equals the target ...
    assert float(T.ig_error_bound(eps, n, l0, kappa)) == pytest.approx(target, rel=1e-6)
    # ... and it is at most the paper's linearised epsilon_k.
    assert eps <= 2 * n * l0**3 * target / (l0 + kappa) ** 2
    d, diam, delta = 4, 10.0, 0.01
    sp = T.rbf_sigma_p(d, 2.0)
    num = float(T.features_for_ig_error(target, delta, n, l0, d, sp, diam, kappa))
    assert num == int(num) and num >= 1
    assert float(T.rff_uniform_error_prob(eps, d, num, sp, diam)) <= delta * (1 + 1e-5)
    assert float(T.rff_uniform_error_prob(eps, d, 0.99 * num, sp, diam)) > delta
    # More data -> fewer features (Cor. 4.4 discussion); tighter target -> more.
    assert float(T.features_for_ig_error(target, delta, 10 * n, l0, d, sp, diam)) < num
    assert float(T.features_for_ig_error(target / 10, delta, n, l0, d, sp, diam)) > num

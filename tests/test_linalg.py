"""Tests for rfig_exp.bonuses.rfig.linalg and RFIG's precision and length-scale modules against independent
float64 numpy computations."""

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rfig_exp.bonuses.rfig import lengthscale as LS
from rfig_exp.bonuses.rfig import linalg as L
from rfig_exp.bonuses.rfig import precision as P

# ---------------------------------------------------------------- numpy references


def np_rff(x, omega, bias, ls):
    """Independent float64 RFF map, [N, d] -> [N, D]."""
    return math.sqrt(2.0 / omega.shape[1]) * np.cos(x @ omega / ls + bias)


class RFIGStream:
    """Sigma = reg I + sum_t Phi_t^T Phi_t built from RFF batches, in float64 numpy."""

    def __init__(self, seed, d=4, num_features=128, ls=1.5, reg=1.0, spread=1.0):
        self.rng = np.random.default_rng(seed)
        self.omega = self.rng.standard_normal((d, num_features))
        self.bias = self.rng.uniform(0, 2 * np.pi, num_features)
        self.d, self.ls, self.spread = d, ls, spread
        self.sigma = reg * np.eye(num_features)

    def batch(self, k):
        x = self.spread * self.rng.standard_normal((k, self.d))
        return np_rff(x, self.omega, self.bias, self.ls)

    def add(self, phi):
        self.sigma = self.sigma + phi.T @ phi
        return self.sigma


def rel_err(a, ref):
    a = np.asarray(a, np.float64)
    return np.linalg.norm(a - ref) / np.linalg.norm(ref)


def to(dtype, *arrays):
    return [jnp.asarray(a, dtype) for a in arrays]


# ---------------------------------------------------------------- exact inverse


def test_exact_inverse_float64(x64):
    s = RFIGStream(0)
    for _ in range(4):
        s.add(s.batch(64))
    (sig,) = to(jnp.float64, s.sigma)
    out = P.exact_inverse(sig)
    assert out.dtype == jnp.float64
    assert rel_err(out, np.linalg.inv(s.sigma)) < 1e-12
    np.testing.assert_array_equal(np.asarray(out), np.asarray(out).T)


def test_exact_inverse_float32():
    s = RFIGStream(1)
    for _ in range(4):
        s.add(s.batch(64))
    out = P.exact_inverse(jnp.asarray(s.sigma, jnp.float32))
    assert out.dtype == jnp.float32
    assert rel_err(out, np.linalg.inv(s.sigma)) < 1e-5


# ---------------------------------------------------------------- Newton-Schulz


@pytest.mark.parametrize("dtype,tol", [(jnp.float32, 1e-4), (jnp.float64, 1e-10)])
def test_newton_schulz_warm_start_after_rank_k_update(dtype, tol):
    """As RFIG uses it: previous inverse as warm start after a small rank-k update."""
    with jax.enable_x64(dtype == jnp.float64):
        s = RFIGStream(2, num_features=128)
        for _ in range(8):  # history: 8 rho-subsampled batches
            s.add(s.batch(32))
        lam_old = np.linalg.inv(s.sigma)
        phi = s.batch(8)  # k = 8 << D = 128
        # Precondition of convergence: spectral radius of I - A X0 is
        # lambda_max(Phi Lam_old Phi^T) < 1.
        assert np.linalg.eigvalsh(phi @ lam_old @ phi.T).max() < 1.0
        sig_new = s.add(phi)
        a, x0 = to(dtype, sig_new, lam_old)
        out = P.newton_schulz(a, x0, 20)
        assert out.dtype == dtype
        assert rel_err(out, np.linalg.inv(sig_new)) < tol


def test_newton_schulz_cold_start_converges_float64(x64):
    # Classic safe start X0 = A / ||A||_2^2 (here A is SPD, so A^T = A): residual
    # eigenvalues 1 - (a_i / a_max)^2 in [0, 1); condition number of A is small here.
    s = RFIGStream(3, num_features=64)
    s.add(s.batch(16))
    a = s.sigma
    x0 = a / np.linalg.norm(a, 2) ** 2
    out = P.newton_schulz(*to(jnp.float64, a, x0), 30)
    assert rel_err(out, np.linalg.inv(a)) < 1e-10


def test_newton_schulz_plain_warm_start_diverges_on_large_update():
    """The paper's warm start fails when lambda_max(Phi Lam_old Phi^T) > 1.

    First update from Lambda_0 = I / reg with a batch of clustered states: the
    iteration's residual squares each step and blows up. inverse_residual flags it; the
    scaled warm start converges.
    """
    s = RFIGStream(4, num_features=128, spread=0.3)
    lam0 = np.eye(128)
    phi = s.batch(32)
    assert np.linalg.eigvalsh(phi @ lam0 @ phi.T).max() > 1.5
    sig = s.add(phi)
    a, x0, phi32 = to(jnp.float32, sig, lam0, phi)
    probe = jax.random.normal(jax.random.PRNGKey(0), (128, 4))
    bad = P.newton_schulz(a, x0, 20)
    res_bad = P.inverse_residual(a, bad, probe)
    assert not np.isfinite(float(res_bad)) or float(res_bad) > 1.0

    good = P.newton_schulz(a, P.newton_schulz_warm_start(x0, phi32), 20)
    assert rel_err(good, np.linalg.inv(sig)) < 1e-4
    assert float(P.inverse_residual(a, good, probe)) < 1e-4


def test_newton_schulz_safe_warm_start_over_a_stream():
    """From Lambda_0 = I, each update warm-started from the previous NS output (float32)."""
    s = RFIGStream(5, num_features=128, spread=0.5)
    lam = jnp.eye(128, dtype=jnp.float32)
    ns = jax.jit(P.newton_schulz, static_argnums=2)
    for _ in range(12):
        phi = s.batch(24)
        sig = s.add(phi)
        a, phi32 = to(jnp.float32, sig, phi)
        lam = ns(a, P.newton_schulz_warm_start(lam, phi32), 20)
        assert rel_err(lam, np.linalg.inv(sig)) < 1e-4


# ---------------------------------------------------------------- Woodbury


@pytest.mark.parametrize("dtype,tol", [(jnp.float32, 1e-4), (jnp.float64, 1e-11)])
def test_woodbury_many_sequential_updates(dtype, tol):
    with jax.enable_x64(dtype == jnp.float64):
        s = RFIGStream(6, num_features=128)
        lam = jnp.eye(128, dtype=dtype)
        upd = jax.jit(P.woodbury_update)
        for t in range(60):
            phi = s.batch(16)
            sig = s.add(phi)
            lam = upd(lam, jnp.asarray(phi, dtype))
            if t % 20 == 19:
                assert rel_err(lam, np.linalg.inv(sig)) < tol
        assert lam.dtype == dtype
        np.testing.assert_array_equal(np.asarray(lam), np.asarray(lam).T)


def test_woodbury_single_update_matches_formula(x64):
    # Independent check via the explicit inverse (k = 1 is Sherman-Morrison).
    rng = np.random.default_rng(7)
    b = rng.standard_normal((32, 32))
    sig = b @ b.T + 32 * np.eye(32)
    lam = np.linalg.inv(sig)
    for k in (1, 5):
        phi = rng.standard_normal((k, 32))
        out = P.woodbury_update(*to(jnp.float64, lam, phi))
        assert rel_err(out, np.linalg.inv(sig + phi.T @ phi)) < 1e-12


# ---------------------------------------------------------------- inverse residual


def test_inverse_residual():
    s = RFIGStream(8, num_features=128)
    for _ in range(4):
        s.add(s.batch(32))
    sig = s.sigma
    lam = np.linalg.inv(sig)
    probe = np.random.default_rng(9).standard_normal((128, 4))
    a, x, v = to(jnp.float32, sig, lam, probe)

    ref = np.linalg.norm(sig @ (lam @ probe) - probe) / np.linalg.norm(probe)
    assert ref < 1e-12
    assert float(P.inverse_residual(a, x, v)) < 1e-5

    pert = lam + 1e-2 * np.eye(128)
    expect = np.linalg.norm(sig @ (pert @ probe) - probe) / np.linalg.norm(probe)
    got = float(P.inverse_residual(a, jnp.asarray(pert, jnp.float32), v))
    assert got > 1e-2
    assert got == pytest.approx(expect, rel=1e-3)

    for bad_value in (np.nan, np.inf, -np.inf):
        bad = lam.copy()
        bad[3, 7] = bad_value
        assert not np.isfinite(float(P.inverse_residual(a, jnp.asarray(bad, jnp.float32), v)))


# ---------------------------------------------------------------- quadratic form


def np_block_upper_symmetric(lam, num_blocks):
    """The symmetric matrix whose upper block triangle (diagonal blocks symmetrised) is lam's."""
    d = lam.shape[0]
    m = d // num_blocks
    out = np.zeros_like(lam)
    for i in range(num_blocks):
        for j in range(num_blocks):
            bi, bj = slice(i * m, (i + 1) * m), slice(j * m, (j + 1) * m)
            if i < j:
                out[bi, bj] = lam[bi, bj]
            elif i > j:
                out[bi, bj] = lam[bj, bi].T
            else:
                out[bi, bj] = 0.5 * (lam[bi, bj] + lam[bi, bj].T)
    return out


@pytest.mark.parametrize("num_blocks", [1, 2, 4, 8])
def test_quadratic_form_matches_loop_float64(x64, num_blocks):
    s = RFIGStream(20, num_features=64)
    for _ in range(3):
        s.add(s.batch(32))
    lam = np.linalg.inv(s.sigma)
    phi = s.batch(40)
    ref = np.array([row @ lam @ row for row in phi])  # plain loop
    got = P.quadratic_form(*to(jnp.float64, phi, lam), num_blocks=num_blocks)
    assert got.shape == (40,) and got.dtype == jnp.float64
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12)


@pytest.mark.parametrize("num_blocks", [1, 4])
def test_quadratic_form_float32(num_blocks):
    s = RFIGStream(21, num_features=128)
    for _ in range(4):
        s.add(s.batch(64))
    lam = np.linalg.inv(s.sigma)
    phi = s.batch(300)
    ref = np.einsum("nd,de,ne->n", phi, lam, phi)
    got = P.quadratic_form(*to(jnp.float32, phi, lam), num_blocks=num_blocks)
    assert got.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(got), ref, rtol=2e-5, atol=1e-7)


def test_quadratic_form_reads_the_upper_block_triangle(x64):
    # An asymmetric matrix: the blocked form is the quadratic form of the symmetric matrix
    # built from its upper block triangle; the dense form (1 block) that of (A + A^T) / 2.
    rng = np.random.default_rng(22)
    a = rng.standard_normal((32, 32))
    phi = rng.standard_normal((10, 32))
    for b in (1, 2, 4):
        sym = np_block_upper_symmetric(a, b)
        want = np.array([row @ sym @ row for row in phi])
        got = P.quadratic_form(*to(jnp.float64, phi, a), num_blocks=b)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)
    assert not np.allclose(np_block_upper_symmetric(a, 4), 0.5 * (a + a.T))  # the cases really differ


def test_quadratic_form_rejects_blocks_that_do_not_divide():
    with pytest.raises(ValueError, match="num_blocks=3"):
        P.quadratic_form(jnp.ones((2, 16)), jnp.eye(16), num_blocks=3)
    with pytest.raises(ValueError, match="num_blocks=0"):
        P.quadratic_form(jnp.ones((2, 16)), jnp.eye(16), num_blocks=0)


# ---------------------------------------------------------------- jit / vmap


def test_inverse_methods_jit_and_vmap():
    streams = [RFIGStream(10 + i, num_features=64) for i in range(3)]
    sig_old = np.stack([s.add(s.batch(32)).copy() for s in streams])
    phis = np.stack([s.batch(4) for s in streams])
    sig_new = np.stack([s.add(p) for s, p in zip(streams, phis)])
    lam_old = np.linalg.inv(sig_old)
    true = np.linalg.inv(sig_new)
    a, x0, ph = to(jnp.float32, sig_new, lam_old, phis)

    ex = jax.jit(jax.vmap(P.exact_inverse))(a)
    ns = jax.jit(jax.vmap(functools.partial(P.newton_schulz, num_iters=20)))(
        a, jax.vmap(P.newton_schulz_warm_start)(x0, ph)
    )
    wb = jax.jit(jax.vmap(P.woodbury_update))(x0, ph)
    for out in (ex, ns, wb):
        assert out.shape == (3, 64, 64)
        for i in range(3):
            assert rel_err(out[i], true[i]) < 1e-4
    probes = jnp.ones((3, 64, 2))
    res = jax.vmap(P.inverse_residual)(a, wb, probes)
    assert res.shape == (3,) and bool(jnp.all(res < 1e-4))
    rows = jnp.asarray(np.stack([s.batch(5) for s in streams]), jnp.float32)
    quad = jax.jit(jax.vmap(functools.partial(P.quadratic_form, num_blocks=4)))(rows, wb)
    want = np.einsum("snd,sde,sne->sn", np.asarray(rows, np.float64), true, np.asarray(rows, np.float64))
    np.testing.assert_allclose(np.asarray(quad), want, rtol=1e-4)


def test_sequential_vmap_matches_vmap():
    """One example after another under vmap (CPU), with pytrees, shared arguments and nesting."""
    def fn(x, params, scale):
        return {"y": x @ params["w"] * scale, "n": jnp.sum(x * x)}

    rng = np.random.default_rng(23)
    x = jnp.asarray(rng.standard_normal((3, 5, 4)), jnp.float32)
    params = {"w": jnp.asarray(rng.standard_normal((4, 2)), jnp.float32)}
    scale = jnp.float32(1.5)
    seq = L.sequential_vmap(fn)
    got = jax.jit(jax.vmap(seq, in_axes=(0, None, None)))(x, params, scale)
    for i in range(3):
        np.testing.assert_allclose(np.asarray(got["y"][i]), np.asarray(x[i] @ params["w"] * 1.5), rtol=1e-6)
        # a float32 sum of 20 squares in two orders: a few epsilons apart, so 1e-5, not 1e-6
        assert float(got["n"][i]) == pytest.approx(float(jnp.sum(x[i] * x[i])), rel=1e-5)
    # On CPU the vmap is a loop (a scan) of unbatched matmuls, not a batched dot.
    jaxpr = str(jax.make_jaxpr(jax.vmap(seq, in_axes=(0, None, None)))(x, params, scale))
    plain = str(jax.make_jaxpr(jax.vmap(fn, in_axes=(0, None, None)))(x, params, scale))
    if jax.default_backend() == "cpu":
        assert "scan[" in jaxpr and "scan[" not in plain
    # Nested (e.g. seeds x hyperparameters) and batched in a different argument.
    xs = jnp.stack([x, 2 * x])
    nested = jax.vmap(jax.vmap(seq, in_axes=(0, None, None)), in_axes=(0, None, None))(xs, params, scale)
    np.testing.assert_allclose(np.asarray(nested["y"][1, 2]), np.asarray(2 * x[2] @ params["w"] * 1.5), rtol=1e-6)
    ws = {"w": jnp.stack([params["w"], -params["w"]])}
    by_w = jax.vmap(seq, in_axes=(None, 0, None))(x[0], ws, scale)
    np.testing.assert_allclose(np.asarray(by_w["y"][1]), np.asarray(-(x[0] @ params["w"]) * 1.5), rtol=1e-6)


# ---------------------------------------------------------------- kernels, distances


def test_rbf_gram_and_kernel_match_loop(x64):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((12, 3)) + 5.0  # offset: exercises the centring
    y = rng.standard_normal((7, 3)) + 5.0
    ls = 0.8
    ref = np.array([[math.exp(-np.sum((a - b) ** 2) / (2 * ls**2)) for b in x] for a in x])
    ref_xy = np.array([[math.exp(-np.sum((a - b) ** 2) / (2 * ls**2)) for b in y] for a in x])
    k = np.asarray(L.rbf_gram(jnp.asarray(x), ls))
    np.testing.assert_allclose(k, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.diag(k), 1.0)
    np.testing.assert_allclose(L.rbf_kernel(jnp.asarray(x), jnp.asarray(y), ls), ref_xy, atol=1e-12)


def test_rbf_gram_float32_far_from_origin():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((50, 4)) + 1000.0
    ref = np.exp(-((x[:, None] - x[None]) ** 2).sum(-1) / 2.0)
    k = L.rbf_gram(jnp.asarray(x, jnp.float32), 1.0)
    assert k.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(k), ref, atol=1e-3)


def test_median_distance_matches_loop():
    rng = np.random.default_rng(13)
    for n in (2, 3, 31):
        x = rng.standard_normal((n, 5))
        pairs = [np.linalg.norm(x[i] - x[j]) for i, j in itertools.combinations(range(n), 2)]
        got = float(LS.median_distance(jnp.asarray(x, jnp.float32)))
        assert got == pytest.approx(float(np.median(pairs)), rel=1e-4)
    assert float(LS.median_distance(jnp.ones((1, 3)))) == 0.0


# ---------------------------------------------------------------- effective dimension


def np_valko_deff(x, ls, gamma):
    """Plain-loop reference of the Valko et al. effective dimension."""
    n = len(x)
    k = np.array([[math.exp(-np.sum((a - b) ** 2) / (2 * ls**2)) for b in x] for a in x])
    mu = np.clip(np.sort(np.linalg.eigvalsh(k))[::-1], 0, None)
    for j in range(1, n + 1):
        if j * gamma * math.log(n) >= mu[j:].sum():
            return j
    return n


def subspace_points(rng, n, k, ambient=20):
    q, _ = np.linalg.qr(rng.standard_normal((ambient, k)))
    return rng.standard_normal((n, k)) @ q.T


def test_effective_dimension_matches_reference_loop(x64):
    rng = np.random.default_rng(14)
    for d, ls, gamma in [(2, 1.0, 1.0), (5, 2.0, 1.0), (5, 2.0, 0.1), (3, 0.5, 3.0)]:
        x = rng.standard_normal((60, d))
        got = int(LS.effective_dimension(jnp.asarray(x), ls, gamma))
        assert got == np_valko_deff(x, ls, gamma)


def test_effective_dimension_known_subspace_dimension():
    """Points on a k-dim linear subspace of R^20 (k = 1, 2, 4, 8)."""
    rng = np.random.default_rng(15)
    fixed, median, prs = [], [], []
    for k in (1, 2, 4, 8):
        x = jnp.asarray(subspace_points(rng, 256, k), jnp.float32)
        fixed.append(int(LS.effective_dimension(x, 1.0, 1.0)))
        median.append(int(LS.effective_dimension(x, LS.median_distance(x), 1.0)))
        prs.append(float(LS.participation_ratio(x)))
        assert prs[-1] == pytest.approx(k, rel=0.1)
    # At a fixed base length-scale d_eff grows strictly with k (measured 3, 7, 17, 34).
    assert all(a < b for a, b in zip(fixed, fixed[1:])), fixed
    # With l0 = median distance (which itself grows like sqrt(2k)) it grows only slowly
    # and can tie between neighbours (measured 3, 5, 5, 8 over seeds): non-decreasing.
    assert all(a <= b for a, b in zip(median, median[1:])), median
    assert median[0] < median[-1], median
    assert all(a < b for a, b in zip(prs, prs[1:])), prs


def test_effective_dimension_guards():
    one = jnp.ones((1, 4))
    assert int(LS.effective_dimension(one, 1.0, 1.0)) == 1
    assert int(LS.effective_dimension(one, 1.0, 0.0)) == 1
    # gamma = 0: numerical rank. Three distinct states repeated -> rank 3.
    rng = np.random.default_rng(16)
    base = 3.0 * rng.standard_normal((3, 4))
    x = jnp.asarray(np.repeat(base, 20, axis=0), jnp.float32)
    assert int(LS.effective_dimension(x, 1.0, 0.0)) == 3
    # gamma large: the tail condition holds at j = 1.
    assert int(LS.effective_dimension(x, 1.0, 1e6)) == 1
    # Always within [1, N], int32, and jittable with a traced gamma / length-scale.
    f = jax.jit(LS.effective_dimension)
    y = jnp.asarray(rng.standard_normal((40, 3)), jnp.float32)
    for g in (0.0, 0.5, 2.0):
        out = f(y, jnp.float32(1.0), jnp.float32(g))
        assert out.dtype == jnp.int32 and 1 <= int(out) <= 40


def test_participation_ratio():
    rng = np.random.default_rng(17)
    for d in (2, 6, 16):
        x = rng.standard_normal((2000, d))
        got = float(LS.participation_ratio(jnp.asarray(x, jnp.float32)))
        c = np.cov(x.T, bias=True)
        ev = np.linalg.eigvalsh(c)
        assert got == pytest.approx(ev.sum() ** 2 / (ev**2).sum(), rel=1e-4)
        assert got == pytest.approx(d, rel=0.05)
    # Anisotropic: one dominant direction -> close to 1; scale invariant.
    x = rng.standard_normal((500, 5)) * np.array([10.0, 0.1, 0.1, 0.1, 0.1])
    assert float(LS.participation_ratio(jnp.asarray(x))) < 1.01
    assert float(LS.participation_ratio(jnp.asarray(7.0 * x))) == pytest.approx(
        float(LS.participation_ratio(jnp.asarray(x))), rel=1e-4
    )
    # Degenerate guards.
    assert float(LS.participation_ratio(jnp.ones((1, 3)))) == 1.0
    assert float(LS.participation_ratio(jnp.ones((10, 3)))) == 1.0


# ---------------------------------------------------------------- auto length-scale


def test_auto_lengthscale_methods():
    rng = np.random.default_rng(18)
    x = jnp.asarray(rng.standard_normal((256, 2)), jnp.float32)
    ls, deff = LS.auto_lengthscale(x, "valko")
    ref = np_valko_deff(np.asarray(x, np.float64), float(LS.median_distance(x)), 1.0)
    assert int(deff) == ref
    assert float(ls) == pytest.approx(math.sqrt(ref), rel=1e-6)
    # Standardised 2-d data: baselines.md measured d_eff = 6 (l = 2.45) on MountainCar.
    assert 3 <= int(deff) <= 10

    ls_fp, d_fp = LS.auto_lengthscale(x, "valko_fixed_point")
    assert float(ls_fp) == pytest.approx(math.sqrt(int(d_fp)), rel=1e-6)
    assert 1 <= int(d_fp) <= 256

    ls_pr, pr = LS.auto_lengthscale(x, "participation_ratio")
    assert float(pr) == pytest.approx(2.0, rel=0.1)
    assert float(ls_pr) == pytest.approx(math.sqrt(float(pr)), rel=1e-6)

    with pytest.raises(ValueError, match="valko.*valko_fixed_point.*participation_ratio"):
        LS.auto_lengthscale(x, "median")

    jitted = jax.jit(LS.auto_lengthscale, static_argnames=("method", "num_fixed_point_iters"))
    ls_j, d_j = jitted(x, method="valko_fixed_point")
    assert int(d_j) == int(d_fp)


def test_auto_lengthscale_vmap_and_float64(x64):
    rng = np.random.default_rng(19)
    xs = jnp.asarray(rng.standard_normal((2, 64, 3)))  # float64 under x64
    for method in LS.LENGTHSCALE_METHODS:
        ls, deff = jax.vmap(lambda x: LS.auto_lengthscale(x, method))(xs)
        assert ls.shape == (2,) and ls.dtype == jnp.float64
        ls0, d0 = LS.auto_lengthscale(xs[0], method)
        assert float(ls[0]) == pytest.approx(float(ls0)) and float(deff[0]) == float(d0)
    ref = np_valko_deff(np.asarray(xs[1]), float(LS.median_distance(xs[1])), 1.0)
    assert int(jax.vmap(lambda x: LS.auto_lengthscale(x, "valko")[1])(xs)[1]) == ref


def test_auto_lengthscale_degenerate_states():
    x = jnp.zeros((16, 3))  # median distance 0 -> l0 falls back to 1
    for method in LS.LENGTHSCALE_METHODS:
        ls, deff = LS.auto_lengthscale(x, method)
        assert np.isfinite(float(ls)) and float(ls) >= 1.0


def test_the_declared_lengthscale_methods_are_those_implemented():
    """bonus.lengthscale_method's choices (the JAX-free declaration) are the estimators lengthscale.py
    implements: each module names them, neither imports the other's."""
    from rfig_exp.bonuses.rfig import LENGTHSCALE_METHODS

    assert LS.LENGTHSCALE_METHODS == LENGTHSCALE_METHODS

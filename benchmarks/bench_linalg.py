"""Benchmark of RFIG's precision-matrix maintenance and bonus computation.

    python benchmarks/bench_linalg.py [--dim 1024] [--rank 256] [--batch 4096] [--repeats 5]

Builds a realistic ``Sigma = reg I + sum_t Phi_t^T Phi_t`` from several RFF batches of
Gaussian states, adds one more rank-``rank`` batch, and times each way of getting the new
inverse (jitted, after warm-up, ``block_until_ready``), with its error against a float64
numpy inverse of the same matrix. Then times the bonus ``0.5 log(1 + phi^T Lambda phi)``
over a ``[batch, dim]`` feature matrix, with the dense quadratic form (matmul + row sum) and
with ``linalg.quadratic_form`` (the upper block triangle of Lambda, ``--quad-blocks``
blocks). float32 throughout, like training. ``benchmarks/bench_rfig.py`` times the whole
bonus against its floor.
"""

import argparse
import functools
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # runs from a plain checkout too

import rfig_exp  # noqa: E402

rfig_exp.set_cpu_flags()  # before jax is imported: avoids the XLA CPU hangs (specs/tooling.md)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from rfig_exp.bonuses.rfig import features as T  # noqa: E402
from rfig_exp.bonuses.rfig import precision as P  # noqa: E402


def timeit(fn, *args, repeats):
    jax.block_until_ready(fn(*args))  # compile + warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), float(np.min(times)), out


def errors(approx, ref64):
    a = np.asarray(approx, np.float64)
    if not np.all(np.isfinite(a)):
        return float("nan"), float("nan")
    return float(np.abs(a - ref64).max()), float(np.linalg.norm(a - ref64) / np.linalg.norm(ref64))


def main(argv=None):
    # length: a script's body: the cases one after another, each a few lines of setup and a timing.
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dim", type=int, default=1024, help="number of random features D")
    p.add_argument("--rank", type=int, default=256, help="rows per update k (floor(N rho))")
    p.add_argument("--batch", type=int, default=4096, help="states per bonus evaluation N")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--history", type=int, default=8, help="updates already in Sigma")
    p.add_argument("--state-dim", type=int, default=8)
    p.add_argument("--reg", type=float, default=1.0)
    p.add_argument("--ns-iters", type=int, default=20)
    p.add_argument("--quad-blocks", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    D, k, d = args.dim, args.rank, args.state_dim
    ls = math.sqrt(d)
    key_p, key_x, key_v = jax.random.split(jax.random.PRNGKey(args.seed), 3)
    omega, bias = T.rff_params(key_p, d, D, jnp.float32)
    feats = jax.jit(T.rff_features)

    def batch(key, m):
        return feats(jax.random.normal(key, (m, d), jnp.float32), omega, bias, ls)

    keys = jax.random.split(key_x, args.history + 2)
    eye = np.eye(D)
    sigma0 = args.reg * eye
    sigma_old = sigma0.copy()
    for i in range(args.history):
        phi = np.asarray(batch(keys[i], k), np.float64)
        sigma_old += phi.T @ phi
    phi_new = batch(keys[-2], k)
    phi64 = np.asarray(phi_new, np.float64)
    sigma_new = sigma_old + phi64.T @ phi64
    ref = np.linalg.inv(sigma_new)  # float64 reference

    sig_old32 = jnp.asarray(sigma_old, jnp.float32)
    sig_new32 = jnp.asarray(sigma_new, jnp.float32)
    lam_old = P.exact_inverse(sig_old32)  # the previous inverse, as kept in training
    mu_max = float(np.linalg.eigvalsh(phi64 @ np.asarray(lam_old, np.float64) @ phi64.T).max())

    K = args.ns_iters
    ns = jax.jit(functools.partial(P.newton_schulz, num_iters=K))

    @jax.jit
    def ns_safe(a, lam, phi):
        return P.newton_schulz(a, P.newton_schulz_warm_start(lam, phi), K)

    rows = []

    def row(name, fn, *fargs, ref64=ref):
        sec, best, out = timeit(fn, *fargs, repeats=args.repeats)
        mx, rel = errors(out, ref64)
        rows.append((name, sec, best, mx, rel))
        return out

    row("exact (Cholesky)", P.exact_inverse, sig_new32)
    row("jnp.linalg.inv", jnp.linalg.inv, sig_new32)
    row(f"newton_schulz K={K}, warm=Lam_old", ns, sig_new32, lam_old)
    row(f"newton_schulz K={K}, scaled warm", ns_safe, sig_new32, lam_old, phi_new)
    row(f"woodbury rank-{k}", P.woodbury_update, lam_old, phi_new)

    # The very first update, from Lambda_0 = I / reg: where the paper's warm start fails.
    phi1 = np.asarray(batch(keys[0], k), np.float64)
    sigma1 = sigma0 + phi1.T @ phi1
    ref1 = np.linalg.inv(sigma1)
    lam0 = jnp.asarray(eye / args.reg, jnp.float32)
    mu1 = float(np.linalg.eigvalsh(phi1 @ phi1.T / args.reg).max())
    s1 = jnp.asarray(sigma1, jnp.float32)
    row(f"[1st update] newton_schulz K={K}, warm=Lam_0", ns, s1, lam0, ref64=ref1)
    row(f"[1st update] newton_schulz K={K}, scaled", ns_safe, s1, lam0, jnp.asarray(phi1, jnp.float32), ref64=ref1)

    probe = jax.random.normal(key_v, (D, 8), jnp.float32)
    res_sec, res_min, res = timeit(P.inverse_residual, sig_new32, lam_old, probe, repeats=args.repeats)

    phi_b = batch(keys[-1], args.batch)

    @jax.jit
    def bonus(phi, lam):
        return 0.5 * jnp.log1p(jnp.sum((phi @ lam) * phi, axis=-1))

    @jax.jit
    def bonus_blocked(phi, lam):
        return 0.5 * jnp.log1p(P.quadratic_form(phi, lam, args.quad_blocks))

    @jax.jit
    def bonus_with_features(x, lam):
        phi = T.rff_features(x, omega, bias, ls)
        return 0.5 * jnp.log1p(P.quadratic_form(phi, lam, args.quad_blocks))

    lam_new = P.exact_inverse(sig_new32)
    b_sec, b_min, b = timeit(bonus, phi_b, lam_new, repeats=args.repeats)
    bb_sec, bb_min, bb = timeit(bonus_blocked, phi_b, lam_new, repeats=args.repeats)
    b_ref = 0.5 * np.log1p(np.einsum("nd,nd->n", np.asarray(phi_b, np.float64) @ ref, np.asarray(phi_b, np.float64)))
    xb = jax.random.normal(keys[-1], (args.batch, d), jnp.float32)
    bf_sec, bf_min, _ = timeit(bonus_with_features, xb, lam_new, repeats=args.repeats)

    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, {os.cpu_count()} CPUs, float32; "
          f"D={D}, k={k}, history={args.history}x{k} states, state dim {d}, l={ls:.3f}, reg={args.reg}")
    print(f"lambda_max(Phi Lam_old Phi^T) = {mu_max:.3g} (NS warm start converges iff < 1); "
          f"first update from Lam_0: {mu1:.3g}; cond(Sigma) = {np.linalg.cond(sigma_new):.3g}")
    print(f"{'method':44s} {'median s':>9s} {'min s':>8s} {'max abs err':>12s} {'rel Frob err':>13s}")
    for name, sec, best, mx, rel in rows:
        print(f"{name:44s} {sec:9.4f} {best:8.4f} {mx:12.3e} {rel:13.3e}")
    print(f"{'inverse_residual (p=8), Lam_old vs Sigma_new':44s} {res_sec:9.4f} {res_min:8.4f}"
          f"   value {float(res):.3e}")
    b_err = float(np.abs(np.asarray(b, np.float64) - b_ref).max())
    bb_err = float(np.abs(np.asarray(bb, np.float64) - b_ref).max())
    print(f"{f'bonus 0.5log1p(phi^T Lam phi), [{args.batch}, {D}]':44s} {b_sec:9.4f} {b_min:8.4f} {b_err:12.3e}")
    print(f"{f'  the same, quadratic_form, {args.quad_blocks} blocks':44s} {bb_sec:9.4f} {bb_min:8.4f} {bb_err:12.3e}")
    print(f"{f'  and incl. RFF features, [{args.batch}, {d}]':44s} {bf_sec:9.4f} {bf_min:8.4f}")


if __name__ == "__main__":
    main()

"""How the RFF information gain approaches the exact GP information gain as D grows, with the
paper's bounds (Section 4) drawn beside the measured error.

    python campaign/scripts/theory_figure.py                      # full grid -> CSV + PNG (about 1-1.5 min, 1 core)
    python campaign/scripts/theory_figure.py --quick --out-csv out/theory.csv --out-fig out/theory.png
    python campaign/scripts/theory_figure.py --from-csv docs/results/repro/data/theory.csv   # redraw only, no JAX

Setting. Data X (n points) and query points (256; 64 with --quick) are drawn i.i.d. uniform on the
cube [-sqrt(3), sqrt(3)]^d (zero mean, unit variance per coordinate; a compact set, so
Prop. 4.3's diam(X) = 2 sqrt(3) sqrt(d) is defined). One data draw per d, nested in n (the
n = 50 data are the first 50 of the n = 800 data); the queries are shared by every n. RBF
kernel with length-scale l = sqrt(d) (RFIG's l = sqrt(d_eff) with d_eff = d), so
sigma_p = sqrt(d) / l = 1. Two regularisations: lambda = n * lambda0 with lambda0 = 1
(``--lambda0``; the paper's Assumption 4.2) and lambda = 1 (RFIG's default, fixed in n).

Measured. For each feature draw (``--seeds``, 5; 2 with --quick; independent per D): ``theory.rff_params`` and
``theory.rff_features`` in float64, the RFF information gain 0.5 log(1 + sigma_hat_n^2(x) /
lambda) and the exact GP information gain ``theory.gp_information_gain`` (float64, x64 only
inside this computation), and over the query points the mean and max of |IG_RFF - IG_GP|,
then averaged over the draws. The RFF value is computed in the n x n kernel form
sigma_hat_n^2(x) = phi(x)^T phi(x) - k_hat^T (K_hat + lambda I)^-1 k_hat with
K_hat = Phi Phi^T (the identity behind Prop. 3.2), so that one feature Gram matrix serves
every n and lambda; the script checks it against ``theory.rff_information_gain`` (the
D x D form) before it starts.

Bounds, at the same settings (kappa = 1):
- ``bound_prop42``: Prop. 4.2, ``theory.ig_error_bound(eps_hat, n, lambda0)``, at the
  measured kernel error eps_hat = max |phi^T phi' - k| over the pairs the proof uses (data x
  data, data x query, each query with itself), averaged over draws; deterministic given
  eps_hat, so every draw's max error must lie below its own bound
  (``worst_ratio_prop42`` = the largest max-error / bound over draws, <= 1).
- ``bound_prop43``: Prop. 4.2 at eps_delta, the kernel error that Prop. 4.3
  (``theory.rff_uniform_error_prob``, c = 66) guarantees on the whole cube with probability
  1 - delta (``--delta``, 0.05): the inverse of Cor. 4.4's feature count, D^-1/2 up to a log.
For the fixed lambda = 1 the bounds use lambda0 = lambda / n: Prop. 4.1's proof only ever
uses lambda, so they still hold, but they grow like n^2 and are vacuous.

Output: the CSV (columns in ``campaign.claims.theory_plot.COLUMNS``), the figure (drawn by
``campaign.claims.theory_plot.plot_theory``, which imports no JAX) and a table of the log-log
slope of the error against D per setting with the error and bounds at D = 1024.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the analysis package
sys.path.insert(0, str(ROOT / "src"))

DEFAULT_CSV = "docs/results/repro/data/theory.csv"
DEFAULT_FIG = "docs/results/repro/theory.png"
GRIDS = {
    "full": dict(ns=(50, 200, 800), ds=(2, 8, 32), Ds=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096),
                 seeds=5, queries=256),
    "quick": dict(ns=(50, 200), ds=(2, 8), Ds=(16, 64, 256, 1024), seeds=2, queries=64),
}
HALF_WIDTH = math.sqrt(3.0)  # data on [-sqrt(3), sqrt(3)]^d: unit variance per coordinate
FIXED_LAMBDA = 1.0  # RFIG's lambda
DATA_SEED = 0


def _rff_ig_kernel_form(g_nn, g_nq, g_qq, lam):
    """RFF information gain from the feature Gram blocks (float64 numpy): Phi Phi^T [n, n],
    Phi phi_q [n, M], |phi_q|^2 [M]. Equal to ``theory.rff_information_gain`` (push-through
    identity: phi^T (Phi^T Phi + lam I)^-1 phi = sigma_hat^2 / lam)."""
    from scipy.linalg import cho_factor, cho_solve

    n = g_nn.shape[0]
    sol = cho_solve(cho_factor(g_nn + lam * np.eye(n), lower=True), g_nq)
    var = np.maximum(g_qq - np.einsum("nm,nm->m", g_nq, sol), 0.0)
    return 0.5 * np.log1p(var / lam)


def _prop43_eps(T, jnp, d, Ds, sigma_p, diam, delta, iters=100):
    """Per D, the eps with ``rff_uniform_error_prob(eps) = delta`` (bisection in log eps;
    the probability bound falls in eps)."""
    Ds = jnp.asarray(Ds, jnp.float64)
    lo, hi = jnp.full(Ds.shape, -20.0), jnp.full(Ds.shape, 10.0)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        above = T.rff_uniform_error_prob(jnp.exp(mid), d, Ds, sigma_p, diam) > delta
        lo, hi = jnp.where(above, mid, lo), jnp.where(above, hi, mid)
    return np.exp(np.asarray(0.5 * (lo + hi)))


def compute(grid: dict, lambda0: float, delta: float, log=print) -> list[dict]:
    """The CSV rows of one grid (see the module docstring)."""
    import rfig_exp

    rfig_exp.set_cpu_flags()  # before jax is imported
    import jax
    import jax.numpy as jnp

    from rfig_exp.bonuses.rfig import theory as T
    from rfig_exp.bonuses.rfig.linalg import rbf_gram, rbf_kernel

    ns, ds, Ds, seeds, M = grid["ns"], grid["ds"], grid["Ds"], grid["seeds"], grid["queries"]
    n_max = max(ns)
    rows = []
    with jax.enable_x64(True):
        for d in ds:
            t0 = time.perf_counter()
            ls = math.sqrt(d)
            sigma_p, diam = T.rbf_sigma_p(d, ls), 2.0 * HALF_WIDTH * math.sqrt(d)
            rng = np.random.default_rng([DATA_SEED, d])
            xd = rng.uniform(-HALF_WIDTH, HALF_WIDTH, (n_max, d))
            xq = rng.uniform(-HALF_WIDTH, HALF_WIDTH, (M, d))
            xd_j, xq_j = jnp.asarray(xd), jnp.asarray(xq)
            k_nn = np.asarray(rbf_gram(xd_j, ls))
            k_nq = np.asarray(rbf_kernel(xd_j, xq_j, ls))
            lams = {n: {"n*lambda0": n * lambda0, "fixed": FIXED_LAMBDA} for n in ns}
            gp = {(n, rule): np.asarray(T.gp_information_gain(xq_j, xd_j[:n], ls, lam))
                  for n in ns for rule, lam in lams[n].items()}
            eps43 = dict(zip(Ds, _prop43_eps(T, jnp, d, Ds, sigma_p, diam, delta)))
            # Self-check of the kernel form against theory.rff_information_gain (D x D form).
            om, b = T.rff_params(jax.random.PRNGKey(12345), d, 64, jnp.float64)
            fn = np.asarray(T.rff_features(xd_j[:ns[0]], om, b, ls))
            fq = np.asarray(T.rff_features(xq_j, om, b, ls))
            for lam in lams[ns[0]].values():
                ref = np.asarray(T.rff_information_gain(xq_j, xd_j[:ns[0]], om, b, ls, lam))
                got = _rff_ig_kernel_form(fn @ fn.T, fn @ fq.T, (fq * fq).sum(1), lam)
                np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-12)
            acc = {}  # (n, rule, D) -> per-draw (mean err, max err, eps_hat)
            for D in Ds:
                for s in range(seeds):
                    om, b = T.rff_params(jax.random.fold_in(jax.random.PRNGKey(s), D), d, D, jnp.float64)
                    fn = np.asarray(T.rff_features(xd_j, om, b, ls))  # [n_max, D]
                    fq = np.asarray(T.rff_features(xq_j, om, b, ls))  # [M, D]
                    g_nn, g_nq, g_qq = fn @ fn.T, fn @ fq.T, (fq * fq).sum(1)
                    e_nn, e_nq = np.abs(g_nn - k_nn), np.abs(g_nq - k_nq)
                    e_qq = float(np.abs(g_qq - 1.0).max())
                    for n in ns:
                        eps_hat = max(float(e_nn[:n, :n].max()), float(e_nq[:n].max()), e_qq)
                        for rule, lam in lams[n].items():
                            err = np.abs(_rff_ig_kernel_form(g_nn[:n, :n], g_nq[:n], g_qq, lam) - gp[n, rule])
                            acc.setdefault((n, rule, D), []).append((err.mean(), err.max(), eps_hat))
            for n in ns:
                for rule, lam in lams[n].items():
                    l0 = lam / n
                    for D in Ds:
                        draws = np.array(acc[n, rule, D])  # [seeds, 3]
                        b42 = np.array([float(T.ig_error_bound(e, n, l0)) for e in draws[:, 2]])
                        rows.append(dict(
                            n=n, lam=lam, lam_rule=rule, lambda0=l0, d=d, lengthscale=ls, D=D, seeds=seeds,
                            queries=M, mean_abs_err=float(draws[:, 0].mean()), max_abs_err=float(draws[:, 1].mean()),
                            mean_ig_exact=float(gp[n, rule].mean()), eps_kernel=float(draws[:, 2].mean()),
                            bound_prop42=float(b42.mean()), worst_ratio_prop42=float((draws[:, 1] / b42).max()),
                            delta=delta, eps_prop43=float(eps43[D]),
                            bound_prop43=float(T.ig_error_bound(eps43[D], n, l0))))
            log(f"d = {d}: {time.perf_counter() - t0:.1f} s")
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-csv", default=DEFAULT_CSV, help=f"measurements (default {DEFAULT_CSV})")
    p.add_argument("--out-fig", default=DEFAULT_FIG, help=f"figure (default {DEFAULT_FIG})")
    p.add_argument("--from-csv", metavar="PATH", help="only redraw the figure (and table) from this CSV; no JAX")
    p.add_argument("--quick", action="store_true", help="a small grid (tests): n 50, 200; d 2, 8; D 16-1024; 2 draws")
    p.add_argument("--seeds", type=int, help="feature draws per setting (default 5, quick 2)")
    p.add_argument("--lambda0", type=float, default=1.0, help="lambda = n * lambda0 rule (default 1)")
    p.add_argument("--delta", type=float, default=0.05, help="failure probability of Prop. 4.3 (default 0.05)")
    args = p.parse_args(argv)

    from campaign.claims.theory_plot import (
        exponent_table,
        format_exponent_table,
        plot_theory,
        read_theory_csv,
        write_theory_csv,
    )

    if args.from_csv:
        rows = read_theory_csv(args.from_csv)
    else:
        grid = dict(GRIDS["quick" if args.quick else "full"])
        if args.seeds:
            grid["seeds"] = args.seeds
        t0 = time.perf_counter()
        rows = compute(grid, args.lambda0, args.delta)
        print(f"computed {len(rows)} rows in {time.perf_counter() - t0:.1f} s")
        print(f"wrote {write_theory_csv(rows, args.out_csv)}")
    print(f"wrote {plot_theory(rows, args.out_fig)}")
    D_ref = 1024 if any(r["D"] == 1024 for r in rows) else max(r["D"] for r in rows)
    print(format_exponent_table(exponent_table(rows, D_ref=D_ref), D_ref=D_ref))
    return 0


if __name__ == "__main__":
    sys.exit(main())

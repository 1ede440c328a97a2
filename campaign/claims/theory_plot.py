"""The theory figure: RFF information gain against the exact GP information gain as the
number of random features D grows, with the paper's bounds (Props. 4.2-4.3) beside it.

Works on the rows that ``campaign/scripts/theory_figure.py`` measures and writes to CSV (a list of
dicts or a pandas DataFrame, one row per setting n, lambda, d and D). Needs only numpy and
matplotlib: never imports JAX, so a report can redraw the figure from committed data.

Columns used: ``n, lam, lam_rule, lambda0, d, D, seeds, mean_abs_err, max_abs_err,
bound_prop42, bound_prop43, delta`` (``lam_rule`` is ``n*lambda0``, the paper's
Assumption 4.2, or ``fixed``, RFIG's lambda = 1).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # reports are written on headless machines; never open a window

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

__all__ = ["COLUMNS", "read_theory_csv", "write_theory_csv", "exponent_table", "format_exponent_table",
           "draw_theory_figure", "plot_theory"]

# The CSV's columns, in order (campaign/scripts/theory_figure.py writes them; see its docstring).
COLUMNS = ("n", "lam", "lam_rule", "lambda0", "d", "lengthscale", "D", "seeds", "queries",
           "mean_abs_err", "max_abs_err", "mean_ig_exact", "eps_kernel", "bound_prop42",
           "worst_ratio_prop42", "delta", "eps_prop43", "bound_prop43")
_INT = {"n", "d", "D", "seeds", "queries"}
_STR = {"lam_rule"}

_DPI = 150
# Paul Tol's bright set: one colour per n (colour-blind friendly).
_N_COLOURS = ("#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377")
_RULE_ORDER = ("n*lambda0", "fixed")
_MEASURED = dict(linestyle="-", marker="o", markersize=3.2, linewidth=1.7)
_MAX = dict(alpha=0.13, linewidth=0)  # band from the mean up to the max error
_PROP42 = dict(linestyle="--", linewidth=1.2)
_PROP43 = dict(linestyle=":", linewidth=1.6)


def _records(rows) -> list[dict]:
    if hasattr(rows, "to_dict"):  # a pandas DataFrame
        rows = rows.to_dict("records")
    out = []
    for r in rows:
        r = dict(r)
        for k, v in r.items():
            if k in _STR:
                r[k] = str(v)
            elif k in _INT:
                r[k] = int(float(v))
            elif isinstance(v, str):
                r[k] = float(v) if v != "" else math.nan
        out.append(r)
    return out


def read_theory_csv(path) -> list[dict]:
    """The CSV's rows, numbers converted (ints for n, d, D, seeds, queries)."""
    with open(path, newline="") as f:
        return _records(csv.DictReader(f))


def write_theory_csv(rows, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS), extrasaction="ignore")
        w.writeheader()
        for r in _records(rows):
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    return path


def _settings(rows: list[dict]) -> dict[tuple, list[dict]]:
    """(lam_rule, d, n) -> its rows sorted by D."""
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault((r["lam_rule"], r["d"], r["n"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["D"]) for k, v in sorted(out.items(), key=lambda kv: (
        _RULE_ORDER.index(kv[0][0]) if kv[0][0] in _RULE_ORDER else 99, kv[0][1], kv[0][2]))}


def _slope(D, y) -> float:
    D, y = np.asarray(D, float), np.asarray(y, float)
    ok = (y > 0) & np.isfinite(y)
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(D[ok]), np.log(y[ok]), 1)[0])


def exponent_table(rows, D_ref: int = 1024, min_D: int = 64) -> list[dict]:
    """Per setting (lam_rule, d, n): the log-log slope against D of the mean and max absolute
    error and of the Prop. 4.3 bound, fitted over D >= min_D, and the values at D = D_ref."""
    table = []
    for (rule, d, n), rs in _settings(_records(rows)).items():
        fit = [r for r in rs if r["D"] >= min_D]
        Ds = [r["D"] for r in fit]
        ref = next((r for r in rs if r["D"] == D_ref), None)
        table.append(dict(
            lam_rule=rule, lam=rs[0]["lam"], d=d, n=n,
            slope_mean=_slope(Ds, [r["mean_abs_err"] for r in fit]),
            slope_max=_slope(Ds, [r["max_abs_err"] for r in fit]),
            slope_prop43=_slope(Ds, [r["bound_prop43"] for r in fit]),
            mean_err=ref["mean_abs_err"] if ref else math.nan,
            max_err=ref["max_abs_err"] if ref else math.nan,
            mean_ig=ref["mean_ig_exact"] if ref else math.nan,
            prop42=ref["bound_prop42"] if ref else math.nan,
            prop43=ref["bound_prop43"] if ref else math.nan))
    return table


def format_exponent_table(table: list[dict], D_ref: int = 1024, min_D: int = 64) -> str:
    """Plain-text table of :func:`exponent_table` (slopes fitted over D >= min_D)."""
    head = (f"{'lambda':>14} {'d':>3} {'n':>4} | {'slope mean':>10} {'slope max':>9} {'slope 4.3':>9} | "
            f"{'IG exact':>8} {'mean err':>8} {'max err':>8} {'Prop4.2':>8} {'Prop4.3':>8} {'4.2/max':>7}")
    lines = [f"log-log slope of |IG_RFF - IG_GP| against D (fit over D >= {min_D}); values at D = {D_ref}",
             head, "-" * len(head)]
    for t in table:
        lam = f"n*l0={t['lam']:g}" if t["lam_rule"] == "n*lambda0" else f"fixed={t['lam']:g}"
        ratio = t["prop42"] / t["max_err"] if t["max_err"] > 0 else math.nan
        lines.append(
            f"{lam:>14} {t['d']:>3} {t['n']:>4} | {t['slope_mean']:>10.2f} {t['slope_max']:>9.2f} "
            f"{t['slope_prop43']:>9.2f} | {t['mean_ig']:>8.2g} {t['mean_err']:>8.2g} {t['max_err']:>8.2g} "
            f"{t['prop42']:>8.2g} {t['prop43']:>8.2g} {ratio:>7.3g}")
    return "\n".join(lines)


def _rule_label(rule: str, rows: list[dict]) -> str:
    if rule == "n*lambda0":
        l0 = rows[0]["lambda0"]
        return f"$\\lambda = n\\lambda_0$, $\\lambda_0 = {l0:g}$ (Assumption 4.2)"
    lams = sorted({r["lam"] for r in rows})
    lam = ", ".join(f"{v:g}" for v in lams)
    return f"$\\lambda = {lam}$ (RFIG default); bounds with $\\lambda_0 = \\lambda / n$"


def _draw_panel(ax, per_n: list, colours: list, lo: float, hi: float) -> tuple[float, float]:
    """One (lambda rule, d) panel: per n, the measured errors and both bounds against D; returns
    (lo, hi) widened to the positive values drawn."""
    for rs, c in zip(per_n, colours):
        if not rs:
            continue
        D = np.array([r["D"] for r in rs], float)
        mean = np.array([r["mean_abs_err"] for r in rs])
        ax.fill_between(D, mean, [r["max_abs_err"] for r in rs], color=c, zorder=2.5, **_MAX)
        ax.plot(D, mean, color=c, zorder=3, **_MEASURED)
        for key, style in (("bound_prop42", _PROP42), ("bound_prop43", _PROP43)):
            ax.plot(D, [r[key] for r in rs], color=c, zorder=2, **style)
        vals = np.array([[r[k] for k in ("mean_abs_err", "max_abs_err", "bound_prop42", "bound_prop43")]
                         for r in rs])
        vals = vals[np.isfinite(vals) & (vals > 0)]
        if vals.size:
            lo, hi = min(lo, vals.min()), max(hi, vals.max())
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.grid(alpha=0.25, linewidth=0.6, which="major")
    ax.spines[["top", "right"]].set_visible(False)
    ax.tick_params(labelsize=8.5)
    return lo, hi


def _legends(fig, axes, rows, ns, colour) -> None:
    """The colour of each n (first panel) and the line styles (below the panels)."""
    seeds = sorted({r["seeds"] for r in rows})
    delta = rows[0]["delta"]
    axes[0, 0].legend([Line2D([], [], color=colour[n], linewidth=2.2) for n in ns], [f"n = {n}" for n in ns],
                      loc="upper right", frameon=False, fontsize=9, title="data points", title_fontsize=9)
    handles = [Line2D([], [], color="0.2", **_MEASURED), Patch(facecolor="0.2", **_MAX),
               Line2D([], [], color="0.2", **_PROP42), Line2D([], [], color="0.2", **_PROP43),
               Line2D([], [], color="0.45", linewidth=1.0, linestyle="-.")]
    labels = [f"measured: mean over queries ({'/'.join(map(str, seeds))} feature draws)",
              "measured: band up to the max over queries",
              "Prop. 4.2 at the measured kernel error $\\hat\\epsilon$",
              f"Prop. 4.2 with Prop. 4.3's $\\epsilon$ ($\\delta = {delta:g}$)",
              "$\\propto D^{-1/2}$"]
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False, fontsize=9.5)


def draw_theory_figure(rows):
    """The figure (not saved): one row of panels per lambda rule, one column per input
    dimension d; per n (colour) the mean absolute error over query points (solid, averaged
    over feature draws) with a band up to the max over query points, Prop. 4.2's bound at the measured kernel error
    (dashed), Prop. 4.2
    with Prop. 4.3's kernel error at failure probability delta (dotted), and a D^-1/2 slope."""
    rows = _records(rows)
    if not rows:
        raise ValueError("no rows to plot")
    rules = [r for r in _RULE_ORDER if any(x["lam_rule"] == r for x in rows)]
    rules += sorted({x["lam_rule"] for x in rows} - set(rules))
    ds = sorted({r["d"] for r in rows})
    ns = sorted({r["n"] for r in rows})
    colour = {n: _N_COLOURS[i % len(_N_COLOURS)] for i, n in enumerate(ns)}
    settings = _settings(rows)
    fig, axes = plt.subplots(len(rules), len(ds), figsize=(3.5 * len(ds) + 0.6, 3.0 * len(rules) + 1.3),
                             squeeze=False, sharex=True, layout="constrained")
    for i, rule in enumerate(rules):
        rule_rows = [r for r in rows if r["lam_rule"] == rule]
        lo, hi = math.inf, 0.0
        for j, d in enumerate(ds):
            lo, hi = _draw_panel(axes[i, j], [settings.get((rule, d, n)) for n in ns], [colour[n] for n in ns],
                                 lo, hi)
            axes[i, j].set_title(f"d = {d}, $\\ell = \\sqrt{{d}}$", fontsize=10.5)
            if i == len(rules) - 1:
                axes[i, j].set_xlabel("Random features D", fontsize=10)
        # Shared y range per row (sharey would tie both rows), a D^-1/2 slope in each panel
        # anchored at the top of the measured errors.
        # A fixed lambda: the exact IG never exceeds its no-data value 0.5 log(1 + 1/lambda)
        # (kappa = 1), so an error bound above that line says nothing.
        lams = sorted({r["lam"] for r in rule_rows})
        ceiling = 0.5 * math.log1p(1.0 / lams[0]) if rule != "n*lambda0" and len(lams) == 1 else None
        if ceiling is not None:
            lo, hi = min(lo, ceiling), max(hi, ceiling)
        if math.isfinite(lo):
            for j, d in enumerate(ds):
                ax = axes[i, j]
                ax.set_ylim(lo / 2.5, hi * 2.5)
                if ceiling is not None:
                    ax.axhline(ceiling, color="k", linewidth=0.9, alpha=0.6, zorder=1)
                    ax.annotate(f"IG with no data, $\\frac{{1}}{{2}}\\log(1 + 1/\\lambda) = {ceiling:.2g}$",
                                xy=(0.02, ceiling), xycoords=("axes fraction", "data"), xytext=(0, 3),
                                textcoords="offset points", fontsize=8, va="bottom", color="0.25")
                errs = [(r["D"], r["mean_abs_err"]) for r in rule_rows if r["d"] == d and r["mean_abs_err"] > 0]
                if errs:
                    Ds = np.array(sorted({e[0] for e in errs}), float)
                    top = max(v for D0, v in errs if D0 == Ds[0])
                    ax.plot(Ds, 2.0 * top * (Ds / Ds[0]) ** -0.5, color="0.45", linewidth=1.0,
                            linestyle="-.", zorder=1)
        axes[i, 0].set_ylabel("$|\\mathrm{IG}_{RFF} - \\mathrm{IG}_{GP}|$ (nats)", fontsize=10)
        axes[i, 0].annotate(_rule_label(rule, rule_rows), xy=(0, 1), xycoords="axes fraction",
                            xytext=(0, 22), textcoords="offset points", fontsize=10.5, fontweight="bold",
                            ha="left", va="bottom")
    Ds_all = sorted({r["D"] for r in rows})
    for ax in axes.flat:
        ax.set_xlim(Ds_all[0] / 1.3, Ds_all[-1] * 1.3)
        ax.set_xticks(Ds_all)
        every = 1 if len(Ds_all) <= 5 else 2
        ax.set_xticklabels([str(D) if k % every == 0 else "" for k, D in enumerate(Ds_all)])
    _legends(fig, axes, rows, ns, colour)
    return fig


def plot_theory(rows, path) -> Path:
    """Draw :func:`draw_theory_figure` and save it to ``path`` (format from the suffix)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = draw_theory_figure(rows)
    fig.savefig(path, dpi=_DPI, bbox_inches="tight")
    plt.close(fig)
    return path

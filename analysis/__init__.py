"""Analysis of a results tree: collect, aggregate (rliable), plot, tabulate, report.

Reads only the results contract, ``<results>/<experiment>/<env>/<bonus>/<variant>/seed_<k>/``
(config.yaml, metrics.csv, summary.json, visits.npy), through :mod:`rfig_exp.results.contract`; never
imports JAX or the training code, so it runs anywhere numpy / pandas / matplotlib / rliable
are installed.

    python -m analysis --results results --experiment paper --out reports/paper

Library use::

    from analysis import collect, build_report
    coll = collect("results", "paper")
    build_report(coll, "reports/paper")
"""

from .collect import AnalysisError, Collection, EnvData, Issue, Run, RunCurve, collect, final_scores, find_experiments

__all__ = ["AnalysisError", "Collection", "EnvData", "Issue", "Run", "RunCurve", "build_report", "collect",
           "final_scores", "find_experiments"]


def build_report(*args, **kwargs):
    """See analysis.report.build_report (imported lazily: it pulls in matplotlib and rliable)."""
    from .report import build_report as _build

    return _build(*args, **kwargs)

"""Each fixed baseline's final scores before and after its fix (campaign/repro/fixes.py), panel by
panel: the IQM final score with its 95% stratified-bootstrap interval over seeds at the old defaults
and at the new ones, and how many panels the fix lowered or raised, where the intervals are apart.
A fix is judged by whether the bonus works (the signal check), not by its score; this table says
what the fix did to the score, so that a reader sees what changing a baseline cost or gained it."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from analysis.aggregate import fast_iqm
from analysis.bootstrap import bootstrap, stream_seed
from analysis.collect import Collection, final_scores
from analysis.markdown import render_markdown
from analysis.names import env_label, method_label

from .fixes import FIXES, BaselineFix, fix_methods


def _iqm_interval(values: dict, reps: int, seed: int) -> dict:
    """key -> (IQM, lo, hi) of each key's runs (rliable's stratified bootstrap, one task)."""
    if not values:
        return {}
    points, intervals = bootstrap({k: np.asarray(v, float).reshape(-1, 1) for k, v in values.items()},
                                  lambda x: np.array([fast_iqm(x)]), reps, seed)
    return {k: (float(points[k][0]), float(intervals[k][0][0]), float(intervals[k][1][0])) for k in values}


def scores_before_after(every: Collection, envs: Sequence[str], reps: int = 2000, seed: int = 0,
                        fixes: Sequence[BaselineFix] = FIXES) -> str:
    """The table (one column pair per fix with runs both before and after on some panel of ``envs``)
    and one sentence per fix; '' where no fix has both."""
    scores = final_scores(every)
    header, columns, sentences = ["Panel"], [], []
    for fix in fixes:
        methods = fix_methods(every, fix)
        if set(methods) != {"before", "after"}:
            continue
        values = {(e, when): scores[e][m][1] for e in envs for when, m in methods.items()
                  if m in scores.get(e, {}) and len(scores[e][m][1])}
        est = _iqm_interval(values, reps, stream_seed(seed, fix.bonus))
        both = [e for e in envs if (e, "before") in est and (e, "after") in est]
        if not both:
            continue
        label = method_label(fix.bonus)
        old = ", ".join(f"{k.removeprefix('bonus.')} {v}" for k, v in fix.old_defaults.items())
        header += [f"{label} before ({old})", f"{label} after (the defaults)"]
        columns.append(est)
        lower = [e for e in both if est[(e, "after")][0] < est[(e, "before")][0]]
        apart_down = [e for e in lower if est[(e, "after")][2] < est[(e, "before")][1]]
        higher = [e for e in both if est[(e, "after")][0] > est[(e, "before")][0]]
        apart_up = [e for e in higher if est[(e, "after")][1] > est[(e, "before")][2]]
        sentences.append(
            f"The new defaults lowered {label}'s IQM final score on {len(lower)} of {len(both)} panels (the intervals "
            f"apart on {len(apart_down)}: {', '.join(map(env_label, apart_down)) or 'none'}) and raised it on "
            f"{len(higher)} (apart on {len(apart_up)}: {', '.join(map(env_label, apart_up)) or 'none'}).")
    if not columns:
        return ""

    def cell(est: dict, e: str, when: str) -> str:
        if (e, when) not in est:
            return "—"
        p, lo, hi = est[(e, when)]
        return f"{p:.3g} [{lo:.3g}, {hi:.3g}]"

    rows = [[env_label(e), *[cell(est, e, when) for est in columns for when in ("before", "after")]] for e in envs
            if any((e, "before") in est or (e, "after") in est for est in columns)]
    return (render_markdown(header, rows, align="l" + "r" * (len(header) - 1))
            + "\n\n*IQM final score [95% stratified-bootstrap interval over seeds] at the old defaults (their runs "
              "kept under a variant of their own, no verdict uses them) and at the new ones (the runs every verdict "
              "uses). "
            + " ".join(sentences) + "*\n")


__all__ = ["scores_before_after"]

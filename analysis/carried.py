"""Carried-forward windows: where a return shown is not measured in its own window.

A window in which no episode ended has no return of its own; the report carries the previous
window's (analysis.align). Where episodes are long against a window (Freeway: every episode runs
its 2500 steps, so episodes end together every three or four windows), most windows, the last
included, show a carried value: the final score of every run is then the return of an earlier
window. This module finds those windows from ``episodes_finished`` (a run without that column
shows none) so that figures and tables can mark them and captions say so."""

from __future__ import annotations

import numpy as np

from .align import clean_steps, place_on_grid
from .collect import Collection
from .names import env_label
from .runs import EPISODES_COLUMN

MARK = "†"


def carried_mask(coll: Collection, env: str, method: str) -> np.ndarray:
    """(S, T) bool over the scored runs of ``method`` on ``env`` (in their order in the env's
    curves): True where the window finished no episode and the curve shows a value (carried)."""
    ed = coll.env_data[env]
    rows = []
    for c in ed.curves.get(method, []):
        if not c.scored:
            continue
        df = c.run.metrics
        if df is None or EPISODES_COLUMN not in df.columns:
            rows.append(np.zeros(len(ed.steps), bool))
            continue
        own_steps, own = clean_steps(df, EPISODES_COLUMN)
        finished, _, _, _ = place_on_grid(own_steps, own, ed.steps)
        rows.append((np.asarray(finished) == 0) & np.isfinite(c.values))
    return np.stack(rows) if rows else np.zeros((0, len(ed.steps)), bool)


def final_carried(coll: Collection, last_k: int = 1) -> dict[str, dict[str, tuple[int, int]]]:
    """env -> method -> (runs whose final score takes a carried window, scored runs), for the cells
    with at least one such run: the final score (the mean of the last ``last_k`` windows) holds a
    return measured in an earlier window."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for env in coll.envs:
        for m in coll.methods:
            mask = carried_mask(coll, env, m)
            k = int(mask[:, -last_k:].any(axis=1).sum()) if mask.size else 0
            if k:
                out.setdefault(env, {})[m] = (k, len(mask))
    return out


def carried_windows(coll: Collection, env: str) -> tuple[int, int]:
    """(windows carried in at least half of the env's scored runs, windows): how much of a curve
    shows returns measured earlier."""
    masks = [carried_mask(coll, env, m) for m in coll.methods]
    masks = [m for m in masks if len(m)]
    if not masks:
        return 0, len(coll.env_data[env].steps)
    every = np.concatenate(masks)
    return int((every.mean(axis=0) >= 0.5).sum()), every.shape[1]


def carried_marks(coll: Collection, last_k: int = 1) -> dict[str, str]:
    """env -> :data:`MARK` for each env where some run's final score is carried forward."""
    return {env: MARK for env in final_carried(coll, last_k)}


def carried_note(coll: Collection, last_k: int = 1, what: str = "final score") -> str:
    """The caption's sentence on carried-forward windows ('' when no final score is carried): per
    marked env, how many runs' final scores are carried and how many windows most runs carry."""
    per = final_carried(coll, last_k)
    if not per:
        return ""
    parts = []
    for env, cells in per.items():
        k, n = sum(c[0] for c in cells.values()), sum(c[1] for c in cells.values())
        w, t = carried_windows(coll, env)
        parts.append(f"{env_label(env)}: {k} of {n} runs, and {w} of its {t} windows in most runs")
    return (f"{MARK} {what} carried forward: no episode ended in the last window, so the value shown is the "
            "return of the last window in which one did (" + "; ".join(parts) + ").")

"""The signal check: does a bonus's reward tell the agent anything on a panel? One rule, fixed in
advance (2026-11-28, before any run carrying these statistics had been read), applied to every
bonus on every panel.

Each run records, per window, statistics of its raw intrinsic reward over each batch
(``rfig_exp.agents.signal``): the fraction of transitions at the batch's maximum, the coefficient
of variation, and on panels with a coverage grid the rank correlation with the visit count of the
next state's cell. A run's value is the mean over its windows; a cell (panel x bonus) is judged on
its runs:

- **at its clip**: the median run has at least :attr:`SignalRule.at_clip` (one half) of its
  transitions at the batch maximum. A clip that binds puts them there (an informative continuous
  bonus has one transition in ``T B`` there); half a batch at one value cannot be ranked. Between
  :attr:`SignalRule.partly_at_clip` and one half it is noted, not judged.
- **constant**: the median run's coefficient of variation is below :attr:`SignalRule.constant_cv`
  (1%): every transition's reward within about 1% of the batch mean, so after the agent's scaling
  the intrinsic advantage is the value head's error, not the bonus's differences.
- **blind to visits** (panels with a coverage grid): the two-sided :attr:`SignalRule.level`
  t-interval of the mean rank correlation over runs does not lie below 0. A novelty bonus falls as
  a cell is revisited; one whose correlation cannot be told from 0 (or is positive) carries no sign
  of it. Panels without a grid (MinAtar) cannot be judged on this, which the table says.

A cell with any of these is **degenerate**: a verdict that compares against it is not a
comparison with a working method. The statistics cannot be computed for runs made before they
were recorded: such a cell is "not measured". Pure functions of a :class:`Collection`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from analysis.collect import Collection
from analysis.names import CONTROLS

AT_MAX, CV, RANK = "signal/at_max_fraction", "signal/cv", "signal/visit_rank_corr"
COVERAGE = "coverage"  # recorded by every run of an env with a coverage grid
RULE_FIXED = "2026-11-28"


@dataclass(frozen=True)
class SignalRule:
    at_clip: float = 0.5          # median run's fraction at the batch maximum: at or above, degenerate
    partly_at_clip: float = 0.05  # at or above (and below at_clip): noted
    constant_cv: float = 0.01     # median run's coefficient of variation: below, degenerate
    level: float = 0.95           # the rank correlation's t-interval over runs


RULE = SignalRule()


@dataclass(frozen=True)
class CellSignal:
    """The check of one cell: its runs' statistics (each run's mean over windows) and the verdict."""

    env: str
    method: str
    runs: int                                   # runs that carry the statistics
    at_max: float                               # median over runs
    cv: float                                   # median over runs
    rank: float | None                          # mean over runs; None without a coverage grid
    rank_interval: tuple[float, float] | None
    verdict: str                                # "ok", "degenerate" or "not measured"
    causes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    has_grid: bool = True                       # the panel has a coverage grid (its runs record coverage)
    control: bool = False                       # the bonus is the control, blind by design
    # what the method is, whatever its key in this collection (a bonus's only variant takes the bonus's key)
    bonus: str = ""
    variant: str = "base"


def t_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """The two-sided ``level`` t-interval of the mean of ``values`` (at least two)."""
    n = len(values)
    half = stats.t.ppf(0.5 + level / 2, n - 1) * float(np.std(values, ddof=1)) / math.sqrt(n)
    mean = float(np.mean(values))
    return mean - half, mean + half


def judge(at_max: np.ndarray, cv: np.ndarray, rank: np.ndarray | None,
          rule: SignalRule = RULE) -> tuple[str, tuple[str, ...], tuple[str, ...], tuple[float, float] | None]:
    """``(verdict, causes, notes, rank interval)`` of a cell from its runs' statistics (one value per
    run: ``at_max`` and ``cv``; ``rank`` None where the panel has no coverage grid)."""
    if len(at_max) == 0:
        return "not measured", (), (), None
    causes, notes = [], []
    top, spread = float(np.median(at_max)), float(np.median(cv))
    if top >= rule.at_clip:
        causes.append(f"at its clip ({top:.2f} of transitions at the batch maximum)")
    elif top >= rule.partly_at_clip:
        notes.append(f"partly at its clip ({top:.2f})")
    if spread < rule.constant_cv:
        causes.append(f"constant within a batch (CV {spread:.3g})")
    interval = None
    if rank is None:
        notes.append("visits not testable (no coverage grid)")
    elif len(rank) < 2:
        notes.append("visits not testable (one run)")
    else:
        interval = t_interval(rank, rule.level)
        if interval[1] >= 0:
            causes.append(f"blind to visits (rank correlation {np.mean(rank):+.2f} "
                          f"[{interval[0]:+.2f}, {interval[1]:+.2f}])")
    return ("degenerate" if causes else "ok"), tuple(causes), tuple(notes), interval


def run_means(coll: Collection, env: str, method: str, column: str) -> np.ndarray:
    """Each used run's mean over its windows of ``column`` (runs without it left out)."""
    _, values = coll.column(env, method, column)
    if values.size == 0:
        return np.zeros(0)
    have = ~np.all(np.isnan(values), axis=1)
    return np.nanmean(values[have], axis=1)


def cell_signal(coll: Collection, env: str, method: str, rule: SignalRule = RULE) -> CellSignal:
    """The check of ``method`` on ``env`` (the bonus ``none`` has no reward: not judged)."""
    at_max, cv = run_means(coll, env, method, AT_MAX), run_means(coll, env, method, CV)
    rank = run_means(coll, env, method, RANK)
    has_grid = run_means(coll, env, method, COVERAGE).size > 0
    verdict, causes, notes, interval = judge(at_max, cv, rank if has_grid else None, rule)
    return CellSignal(env, method, len(at_max), float(np.median(at_max)) if len(at_max) else math.nan,
                      float(np.median(cv)) if len(cv) else math.nan,
                      float(np.mean(rank)) if rank.size else None, interval, verdict, causes, notes, has_grid,
                      coll.bonus_of(method) in CONTROLS, coll.bonus_of(method),
                      info.variant if (info := coll.method_info.get(method)) is not None else "base")


def signal_cells(coll: Collection, rule: SignalRule = RULE) -> list[CellSignal]:
    """Every (env, method) cell of the collection whose bonus has a reward, envs then methods in
    the collection's order."""
    return [cell_signal(coll, env, method, rule) for env in coll.envs for method in coll.methods
            if coll.bonus_of(method) != "none"]


def degenerate(cells: list[CellSignal]) -> dict[tuple[str, str], tuple[str, ...]]:
    """(env, method) -> causes, for the degenerate cells."""
    return {(c.env, c.method): c.causes for c in cells if c.verdict == "degenerate"}


def _cell_text(c: CellSignal) -> str:
    if c.verdict == "not measured":
        return "not measured"
    extra = [n for n in c.notes if "not testable" not in n]
    tail = f" ({'; '.join(extra)})" if extra else ""
    if c.verdict == "degenerate" and c.control:
        return "blind, as the control must be: " + "; ".join(c.causes).removeprefix("blind to visits ") + tail
    if c.verdict == "degenerate":
        return "**degenerate**: " + "; ".join(c.causes) + tail
    numbers = f"CV {c.cv:.2f}" + ("" if c.rank is None else f", ρ {c.rank:+.2f}")
    return f"ok ({'; '.join([numbers, *extra])})"


def signal_md(coll: Collection, cells: list[CellSignal], env_label, rule: SignalRule = RULE) -> str:
    """The panel x bonus table of the check, with the rule in its caption."""
    methods = list(dict.fromkeys(c.method for c in cells))
    lines = ["| Panel | " + " | ".join(coll.label(m) for m in methods) + " |",
             "| :--- |" + " :--- |" * len(methods)]
    by = {(c.env, c.method): c for c in cells}
    for env in dict.fromkeys(c.env for c in cells):
        no_grid = not any(c.has_grid for c in cells if c.env == env)
        lines.append(f"| {env_label(env)}{' †' if no_grid else ''} | "
                     + " | ".join(_cell_text(by[(env, m)]) if (env, m) in by else "—" for m in methods) + " |")
    runs = sorted({c.runs for c in cells if c.runs})
    caption = (f"Rule (fixed {RULE_FIXED}, before these statistics were read): a cell is degenerate when its "
               f"median run has at least {rule.at_clip:.0%} of its transitions at the batch maximum (at its clip), "
               f"or a "
               f"coefficient of variation below {rule.constant_cv:g} (constant), or, on panels with a coverage grid, "
               f"when the {rule.level:.0%} t-interval of its mean rank correlation between bonus and visit count "
               f"does not lie below 0 (blind to visits). CV: the median run's coefficient of variation of the raw "
               f"bonus within a batch; ρ: the mean over runs of that rank correlation (a novelty bonus's is "
               f"negative). Each run's value is its mean over windows; "
               f"{'runs per cell: ' + ', '.join(map(str, runs)) if runs else 'no run carries the statistics'}. "
               f"*Not measured*: runs made before the statistics were recorded. †: no coverage grid, so blindness "
               f"to visits cannot be tested there, and the check cannot tell the noise control from an informative "
               f"bonus on that panel.")
    return "\n".join(lines) + "\n\n" + caption + "\n"


__all__ = ["AT_MAX", "CV", "RANK", "RULE", "RULE_FIXED", "CellSignal", "SignalRule", "cell_signal", "degenerate",
           "judge", "run_means", "signal_cells", "signal_md", "t_interval"]

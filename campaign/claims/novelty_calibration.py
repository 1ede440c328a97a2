"""The input-space part of the signal check tested on known answers, from real runs.

The visits part of the check is tested on known answers drawn from visit maps
(:mod:`campaign.claims.signal_calibration`). The input-space part (a bonus's rank correlation with
novelty in its own normalised observations, and its difference from a distance score's there) needs
states, which no visit map holds, so its known answers are whole runs that record the statistics
(experiment ``novelty``, ``docs/results/novelty/``):

- **a grid count** (#Explo with ``bonus.hash=grid``: ``1/sqrt(n)`` of the state's cell in the
  normalised observation space), the known working count on a low-dimensional state. It must pass.
- **the noise control** (i.i.d. rewards through the same agent). It must be rejected.
- **the distance score as a bonus**: its novelty rank correlation *is* each run's reference, so its
  difference from it is 0 on every run; computed from the same runs' references, not run. It must be
  rejected.

Every other bonus of the experiment is shown beside them under the same rule, as a reading, not a
known answer. What is tested is the comparison with the distance score as a cause: each row is judged
with it a cause on the panel, at the margin in force (:data:`NOVELTY_RULE_2026_12_04`, 0) and at the
margin first fixed (:data:`NOVELTY_RULE_2026_12_03`, 0.05), and the table says whether each is a valid
check on the panel (every known answer gets the verdict it must). The rule in force
(:data:`RULE`) makes the comparison a cause only on the panels where it is
(``SIGNAL_NOVELTY_DISTANCE_PANELS``, checked against this table by ``tests/test_signal_calibration.py``),
and each row's verdict under it is shown too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from analysis.collect import Collection
from rfig_exp.bonuses.hashexplo import HashSettings

from .signal import (
    NOVELTY,
    NOVELTY_REFERENCE,
    NOVELTY_RULE_2026_12_03,
    NOVELTY_RULE_2026_12_04,
    RULE,
    CellSignal,
    SignalRule,
    cell_signal,
    judge,
    paired_values,
    short_verdict,
    t_interval,
)

WORKING, REJECTED, READING = "must pass", "must be rejected", "a reading"
GRID_HASH = "bonus.hash=grid"
DISTANCE_ROW = "the distance score as a bonus"
# the comparison with the distance score as a cause, at the margin in force and at the margin first fixed
TESTED = (NOVELTY_RULE_2026_12_04, NOVELTY_RULE_2026_12_03)
RULES = (*TESTED, RULE)


@dataclass(frozen=True)
class NoveltyAnswer:
    """One row: a method's (or the distance score's) input-space statistics and its verdict under each
    rule of :data:`RULES`."""

    env: str
    method: str                         # the collection's method key, or DISTANCE_ROW
    role: str                           # WORKING, REJECTED or READING
    runs: int
    novelty: float
    novelty_interval: tuple[float, float]
    reference: float
    difference: tuple[float, float, float]   # mean, interval (the rule's level) of novelty - reference
    rank: float | None                  # mean rank correlation with visits; None for the distance row
    verdicts: dict[SignalRule, tuple[str, tuple[str, ...]]]

    def valid_under(self, rule: SignalRule) -> bool:
        verdict = self.verdicts[rule][0]
        return {WORKING: verdict == "ok", REJECTED: verdict == "degenerate"}.get(self.role, True)


def role_of(coll: Collection, method: str) -> str:
    """A grid count must pass and the noise control must be rejected; every other bonus is a reading."""
    bonus = coll.bonus_of(method)
    info = coll.method_info.get(method)
    variant = info.variant if info is not None else "base"
    if bonus == "hashexplo" and GRID_HASH in variant.split(","):
        return WORKING
    return REJECTED if bonus == "noise" else READING


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    return t_interval(values, level) if len(values) > 1 else (np.nan, np.nan)


def _row(coll: Collection, env: str, method: str) -> NoveltyAnswer | None:
    cells: dict[SignalRule, CellSignal] = {r: cell_signal(coll, env, method, r) for r in RULES}
    now = cells[RULE]
    if now.novelty is None or now.novelty_difference is None or now.novelty_reference is None:
        return None
    novelty, _ = paired_values(coll, env, method, NOVELTY, NOVELTY_REFERENCE)
    return NoveltyAnswer(env, method, role_of(coll, method), len(novelty), now.novelty,
                         _interval(novelty, RULE.level), now.novelty_reference, now.novelty_difference, now.rank,
                         {r: (c.verdict, c.causes) for r, c in cells.items()})


def _distance_row(coll: Collection, env: str, methods: list[str]) -> NoveltyAnswer | None:
    """The distance score judged as a bonus: each run's reference as its novelty rank correlation,
    over every run of the panel that records one; only the input-space part applies (no batch
    statistics, no visits), so the batch parts are given values that pass them."""
    refs = np.concatenate([paired_values(coll, env, m, NOVELTY, NOVELTY_REFERENCE)[1] for m in methods])
    if len(refs) < 2:
        return None
    verdicts = {}
    for rule in RULES:
        verdict, causes, _, _ = judge(np.zeros(len(refs)), np.ones(len(refs)), None, rule,
                                      novelty=refs, novelty_reference=refs,
                                      novelty_decides=rule.novelty_distance_decides(env))
        verdicts[rule] = (verdict, causes)
    mean = float(np.mean(refs))
    return NoveltyAnswer(env, DISTANCE_ROW, REJECTED, len(refs), mean, _interval(refs, RULE.level), mean,
                         (0.0, 0.0, 0.0), None, verdicts)


def novelty_answers(coll: Collection) -> list[NoveltyAnswer]:
    """Every row of every panel whose runs record the input-space statistics: the collection's
    bonuses in its order, then the distance score's row."""
    out: list[NoveltyAnswer] = []
    for env in coll.envs:
        rows = [r for m in coll.methods if coll.bonus_of(m) != "none" and (r := _row(coll, env, m)) is not None]
        if not rows:
            continue
        distance = _distance_row(coll, env, [r.method for r in rows])
        out += rows + ([distance] if distance is not None else [])
    return out


def valid(answers: list[NoveltyAnswer], rule: SignalRule = NOVELTY_RULE_2026_12_04) -> bool:
    """Every known answer gets the verdict it must under ``rule`` (at least one of each kind present);
    by default with the comparison a cause at the margin in force, the check the panels of
    ``SIGNAL_NOVELTY_DISTANCE_PANELS`` must pass."""
    roles = {a.role for a in answers}
    return {WORKING, REJECTED} <= roles and all(a.valid_under(rule) for a in answers)


def valid_panels(answers: list[NoveltyAnswer], rule: SignalRule = NOVELTY_RULE_2026_12_04) -> list[str]:
    """The panels (env names, options aside) where ``rule`` is a valid check on these answers."""
    envs = dict.fromkeys(a.env for a in answers)
    return [env for env in envs if valid([a for a in answers if a.env == env], rule)]


def novelty_calibration_md(answers: list[NoveltyAnswer], label: Callable[[str], str],
                           env_label: Callable[[str], str] = str) -> str:
    """Per panel, each row's input-space statistics and verdicts, then whether each rule is a valid
    check there; ``label`` names a method key."""
    first, fixed = TESTED
    head = ["Panel", "Method", "known answer", "runs", "ρ novelty [95% CI]", "distance score's ρ",
            "difference [95% CI]", "ρ visits", f"comparison a cause, margin {first.novelty_margin:+g}",
            f"comparison a cause, margin {fixed.novelty_margin:+g} (2026-12-03)", "verdict in force"]
    lines = ["| " + " | ".join(head) + " |", "| :--- | :--- | :--- |" + " ---: |" * 5 + " :--- | :--- | :--- |"]
    valid_lines = []
    for env in dict.fromkeys(a.env for a in answers):
        rows = [a for a in answers if a.env == env]
        for a in rows:
            d, lo, hi = a.difference
            name = DISTANCE_ROW if a.method == DISTANCE_ROW else label(a.method)
            lines.append(
                f"| {env_label(env)} | {name} | {a.role} | {a.runs} | {a.novelty:+.3f} "
                f"[{a.novelty_interval[0]:+.3f}, {a.novelty_interval[1]:+.3f}] | {a.reference:+.3f} | "
                f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}] | {'—' if a.rank is None else f'{a.rank:+.2f}'} | "
                f"{short_verdict(a.verdicts[first])} | {short_verdict(a.verdicts[fixed])} | "
                f"{short_verdict(a.verdicts[RULE])} |")
        said = ", ".join(f"margin {r.novelty_margin:+g}: {'yes' if valid(rows, r) else '**no**'}" for r in TESTED)
        decides = "a cause" if RULE.novelty_distance_decides(env) else "reported, not a cause"
        valid_lines.append(f"{env_label(env)}: {said} (in force: {decides})")
    width = HashSettings.defaults()["cell_width"]
    caption = (
        "*The input-space part of the signal check on known answers, from whole runs that record it (experiment "
        "`novelty`, docs/results/novelty/: each run's mean over windows, then the mean and t-interval over runs). "
        "Known answers: a grid count of the normalised state (#Explo with hash=grid; the known working count on a "
        f"low-dimensional state; where no width is named, at its default cell_width = {width:g}) must pass; the "
        "noise control and the distance score as a bonus (its difference from itself is 0 on every run; computed "
        "from the same runs' references, not run) must be rejected. The other "
        "bonuses are readings under the same rule, not known answers. ρ novelty: the rank correlation with the "
        "distance to the 10th nearest of a reservoir of earlier states; distance score's ρ: that of the standardised "
        "distance from the reservoir's mean, on the same batches; difference: of the two, paired by run; ρ visits: "
        "the rank correlation with the coverage grid's visit counts. The comparison with the distance score is "
        "tested as a cause; a valid check: every known answer gets its verdict — " + "; ".join(valid_lines)
        + ". The rule in force makes the comparison a cause only where it is a valid check at its margin, and "
        "reports it elsewhere, where the check tells a blind bonus from a working count but not a score that "
        "learns nothing from one (campaign/claims/novelty_calibration.py).*")
    return "\n".join(lines) + "\n\n" + caption + "\n"


def novelty_calibration_section(coll: Collection | None, env_label: Callable[[str], str] = str) -> str:
    """The table on ``coll``'s runs ('' where none is given or no run records the statistics)."""
    answers = novelty_answers(coll) if coll is not None else []
    return novelty_calibration_md(answers, coll.label, env_label) if coll is not None and answers else ""


__all__ = ["DISTANCE_ROW", "NoveltyAnswer", "READING", "REJECTED", "RULES", "TESTED", "WORKING", "novelty_answers",
           "novelty_calibration_md", "novelty_calibration_section", "role_of", "valid", "valid_panels"]

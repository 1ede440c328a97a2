"""The report's *working baselines* section: does every bonus carry a signal, VIME before and after
its fix, and every bonus against the control as well as PPO.

- the signal check (``campaign.claims.signal``) of every bonus on every panel, every variant in the data
  (VIME's runs at its old defaults included: they predate the statistics, so only their raw bonus
  can speak for them, in the next table); a bonus whose grid runs predate the statistics is judged
  on the signal audit's runs (experiment ``signal``: the grid's seeds of it rerun), and says so;
  beside it, the check on known answers drawn from the grid's visit maps
  (``campaign.claims.signal_calibration``: a distance score that learns nothing, a count bonus, a
  constant, noise), under the rule as first fixed and as revised, and the input-space part on known
  answers from whole runs (``campaign.claims.novelty_calibration``: a grid count, noise, the distance
  score as a bonus);
- VIME's raw bonus per panel before the fix (its runs at ``init_sigma=0.5, kl_ratio_len=0``: the
  window means of its reward) and after (the window means of its clipped information gain, before
  the ratio to recent medians), with the fraction of windows whose mean sits at the clip;
- each fixed baseline's final scores before and after its fix (``campaign.repro.fix_scores``);
- the control table (``campaign.claims.control``), the degenerate cells of the main grid flagged;
- which of the main grid's runs carry the statistics, their own or their rerun's in the audit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from analysis.collect import Collection
from analysis.markdown import render_markdown
from analysis.names import CONTROLS, env_label
from campaign.claims.claims import Panels
from campaign.claims.control import control_md
from campaign.claims.novelty_calibration import novelty_calibration_section
from campaign.claims.signal import AT_MAX, CellSignal, degenerate, signal_cells, signal_md
from campaign.claims.signal_calibration import calibration_section, references
from rfig_exp.results.status import seed_ranges

from .fix_scores import scores_before_after
from .fixes import FIXES, fix_methods, fix_of

UNDER_TEST = "rfig"                       # the method the paper's claims are about (rule 6 never removes it)
VIME_CLIP = 1000.0                        # conf/bonus/vime.yaml's clip, at the old and the new defaults
VIME_FIX = fix_of("vime")
VIME_RAW = {"before": "intrinsic_reward", "after": "bonus/info_gain_mean"}


@dataclass(frozen=True)
class BaselinesSection:
    signal_md: str
    vime_md: str
    control_md: str
    degenerate: dict                      # (env, method) -> causes, in the main grid
    fixed_md: str = ""                    # where the fixed baselines have runs (fixed_runs_md)
    degenerate_md: str = ""               # the degenerate cells at the defaults, and where each bonus says why
    coverage_md: str = ""                 # which runs at the defaults carry the statistics (signal_coverage_md)
    scores_md: str = ""                   # each fixed baseline's final scores before and after (fix_scores)
    novelty_md: str = ""                  # the input-space part on known answers (novelty_calibration)


def vime_before_after(every: Collection) -> str:
    """Per panel, VIME's raw bonus over windows and runs before and after the fix: min, median, max
    of the window means, and the share of windows whose mean is the clip (every transition at it)."""
    methods = fix_methods(every, VIME_FIX) if VIME_FIX is not None else {}
    rows = []
    for env in every.envs:
        row = [env_label(env)]
        for when in ("before", "after"):
            m = methods.get(when)
            values = every.column(env, m, VIME_RAW[when])[1] if m else np.zeros((0, 0))
            values = values[np.isfinite(values)] if values.size else values
            if not values.size:
                row.append("—")
                continue
            at_clip = float(np.mean(values >= VIME_CLIP * (1 - 1e-6)))
            row.append(f"{values.min():.3g} / {np.median(values):.3g} / {values.max():.3g} "
                       f"({at_clip:.0%} at the clip; {every.column(env, m, VIME_RAW[when])[1].shape[0]} runs)")
        rows.append(row)
    return (render_markdown(["Panel", "before: init_sigma 0.5, no ratio", "after: the defaults"], rows, align="lll")
            + "\n\n*VIME's raw bonus, window means over every window of every run: min / median / max, and the share "
              "of windows whose mean equals the clip of 1000 (only possible when every transition of every batch of "
              "the window sits at it). Before: the reward the agent got; after: the clipped information gain before "
              "the ratio to recent medians (the reward is that ratio, about 1). Why it changed: "
              "[docs/bonuses/vime.md](../../bonuses/vime.md).*\n")


AUDIT_NOTE = "signal audit: the grid's seeds rerun"


def with_audit(cells: list[CellSignal], audit: list[CellSignal]) -> list[CellSignal]:
    """``cells`` with each one not measured taken from the signal audit's cell of the same panel,
    bonus and variant (the grid's own runs of that bonus predate the statistics), noted as such.
    Matched by variant, not by the method's key: where a bonus has one variant in a collection that
    variant takes the bonus's key, so the audit's runs at a fixed bonus's old values would otherwise
    stand in for the fixed bonus."""
    found = {(c.env, c.bonus, c.variant): c for c in audit if c.verdict != "not measured"}
    out = []
    for c in cells:
        same = found.get((c.env, c.bonus, c.variant))
        out.append(replace(same, method=c.method, notes=same.notes + (AUDIT_NOTE,))
                   if c.verdict == "not measured" and same is not None else c)
    return out


def degenerate_cells(main: Collection, audit: Collection | None = None) -> dict[tuple[str, str], tuple[str, ...]]:
    """The main grid's degenerate cells, (env, method) -> causes, each cell not measured in the grid
    judged on the signal audit's runs (experiment ``signal``) where there are some; each run's
    distance reference from the main grid's visit maps (an audit rerun: its grid twin's)."""
    refs = references(main)
    return degenerate(with_audit(signal_cells(main, references=refs),
                                 signal_cells(audit, references=refs) if audit is not None else []))


def fixed_runs_md(main: Collection, envs: list[str], every: Collection, fixes=FIXES) -> str:
    """One sentence per fixed baseline (campaign/repro/fixes.py) saying on which of ``envs`` the main
    grid holds its complete runs at the new defaults, and how many seeds: the most common count as a
    number of panels, every other count with its panels named (``none yet`` where it has no runs).
    Only for a fix whose old runs ``every`` (every variant of the grid) files under their own variant:
    elsewhere (data made before the fix, never refiled) the base variant's runs are the old ones."""
    parts = []
    for fix in fixes:
        if "before" not in fix_methods(every, fix):
            continue
        method = next((m for m in main.methods if (info := main.method_info.get(m)) is not None
                       and info.bonus == fix.bonus), None)
        counts = {env: sum(1 for c in main.env_data[env].used(method) if c.scored)
                  if method is not None and env in main.env_data else 0 for env in envs}
        groups: dict[int, list[str]] = {}
        for env, n in counts.items():
            groups.setdefault(n, []).append(env)
        ordered = sorted(groups, key=lambda n: (-len(groups[n]), -n))
        said = []
        for i, n in enumerate(ordered):
            where = (f"all {len(envs)} panels" if len(groups[n]) == len(envs) else
                     f"{len(groups[n])} of {len(envs)} panels" if i == 0 else ", ".join(map(env_label, groups[n])))
            said.append(f"none yet on {where}" if n == 0 else f"{n} seeds on {where}")
        parts.append(f"{main.names.label(fix.bonus)}: {'; '.join(said)}")
    return ("*Baselines fixed after the signal check, runs at their new defaults (their runs at the old ones are "
            "kept under variants of their own; campaign/repro/fixes.py): " + ". ".join(parts) + ".*") if parts else ""


BONUS_DOCS = Path(__file__).resolve().parents[2] / "docs" / "bonuses"  # docs/bonuses/<bonus>.md


def degenerate_md(flagged: dict[tuple[str, str], tuple[str, ...]], main: Collection, measured: bool = True,
                  docs: Path = BONUS_DOCS) -> str:
    """One sentence naming every degenerate cell of the main grid (``flagged``: degenerate_cells)
    by bonus, each panel with its causes in short, and the bonus's page that says why, where it
    has one (``docs``); the control's cells (blind as it must be) left out. Nothing where the check
    ``measured`` no cell (runs made before the statistics): there "none" would say too much."""
    if not measured:
        return ""
    by_method: dict[str, list[str]] = {}
    for (env, method), causes in flagged.items():
        if main.bonus_of(method) in CONTROLS:
            continue
        short = "; ".join(dict.fromkeys(c.split(" (")[0] for c in causes))
        by_method.setdefault(method, []).append(f"{env_label(env)} ({short})")
    if not by_method:
        return "*No bonus is degenerate at its defaults on any panel.*"
    parts: dict[bool, list[str]] = {True: [], False: []}
    for method in sorted(by_method, key=main.label):
        page = docs / f"{main.bonus_of(method)}.md"
        why = f"; why: [docs/bonuses/{page.name}](../../bonuses/{page.name})" if page.is_file() else ""
        parts[main.bonus_of(method) == UNDER_TEST].append(f"{main.label(method)} on "
                                                          f"{', '.join(sorted(by_method[method]))}{why}")
    return " ".join(
        [*(["*Degenerate at the defaults, so no verdict compares against them (rule 6): " + ". ".join(parts[False])
            + ".*"] if parts[False] else []),
         *(["*Degenerate at the defaults and judged as it runs, the method the claims are about (rule 6): "
            + ". ".join(parts[True]) + ".*"] if parts[True] else [])])


@dataclass(frozen=True)
class SignalCoverage:
    """Of one method's scored runs in the main grid: how many carry the signal statistics themselves,
    how many through the signal audit's rerun of the same panel, variant and seed, and the seeds of
    each panel that carry them neither way."""

    method: str
    runs: int
    own: int
    audited: int
    missing: dict[str, list[int]]
    panels: int                           # the panels counted


def _seeds_with(coll: Collection, env: str, method: str | None) -> set[int]:
    """The seeds of ``method``'s scored runs on ``env`` whose windows record the signal statistics."""
    if method is None or env not in coll.env_data:
        return set()
    seeds, values = coll.column(env, method, AT_MAX, scored=True)
    return {int(s) for s, row in zip(seeds, values) if row.size and not np.all(np.isnan(row))}


def signal_coverage(main: Collection, audit: Collection | None, envs: list[str],
                    methods: list[str] | None = None) -> list[SignalCoverage]:
    """For each of ``methods`` (default: every method of ``main``) with a reward (PPO has none), over
    ``envs``: which scored runs carry the signal statistics (:class:`SignalCoverage`)."""
    out = []
    envs = [e for e in envs if e in main.env_data]
    for method in main.methods if methods is None else methods:
        if main.bonus_of(method) == "none":
            continue
        info = main.method_info.get(method)
        twin = (audit.method_key(main.bonus_of(method), info.variant if info else None)
                if audit is not None else None)
        runs = own = audited = 0
        missing: dict[str, list[int]] = {}
        for env in envs:
            seeds = {int(c.seed) for c in main.env_data[env].used(method) if c.scored}
            mine = _seeds_with(main, env, method) & seeds
            rerun = (_seeds_with(audit, env, twin) & seeds) - mine if audit is not None else set()
            runs, own, audited = runs + len(seeds), own + len(mine), audited + len(rerun)
            if seeds - mine - rerun:
                missing[env] = sorted(seeds - mine - rerun)
        out.append(SignalCoverage(method, runs, own, audited, missing, len(envs)))
    return out


def _carried(c: SignalCoverage, coll: Collection) -> str:
    """``LABEL N of M (a their own, b through the audit's rerun)``; ``LABEL 0 of M``."""
    how = [f"{c.own} their own" if c.own else "", f"{c.audited} through the audit's rerun" if c.audited else ""]
    return (f"{coll.label(c.method)} {c.own + c.audited} of {c.runs}"
            + (f" ({', '.join(h for h in how if h)})" if c.own + c.audited else ""))


def signal_coverage_md(coverage: list[SignalCoverage], main: Collection) -> str:
    """One sentence: per method, how many of its runs at the defaults carry the statistics and how,
    then every panel's seeds that carry none (or that every run does)."""
    if not coverage:
        return ""
    said, gaps = [], []
    for c in coverage:
        said.append(_carried(c, main))
        panels_by_seeds: dict[str, list[str]] = {}
        for env, seeds in c.missing.items():
            panels_by_seeds.setdefault(seed_ranges(seeds), []).append(env)
        gaps += [f"{main.label(c.method)} seeds {seeds} on "
                 + (f"all {c.panels} panels" if len(where) == c.panels else ", ".join(map(env_label, where)))
                 for seeds, where in panels_by_seeds.items()]
    total, carried = sum(c.runs for c in coverage), sum(c.own + c.audited for c in coverage)
    head = (f"*Runs at the defaults that carry the signal statistics, their own or their rerun's in the signal "
            f"audit (same panel, settings and seed): {carried} of {total}; " + "; ".join(said) + ". ")
    return head + (f"Without them: {'; '.join(gaps)}.*" if gaps else "Every run carries them.*")


def old_defaults_coverage_md(every: Collection, audit: Collection | None, envs: list[str], fixes=FIXES) -> str:
    """One sentence on the runs the coverage count leaves out: a fixed baseline's runs at its old
    defaults (the record of its defect; no verdict uses them), how many carry the statistics, and
    PPO's runs, which have no bonus to measure. Empty where ``every`` files no old runs apart."""
    olds = [m for fix in fixes if (m := fix_methods(every, fix).get("before")) is not None]
    if not olds:
        return ""
    said = [_carried(c, every) for c in signal_coverage(every, audit, envs, olds)]
    ppo = sum(1 for m in every.methods if every.bonus_of(m) == "none"
              for e in envs if e in every.env_data for c in every.env_data[e].used(m) if c.scored)
    return ("*Not counted above, and not rerun for the statistics: the runs kept at a fixed baseline's old "
            "defaults (campaign/repro/fixes.py), the record of its defect, which no verdict uses: "
            + "; ".join(said) + "." + (f" PPO's {ppo} runs have no bonus to measure." if ppo else "") + "*")


def baselines_section(every: Collection, main: Collection, panels: Panels,
                      audit: Collection | None = None, novelty: Collection | None = None) -> BaselinesSection:
    """The three tables: ``every`` holds every variant of the grid's experiment, ``main`` its main
    grid (the defaults), ``panels`` the main grid's paper panels, ``audit`` the signal audit's runs
    (experiment ``signal``) if any, ``novelty`` the runs that test the input-space part on known answers."""
    refs = references(every)  # each run's distance reference, from the grid's visit maps (an audit rerun: its twin's)
    audited = signal_cells(audit, references=refs) if audit is not None else []
    judged = with_audit(signal_cells(main, references=refs), audited)
    flagged = degenerate(judged)
    measured = any(c.verdict != "not measured" and not c.control for c in judged)
    coverage = (signal_coverage_md(signal_coverage(main, audit, panels.paper), main),
                old_defaults_coverage_md(every, audit, panels.paper))
    coverage_md = "\n\n".join(t for t in coverage if t)
    known = calibration_section(main, env_label)
    table = signal_md(every, with_audit(signal_cells(every, references=refs), audited), env_label)
    return BaselinesSection(table + (f"\n**The check on known answers**, drawn from these runs' visit maps:\n\n{known}"
                                     if known else ""),
                            vime_before_after(every), control_md(panels, flagged), flagged,
                            fixed_runs_md(main, panels.paper, every), degenerate_md(flagged, main, measured),
                            coverage_md, scores_before_after(every, panels.paper),
                            novelty_calibration_section(novelty, env_label))


__all__ = ["AUDIT_NOTE", "BaselinesSection", "SignalCoverage", "baselines_section", "degenerate_cells", "degenerate_md",
           "fixed_runs_md", "old_defaults_coverage_md", "signal_coverage", "signal_coverage_md",
           "vime_before_after", "with_audit"]

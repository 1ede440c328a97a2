"""Where a sweep stands, from the results tree alone: ``python -m rfig_exp.results.status``.

    python -m rfig_exp.results.status --results results --experiment paper
    python -m rfig_exp.results.status --experiment paper --json        # the same, machine-readable
    python launch.py status --experiment paper                          # the same, from launch.py

For every (env, bonus, variant) of an experiment it counts the seeds that are

- *complete*: complete by the results contract (:func:`rfig_exp.results.contract.incomplete_reason`:
  ``summary.json`` with ``status: complete`` over a whole ``metrics.csv``);
- *partial*: no complete summary, but ``metrics.csv`` has rows (its last window = the number
  of rows; a relaunch of the same sweep resumes it from its checkpoint);
- *missing*: expected by the sweep (``manifest.jsonl``: one line per job of every ``-m``
  launch, with its seeds) but with no window written yet (never started, or died before
  its first window);
- *failed*: a ``summary.json`` that does not make the run complete (its status is not
  ``complete``, it cannot be read, or ``metrics.csv`` lacks some of its windows).

Seeds found on disk that no manifest line mentions (single runs, or runs from before the
manifest existed) are counted too. Nothing here imports JAX, Hydra or the training code,
so it runs anywhere the results tree is readable, in well under a second for a paper grid.
Exit status 0 whatever the runs' state; 2 for a results folder or experiment that does
not exist.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import yaml

from rfig_exp.results import contract as results


@dataclass
class SeedState:
    """One run directory (or one expected run): ``state`` is complete/partial/missing/failed."""

    seed: int
    state: str
    window: int = 0                    # metrics.csv rows written (partial runs)
    num_windows: int | None = None     # windows the run was configured for, when known
    detail: str = ""                   # e.g. "started, no window yet", the status of a failed run


@dataclass
class GroupStatus:
    env: str
    bonus: str
    variant: str
    seeds: dict[int, SeedState] = field(default_factory=dict)

    def of(self, state: str) -> list[SeedState]:
        return [s for _, s in sorted(self.seeds.items()) if s.state == state]

    def as_dict(self) -> dict:
        return {"env": self.env, "bonus": self.bonus, "variant": self.variant,
                **{state: [s.seed for s in self.of(state)] for state in ("complete", "partial", "missing", "failed")},
                "partial_windows": {str(s.seed): [s.window, s.num_windows] for s in self.of("partial")}}


def configured_windows(config: Path) -> int | None:
    """Windows a run was configured for: ceil(agent.total_timesteps / eval_frequency)."""
    try:
        cfg = yaml.safe_load(config.read_text()) or {}
        total, every = float(cfg["agent"]["total_timesteps"]), float(cfg["eval_frequency"])
        return math.ceil(total / every) if every > 0 else None
    except (OSError, KeyError, TypeError, ValueError, AttributeError, yaml.YAMLError):
        return None  # an unreadable config must not stop the report; the window is then shown as k/?


def read_seed(path: Path, seed: int) -> SeedState:
    """The state of one run directory."""
    if (path / results.SUMMARY).exists():
        summary, problem = results.read_summary(path)
        why = problem or results.incomplete_reason(path, summary)
        if why is None:
            return SeedState(seed, "complete")
        status = summary.status if summary is not None else None
        return SeedState(seed, "failed", detail=str(status) if status not in (None, "complete") else why)
    rows = results.whole_rows(path)
    if rows > 0:
        return SeedState(seed, "partial", window=rows, num_windows=configured_windows(path / results.CONFIG))
    return SeedState(seed, "missing", detail="started, no window yet")


def collect(experiment_dir: Path) -> tuple[list[GroupStatus], dict]:
    """Status of every (env, bonus, variant) of one experiment, sorted; and notes about the tree."""
    groups: dict[tuple[str, str, str], GroupStatus] = {}
    entries, bad_lines = results.read_manifest(experiment_dir)
    for entry in entries:
        key = (entry.env, entry.bonus, entry.variant)
        group = groups.setdefault(key, GroupStatus(*key))
        for seed in entry.seeds:
            group.seeds.setdefault(seed, SeedState(seed, "missing"))
    for run in results.iter_runs(experiment_dir.parent, experiment_dir.name):
        group = groups.setdefault((run.env, run.bonus, run.variant), GroupStatus(run.env, run.bonus, run.variant))
        group.seeds[run.seed] = read_seed(run.path, run.seed)
    notes = {"manifest_lines": len(entries), "manifest_unreadable_lines": bad_lines,
             "last_launch": max((e.launched_at for e in entries), default=None)}
    return [groups[k] for k in sorted(groups)], notes


def seed_ranges(seeds: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0-2,5,7-8"``."""
    out, run = [], []
    for s in sorted(set(seeds)):
        if run and s == run[-1] + 1:
            run.append(s)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [s]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def _partial_text(states: list[SeedState], limit: int = 3) -> str:
    """``3 (seeds 0-1 at window 12 of 20, seed 5 at window 3 of 20)``: the seeds at one window said
    together, the first ``limit`` windows shown (the rest counted), so a wide sweep's row stays short."""
    if not states:
        return "0"
    at: dict[tuple[int, int | None], list[int]] = {}
    for s in states:
        at.setdefault((s.window, s.num_windows), []).append(s.seed)
    ordered = sorted(at.items(), key=lambda item: min(item[1]))
    shown = [f"seed{'s' if len(seeds) > 1 else ''} {seed_ranges(seeds)} at window {window} of {total or '?'}"
             for (window, total), seeds in ordered[:limit]]
    rest = sum(len(seeds) for _, seeds in ordered[limit:])
    more = f", {rest} more seed{'s' if rest > 1 else ''} elsewhere" if rest else ""
    return f"{len(states)} ({', '.join(shown)}{more})"


def _count_text(states: list[SeedState]) -> str:
    return f"{len(states)} ({seed_ranges(s.seed for s in states)})" if states else "0"


def format_table(name: str, groups: list[GroupStatus], notes: dict) -> str:
    """A plain-text table, one line per (env, bonus, variant), and a total line."""
    lines = [f"experiment {name}: {len(groups)} env x bonus x variant groups; "
             + (f"{notes['manifest_lines']} manifest lines (last launch {notes['last_launch']})"
                if notes["manifest_lines"] else "no manifest.jsonl (counting the runs on disk only)")]
    if not groups:
        lines.append("no runs yet")
    headers = ["env", "bonus", "variant", "complete", "partial", "missing"]
    has_failed = any(g.of("failed") for g in groups)
    if has_failed:
        headers.append("failed")
    rows = []
    for g in groups:
        row = [g.env, g.bonus, g.variant, str(len(g.of("complete"))), _partial_text(g.of("partial")),
               _count_text(g.of("missing"))]
        if has_failed:
            row.append(_count_text(g.of("failed")))
        rows.append(row)
    if rows:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines.append(fmt.format(*headers).rstrip())
        lines.extend(fmt.format(*r).rstrip() for r in rows)
    totals = {state: sum(len(g.of(state)) for g in groups) for state in ("complete", "partial", "missing", "failed")}
    total = sum(totals.values())
    lines.append(f"total: {total} runs; {totals['complete']} complete, {totals['partial']} partial, "
                 f"{totals['missing']} missing" + (f", {totals['failed']} failed" if totals["failed"] else ""))
    if totals["partial"] or totals["missing"]:
        lines.append("relaunching the same sweep runs only the missing seeds and resumes the partial ones")
    if notes["manifest_unreadable_lines"]:
        lines.append(f"note: {notes['manifest_unreadable_lines']} unreadable line(s) in {results.MANIFEST} "
                     "were ignored")
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = "python -m rfig_exp.results.status") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="results", help="results folder (results_dir); default: results")
    parser.add_argument("--experiment", default=None,
                        help="experiment name; default: every experiment in the results folder")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    root = Path(args.results)
    if not root.is_dir():
        print(f"error: --results {root} is not a folder", file=sys.stderr)
        return 2
    names = [args.experiment] if args.experiment else results.experiments(root)
    if args.experiment and not (root / args.experiment).is_dir():
        found = ", ".join(results.experiments(root)) or "none"
        print(f"error: --experiment {args.experiment}: no such experiment in {root} (found: {found})",
              file=sys.stderr)
        return 2
    if not names:
        print(f"no experiments in {root}")
        return 0
    report = {}
    for name in names:
        groups, notes = collect(root / name)
        report[name] = (groups, notes)
    if args.json:
        print(json.dumps({name: {"groups": [g.as_dict() for g in groups], "notes": notes}
                          for name, (groups, notes) in report.items()}, indent=2))
    else:
        print("\n\n".join(format_table(name, groups, notes) for name, (groups, notes) in report.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where a sweep stands, from the results tree alone: ``python -m rfig_exp.status``.

    python -m rfig_exp.status --results results --experiment paper
    python -m rfig_exp.status --experiment paper --json        # the same, machine-readable

For every (env, bonus, variant) of an experiment it counts the seeds that are

- *complete*: ``summary.json`` with ``status: complete``;
- *partial*: no complete summary, but ``metrics.csv`` has rows (its last window = the number
  of rows; a relaunch of the same sweep resumes it from its checkpoint);
- *missing*: expected by the sweep (``manifest.jsonl``: one line per job of every ``-m``
  launch, with its seeds) but with no window written yet (never started, or died before
  its first window);
- *failed*: a ``summary.json`` whose status is not ``complete``.

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
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import yaml

SUMMARY = "summary.json"
METRICS = "metrics.csv"
CONFIG = "config.yaml"
MANIFEST = "manifest.jsonl"
_SEED_DIR = re.compile(r"^seed_(\d+)$")


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


def count_rows(metrics: Path) -> int:
    """Data rows of a metrics.csv (header excluded; a half-written last line is not a row)."""
    try:
        data = metrics.read_bytes()
    except OSError:
        return 0
    lines = data.split(b"\n")
    complete_lines = lines[:-1]  # the text after the last newline is an unfinished row (or empty)
    return max(0, sum(1 for line in complete_lines if line.strip()) - 1)


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
    summary = path / SUMMARY
    if summary.exists():
        try:
            status = json.loads(summary.read_text()).get("status")
        except (OSError, ValueError):
            status = "unreadable summary.json"
        if status == "complete":
            return SeedState(seed, "complete")
        return SeedState(seed, "failed", detail=str(status))
    rows = count_rows(path / METRICS)
    if rows > 0:
        return SeedState(seed, "partial", window=rows, num_windows=configured_windows(path / CONFIG))
    return SeedState(seed, "missing", detail="started, no window yet")


def read_manifest(path: Path) -> tuple[list[dict], int]:
    """Manifest lines of an experiment, and how many lines could not be read."""
    entries, bad = [], 0
    try:
        text = path.read_text()
    except OSError:
        return [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            entry["env"], entry["bonus"], entry["variant"]  # noqa: B018  (required keys)
            entry["seeds"] = [int(s) for s in entry["seeds"]]
            entries.append(entry)
        except (ValueError, KeyError, TypeError):
            bad += 1
    return entries, bad


def collect(experiment_dir: Path) -> tuple[list[GroupStatus], dict]:
    """Status of every (env, bonus, variant) of one experiment, sorted; and notes about the tree."""
    groups: dict[tuple[str, str, str], GroupStatus] = {}
    entries, bad_lines = read_manifest(experiment_dir / MANIFEST)
    for entry in entries:
        key = (entry["env"], entry["bonus"], entry["variant"])
        group = groups.setdefault(key, GroupStatus(*key))
        for seed in entry["seeds"]:
            group.seeds.setdefault(seed, SeedState(seed, "missing"))
    for seed_dir in sorted(experiment_dir.glob("*/*/*/seed_*")):
        match = _SEED_DIR.match(seed_dir.name)
        parts = seed_dir.relative_to(experiment_dir).parts
        if not match or not seed_dir.is_dir() or any(p.startswith(".") for p in parts):
            continue
        env, bonus, variant = parts[:3]
        group = groups.setdefault((env, bonus, variant), GroupStatus(env, bonus, variant))
        seed = int(match.group(1))
        group.seeds[seed] = read_seed(seed_dir, seed)
    # <env>/<bonus>/seed_k: the layout before run directories named their variant
    old_layout = sum(1 for p in experiment_dir.glob("*/*/seed_*")
                     if p.is_dir() and not any(q.startswith(".") for q in p.relative_to(experiment_dir).parts))
    notes = {"manifest_lines": len(entries), "manifest_unreadable_lines": bad_lines, "old_layout_runs": old_layout,
             "last_launch": max((e.get("launched_at", "") for e in entries), default=None)}
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


def _partial_text(states: list[SeedState], limit: int = 4) -> str:
    if not states:
        return "0"
    shown = [f"{s.seed}@{s.window}/{s.num_windows if s.num_windows else '?'}" for s in states[:limit]]
    more = f" +{len(states) - limit} more" if len(states) > limit else ""
    return f"{len(states)} (seed@window {' '.join(shown)}{more})"


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
        lines.append(f"note: {notes['manifest_unreadable_lines']} unreadable line(s) in {MANIFEST} were ignored")
    if notes["old_layout_runs"]:
        lines.append(f"note: {notes['old_layout_runs']} run folder(s) in the old <env>/<bonus>/seed_<k> layout "
                     "(no variant level) are not counted")
    return "\n".join(lines)


def experiments_in(results: Path) -> list[str]:
    return sorted(p.name for p in results.iterdir() if p.is_dir() and not p.name.startswith("."))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rfig_exp.status", description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="results", help="results folder (results_dir); default: results")
    parser.add_argument("--experiment", default=None,
                        help="experiment name; default: every experiment in the results folder")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    results = Path(args.results)
    if not results.is_dir():
        print(f"error: --results {results} is not a folder", file=sys.stderr)
        return 2
    names = [args.experiment] if args.experiment else experiments_in(results)
    if args.experiment and not (results / args.experiment).is_dir():
        found = ", ".join(experiments_in(results)) or "none"
        print(f"error: --experiment {args.experiment}: no such experiment in {results} (found: {found})",
              file=sys.stderr)
        return 2
    if not names:
        print(f"no experiments in {results}")
        return 0
    report = {}
    for name in names:
        groups, notes = collect(results / name)
        report[name] = (groups, notes)
    if args.json:
        print(json.dumps({name: {"groups": [g.as_dict() for g in groups], "notes": notes}
                          for name, (groups, notes) in report.items()}, indent=2))
    else:
        print("\n\n".join(format_table(name, groups, notes) for name, (groups, notes) in report.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

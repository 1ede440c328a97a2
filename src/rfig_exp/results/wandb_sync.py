"""Upload an experiment's offline wandb runs with ``wandb sync``, skipping those already uploaded.

Each seed keeps its offline runs in ``seed_<k>/wandb/offline-run-*/`` (a resumed seed has one per
attempt, all continuing one wandb run). When wandb uploads one it writes ``run-<id>.wandb.synced``
beside the run's ``.wandb`` file, and ``wandb sync`` itself skips a run so marked: that marker is
what "uploaded" means here too, so there is no second record to keep in step with wandb's. A seed
whose job still holds it (its ``owner.json``) is left for later: its run is still being written,
and uploading it now would mark it synced without its last windows.

    python -m rfig_exp.results.wandb_sync --results results --experiment smoke [--dry-run]
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from rfig_exp.results import contract as results
from rfig_exp.results.ownership import LOCK

SYNCED = ".synced"  # wandb's marker: <run>.wandb + this suffix, written once that file is uploaded


@dataclass(frozen=True)
class SyncPlan:
    """An experiment's offline runs by what ``wandb-sync`` does with them (run folders, sorted)."""

    to_sync: list[Path]
    synced: list[Path]     # uploaded before (wandb's marker)
    training: list[Path]   # their seed's job still runs (or was killed: its relaunch finishes them)


def is_synced(run: Path) -> bool:
    """Whether wandb marked every ``.wandb`` file of an offline run folder as uploaded."""
    files = list(run.glob("*.wandb"))
    return bool(files) and all(Path(f"{f}{SYNCED}").exists() for f in files)


def plan(results_dir: str | Path, experiments: Sequence[str]) -> SyncPlan:
    """Which offline runs of ``<results_dir>/<experiment>`` would be uploaded, and which not."""
    to_sync, synced, training = [], [], []
    for experiment in experiments:
        for run in results.iter_runs(results_dir, experiment):
            for offline in sorted(p for p in (run.path / "wandb").glob("offline-run-*") if any(p.glob("*.wandb"))):
                if is_synced(offline):
                    synced.append(offline)
                elif (run.path / LOCK).exists():
                    training.append(offline)
                else:
                    to_sync.append(offline)
    return SyncPlan(to_sync, synced, training)


def default_command() -> list[str]:
    """The uploader: this interpreter's ``wandb sync`` (it reads the key from ``wandb login``)."""
    return [sys.executable, "-m", "wandb", "sync"]


def sync(sync_plan: SyncPlan, command: Sequence[str]) -> int:
    """Runs ``command`` with the runs to upload as its last arguments (one call, so wandb uploads a
    resumed seed's runs in order); 0 when wandb then marks every one of them synced."""
    if not sync_plan.to_sync:
        print("nothing to upload")
        return 0
    line = [*command, *map(str, sync_plan.to_sync)]
    print("$ " + shlex.join(line), flush=True)
    try:
        code = subprocess.run(line).returncode
    except OSError as err:
        print(f"error: --command {shlex.join(command)!r} cannot run: {err}", file=sys.stderr)
        return 2
    left = [r for r in sync_plan.to_sync if not is_synced(r)]
    print(f"{len(sync_plan.to_sync) - len(left)} of {len(sync_plan.to_sync)} runs uploaded (marked synced by wandb)")
    if code:
        return code
    if left:
        print(f"error: {shlex.join(command)} ended well but {len(left)} runs carry no {SYNCED} marker: "
              "see its output above (not logged in: `wandb login`)", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rfig_exp.results.wandb_sync", description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default="results", help="results folder (results_dir); default: results")
    parser.add_argument("--experiment", default=None, help="experiment name; default: every experiment")
    parser.add_argument("--command", default=None,
                        help="the uploader, given the run folders as its last arguments; default: "
                             "'python -m wandb sync' with this interpreter")
    parser.add_argument("--dry-run", action="store_true",
                        help="say what would be uploaded and the command, run nothing")
    args = parser.parse_args(argv)
    root = Path(args.results)
    if args.experiment and not (root / args.experiment).is_dir():
        found = ", ".join(results.experiments(root)) or "none"
        print(f"error: --experiment {args.experiment}: no such experiment in {root} (found: {found})", file=sys.stderr)
        return 2
    names = [args.experiment] if args.experiment else results.experiments(root)
    found = plan(root, names)
    print(f"{root}/{args.experiment or '*'}: {len(found.to_sync)} offline runs to upload, {len(found.synced)} "
          f"already uploaded, {len(found.training)} of seeds still held by their job ({LOCK}; relaunch a killed "
          "job first)")
    command = shlex.split(args.command) if args.command else default_command()
    if args.dry_run:
        print("would run: " + shlex.join([*command, *map(str, found.to_sync)]) if found.to_sync
              else "nothing to upload")
        return 0
    return sync(found, command)


if __name__ == "__main__":
    sys.exit(main())

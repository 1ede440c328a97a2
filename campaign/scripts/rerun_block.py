"""Rerun a committed block of seeds here and say whether it reproduces the committed runs.

    python campaign/scripts/rerun_block.py --env pointmaze_umaze --bonus none --seeds 8-15
    python campaign/scripts/rerun_block.py --env pointmaze_medium --bonus rfig --seeds 8-15 --keep /tmp/rerun
    python campaign/scripts/rerun_block.py --env mountaincar --bonus none --seeds 0-1 --data DATA \\
        --command "env=mountaincar bonus=none seed=0 num_seeds=2" --total-timesteps 8192 --set eval_frequency=4096

The block (one env x bonus, the seeds its campaign trained in one process) is rerun with the
command of the campaign stage that made it (``python -m campaign.repro.stages commands STAGE``,
restricted to this env and bonus; ``--command`` gives another), into a temporary results folder,
pinned to one core as the campaign's lanes were (``--cores all``: not pinned), with the campaign's
own settings (``wandb.mode=disabled``). Its runs are then compared with the committed ones
(``campaign.repro.reproducible.compare_block``): one line, ``BIT-IDENTICAL`` (every metrics column
both record, as the data stores them, wall time aside), or ``DIFFERENT`` with the first window where
they part and a Mann-Whitney U test of the final scores. Above it, what each side ran on.

``--total-timesteps N`` (and ``--set KEY=VALUE``) make a cheap smoke run: the learning rate anneals
over the budget, so such a rerun of a committed 1M-step block differs from its first window by
design; it is bit-identical only to data made with the same overrides (tests/test_rerun_block.py).

Exit status: 0 bit-identical, 1 different, 2 bad arguments or nothing to compare, 3 the launch failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from campaign.repro.data import read_data, read_tree  # noqa: E402
from campaign.repro.reproducible import block_command, compare_block, machine_kind, parse_seeds  # noqa: E402
from campaign.repro.stages import PAPER32  # noqa: E402

# What the campaign's lanes added to every command (campaign/scripts/repro.sh COMMON), less results_dir.
CAMPAIGN_SETTINGS = ("wandb.mode=disabled", "stall_timeout_s=300")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", required=True, help="env name, as launch.py's env= (e.g. pointmaze_umaze)")
    p.add_argument("--bonus", required=True, help="bonus name, as launch.py's bonus= (none = PPO)")
    p.add_argument("--seeds", required=True, help="the block's seeds, e.g. 8-15")
    p.add_argument("--experiment", default=PAPER32, help="the committed runs' experiment (default %(default)s)")
    p.add_argument("--data", default=str(ROOT / "docs/results/paper32/data"), help="the committed data folder")
    p.add_argument("--command", help="launch.py -m arguments instead of the stage's (the block's seeds included)")
    p.add_argument("--total-timesteps", type=int, help="agent.total_timesteps for a cheap smoke run")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="another override (repeatable)")
    p.add_argument("--cores", default="1", help="cores to pin the rerun to: a count (default 1) or 'all'")
    p.add_argument("--keep", help="results folder to rerun into and keep (default: a temporary one, removed)")
    p.add_argument("--python", default=sys.executable, help="the Python that runs launch.py")
    p.add_argument("--timeout", type=float, default=3600, help="seconds the rerun may take")
    return p.parse_args(argv)


def _pin(cores: str):
    """A preexec function that pins the child to ``cores`` of this process's cores (the last ones:
    core 0 is the one other work is likeliest to use), or None for 'all'."""
    if cores == "all" or not hasattr(os, "sched_setaffinity"):
        return None
    mine = sorted(os.sched_getaffinity(0))
    chosen = set(mine[-max(1, int(cores)):])
    return lambda: os.sched_setaffinity(0, chosen)


def rerun(args: list[str], results: Path, python: str, cores: str, timeout: float) -> tuple[int, str, float]:
    """Run ``launch.py -m ARGS`` into ``results``; (exit code, its output's tail, seconds)."""
    cmd = [python, str(ROOT / "launch.py"), "-m", *args, f"results_dir={results}"]
    print("[rerun] " + " ".join(cmd[1:]), flush=True)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=_pin(cores))  # before exec: no threads to upset
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:.0f} s", time.monotonic() - start
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
    return proc.returncode, tail, time.monotonic() - start


def _block(runs: dict, env: str, bonus: str, seeds: list[int], experiment: str | None = None) -> dict:
    """seed -> StoredRun of ``env`` x ``bonus`` (any experiment unless named), one variant only."""
    found = {k: r for k, r in runs.items() if k[1] == env and k[2] == bonus and k[4] in seeds
             and (experiment is None or k[0] == experiment) and r.complete}
    return {k[4]: r for k, r in sorted(found.items())}


def _describe(side: str, runs: dict) -> None:
    for r in list(runs.values())[:1]:
        s = r.record.get("summary") or {}
        commit = (s.get("versions") or {}).get("git_commit") or (r.record.get("origin") or {}).get("commit")
        print(f"[rerun] {side}: variant {r.record['variant']}, commit {str(commit)[:7]}, cores "
              f"{(s.get('placement') or {}).get('cores')}, {machine_kind(s.get('machine'))}")


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    try:
        seeds = parse_seeds(a.seeds)
        stage, args = ("(--command)", a.command.split()) if a.command else block_command(a.experiment, a.env,
                                                                                         a.bonus, seeds)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args += list(CAMPAIGN_SETTINGS) + ([f"agent.total_timesteps={a.total_timesteps}"] if a.total_timesteps else [])
    args += a.set
    committed = _block(read_data(a.data), a.env, a.bonus, seeds, a.experiment)
    if not committed:
        print(f"error: {a.data} holds no complete {a.experiment}/{a.env}/{a.bonus} run of seeds {a.seeds}",
              file=sys.stderr)
        return 2
    print(f"[rerun] stage {stage}: {len(committed)} committed runs of {a.env}/{a.bonus}, seeds {a.seeds}")
    with tempfile.TemporaryDirectory(prefix="rerun_block_") as tmp:
        results = Path(a.keep) if a.keep else Path(tmp) / "results"
        code, tail, seconds = rerun(args, results, a.python, a.cores, a.timeout)
        if code:
            print(f"[rerun] launch.py exited {code}:\n{tail}", file=sys.stderr)
            return 3
        fresh = _block(read_tree(results)[0], a.env, a.bonus, seeds)
    print(f"[rerun] {len(fresh)} runs in {seconds:.0f} s")
    variants = {r.record["variant"] for r in fresh.values()}
    held = {r.record["variant"] for r in committed.values()}
    if not variants & held:
        print(f"error: the rerun made variant {sorted(variants)}, the data holds {sorted(held)}: nothing to compare "
              "(an override such as --total-timesteps names another variant)", file=sys.stderr)
        return 2
    committed = {s: r for s, r in committed.items() if r.record["variant"] in variants}
    _describe("committed", committed)
    _describe("rerun    ", fresh)
    result = compare_block({s: r.rows for s, r in committed.items()}, {s: r.rows for s, r in fresh.items()})
    print(result.verdict())
    if a.total_timesteps:
        print("[rerun] note: a budget override changes the learning-rate schedule: bit-identical only to data "
              "made with the same overrides")
    return 0 if result.identical else (2 if not result.seeds else 1)


if __name__ == "__main__":
    sys.exit(main())

"""A sweep of traced settings as one stacked job against one job per setting: wall, compile, env steps/s.

    python benchmarks/bench_stacked.py                                      # MountainCar and Breakout, RFIG
    python benchmarks/bench_stacked.py --envs mountaincar --seeds 2 --steps 49152 --rounds 1   # a quick look

Each case is ``launch.py -m env=E bonus=B bonus.beta=0.25,0.5,1 agent.lr=1e-4,3e-4 'seed=range(S)'``
(3 x 2 settings x S seeds), run twice as a user runs it, in a subprocess with its own results folder
and a fresh (empty) compilation cache: with ``members_per_job=1`` (one job per setting, its seeds
vmapped: the sweep as it ran before stacking) and stacked (the default: one compiled job of every
setting, ``rfig_exp.launch.stacking``). Per case: the whole command's wall time and CPU time (user +
system: a shared machine's load stretches the wall time more than the work); the compile time
summed over its jobs and the jobs; and env steps/s, every run's env steps over the summed training
time of the jobs (``summary.json``, compile excluded) and over the wall time. With ``--rounds 2`` the
second round runs the two in the other order (the machine's load drifts).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ["bonus.beta=0.25,0.5,1", "agent.lr=1e-4,3e-4"]


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children: a shared machine's load
    stretches the wall time far more than the work done."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_case(env: str, bonus: str, seeds: int, steps: int, stacked: bool, work: Path, extra: list[str]) -> dict:
    """One launch of the sweep; its timings from the command and its summaries."""
    name = f"{env}-{bonus}-{'stacked' if stacked else 'separate'}"
    results, cache = work / name, work / f"{name}-cache"
    shutil.rmtree(results, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    cmd = [sys.executable, str(ROOT / "launch.py"), "-m", f"env={env}", f"bonus={bonus}", *SWEEP,
           f"seed=range({seeds})", f"agent.total_timesteps={steps}", "wandb.mode=disabled", f"results_dir={results}",
           f"compile_cache={cache}", *([] if stacked else ["members_per_job=1"]), *extra]
    t0, cpu0 = time.perf_counter(), _children_cpu()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, WANDB_MODE="disabled"))
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if out.returncode:
        raise RuntimeError(f"{name}: exit {out.returncode}: {(out.stderr or out.stdout)[-2000:]}")
    summaries = [json.loads(p.read_text()) for p in results.rglob("summary.json")]
    # the runs of one job share its timings: one entry per job
    jobs = {(s["compile_time_s"], s["train_time_s"], s["wall_time_s"]): s for s in summaries}
    env_steps = sum(s["env_steps"] for s in summaries)
    train = sum(s["train_time_s"] for s in jobs.values())
    return dict(case=name, runs=len(summaries), jobs=len(jobs), wall_s=wall, cpu_s=cpu,
                compile_s=sum(s["compile_time_s"] for s in jobs.values()),
                compile_each=sorted(round(s["compile_time_s"], 1) for s in jobs.values()),
                train_sps=env_steps / train, wall_sps=env_steps / wall,
                members=sorted({s["num_seeds_in_process"] for s in summaries}))


def row(m: dict, r: int) -> str:
    """One case's markdown row."""
    runs_per_job = "/".join(map(str, m["members"]))
    each = ", ".join(map(str, m["compile_each"]))
    return (f"| {m['case']} (round {r + 1}) | {m['runs']} | {m['jobs']} ({runs_per_job}) | {m['wall_s']:.0f} | "
            f"{m['cpu_s']:.0f} | {m['compile_s']:.1f} ({each}) | {m['train_sps']:,.0f} | {m['wall_sps']:,.0f} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", default="mountaincar,minatar_breakout")
    parser.add_argument("--bonus", default="rfig")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=245760, help="agent.total_timesteps of each run")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--work-dir", type=Path, default=None, help="default: a temporary folder, removed after")
    parser.add_argument("--extra", nargs="*", default=[], help="more overrides for both launches")
    args = parser.parse_args(argv)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="bench-stacked-"))
    print("| case | runs | jobs (runs per job) | wall s | CPU s | compile s, summed (each job) | env steps/s over "
          "training | env steps/s over wall |", flush=True)
    print("|---|---|---|---|---|---|---|---|", flush=True)
    try:
        for r in range(args.rounds):
            for env in args.envs.split(","):
                for stacked in ((False, True) if r % 2 == 0 else (True, False)):
                    m = run_case(env, args.bonus, args.seeds, args.steps, stacked, work, args.extra)
                    print(row(m, r), flush=True)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

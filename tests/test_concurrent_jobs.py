"""Several jobs at once on one device (``placement.jobs_per_gpu``), with real processes: a local
sweep of launch.py whose jobs run side by side, each checked while it runs (its owner lock, the
cores the OS lets it use) and after (what its summary recorded, its metrics against the same job
run alone)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rfig_exp.run.placement import cpu_block, format_cores

ROOT = Path(__file__).resolve().parents[1]
TINY = ["agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2", "agent.update_epochs=1",
        "agent.total_timesteps=256", "eval_frequency=128", "agent.obs_norm_init_steps=8", "wandb.mode=disabled"]
CELLS = ["env=cartpole", "bonus=none,rnd", *TINY]


def _lock_holders(results: Path) -> dict[Path, tuple[int, str]]:
    """Run folder -> (pid, cores it may run on) of each live owner lock now."""
    live = {}
    for lock in results.glob("default/cartpole/*/*/seed_0/owner.json"):
        try:
            pid = json.loads(lock.read_text())["pid"]
            live[lock.parent] = (pid, format_cores(sorted(os.sched_getaffinity(pid))))
        except (OSError, ValueError, KeyError):  # being written, released, or its process just ended
            continue
    return live


def _rows(run: Path) -> list[dict]:
    with open(run / "metrics.csv") as f:
        return [{k: v for k, v in row.items() if k != "wall_time_s"} for row in csv.DictReader(f)]


@pytest.mark.extended
@pytest.mark.kept_apart  # two jobs that must overlap, each on a core of its own
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
@pytest.mark.timeout(900)  # about a minute on a quiet machine; compiles crawl on a shared one
def test_jobs_sharing_a_device_keep_their_placement_owners_and_results(tmp_path):
    together, alone = tmp_path / "together", tmp_path / "alone"
    env = dict(os.environ, WANDB_MODE="disabled")
    # placement.jobs_per_gpu=2 and no max_batch_size: on a machine without a GPU, 2 jobs at once
    console = tmp_path / "sweep.log"  # a file, not a pipe: nobody reads it while the sweep runs
    with open(console, "w") as sink:
        sweep = subprocess.Popen([sys.executable, "launch.py", "-m", "hydra/launcher=local",
                                  "placement.jobs_per_gpu=2", *CELLS, f"results_dir={together}"], cwd=ROOT, env=env,
                                 stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    seen: dict[Path, set] = {}
    at_once = None
    stop = time.monotonic() + 600
    while sweep.poll() is None and time.monotonic() < stop:
        live = _lock_holders(together)
        for run, holder in live.items():
            seen.setdefault(run, set()).add(holder)
        if len(live) == 2 and at_once is None:
            at_once = live
        time.sleep(0.05)
    if sweep.poll() is None:  # not done in 10 minutes: end it and its jobs
        os.killpg(sweep.pid, signal.SIGKILL)
        sweep.wait()
        pytest.fail(f"the sweep did not end in 600 s: {console.read_text()[-3000:]}")
    assert sweep.returncode == 0, console.read_text()[-3000:]

    # both jobs held their own lock at the same moment, each process on its own cores
    assert at_once is not None, f"the two jobs never ran at the same time: {seen}"
    (pid_a, cores_a), (pid_b, cores_b) = at_once.values()
    cores = sorted(os.sched_getaffinity(0))
    assert pid_a != pid_b and {cores_a, cores_b} == {format_cores(cpu_block(cores, s, 2)) for s in (0, 1)}
    assert all(len(holders) == 1 for holders in seen.values()), seen  # one owner per run, one placement each
    assert not list(together.rglob("owner.json"))  # each released its own lock

    logs = "".join(p.read_text() for p in together.rglob("*_log.out"))
    assert logs.count("2 in parallel) -> CPU cores") == 2, logs[-3000:]
    for run, ((_, held_on),) in seen.items():
        summary = json.loads((run / "summary.json").read_text())
        assert summary["status"] == "complete" and run.parts[-3] == summary["bonus"]
        assert summary["placement"]["cores"] == held_on  # what the job recorded is what the OS gave it

    # the same jobs run alone (one process, one after the other): the same numbers
    solo = subprocess.run([sys.executable, "launch.py", "-m", *CELLS, f"results_dir={alone}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert solo.returncode == 0, solo.stderr[-3000:]
    for run in seen:
        twin = alone / run.relative_to(together)
        assert _rows(run) == _rows(twin) and len(_rows(run)) == 2
        assert (json.loads((run / "summary.json").read_text())["final_return"]
                == json.loads((twin / "summary.json").read_text())["final_return"])

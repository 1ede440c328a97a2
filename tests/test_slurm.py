"""launch.py against a real SLURM cluster (``scripts/slurm-local.sh up``): a sweep as a job
array, and a running job requeued with ``scontrol requeue`` that resumes from its checkpoint.

Skipped unless ``RFIG_SLURM_TESTS=1`` (``.ci/run`` sets it after starting the local cluster);
they need ``sbatch``/``squeue``/``scontrol`` on the PATH and a partition ``debug``.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = ["agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2", "agent.update_epochs=1",
        "agent.obs_norm_init_steps=8", "wandb.mode=disabled"]
SLURM = ["hydra/launcher=slurm", "hydra.launcher.partition=debug", "hydra.launcher.cpus_per_task=1",
         "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=15"]

pytestmark = [
    pytest.mark.skipif(os.environ.get("RFIG_SLURM_TESTS") != "1",
                       reason="needs a SLURM cluster: RFIG_SLURM_TESTS=1 after scripts/slurm-local.sh up"),
    pytest.mark.timeout(900),
    pytest.mark.kept_apart,  # one cluster of 2 CPUs, and a requeue timed from outside
]


@pytest.fixture(scope="module", autouse=True)
def cluster():
    """The cluster must answer; a missing one is an error here, not a skip (the flag asked for it)."""
    for tool in ("sbatch", "squeue", "scontrol", "sinfo"):
        assert shutil.which(tool), f"{tool} not found: run scripts/slurm-local.sh up"
    out = subprocess.run(["sinfo", "-h", "-p", "debug", "-o", "%T"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.strip(), f"no partition debug: {out.stderr or out.stdout}"


def launch(args: list[str], log: Path) -> subprocess.Popen:
    """``launch.py -m`` with the SLURM launcher, its output into ``log`` (a pipe could fill up)."""
    env = dict(os.environ, WANDB_MODE="disabled")
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "launch.py", "-m", *SLURM, *args], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen, log: Path, timeout: float) -> str:
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"launch.py did not finish within {timeout:.0f} s:\n{log.read_text()[-4000:]}")
    out = log.read_text()
    assert proc.returncode == 0, out[-4000:]
    return out


def jobs_named(name: str) -> list[str]:
    """SLURM ids (``<array>_<task>``) of the jobs with this name, queued or running."""
    out = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i %T"], capture_output=True, text=True, timeout=30)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def cancel(name: str) -> None:
    subprocess.run(["scancel", "-n", name], capture_output=True, timeout=30)


def run_dirs(results: Path, experiment: str) -> list[Path]:
    return sorted((results / experiment).glob("*/*/*/seed_*"))


def windows_of(metrics: Path) -> list[int]:
    with open(metrics, newline="") as f:
        return [int(float(row["env_steps"])) for row in csv.DictReader(f)]


def test_sweep_runs_as_a_job_array_and_writes_every_run(tmp_path):
    """2 bonuses x 2 seeds = 4 runs on the local cluster, every one complete; the seeds of a
    bonus are grouped into one vmapped job (seeds_per_job), so one array of 2 tasks."""
    experiment, log = "slurm_sweep", tmp_path / "launch.log"
    proc = launch(["env=cartpole", "bonus=none,rnd", "seed=range(2)", *TINY, "agent.total_timesteps=256",
                   "eval_frequency=128", f"results_dir={tmp_path}", f"experiment={experiment}"], log)
    try:
        out = finish(proc, log, timeout=600)
    finally:
        cancel(f"rfig-{experiment}")
    assert "2 job(s) as submitit 'slurm' tasks" in out and "sweep output dir" in out
    assert "accounting storage" not in out  # submitit's sacct polls are kept off the console
    runs = run_dirs(tmp_path, experiment)
    assert [(r.parts[-3], r.name) for r in runs] == [("none", "seed_0"), ("none", "seed_1"),
                                                     ("rnd", "seed_0"), ("rnd", "seed_1")]
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        assert summary["status"] == "complete" and summary["env_steps"] == 256, run
        assert summary["seed"] == int(run.name.split("_")[1]) and summary["bonus"] == run.parts[-3]
        assert windows_of(run / "metrics.csv") == [128, 256]
    # Each job ran as a task of one SLURM array: submitit's folders are <array id>_<task>.
    folders = [p.name for p in (tmp_path / experiment).glob(".hydra/multirun_*/.submitit/*_*") if p.is_dir()]
    arrays = {name.split("_")[0] for name in folders}
    assert len(folders) == 2 and len(arrays) == 1, folders


def test_a_requeued_job_resumes_from_its_checkpoint_and_completes(tmp_path):
    """``scontrol requeue`` while the job trains: SLURM sends SIGTERM, the run checkpoints and
    stops, SLURM starts it again, and it resumes where it stopped; no window twice."""
    experiment, log = "slurm_requeue", tmp_path / "launch.log"
    every, windows = 256, 300
    proc = launch(["env=cartpole", "bonus=none", "seed=0", *TINY, f"agent.total_timesteps={every * windows}",
                   f"eval_frequency={every}", f"results_dir={tmp_path}", f"experiment={experiment}"], log)
    name = f"rfig-{experiment}"
    try:
        deadline = time.time() + 400
        metrics = None
        while time.time() < deadline and proc.poll() is None:
            found = list((tmp_path / experiment).glob("cartpole/none/*/seed_0/metrics.csv"))
            if found and len(found[0].read_text().splitlines()) > 2:  # header + at least 2 windows
                metrics = found[0]
                break
            time.sleep(0.2)
        assert metrics is not None, f"the job wrote no metrics in time:\n{log.read_text()[-4000:]}"
        ids = jobs_named(name)
        assert len(ids) == 1, ids
        requeue = subprocess.run(["scontrol", "requeue", ids[0]], capture_output=True, text=True, timeout=60)
        assert requeue.returncode == 0, requeue.stderr
        out = finish(proc, log, timeout=480)
    finally:
        cancel(name)
    summary = json.loads((metrics.parent / "summary.json").read_text())
    assert summary["status"] == "complete", summary
    assert summary["resumed_from_windows"], f"the job was not resumed:\n{out[-3000:]}"
    assert 0 < summary["resumed_from_windows"][0] < windows
    assert windows_of(metrics) == [every * (w + 1) for w in range(windows)]


@pytest.mark.slow
def test_a_preempted_job_is_requeued_by_submitit_and_resumes(tmp_path):
    """A job in partition ``urgent`` that needs every CPU preempts the training job in ``debug``:
    SLURM sends submitit's USR2, submitit requeues the job itself, and the run resumes.
    Needs the ``urgent`` partition of scripts/slurm-local.sh."""
    partitions = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=30).stdout
    if "urgent" not in partitions.split():
        pytest.skip("no partition urgent (scripts/slurm-local.sh has one)")
    experiment, log = "slurm_preempt", tmp_path / "launch.log"
    # long enough that the preemption lands before the job ends, also when SLURM is slow to act
    # (at 300 windows, on a loaded machine, the job once finished first)
    every, windows = 256, 900
    proc = launch(["env=cartpole", "bonus=none", "seed=0", *TINY, f"agent.total_timesteps={every * windows}",
                   f"eval_frequency={every}", f"results_dir={tmp_path}", f"experiment={experiment}"], log)
    urgent = None
    try:
        deadline = time.time() + 400
        metrics = None
        while time.time() < deadline and proc.poll() is None:
            found = list((tmp_path / experiment).glob("cartpole/none/*/seed_0/metrics.csv"))
            if found and len(found[0].read_text().splitlines()) > 2:
                metrics = found[0]
                break
            time.sleep(0.2)
        assert metrics is not None, f"the job wrote no metrics in time:\n{log.read_text()[-4000:]}"
        cpus = subprocess.run(["sinfo", "-h", "-p", "debug", "-o", "%c"], capture_output=True, text=True,
                              timeout=30).stdout.split()[0]
        urgent = subprocess.run(["sbatch", "--parsable", "-p", "urgent", "-c", cpus, "-o", os.devnull,
                                 "--job-name", f"{experiment}-urgent", "--wrap", "sleep 1"],
                                capture_output=True, text=True, timeout=60)
        assert urgent.returncode == 0, urgent.stderr
        out = finish(proc, log, timeout=480)
    finally:
        cancel(f"rfig-{experiment}")
        cancel(f"{experiment}-urgent")
    logs = (tmp_path / experiment).glob(".hydra/multirun_*/.submitit/*/*_log.*")
    submitit_logs = "".join(p.read_text() for p in logs)
    assert "this job is preempted" in submitit_logs and "Requeued job" in submitit_logs, out[-3000:]
    summary = json.loads((metrics.parent / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["resumed_from_windows"], summary
    assert windows_of(metrics) == [every * (w + 1) for w in range(windows)]


def test_a_request_no_node_can_meet_is_refused_before_submitting(tmp_path):
    """The preset's cpus_per_task=4 on a 2-CPU node waited for ever (PartitionConfig); now
    preflight refuses it in one line naming the key, and nothing reaches the queue."""
    env = dict(os.environ, WANDB_MODE="disabled")
    out = subprocess.run([sys.executable, "launch.py", "-m", "hydra/launcher=slurm", "hydra.launcher.partition=debug",
                          "hydra.launcher.cpus_per_task=64", "env=cartpole", "bonus=none", *TINY,
                          f"results_dir={tmp_path}", "experiment=slurm_refused"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "error: hydra.launcher.cpus_per_task=64 is more than any node of partition debug has" in out.stderr
    assert jobs_named("rfig-slurm_refused") == []


def test_the_watcher_cancels_a_job_that_can_never_start():
    """A job asking more CPUs than any node pends with PartitionConfig for ever; the sweeper's
    watcher sees the reason, cancels it and says why."""
    from rfig_exp.launch import slurm

    name = "rfig-pending-forever"
    cancel(name)
    watcher = slurm.PendingWatcher(name)
    sub = subprocess.run(["sbatch", "-p", "debug", "-J", name, "--cpus-per-task=64", "--wrap", "true"],
                         capture_output=True, text=True, timeout=60)
    try:
        if sub.returncode != 0:  # a cluster that refuses it at submission already says why
            assert "configuration" in sub.stderr.lower(), sub.stderr
            return
        deadline = time.time() + 60
        while "PartitionConfig" not in watcher.pending().values() and time.time() < deadline:
            time.sleep(1)
        watcher.check()
        assert watcher.reason and watcher.reason.startswith("pending with reason PartitionConfig"), watcher.pending()
        deadline = time.time() + 30
        while jobs_named(name) and time.time() < deadline:
            time.sleep(1)
        assert jobs_named(name) == []
    finally:
        cancel(name)


def test_a_stalled_job_is_restarted_in_its_task_and_completes(tmp_path):
    """A stall under SLURM: the task's supervisor kills the job's wedged process and starts a new
    one in the same task, which resumes from its checkpoint and completes; the sweep line counts the
    retry. The tests' fault seam (RFIG_FAULT, tests/fault_inject/sitecustomize.py) wedges the job's
    main thread once after window 3; sbatch passes the environment on."""
    from conftest import fault_env

    experiment, log = "slurm_stall", tmp_path / "launch.log"
    once = tmp_path / "stalled-once"
    env = fault_env(dict(os.environ, WANDB_MODE="disabled"), "window@3:stall", once)
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "launch.py", "-m", *SLURM, "env=cartpole", "bonus=none", *TINY,
                                 "agent.total_timesteps=640", "eval_frequency=64", "checkpoint.every_windows=2",
                                 "stall_timeout_s=2", f"results_dir={tmp_path}", f"experiment={experiment}"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        text = finish(proc, log, timeout=600)
    finally:
        cancel(f"rfig-{experiment}")
    assert once.exists(), "the stall must have fired"
    assert "1 completed (1 of them resumed)" in text and "1 stall retry" in text, text[-3000:]
    (run,) = run_dirs(tmp_path, experiment)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["resumed_from_windows"]
    assert windows_of(run / "metrics.csv") == [64 * w for w in range(1, 11)]

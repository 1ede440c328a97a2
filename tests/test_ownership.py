"""One owner per run folder (rfig_exp.results.ownership), with real concurrent processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rfig_exp.results import ownership

try:
    from test_launch import ROOT, TINY
except ImportError:  # tests/ imported as a package
    from tests.test_launch import ROOT, TINY


def test_a_live_owner_keeps_the_folder_and_releasing_frees_it(tmp_path):
    lock, owner = ownership.acquire(tmp_path / "seed_0", 60.0)
    assert lock is not None and owner is None
    again, holder = ownership.acquire(tmp_path / "seed_0", 60.0)
    assert again is None and holder["pid"] == os.getpid()
    lock.release()
    assert not (tmp_path / "seed_0" / ownership.LOCK).exists()
    third, _ = ownership.acquire(tmp_path / "seed_0", 60.0)
    assert third is not None


def test_a_dead_owner_is_taken_over_and_the_lock_says_from_whom(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    run = tmp_path / "seed_0"
    run.mkdir()
    dead = {**ownership.me(), "pid": gone.pid, "start_ticks": 1}
    (run / ownership.LOCK).write_text(json.dumps(dead))
    lock, owner = ownership.acquire(run, 60.0)
    assert lock is not None and lock.taken_from == dead and f"pid {gone.pid}" in ownership.describe(lock.taken_from)
    assert json.loads((run / ownership.LOCK).read_text())["pid"] == os.getpid()


def test_an_owner_on_another_host_is_live_while_its_heartbeat_is_fresh(tmp_path):
    run = tmp_path / "seed_0"
    run.mkdir()
    lock_file = run / ownership.LOCK
    lock_file.write_text(json.dumps({"host": "another-node", "pid": 1, "started": "earlier"}))
    lock, owner = ownership.acquire(run, 60.0)
    assert lock is None and owner["host"] == "another-node"
    old = time.time() - 120
    os.utime(lock_file, (old, old))  # no heartbeat for two minutes: that owner is gone
    lock, owner = ownership.acquire(run, 60.0)
    assert lock is not None


def _command(tmp_path, windows):
    """A launch.py command of ``windows`` tiny CartPole windows, and its environment."""
    args = [sys.executable, "launch.py", "env=cartpole", "bonus=none", *TINY, f"agent.total_timesteps={128 * windows}",
            "eval_frequency=128", f"results_dir={tmp_path}", "stall_timeout_s=600"]
    return args, dict(os.environ, WANDB_MODE="disabled")


def _launch_first(tmp_path, args, env):
    first = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 300
    while not list(tmp_path.glob(f"default/cartpole/none/*/seed_0/{ownership.LOCK}")):
        assert first.poll() is None and time.time() < deadline, first.stdout.read()[-3000:]
        time.sleep(0.2)
    return first


def _check_trained_once(tmp_path, windows):
    (run,) = tmp_path.glob("default/cartpole/none/*/seed_0")
    rows = [line.split(",")[0] for line in (run / "metrics.csv").read_text().splitlines()[1:]]
    assert rows == [str(128 * (w + 1)) for w in range(windows)]
    assert json.loads((run / "summary.json").read_text())["status"] == "complete"
    assert not (run / ownership.LOCK).exists()


def _parent_of(pid: int) -> int:
    """The parent process of a live ``pid`` (Linux's /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))


@pytest.mark.extended
def test_the_same_command_twice_trains_each_seed_once(tmp_path):
    """Two launches of one command must not both train seed 0 to the end (they once did):
    The second waits owner_grace_s for the first to let go, then leaves the seed to it. The seed is
    owned by the process that trains it: the first command's job, a child of its launch process."""
    windows = 400
    args, env = _command(tmp_path, windows)
    first = _launch_first(tmp_path, args, env)
    (lock,) = tmp_path.glob(f"default/cartpole/none/*/seed_0/{ownership.LOCK}")
    owner = json.loads(lock.read_text())["pid"]
    assert _parent_of(owner) == first.pid
    second = subprocess.run([*args, "owner_grace_s=0"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=600)
    out_first, _ = first.communicate(timeout=600)
    log2 = second.stdout + second.stderr
    assert first.returncode == 0, out_first[-3000:]
    if "already complete" not in log2:  # the first can finish before the second looks, on a fast machine
        assert f"seed 0 is being trained by pid {owner}" in log2, log2[-3000:]
    # the second says done only if the seed was complete when it ended (the first may finish meanwhile)
    assert second.returncode in (0, 75), log2[-3000:]
    if second.returncode == 75:
        assert "1 run(s) left to another process that trains them" in log2, log2[-3000:]
    assert f"window 1/{windows}" not in log2  # the second never trained
    _check_trained_once(tmp_path, windows)


@pytest.mark.extended
def test_a_relaunch_waits_for_the_owner_to_let_go_and_does_not_train_again(tmp_path):
    """A requeue that starts while the old process is still at work: it waits, sees the seed
    complete, and trains nothing."""
    windows = 100
    args, env = _command(tmp_path, windows)
    first = _launch_first(tmp_path, args, env)
    second = subprocess.run([*args, "owner_grace_s=300"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=600)
    first.communicate(timeout=600)
    log2 = second.stdout + second.stderr
    assert second.returncode == 0, log2[-3000:]
    assert "while this job waited" in log2 or "already complete" in log2, log2[-3000:]
    assert f"window 1/{windows}" not in log2
    _check_trained_once(tmp_path, windows)


@pytest.mark.extended
@pytest.mark.timeout(900)  # five tiny launches, each importing JAX and compiling
def test_runs_left_to_another_process_are_not_reported_done(tmp_path):
    """A seed another live process owns (here: this test's own process, which never trains it) is
    left to it, and the launch that left it says so and exits 75, a single run and a sweep alike:
    exit 0 and "skipped (already complete)" had let a campaign lane mark such a stage complete.
    Once the owner lets go, the same command trains the seed and exits 0."""
    probe = tmp_path / "probe"   # the same command elsewhere names the run's folder (its variant's)
    probe_args, env = _command(probe, 4)
    subprocess.run(probe_args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=True)
    (probe_run,) = probe.glob("default/cartpole/none/*/seed_0")
    results = tmp_path / "results"
    args, _ = _command(results, 4)
    run = results / probe_run.relative_to(probe)
    run.mkdir(parents=True)
    lock, _ = ownership.acquire(run, 600.0)
    assert lock is not None
    try:
        single = subprocess.run([*args, "owner_grace_s=0"], cwd=ROOT, env=env, capture_output=True, text=True,
                                timeout=600)
        sweep = subprocess.run([*args, "-m", "owner_grace_s=0"], cwd=ROOT, env=env, capture_output=True, text=True,
                               timeout=600)
    finally:
        lock.release()
    for done in (single, sweep):
        log = done.stdout + done.stderr
        assert done.returncode == 75, log[-3000:]
        assert f"seed 0 is being trained by pid {os.getpid()}" in log, log[-3000:]
        assert "1 run(s) left to another process that trains them, not complete when this job ended" in log
        assert "window 1/4" not in log
    sweep_log = sweep.stdout + sweep.stderr
    assert "0 skipped (already complete), 0 failed, 1 left runs to another process (not complete)" in sweep_log
    again = subprocess.run([*args, "owner_grace_s=0"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    _check_trained_once(results, 4)

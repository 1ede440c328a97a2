"""One owner per run folder (rfig_exp.ownership), with real concurrent processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from rfig_exp import ownership

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


def test_a_dead_owner_is_taken_over_with_a_warning(tmp_path, caplog):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    run = tmp_path / "seed_0"
    run.mkdir()
    dead = {**ownership.me(), "pid": gone.pid, "start_ticks": 1}
    (run / ownership.LOCK).write_text(json.dumps(dead))
    lock, owner = ownership.acquire(run, 60.0, "t")
    assert lock is not None and "took over" in caplog.text and f"pid {gone.pid}" in caplog.text
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


def test_the_same_command_twice_trains_each_seed_once(tmp_path):
    """The defect of issue 16: two launches of one command both trained seed 0 to the end."""
    args = [sys.executable, "launch.py", "env=cartpole", "bonus=none", *TINY, "agent.total_timesteps=12800",
            "eval_frequency=128", f"results_dir={tmp_path}", "stall_timeout_s=600"]
    env = dict(os.environ, WANDB_MODE="disabled")
    first = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 300
    while not list(tmp_path.glob(f"default/cartpole/none/*/seed_0/{ownership.LOCK}")):
        assert first.poll() is None and time.time() < deadline, first.stdout.read()[-3000:]
        time.sleep(0.2)
    second = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out_first, _ = first.communicate(timeout=600)
    log2 = second.stdout + second.stderr
    assert second.returncode == 0, log2[-3000:]
    assert first.returncode == 0, out_first[-3000:]
    assert f"seed 0 is being trained by pid {first.pid}" in log2 or "already complete" in log2, log2[-3000:]
    assert "window 1/100" not in log2  # the second never trained
    (run,) = tmp_path.glob("default/cartpole/none/*/seed_0")
    windows = [line.split(",")[0] for line in (run / "metrics.csv").read_text().splitlines()[1:]]
    assert windows == [str(128 * (w + 1)) for w in range(100)]
    assert json.loads((run / "summary.json").read_text())["status"] == "complete"
    assert not (run / ownership.LOCK).exists()

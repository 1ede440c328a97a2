"""What ``launch.py`` says about a sweep's jobs, and what a relaunch costs and says.

- one line counts the runs, the compiled jobs they train as, what is vmapped and the validation's time;
- a relaunch of a complete sweep skips every job from the results tree: no JAX import, no compile;
- the run folders a job takes over from processes that are gone are one warning for the job;
- a job's process killed says what its checkpoints on disk leave (a window, or none yet).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FAULT_SEAM, TINY

ROOT = Path(__file__).resolve().parents[1]
ONE_JOB = ["env=cartpole", "bonus=none", *TINY, "seed=range(2)"]


def _launch(*args: str, env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ if env is None else env, WANDB_MODE="disabled")
    return subprocess.run([sys.executable, "launch.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_a_sweep_says_its_runs_and_compiled_jobs_in_one_line(tmp_path, capsys):
    """Three job counts once (Hydra's 8 one-seed jobs, 4 grouped jobs validated, 8 runs as 1 compiled
    job): now one line, printed once every job is validated."""
    from rfig_exp.launch.preflight import preflight

    plan = preflight(["-m", "env=cartpole", "bonus=rnd", "bonus.beta=0.25,1", "agent.lr=1e-4,3e-4", "seed=range(2)",
                      f"results_dir={tmp_path}"])
    out = capsys.readouterr().out.strip().splitlines()
    assert plan is not None and plan.runs == 8 and len(plan.jobs) == 1
    assert len(out) == 1, out
    assert re.fullmatch(r"\[sweep\] 8 runs as 1 compiled job of 8 runs, vmapped over seed, agent.lr, bonus.beta; "
                        r"validated in \d+\.\ds", out[0]), out[0]
    preflight(["-m", "env=cartpole", "bonus=none,rnd", "seed=range(4)", "seeds_per_job=2", f"results_dir={tmp_path}"])
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith(
        "[sweep] 8 runs as 4 compiled jobs of 2 runs, vmapped over seed; split by bonus; a cell's seeds in jobs of "
        "up to 2 (seeds_per_job); validated in "), out


def _stale_lock(run_dir: Path) -> None:
    """An owner.json as a killed process leaves it: this host, a pid that has ended."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "owner.json").write_text(f'{{"host": "{socket.gethostname()}", "pid": {gone.pid}, '
                                        '"start_ticks": 1, "started": "2026-01-01T00:00:00"}')


@pytest.mark.timeout(900)
def test_a_relaunched_complete_sweep_skips_without_jax_and_takeovers_are_one_line(tmp_path):
    from rfig_exp.launch.preflight import preflight
    from rfig_exp.results.seed_plan import seed_run_dir

    sweep = ["-m", *ONE_JOB, f"results_dir={tmp_path / 'res'}"]
    spec = preflight(sweep).jobs[0].first
    for seed in spec.seeds:
        _stale_lock(seed_run_dir(spec, seed))
    first = _launch(*sweep)
    log = first.stdout + first.stderr
    assert first.returncode == 0, log[-3000:]
    assert "[sweep] 2 runs as 1 compiled job of 2 runs, vmapped over seed; validated in " in first.stdout
    took = [line for line in log.splitlines() if "took over" in line]
    assert len(took) == 1 and "took over 2 run folders from processes that are gone" in took[0], took
    label = re.search(r"\[(cartpole/none[^\]]* seeds 0-1)\] initialising", log).group(1)

    # JAX made unimportable: the relaunch must not need it (before, preflight made the env and each
    # job's process imported the trainer only to find every run complete)
    poison = tmp_path / "poison" / "jax"
    poison.mkdir(parents=True)
    (poison / "__init__.py").write_text("raise ImportError('jax was imported')\n")
    t0 = time.perf_counter()
    again = _launch(*sweep, env=dict(os.environ, PYTHONPATH=str(poison.parent)))
    seconds = time.perf_counter() - t0
    log = again.stdout + again.stderr
    assert again.returncode == 0, log[-3000:]
    assert f"[{label}] already complete in " in log and "1 skipped (already complete)" in log
    assert "took over" not in log and "jax was imported" not in log
    assert seconds < 60, f"a relaunch that skips everything took {seconds:.0f}s"


def _fault(fault: str) -> dict:
    env = dict(os.environ, RFIG_FAULT=fault)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAULT_SEAM), os.environ.get("PYTHONPATH")]))
    return env


@pytest.mark.timeout(900)
@pytest.mark.parametrize("fault, checkpoints, says", [
    ("window@1:kill", [], r"no checkpoint was written yet, so a relaunch starts it afresh"),
    ("window@3:kill", ["checkpoint.every_windows=1"],
     r"its last checkpoint is after window [12] of 4: a relaunch resumes from it"),
], ids=["none_yet", "after_a_window"])
def test_a_killed_job_says_what_its_checkpoints_on_disk_leave(tmp_path, fault, checkpoints, says):
    killed = _launch("env=cartpole", "bonus=none", *TINY, "agent.total_timesteps=512", *checkpoints,
                     f"results_dir={tmp_path}", env=_fault(fault))
    err = killed.stderr
    assert killed.returncode == -9, (killed.stdout + err)[-3000:]
    assert "killed by signal 9 (SIGKILL)" in err and re.search(says, err), err[-2000:]
    assert "checkpoints are kept" not in err

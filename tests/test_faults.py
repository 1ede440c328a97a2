"""Faults injected into real tiny runs : nothing is lost, nothing false is complete.

Each test runs ``launch.py`` in a subprocess, injects one fault (a SIGKILL, a full disk, a damaged
file, a read-only or vanishing results_dir, a dead wandb, a stall), then checks the run is not
marked complete and that relaunching the same command ends with metrics identical to an
uninterrupted run. Faults that cannot be timed from outside (a SIGKILL inside a checkpoint write)
go through the tests' seam (``RFIG_FAULT``, tests/fault_inject/sitecustomize.py: named points of the
writers, wrapped from outside the package). Concurrency (two owners of one run) is tested in
tests/test_ownership.py. The fault table of docs/running.md counts these.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

try:
    from conftest import fault_env
    from test_launch import ROOT
except ImportError:  # tests/ imported as a package
    from tests.conftest import fault_env
    from tests.test_launch import ROOT

# 10 windows of 64 steps, a checkpoint every 2 (keep 2): seconds on 2 cores once compiled.
SMALL = ["env=cartpole", "bonus=none", "agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2",
         "agent.update_epochs=1", "agent.obs_norm_init_steps=8", "eval_frequency=64", "agent.total_timesteps=640",
         "checkpoint.every_windows=2", "wandb.mode=disabled"]
WINDOWS = 10


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One compilation cache for the module: every relaunch loads the window instead of compiling."""
    return tmp_path_factory.mktemp("jax_cache")


def launch(results: Path, cache: Path, *extra: str, fault: str = "", once: Path | None = None, timeout=240,
           prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = dict(os.environ, WANDB_MODE="disabled")
    env.pop("RFIG_FAULT", None)
    if fault:
        env = fault_env(env, fault, once)
    flags = [a for a in extra if a == "-m"]  # Hydra's flags go before the overrides
    extra = tuple(a for a in extra if a != "-m")
    return subprocess.run([*prefix, sys.executable, "launch.py", *flags, *SMALL, *extra, f"results_dir={results}",
                           f"compile_cache={cache}"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def run_dir(results: Path) -> Path:
    found = list(results.glob("default/cartpole/none/*/seed_0"))
    assert len(found) == 1, found
    return found[0]


def rows(run: Path) -> list[dict]:
    with open(run / "metrics.csv") as f:
        return [{k: v for k, v in r.items() if k != "wall_time_s"} for r in csv.DictReader(f)]


def complete(run: Path) -> bool:
    try:
        return json.loads((run / "summary.json").read_text())["status"] == "complete"
    except (OSError, ValueError):
        return False


@pytest.fixture(scope="module")
def reference(tmp_path_factory, cache):
    """The metrics of an uninterrupted run: what every faulted run must end with."""
    results = tmp_path_factory.mktemp("reference")
    out = launch(results, cache)
    assert out.returncode == 0, out.stderr[-3000:]
    got = rows(run_dir(results))
    assert [int(r["env_steps"]) for r in got] == [64 * w for w in range(1, WINDOWS + 1)]
    return got


def relaunch_matches(results: Path, cache: Path, reference: list[dict], *extra: str) -> str:
    """Relaunch the same command; it must complete with the uninterrupted run's metrics."""
    out = launch(results, cache, *extra)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    run = run_dir(results)
    assert complete(run) and rows(run) == reference, "a relaunch must end identical to an uninterrupted run"
    assert not (run / "checkpoint").exists()
    return out.stdout + out.stderr


def one_line_error(out: subprocess.CompletedProcess, *fragments: str) -> None:
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out.stderr[-3000:]
    for fragment in fragments:
        assert fragment in errors[0], errors[0]


# -- SIGKILL -------------------------------------------------------------------------------
def _slow_unless(default: set, *cases):
    """Parameters, all but ``default`` marked slow: the default suite keeps one case of each
    kind of fault, ``make test-all`` injects them all."""
    return [c if (c if isinstance(c, str) else c[0] + "/" + c[1].__name__) in default
            else pytest.param(*(c if isinstance(c, tuple) else (c,)), marks=pytest.mark.slow) for c in cases]


@pytest.mark.extended
@pytest.mark.parametrize("point", _slow_unless(
    {"checkpoint.npz@3", "summary@1"},
    "checkpoint.npz@1", "checkpoint.npz@3", "checkpoint.json@1", "checkpoint.json@4",  # inside a checkpoint write
    "summary@1",                                                                       # inside the summary write
    "metrics@1", "metrics@6", "window@5", "window@10",                                  # between writes
))
def test_sigkill_anywhere_never_looks_complete_and_the_relaunch_is_identical(tmp_path, cache, reference, point):
    out = launch(tmp_path, cache, fault=f"{point}:kill")
    assert out.returncode == -signal.SIGKILL, (out.stdout + out.stderr)[-3000:]
    run = run_dir(tmp_path)
    assert not complete(run), "a killed run must not look complete"
    relaunch_matches(tmp_path, cache, reference)


@pytest.mark.slow  # three kills from outside at random times, each with its relaunch
@pytest.mark.kept_apart  # killed at a time, not at a named point
def test_sigkill_from_outside_at_random_times(tmp_path, cache, reference):
    import random

    rng = random.Random(16)
    for attempt in range(3):
        results = tmp_path / str(attempt)
        proc = subprocess.Popen([sys.executable, "launch.py", *SMALL, f"results_dir={results}",
                                 f"compile_cache={cache}"], cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=dict(os.environ, WANDB_MODE="disabled"))
        time.sleep(rng.uniform(3.0, 8.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        runs = list(results.glob("default/cartpole/none/*/seed_0"))
        if runs and proc.returncode == -signal.SIGKILL:
            assert not complete(runs[0]) or rows(runs[0]) == reference
        relaunch_matches(results, cache, reference)


# -- a full disk -----------------------------------------------------------------------------
@pytest.mark.extended
@pytest.mark.parametrize("point", _slow_unless({"checkpoint.npz@2", "summary@1"},
                                               "metrics@3", "checkpoint.npz@2", "checkpoint.json@1", "summary@1"))
def test_a_full_disk_is_one_clear_error_and_a_relaunch_completes(tmp_path, cache, reference, point):
    once = tmp_path / "disk-full-once"
    out = launch(tmp_path / "r", cache, fault=f"{point}:enospc", once=once)
    assert once.exists(), "the fault must have fired"
    assert out.returncode == 1, (out.stdout + out.stderr)[-3000:]
    one_line_error(out, "No space left on device", "results_dir=")
    assert not complete(run_dir(tmp_path / "r"))
    relaunch_matches(tmp_path / "r", cache, reference)


# -- damaged files -----------------------------------------------------------------------------
def _partial(results: Path, cache: Path) -> Path:
    """A run killed inside its checkpoint write after window 8: checkpoints after windows 4 and 6
    on disk, at least 8 metrics rows."""
    out = launch(results, cache, fault="checkpoint.npz@4:kill")
    assert out.returncode == -signal.SIGKILL, out.stderr[-3000:]
    run = run_dir(results)
    assert sorted(p.name for p in (run / "checkpoint").glob("*.json")) == ["window_4.json", "window_6.json"]
    return run


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(0, len(data), 7):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


@pytest.mark.extended
@pytest.mark.parametrize("name,damage", _slow_unless(
    {"metrics.csv/_truncate"},
    ("checkpoint/window_6.npz", _truncate), ("checkpoint/window_6.npz", _garble),
    ("checkpoint/window_6.json", _truncate), ("checkpoint/window_6.json", _garble),
    ("metrics.csv", _truncate), ("config.yaml", _truncate), ("config.yaml", _garble),
))
def test_a_damaged_file_of_a_partial_run_is_survived(tmp_path, cache, reference, name, damage):
    run = _partial(tmp_path, cache)
    damage(run / name)
    log = relaunch_matches(tmp_path, cache, reference)
    assert any(said in log for said in ("unusable", "damaged", "cannot be resumed")), log[-3000:]


@pytest.mark.extended
@pytest.mark.parametrize("name,damage", _slow_unless(
    {"summary.json/_truncate", "metrics.csv/_truncate"},
    ("summary.json", _truncate), ("summary.json", _garble), ("metrics.csv", _truncate),
    ("config.yaml", _truncate), ("config.yaml", _garble),
))
def test_a_damaged_file_of_a_complete_run_is_never_taken_as_complete(tmp_path, cache, reference, name, damage):
    assert launch(tmp_path, cache).returncode == 0
    run = run_dir(tmp_path)
    damage(run / name)
    log = relaunch_matches(tmp_path, cache, reference)
    if name != "config.yaml":  # the results are whole: only the config file is rewritten
        assert "already complete" not in log, "a run with damaged results was skipped as complete"


# -- the results directory ----------------------------------------------------------------------
def _without_root_override() -> tuple[str, ...]:
    """As root, permission bits bind nobody: drop the capability that overrides them."""
    if os.geteuid() != 0:
        return ()
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: a read-only folder cannot be emulated")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--")


def test_a_read_only_results_dir_is_one_clear_error_and_nothing_is_written(tmp_path, cache):
    results = tmp_path / "ro"
    results.mkdir()
    results.chmod(0o555)
    try:
        out = launch(results, cache, prefix=_without_root_override(), timeout=120)
    finally:
        results.chmod(0o755)
    assert out.returncode == 2, (out.stdout + out.stderr)[-3000:]
    one_line_error(out, f"results_dir={results}", "not writable")
    assert not list(results.iterdir())


def _paused_at_window_3(results: Path, cache: Path, *extra: str, env_mode: str = "disabled") -> subprocess.Popen:
    """A run that pauses for a few seconds once window 3's rows are written (``window@3:pause``):
    the moment to break something from outside, between two windows."""
    # Without the WANDB_* of this pytest process: an in-process wandb test earlier in the suite
    # leaves its service's address there, and the run would use that service, not its own.
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env = fault_env(dict(env, WANDB_MODE=env_mode), "window@3:pause")
    proc = subprocess.Popen([sys.executable, "launch.py", *SMALL, *extra, f"results_dir={results}",
                             f"compile_cache={cache}"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    deadline = time.time() + 180
    while time.time() < deadline:
        found = list(results.glob("default/cartpole/none/*/seed_0/metrics.csv"))
        if found and len(found[0].read_text().splitlines()) >= 4:
            return proc
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the run wrote no 3 windows within 180 s")


@pytest.mark.extended
@pytest.mark.kept_apart  # the folder must go within the run's pause of PAUSE_S seconds
def test_a_results_dir_that_vanishes_mid_run_is_an_error_not_a_complete_run(tmp_path, cache, reference):
    results = tmp_path / "vanishing"
    proc = _paused_at_window_3(results, cache)
    shutil.rmtree(results)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 1, err[-3000:]
    assert "vanished" in err and "Traceback" not in err, err[-3000:]
    one_line_error(subprocess.CompletedProcess([], 1, "", err), "results_dir=")
    for summary in results.rglob("summary.json"):
        assert json.loads(summary.read_text())["status"] != "complete", "a run without its metrics is complete"
    relaunch_matches(results, cache, reference)


# -- wandb -------------------------------------------------------------------------------------
def _descendants(pid: int) -> list[int]:
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [c for c, p in parents.items() if p in frontier]
        found += children
        frontier = children
    return found


@pytest.mark.kept_apart  # wandb must be killed within the run's pause of PAUSE_S seconds
def test_wandb_dying_mid_run_leaves_training_and_the_csv_whole(tmp_path, cache, reference):
    pytest.importorskip("wandb")
    proc = _paused_at_window_3(tmp_path, cache, "wandb.mode=offline", env_mode="offline")
    killed, deadline = [], time.time() + 2.0
    while not killed and time.time() < deadline:  # inside the run's pause after window 3
        for pid in _descendants(proc.pid):
            try:
                if b"wandb" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            except (OSError, ProcessLookupError):
                pass
        time.sleep(0.05)
    assert killed, "no wandb process found to kill"
    out, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-3000:]
    assert "wandb stopped working" in out + err and "Traceback" not in out + err, (out + err)[-3000:]
    run = run_dir(tmp_path)
    assert complete(run) and rows(run) == reference, "the CSV is the truth whatever wandb did"


# -- a stalled job -----------------------------------------------------------------------------
# window@3:stall blocks the job process's main thread after window 3 as an XLA wedge does;
# stall_timeout_s=2 lets its supervisor kill it within seconds. RFIG_FAULT_ONCE: the retry runs clean.
STALL = ["stall_timeout_s=2"]
# kept_apart: a window slowed down by a test beside it would be a second stall.


@pytest.mark.extended
@pytest.mark.kept_apart
def test_a_stalled_sweep_job_is_retried_from_its_checkpoint_and_completes(tmp_path, cache, reference):
    out = launch(tmp_path, cache, "-m", *STALL, fault="window@3:stall", once=tmp_path / "stalled-once")
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-3000:]
    assert (tmp_path / "stalled-once").exists() and "the process looks wedged" in log
    assert "1 completed (1 of them resumed)" in log and "0 failed, 1 stall retry (stall_retries=2)" in log, log[-2000:]
    run = run_dir(tmp_path)
    assert complete(run) and rows(run) == reference


@pytest.mark.slow  # the retry itself is in the default suite
@pytest.mark.kept_apart
def test_a_job_out_of_stall_retries_is_failed_and_the_sweep_goes_on(tmp_path, cache, reference):
    # two jobs; the first stalls and has no retry: it fails, the second still runs
    out = launch(tmp_path, cache, "-m", "agent.lr=3e-4,1e-3", "members_per_job=1", *STALL, "stall_retries=0",
                 fault="window@3:stall",
                 once=tmp_path / "stalled-once")
    log = out.stdout + out.stderr
    assert out.returncode == 1, log[-3000:]
    assert "1 completed" in log and "1 failed, 0 stall retries (stall_retries=0)" in log, log[-2000:]
    assert "stalled (exit 75) 1 time(s), stall_retries=0 used up" in log
    stalled, other = (next(tmp_path.glob(f"default/cartpole/none/{v}/seed_0"))
                      for v in ("agent.num_envs=*", "agent.lr=0.001,*"))
    assert not complete(stalled) and complete(other)
    again = launch(tmp_path, cache, "-m", "agent.lr=3e-4,1e-3", "members_per_job=1", *STALL, "stall_retries=0")
    assert again.returncode == 0 and "1 completed (1 of them resumed), 1 skipped" in again.stdout + again.stderr
    assert complete(stalled) and rows(stalled) == reference


@pytest.mark.slow  # the in-process retry is in the default suite; tests/test_slurm.py retries under SLURM
@pytest.mark.kept_apart
def test_a_stalled_submitit_task_restarts_its_job_and_completes(tmp_path, cache, reference):
    out = launch(tmp_path, cache, "-m", "hydra/launcher=local", *STALL, fault="window@3:stall",
                 once=tmp_path / "stalled-once")
    log = out.stdout + out.stderr
    assert out.returncode == 0, log[-3000:]
    assert "1 completed (1 of them resumed)" in log and "1 stall retry" in log, log[-2000:]
    task_logs = "".join(p.read_text() for p in tmp_path.rglob(".submitit/*/*_log.*"))
    assert "stall retry 1 of 2 (stall_retries): a new process resumes it" in task_logs, task_logs[-2000:]
    run = run_dir(tmp_path)
    assert complete(run) and rows(run) == reference

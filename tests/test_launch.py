"""launch.py as a user runs it: in a subprocess, through real Hydra composition."""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import find_run

ROOT = Path(__file__).resolve().parents[1]
TINY = ["agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2", "agent.update_epochs=1",
        "agent.total_timesteps=256", "eval_frequency=128", "agent.obs_norm_init_steps=8", "wandb.mode=disabled"]


def launch(*args, timeout=300):
    env = dict(os.environ, WANDB_MODE="disabled")
    return subprocess.run([sys.executable, "launch.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def rows(run: Path) -> list[dict]:
    with open(run / "metrics.csv") as f:
        return list(csv.DictReader(f))


def test_single_run_writes_the_results_contract_and_skips_when_complete(tmp_path):
    args = ["env=cartpole", "bonus=rfig", "bonus.num_features=64", *TINY, f"results_dir={tmp_path}"]
    out = launch(*args)
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert "window 1/2" in log and "steps/s" in log and "lengthscale" in log
    run = find_run(tmp_path, "cartpole", "rfig")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["env_steps"] == 256
    assert summary["variant"] == run.parent.name and summary["variant_overrides"]["bonus.num_features"] == 64
    assert "bonus.num_features=64" in summary["overrides"] and summary["host"] and "git_dirty" in summary
    assert yaml.safe_load((run.parent / "variant.yaml").read_text()) == summary["variant_overrides"]
    assert "bonus:\n  name: rfig" in (run / "config.yaml").read_text()
    assert len((run / "metrics.csv").read_text().strip().splitlines()) == 3  # header + 2 windows
    # files are as readable as the umask allows (mkstemp alone would make them 0600)
    for name in ("config.yaml", "summary.json", "metrics.csv"):
        assert stat.S_IMODE((run / name).stat().st_mode) == 0o666 & ~_umask(), name
    assert not (run / "checkpoint").exists(), "a complete run keeps no checkpoint"
    again = launch(*args)
    assert again.returncode == 0 and "already complete" in again.stdout + again.stderr


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.extended
def test_a_hyperparameter_sweep_keeps_every_value(tmp_path):
    """A sweep over agent.lr runs both jobs (it once ran one and skipped the other); one job per
    value (members_per_job=1: not stacked, see test_a_stacked_sweep_...)."""
    out = launch("-m", "env=cartpole", "bonus=none", "agent.lr=1e-4,1e-3", *TINY, f"results_dir={tmp_path}",
                 "experiment=lr", "members_per_job=1")
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert "2 completed" in log and "0 skipped" in log
    # the swept key leads each job's console prefix, whole however many other overrides follow
    assert "[cartpole/none/lr=0.0001,agent.num_envs=4," in log and "[cartpole/none/lr=0.001,agent.num_envs=4," in log
    runs = {}
    for lr in ("0.0001", "0.001"):
        run = find_run(tmp_path, "cartpole", "none", experiment="lr", variant=f"agent.lr={lr},*")
        assert yaml.safe_load((run / "config.yaml").read_text())["agent"]["lr"] == float(lr)
        runs[lr] = rows(run)
    assert runs["0.0001"] != runs["0.001"]
    manifest = [json.loads(line) for line in (tmp_path / "lr" / "manifest.jsonl").read_text().splitlines()]
    assert sorted(m["variant"].split(",")[0] for m in manifest) == ["agent.lr=0.0001", "agent.lr=0.001"]
    report = tmp_path / "report"
    out = subprocess.run([sys.executable, "-m", "analysis", "--results", str(tmp_path), "--experiment", "lr",
                          "--out", str(report), "--reps", "200"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode in (0, 4), out.stderr[-3000:]   # 4: the report lists problems (2 seeds, no episodes)
    index = (report / "index.md").read_text()
    assert "agent.lr=0.0001" in index and "agent.lr=0.001" in index


@pytest.mark.extended
def test_a_changed_default_is_refused_not_overwritten(tmp_path):
    args = ["env=cartpole", "bonus=none", *TINY, f"results_dir={tmp_path}"]
    assert launch(*args).returncode == 0
    run = find_run(tmp_path, "cartpole", "none")
    saved = run / "config.yaml"
    config = yaml.safe_load(saved.read_text())
    config["agent"]["gamma"] = 0.9  # as if conf/agent/ppo.yaml had another default when it ran
    saved.write_text(yaml.safe_dump(config))
    before = (run / "summary.json").read_text()
    out = launch(*args)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "agent.gamma: 0.9 -> 0.99" in out.stderr and "overwrite=true" in out.stderr
    assert (run / "summary.json").read_text() == before
    assert launch(*args, "overwrite=true").returncode == 0
    assert yaml.safe_load(saved.read_text())["agent"]["gamma"] == 0.99


def test_a_setting_added_since_a_run_at_its_default_is_no_difference(tmp_path):
    from rfig_exp.results.contract import config_differences

    saved = "agent:\n  lr: 0.001\n  gamma: 0.99\n"
    new = "agent:\n  lr: 0.001\n  gamma: 0.99\n  time_limit: truncation\n  eval_episodes: 0\n"
    assert config_differences(saved, new, {"agent.lr": 0.001}) == []
    # the same key at a value other than its default is a difference (a variant the run never was)
    assert config_differences(saved, new, {"agent.lr": 0.001, "agent.eval_episodes": 0}) == [
        "agent.eval_episodes: '<absent>' -> 0"]
    # without the new config's overrides every absent key counts, and a removed one always does
    assert len(config_differences(saved, new)) == 2
    assert config_differences(new, saved, {}) == ["agent.eval_episodes: 0 -> '<absent>'",
                                                   "agent.time_limit: 'truncation' -> '<absent>'"]


@pytest.mark.parametrize("override,fragment", [
    ("bonus.rho=1.5", "bonus.rho=1.5 must be in (0, 1]"),
    ("bonus.reg=-1", "bonus.reg=-1.0 must be > 0"),
    ("agent.total_timesteps=32", "agent.total_timesteps=32 is smaller than one batch"),
    ("agent.lr=-0.1", "agent.lr=-0.1 must be > 0"),
    ("bonus.inverse=svd", "valid: exact, newton_schulz, woodbury"),
    ("eval_frequency=100", "eval_frequency=100 must be a multiple of the batch"),
    ("wandb.mode=ofline", "wandb.mode='ofline' is not known; valid: online, offline, disabled"),
    ("+agent.learning_rate=1e-4", "unknown config key: agent.learning_rate"),
    ("+agent.gama=0.9", "agent.gama (did you mean agent.gamma?)"),
    ("env=pong", "env=pong is not a known environment; valid: acrobot"),
    ("bonus=icm", "bonus=icm is not a known bonus; valid:"),
    ("sweep=smoke", "sweep=smoke is a sweep preset: add -m"),
    ("bonus=rfig,none", "sweeps over several values: add -m"),
])
def test_bad_input_is_one_line_with_exit_2_and_creates_nothing(tmp_path, override, fragment):
    out = launch("env=cartpole", *TINY, override, f"results_dir={tmp_path / 'r'}", timeout=120)
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    assert fragment in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not (tmp_path / "r").exists(), "nothing may be created for a rejected launch"


@pytest.mark.extended
def test_results_dir_that_is_a_file_and_a_float_budget(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("")
    out = launch("env=cartpole", *TINY, f"results_dir={a_file}", timeout=120)
    assert out.returncode == 2 and "is not a directory" in out.stderr and "Traceback" not in out.stderr
    ok = launch("env=cartpole", "bonus=none", *TINY, "agent.total_timesteps=3e2", f"results_dir={tmp_path / 'r'}")
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert "agent.total_timesteps=300 rounded up to 3 windows of 128 steps = 384 env steps" in ok.stdout + ok.stderr


def test_every_bad_job_of_a_sweep_is_reported_before_any_starts(tmp_path):
    out = launch("-m", "env=cartpole", "bonus=none,rfig", "agent.lr=-1,0.1", "bonus.beta=0.5", *TINY,
                 f"results_dir={tmp_path}", timeout=180)
    assert out.returncode == 2
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert sum("agent.lr=-1.0 must be > 0" in e for e in errors) == 2
    assert "2 of 4 jobs are invalid; nothing was started" in errors[-1]
    assert not list(tmp_path.rglob("seed_*"))


def test_help_lists_envs_bonuses_sweeps_and_examples():
    out = launch("--help", timeout=60)
    assert out.returncode == 0
    for fragment in ("minatar_breakout", "rfig", "smoke", "agent.total_timesteps", "python launch.py -m"):
        assert fragment in out.stdout


def _start(args):
    return subprocess.Popen([sys.executable, "launch.py", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, WANDB_MODE="disabled"))


def _wait_for_rows(metrics: Path, n: int, proc) -> None:
    deadline = time.time() + 240
    while time.time() < deadline:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= n + 1:
            return
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(0.2)
    pytest.fail(f"the run wrote fewer than {n} windows within 240 s")


LONG = ["env=cartpole", "bonus=none", "agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2",
        "agent.update_epochs=1", "agent.obs_norm_init_steps=8", "eval_frequency=64", "wandb.mode=disabled"]


@pytest.mark.slow  # tests/test_faults.py kills runs at named points in the default suite
def test_a_killed_run_never_looks_complete_and_resumes_to_identical_metrics(tmp_path):
    budget = "agent.total_timesteps=12800"  # 200 windows
    reference = launch(*LONG, budget, f"results_dir={tmp_path / 'ref'}")
    assert reference.returncode == 0, reference.stderr[-3000:]
    args = [*LONG, budget, "checkpoint.every_windows=2", f"results_dir={tmp_path / 'run'}"]
    proc = _start(args)
    try:
        run = tmp_path / "run" / "default" / "cartpole" / "none"
        while not list(run.glob("*/seed_0/metrics.csv")):
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            time.sleep(0.2)
        metrics = next(run.glob("*/seed_0/metrics.csv"))
        _wait_for_rows(metrics, 8, proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    if not (metrics.parent / "summary.json").exists():  # killed in time: a partial run
        assert (metrics.parent / "config.yaml").exists()
        assert list((metrics.parent / "checkpoint").glob("window_*.json"))
    resumed = launch(*args)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming from the checkpoint after window" in resumed.stdout + resumed.stderr
    summary = json.loads((metrics.parent / "summary.json").read_text())
    assert summary["resumed_from_windows"] and summary["status"] == "complete"
    drop = ("wall_time_s",)
    got = [{k: v for k, v in r.items() if k not in drop} for r in rows(metrics.parent)]
    want = [{k: v for k, v in r.items() if k not in drop}
            for r in rows(find_run(tmp_path / "ref", "cartpole", "none"))]
    assert [int(r["env_steps"]) for r in got] == list(range(64, 12801, 64)), "each window exactly once"
    assert got == want, "a resumed run must match an uninterrupted one"


@pytest.mark.extended
def test_sigterm_checkpoints_and_exits_143_then_resumes(tmp_path):
    args = [*LONG, "agent.total_timesteps=50000000", "checkpoint.every_windows=1000", f"results_dir={tmp_path}"]
    proc = _start(args)
    run = tmp_path / "default" / "cartpole" / "none"
    while not list(run.glob("*/seed_0/metrics.csv")):
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(0.2)
    metrics = next(run.glob("*/seed_0/metrics.csv"))
    _wait_for_rows(metrics, 3, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-3000:]
    assert "terminated (signal 15) after window" in err and "Traceback" not in err
    saved = sorted(int(p.stem.split("_")[1]) for p in (metrics.parent / "checkpoint").glob("window_*.json"))
    assert saved and saved[-1] == len(rows(metrics.parent)), "the checkpoint is no older than the last window"


@pytest.mark.extended
def test_ctrl_c_checkpoints_like_sigterm_exits_130_and_the_relaunch_resumes(tmp_path):
    args = [*LONG, "agent.total_timesteps=50000000", "checkpoint.every_windows=1000", f"results_dir={tmp_path}"]
    proc = _start(args)
    run = tmp_path / "default" / "cartpole" / "none"
    while not list(run.glob("*/seed_0/metrics.csv")):
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(0.2)
    metrics = next(run.glob("*/seed_0/metrics.csv"))
    _wait_for_rows(metrics, 2, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "Ctrl-C again quits at once" in err
    done = len(rows(metrics.parent))
    assert err.strip().splitlines()[-1] == (f"interrupted (Ctrl-C) after window {done} of 781250; its checkpoint is "
                                            f"saved: relaunch the same command to resume from window {done}")
    saved = sorted(int(p.stem.split("_")[1]) for p in (metrics.parent / "checkpoint").glob("window_*.json"))
    assert saved and saved[-1] == done, "the checkpoint is the last window's"
    log = tmp_path / "resumed.log"
    with open(log, "w") as out:  # the same command again: it resumes, then a SIGTERM stops it
        again = subprocess.Popen([sys.executable, "launch.py", *args], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                 text=True, env=dict(os.environ, WANDB_MODE="disabled"))
        deadline = time.time() + 240
        while len(rows(metrics.parent)) <= done and time.time() < deadline:
            assert again.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
        again.send_signal(signal.SIGTERM)
        again.wait(timeout=120)
    assert again.returncode == 143, log.read_text()[-3000:]
    assert f"resuming from the checkpoint after window {done} of 781250" in log.read_text()


@pytest.mark.extended
@pytest.mark.parametrize("every, says", [
    (1, "relaunch the same command to resume from window "),  # a checkpoint exists whenever Ctrl-C lands
    (1000, "relaunch the same command to start it again"),    # none yet: no promise of a resume
])
@pytest.mark.kept_apart  # two SIGINTs 0.2 s apart: a starved process could take them as one
def test_a_second_ctrl_c_quits_at_once_with_one_line(tmp_path, every, says):
    # windows of 2,048 updates (seconds each): both Ctrl-Cs land in the same window
    proc = _start([*LONG, "eval_frequency=131072", "agent.total_timesteps=50000000",
                   f"checkpoint.every_windows={every}", f"results_dir={tmp_path}"])
    run = tmp_path / "default" / "cartpole" / "none"
    while not list(run.glob("*/seed_0/metrics.csv")):
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        time.sleep(0.2)
    _wait_for_rows(next(run.glob("*/seed_0/metrics.csv")), 1, proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("interrupted at window ")
    assert says in err


@pytest.mark.extended
def test_a_failing_job_is_reported_and_the_sweep_goes_on(tmp_path):
    # lr = 1e30 drives the policy to NaN: that job fails (its run is "failed", never complete),
    # the other job still runs, and the sweep ends with a summary and exit code 1.
    out = launch("-m", "env=cartpole", "bonus=none", "agent.lr=1e30,3e-4", "agent.max_grad_norm=1e30", *TINY,
                 f"results_dir={tmp_path}", "members_per_job=1", timeout=300)
    log = out.stdout + out.stderr
    assert out.returncode == 1, log[-3000:]
    assert "job failed" in log and "diverged: non-finite policy_loss" in log and "launch.log" in log
    assert "1 completed" in log and "1 failed" in log
    bad = find_run(tmp_path, "cartpole", "none", variant="agent.lr=1e+30,*")
    good = find_run(tmp_path, "cartpole", "none", variant="agent.max_grad_norm=*")  # lr 3e-4 is the default
    assert json.loads((bad / "summary.json").read_text())["status"] == "failed"
    assert json.loads((good / "summary.json").read_text())["status"] == "complete"


@pytest.mark.slow  # five compilations, RFIG's at D = 1024: minutes on 2 cores
@pytest.mark.timeout(1500)
def test_a_smoke_sweep_over_all_five_bonuses_and_its_report(tmp_path):
    # The report scores a window only once every env has run CartPole's time limit (500 steps x 4
    # envs = 2000 env steps; analysis.align.censored_windows), so TINY's 256 steps would leave every
    # run without a final score: two windows of 1280 steps, the second one scored.
    tiny = [a for a in TINY if not a.startswith(("agent.total_timesteps=", "eval_frequency="))]
    out = launch("-m", "env=cartpole", "bonus=none,rfig,rnd,vime,hashexplo", *tiny, "agent.total_timesteps=2560",
                 "eval_frequency=1280", "num_seeds=2", f"results_dir={tmp_path}", "experiment=five", timeout=900)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    for bonus in ("none", "rfig", "rnd", "vime", "hashexplo"):
        for seed in (0, 1):
            run = find_run(tmp_path, "cartpole", bonus, seed=seed, experiment="five")
            assert json.loads((run / "summary.json").read_text())["status"] == "complete"
            assert (run / "visits.npy").exists()
    report = tmp_path / "report"
    out = subprocess.run([sys.executable, "-m", "analysis", "--results", str(tmp_path), "--experiment", "five",
                          "--out", str(report), "--reps", "200", "--allow-incomplete"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    index = (report / "index.md").read_text()
    for label in ("PPO", "RFIG", "RND", "VIME", "#Explo"):
        assert label in index
    assert "no_episodes" not in index and "no final score" not in index
    assert (report / "curves.png").exists() and (report / "coverage.png").exists()
    with open(report / "final_scores.csv", newline="") as f:
        scores = list(csv.DictReader(f))
    assert len(scores) == 10 and all(math.isfinite(float(r["final_score"])) for r in scores)


@pytest.mark.extended
def test_a_stalled_run_exits_75_and_never_looks_complete(tmp_path):
    # stall_timeout_s so small that the supervisor (polling once a second) judges the first window,
    # made seconds long, a stall: the real exit path (message, exit code, no summary) without
    # having to wedge XLA.
    done = launch(*LONG, "agent.total_timesteps=50000000", "eval_frequency=1048576", "stall_timeout_s=0.001",
                  f"results_dir={tmp_path}")
    assert done.returncode == 75, done.stderr[-3000:]
    err = done.stdout + done.stderr
    assert "the process looks wedged" in err and "relaunch the same command to take it up again" in err
    assert "no checkpoint was written yet, so a relaunch starts it afresh" in err  # none is, before window 1
    run = next((tmp_path / "default" / "cartpole" / "none").glob("*/seed_0"))
    assert (run / "config.yaml").exists() and not (run / "summary.json").exists()


@pytest.mark.extended
@pytest.mark.timeout(900)
def test_a_stacked_sweep_is_one_compiled_job_that_resumes_run_by_run(tmp_path):
    """The issue's command at a small scale: 2 values of agent.lr x 2 of bonus.beta x 2 seeds of a
    bonus run as one compiled job (8 members); killed after its 5th window, the same command resumes
    every member from its checkpoint; it writes exactly the run folders that one job per value
    writes, each run's metrics those of that job to float32 rounding (as a vmapped seed's)."""
    from conftest import assert_same_to_float32_rounding, fault_env

    sweep = ["-m", *LONG, "bonus=rnd", "bonus.hidden=[16]", "bonus.embedding_dim=8", "agent.lr=1e-4,1e-3",
             "bonus.beta=0.25,1", "seed=range(2)", "agent.total_timesteps=640", "checkpoint.every_windows=2"]
    separate = launch(*sweep, "members_per_job=1", f"results_dir={tmp_path / 'separate'}", timeout=600)
    assert separate.returncode == 0, separate.stderr[-3000:]
    assert "4 completed" in separate.stdout + separate.stderr
    env = fault_env(dict(os.environ, WANDB_MODE="disabled"), "window@5:kill", tmp_path / "once")
    killed = subprocess.run([sys.executable, "launch.py", *sweep, f"results_dir={tmp_path / 'stacked'}"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=600)
    # the job's process is killed; the sweep's own process reports it and fails
    assert killed.returncode == 1 and "killed by signal 9 (SIGKILL)" in killed.stdout + killed.stderr, \
        killed.stderr[-3000:]
    assert "[sweep] 8 runs as 1 compiled job of 8 runs, vmapped over seed, agent.lr, bonus.beta; validated in " \
        in killed.stdout
    resumed = launch(*sweep, f"results_dir={tmp_path / 'stacked'}", timeout=600)
    log = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, log[-3000:]
    assert "1 completed (1 of them resumed)" in log
    runs = {d: sorted(p.relative_to(tmp_path / d) for p in (tmp_path / d).glob("default/*/*/*/seed_*"))
            for d in ("separate", "stacked")}
    assert runs["stacked"] == runs["separate"] and len(runs["stacked"]) == 8
    summaries = {run: json.loads((tmp_path / "stacked" / run / "summary.json").read_text()) for run in runs["stacked"]}
    # Each member's checkpoint of window 4 is written in the background: the kill may come before
    # it lands, for some members or all. Members resume together from the window they share, and
    # members at different windows in turns, one per window.
    resumed_from = {run: s["resumed_from_windows"] for run, s in summaries.items()}
    assert all(r in ([2], [4]) for r in resumed_from.values()), resumed_from
    for window in {r[0] for r in resumed_from.values()}:
        assert f"resuming from the checkpoint after window {window} of 10" in log
    if len({r[0] for r in resumed_from.values()}) > 1:
        assert "its runs resume from different windows" in log
    for run, summary in summaries.items():
        together = sum(r == resumed_from[run] for r in resumed_from.values())
        assert summary["status"] == "complete"
        assert summary["num_seeds_in_process"] == together and summary["variant"] == run.parent.name
        drop = ("wall_time_s",)
        got, want = ([{k: v for k, v in r.items() if k not in drop} for r in rows(tmp_path / d / run)]
                     for d in ("stacked", "separate"))
        assert [int(r["env_steps"]) for r in got] == list(range(64, 641, 64)), "each window exactly once"
        assert_same_to_float32_rounding(got, want)

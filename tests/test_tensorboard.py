"""Browsing a sweep offline: each run's TensorBoard events, read back with TensorBoard's own loaders,
and the mirrors of a run killed mid-way (a real SIGKILL) and resumed, where every window must be
in the event files and in the offline wandb run exactly once (wandb's history read back with
wandb's own reader, ``wandb leet inspect``)."""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, TINY, compose_config, fault_env

from rfig_exp.run.experiment import run_experiment
from rfig_exp.run.tracking import (
    EVENTS,
    EventFile,
    WandbRun,
    WandbRuns,
    events_logged_step,
    run_labels,
    wandb_logged_step,
)

EXPERIMENT = "tb"


def metrics_rows(run: Path) -> list[dict]:
    with open(run / "metrics.csv") as f:
        return list(csv.DictReader(f))


def raw_events(run: Path) -> list:
    """Every event of the run folder's event files, in the order TensorBoard reads them (files by
    name), without TensorBoard's purging of repeated steps: what is on disk, duplicates included."""
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    return [e for path in sorted(run.glob(EVENTS + "*")) for e in LegacyEventFileLoader(str(path)).Load()
            if e.HasField("summary")]


def assert_events_are_the_rows(run: Path, compare: bool = True) -> None:
    """Each metrics.csv row once, at its env step, each of its (non-empty) columns a scalar;
    ``compare``: and its values (but wall time, which a re-trained window changes)."""
    rows, events = metrics_rows(run), raw_events(run)
    assert [e.step for e in events] == [int(r["env_steps"]) for r in rows], run
    for event, row in zip(events, rows):
        values = {v.tag: v.simple_value for v in event.summary.value}
        assert set(values) == {k for k, v in row.items() if v}, (set(values) ^ set(row))
        if compare:
            for k, v in values.items():
                if k != "wall_time_s":
                    assert v == pytest.approx(float(row[k]), rel=1e-6, abs=1e-9), (event.step, k)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """One tiny job of two vmapped seeds, four windows, TensorBoard on by default."""
    root = tmp_path_factory.mktemp("results")
    summaries = run_experiment(compose_config(*TINY, "env=cartpole", "bonus=none", "num_seeds=2",
                                              "agent.total_timesteps=512", f"experiment={EXPERIMENT}",
                                              f"results_dir={root}"))
    assert [s.status for s in summaries] == ["complete", "complete"]
    return root / EXPERIMENT


def test_one_logdir_shows_the_sweep_each_seed_a_run_named_by_its_cell_with_every_row(sweep):
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

    (cell,) = (sweep / "cartpole" / "none").iterdir()
    mux = EventMultiplexer()
    mux.AddRunsFromDirectory(str(sweep))
    mux.Reload()
    names = {f"cartpole/none/{cell.name}/seed_{k}" for k in (0, 1)}
    assert set(mux.Runs()) == names
    for seed in (0, 1):
        run = cell / f"seed_{seed}"
        rows = metrics_rows(run)
        assert len(rows) == 4
        scalars = mux.Runs()[f"cartpole/none/{cell.name}/seed_{seed}"]["scalars"]
        assert {"episode_return", "policy_loss", "value_loss_ext", "entropy", "env_steps"} <= set(scalars)
        for tag in scalars:
            got = mux.Scalars(f"cartpole/none/{cell.name}/seed_{seed}", tag)
            want = [(int(r["env_steps"]), float(r[tag])) for r in rows if r[tag]]
            assert [(s.step, pytest.approx(s.value, rel=1e-6)) for s in got] == want, tag
        assert_events_are_the_rows(run)
        assert len(list(run.glob(EVENTS + "*"))) == 1


def test_tensorboard_false_writes_no_events(tmp_path):
    (summary,) = run_experiment(compose_config(*TINY, "env=cartpole", "bonus=none", "tensorboard=false",
                                               f"results_dir={tmp_path}"))
    assert summary.status == "complete"
    assert not list(tmp_path.rglob(EVENTS + "*"))


def test_a_torn_last_event_is_cut_and_its_window_replayed(tmp_path):
    rows = [{"env_steps": str(64 * w), "update": str(w), "episode_return": f"{w}.5", "intrinsic_reward": ""}
            for w in (1, 2, 3)]
    first = EventFile(tmp_path)
    for row in rows:
        first.append({k: float(v) for k, v in row.items() if v}, int(row["env_steps"]))
    first.close()
    data = first.path.read_bytes()
    first.path.write_bytes(data[:-5])  # killed inside the last record
    assert events_logged_step(tmp_path) == 128 and first.path.stat().st_size < len(data) - 5
    again = EventFile(tmp_path, kept=rows)  # a resumed run that kept all three rows
    assert again.replayed == 1
    again.append({"env_steps": 256.0, "episode_return": 4.5}, 256)
    again.append({"env_steps": 128.0}, 128)  # held already: not written twice
    again.close()
    events = raw_events(tmp_path)
    assert [e.step for e in events] == [64, 128, 192, 256]
    assert [v.simple_value for v in events[2].summary.value if v.tag == "episode_return"] == [3.5]


# -- a real kill --------------------------------------------------------------------------------
# 10 windows of 64 steps, 2 vmapped seeds, a checkpoint every 2, wandb offline: seconds once compiled.
KILLED = ["env=cartpole", "bonus=none", "num_seeds=2", "agent.num_envs=4", "agent.num_steps=16",
          "agent.num_minibatches=2", "agent.update_epochs=1", "agent.obs_norm_init_steps=8", "eval_frequency=64",
          "agent.total_timesteps=640", "checkpoint.every_windows=2", "wandb.mode=offline"]


def launch(results: Path, fault: str = "") -> subprocess.CompletedProcess:
    # WANDB_SERVICE: a wandb service this test process started (an earlier test's in-process run) would
    # be shared by both attempts and still hold the killed attempt's run id when the resumed one asks
    env = {k: v for k, v in os.environ.items() if k not in ("WANDB_MODE", "WANDB_SERVICE")}
    env.pop("RFIG_FAULT", None)
    if fault:
        env = fault_env(env, fault)
    return subprocess.run([sys.executable, "launch.py", *KILLED, f"results_dir={results}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=400)


def wandb_history(seed_dir: Path) -> list[dict]:
    """The history rows of every offline wandb run of a seed, attempts in order, as wandb's own
    transaction-log reader prints them: what ``wandb sync`` would upload."""
    out = []
    for run in sorted((seed_dir / "wandb").glob("offline-run-*")):
        got = subprocess.run([sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(run)],
                             capture_output=True, text=True, timeout=180)
        assert got.returncode == 0, got.stderr[-2000:]
        out += [json.loads(line)["history"] for line in got.stdout.splitlines()
                if line.startswith("{") and json.loads(line)["type"] == "history"]
    return out


@pytest.mark.extended
def test_a_run_killed_mid_way_and_resumed_has_every_window_once_in_tensorboard_and_wandb(tmp_path):
    killed = launch(tmp_path, fault="window@5:kill")  # after window 5's rows reached every sink
    assert killed.returncode == -signal.SIGKILL, (killed.stdout + killed.stderr)[-3000:]
    seeds = sorted(tmp_path.glob("default/cartpole/none/*/seed_*"))
    assert len(seeds) == 2
    for seed_dir in seeds:
        assert len(metrics_rows(seed_dir)) == 5
        assert [e.step for e in raw_events(seed_dir)] == [64 * w for w in range(1, 6)]
        assert len(list((seed_dir / "wandb").glob("offline-run-*"))) == 1
    # one seed's event file also lost its last window to the kill (between the CSV and the events)
    (events,) = seeds[1].glob(EVENTS + "*")
    cut = events.read_bytes()
    events.write_bytes(cut[:-3])

    resumed = launch(tmp_path)
    log = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, log[-3000:]
    assert "resuming from the checkpoint after window" in log, log[-3000:]
    for seed_dir in seeds:
        assert json.loads((seed_dir / "summary.json").read_text())["status"] == "complete"
        rows = metrics_rows(seed_dir)
        assert [int(r["env_steps"]) for r in rows] == [64 * w for w in range(1, 11)]
        assert_events_are_the_rows(seed_dir)
        assert len(list(seed_dir.glob(EVENTS + "*"))) == 2  # one file per attempt
        history = wandb_history(seed_dir)
        assert [h["step"]["num"] for h in history] == [int(r["env_steps"]) for r in rows], seed_dir
        for h, row in zip(history, rows):
            for key in ("episode_return", "policy_loss", "entropy"):
                if row[key]:
                    assert h["item"][key] == pytest.approx(float(row[key]), rel=1e-6), (h["step"], key)
        (run_id,) = {p.name.rsplit("-", 1)[1] for p in (seed_dir / "wandb").glob("offline-run-*")}
        # the killed attempt's log held nothing (wandb's service had written no block): removed, so
        # that `wandb sync` is handed only runs with something to upload
        assert all((p / f"run-{run_id}.wandb").stat().st_size > 7 for p in (seed_dir / "wandb").glob("offline-run-*"))
        # this module's reader of the transaction log (what a resume reads) agrees with wandb's
        assert wandb_logged_step(seed_dir / "wandb", run_id) == 640
    assert "window(s) the resumed runs lacked replayed from metrics.csv" in log, log[-3000:]


def end_process(runs: WandbRuns) -> None:
    """Finishes the runs and shuts wandb's service down, as the end of an attempt's process does:
    ``finish`` returns once the service has the run's last records, not once its writer has put
    them in the transaction log, so a log read in the same process may lag behind (seen under load)."""
    import wandb

    runs.finish_all(failed=False)
    wandb.teardown()


def test_a_resumed_wandb_run_logs_only_the_windows_its_earlier_attempts_lack(tmp_path, monkeypatch):
    """What is handed to ``wandb.log`` when the earlier attempt's transaction log holds some windows:
    the real wandb, offline; the earlier attempt here ended cleanly after three windows."""
    monkeypatch.delenv("WANDB_MODE", raising=False)
    labels = run_labels(EXPERIMENT, "cartpole", "none", "base")
    rows = [{"env_steps": str(64 * w), "update": str(w), "episode_return": f"{w}.5", "intrinsic_reward": ""}
            for w in range(1, 6)]
    first = WandbRuns("offline", "rfig-exp", None, {0: WandbRun(str(tmp_path), {}, None, labels, 0)})
    run_id = first.ids()[0]
    assert first.replay(0, rows[:3]) == 3
    end_process(first)
    assert wandb_logged_step(tmp_path / "wandb", run_id) == 192

    second = WandbRuns("offline", "rfig-exp", None, {0: WandbRun(str(tmp_path), {}, run_id, labels, 0)})
    logged = []
    (run,) = second._runs.values()
    real_log = run.log
    monkeypatch.setattr(run, "log", lambda data, step, commit: (logged.append((step, data)),
                                                                 real_log(data, step=step, commit=commit)))
    assert second.replay(0, rows[:4]) == 1  # the kept rows: only window 4 is new to wandb
    second.log(0, {"env_steps": 320, "episode_return": 5.5, "intrinsic_reward": math.nan}, step=320)
    second.log(0, {"env_steps": 192, "episode_return": 3.5}, step=192)  # held already
    end_process(second)
    assert logged == [(256, {"env_steps": 256, "update": 4, "episode_return": 4.5}),
                      (320, {"env_steps": 320, "episode_return": 5.5})]
    assert [h["step"]["num"] for h in wandb_history(tmp_path)] == [64, 128, 192, 256, 320]

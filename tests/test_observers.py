"""The run loop's observers and its signal handling, one at a time (the whole loop: test_checkpoint,
test_faults, test_launch)."""

from __future__ import annotations

import math
import os
import signal

import numpy as np

from rfig_exp.results import contract as results
from rfig_exp.run.observers import DivergenceGuard, MetricsFiles, ProgressLine, StopSignals, Window


def _window(index: int, rows: dict, train_time_s: float | None = None,
            attempt_train_time_s: float | None = None) -> Window:
    metrics = {k: np.array([row[k] for row in rows.values()]) for k in next(iter(rows.values()))}
    train = float(index) if train_time_s is None else train_time_s
    return Window(index=index, env_steps=index * 10, rows=rows, metrics=metrics, train_time_s=train,
                  attempt_train_time_s=train if attempt_train_time_s is None else attempt_train_time_s)


def _row(episode_return: float, loss: float = 0.5) -> dict:
    return {"env_steps": 10, "episode_return": episode_return, "policy_loss": loss, "entropy": 1.0}


def test_stop_signals_records_sigterm_and_restores_the_previous_handler():
    seen = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with StopSignals() as signals:
            assert signals.received is None
            os.kill(os.getpid(), signal.SIGTERM)
            assert signals.received == signal.SIGTERM and not seen  # the run's handler, not the old one
        os.kill(os.getpid(), signal.SIGTERM)
        assert seen == [signal.SIGTERM]  # the handler before the run is back
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_stop_signals_takes_sigusr2_only_under_submitit():
    handed = []
    previous = signal.signal(signal.SIGUSR2, lambda signum, frame: handed.append(signum))
    try:
        with StopSignals(submitit=True) as signals:
            os.kill(os.getpid(), signal.SIGUSR2)
            assert signals.received == signal.SIGUSR2 and not handed  # the job's supervisor hands it over
        with StopSignals() as signals:
            os.kill(os.getpid(), signal.SIGUSR2)  # not ours outside submitit: the old handler runs
            assert signals.received is None and handed == [signal.SIGUSR2]
    finally:
        signal.signal(signal.SIGUSR2, previous)


def test_a_resumed_runs_speed_and_eta_count_only_the_windows_this_process_trained(caplog):
    """Resumed after window 10 of 20 whose training took 100 s: window 12 arrives 4 s into this
    attempt. Speed is 2 windows x 1000 steps x 2 seeds / 4 s; the ETA, 8 windows at 2 s each (the
    cumulative 104 s over 2 windows gave half the speed and a 416 s ETA)."""
    progress = ProgressLine("t", num_windows=20, eval_frequency=1000, total_env_steps=20_000,
                            updates_per_window=1, done_windows=10, intrinsic=False)
    rows = {0: {"episode_return": 1.0}, 1: {"episode_return": 2.0}}
    with caplog.at_level("INFO", logger="rfig_exp"):
        progress.on_window(_window(12, rows, train_time_s=104.0, attempt_train_time_s=4.0))
    line = caplog.messages[-1]
    assert "| 1.0k steps/s |" in line and line.endswith("| eta 16s"), line


def test_divergence_guard_fails_a_seed_once_at_its_first_non_finite_loss(caplog):
    guard = DivergenceGuard("t")
    guard.on_window(_window(1, {0: _row(1.0), 1: _row(1.0, loss=math.nan)}))
    guard.on_window(_window(2, {0: _row(1.0), 1: _row(1.0, loss=math.inf)}))
    assert guard.failures == {1: "diverged: non-finite policy_loss in window 1"}
    assert caplog.text.count("will be marked failed") == 1


def test_metrics_files_write_every_seed_and_keep_the_last_finite_return(tmp_path):
    dirs = {s: tmp_path / f"seed_{s}" for s in (0, 1)}
    for d in dirs.values():
        d.mkdir()
    files = MetricsFiles(dirs, keep_rows=0)
    files.on_window(_window(1, {0: _row(2.0), 1: _row(3.0)}))
    files.on_window(_window(2, {0: _row(math.nan), 1: _row(4.0)}))
    files.close()
    assert files.final_returns == {0: 2.0, 1: 4.0}  # a window without a finished episode keeps the last
    assert [results.whole_rows(d) for d in dirs.values()] == [2, 2]

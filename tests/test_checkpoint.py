"""Per-seed checkpoints: atomic, verified, with a fallback for damaged files; wandb resume."""

import json

import numpy as np
import pytest
from conftest import find_run

from rfig_exp.run import checkpoint
from rfig_exp.run.experiment import run_experiment


def _leaves(v):
    return [np.full((3, 2), v, np.float32), np.arange(4, dtype=np.uint32) + v]


def test_save_load_prune_and_fall_back_from_a_damaged_checkpoint(tmp_path, caplog):
    for w in (1, 2, 3):
        checkpoint.save(tmp_path, w, _leaves(w), {"train_time_s": float(w)}, keep=2)
    assert checkpoint.windows(tmp_path) == [2, 3]
    got = checkpoint.latest(tmp_path, [(3, 2), (4,)])
    assert got.window == 3 and got.extra == {"train_time_s": 3.0}
    np.testing.assert_array_equal(got.leaves[1], _leaves(3)[1])
    # a half-written newest file: detected by its checksum, the previous one is used
    npz = tmp_path / "checkpoint" / "window_3.npz"
    npz.write_bytes(npz.read_bytes()[: len(npz.read_bytes()) // 2])
    got = checkpoint.latest(tmp_path, [(3, 2), (4,)])
    assert got.window == 2 and "window_3 is unusable" in caplog.text
    # arrays of another shape (another config or code version) are refused too
    assert checkpoint.latest(tmp_path, [(5, 2), (4,)]) is None
    # both damaged: a fresh start
    (tmp_path / "checkpoint" / "window_2.json").write_text("{not json")
    assert checkpoint.latest(tmp_path, [(3, 2), (4,)]) is None


def test_a_damaged_checkpoint_makes_the_run_start_afresh_and_still_complete(tiny_config, tmp_path, caplog):
    cfg = tiny_config("env=cartpole", "bonus=none", f"results_dir={tmp_path}")
    (summary,) = run_experiment(cfg)
    run = find_run(tmp_path, "cartpole", "none")
    reference = (run / "metrics.csv").read_text()
    # make it look like a run that died after window 1 with a corrupted checkpoint
    (run / "summary.json").unlink()
    checkpoint.save(run, 1, [np.zeros(1)], {}, keep=2)
    (run / "checkpoint" / "window_1.npz").write_bytes(b"garbage")
    (summary,) = run_experiment(cfg)
    assert "unusable" in caplog.text and summary.resumed_from_windows == ()
    assert (run / "metrics.csv").read_text().splitlines()[1:] != [] and \
        [r.split(",")[0] for r in (run / "metrics.csv").read_text().splitlines()] == \
        [r.split(",")[0] for r in reference.splitlines()]


def _save_then_die(at_window):
    """checkpoint.save that raises SystemExit (as a SIGKILL would end the run) right after
    writing the checkpoint of ``at_window``."""
    real_save = checkpoint.save

    def save_then_die(run_dir, window, leaves, extra, keep=2):
        real_save(run_dir, window, leaves, extra, keep)
        if window == at_window:
            raise SystemExit("killed")

    return save_then_die


@pytest.mark.extended
def test_a_resumed_run_continues_its_wandb_run(tiny_config, tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    cfg = tiny_config("env=cartpole", "bonus=none", "wandb.mode=offline", "wandb.tags=[smoke]",
                      "checkpoint.every_windows=1",
                      "agent.total_timesteps=384", f"results_dir={tmp_path}")

    # Die right after the checkpoint of window 2 (as a SIGKILL would), then relaunch.
    real_save = checkpoint.save
    monkeypatch.setattr(checkpoint, "save", _save_then_die(2))
    try:
        run_experiment(cfg)
    except SystemExit:
        pass
    monkeypatch.setattr(checkpoint, "save", real_save)
    run = find_run(tmp_path, "cartpole", "none")
    first_id = json.loads((run / "checkpoint" / "window_2.json").read_text())["extra"]["wandb_id"]
    (summary,) = run_experiment(cfg)
    assert summary.resumed_from_windows == (2,)
    offline = sorted((run / "wandb").glob("offline-run-*"))
    assert offline and all(p.name.endswith(first_id) for p in offline), [p.name for p in offline]


def test_checkpoint_cadence_by_windows_or_wall_clock():
    assert not checkpoint.due(4, 0, 10.0, 0.0, None, None)          # both off
    assert checkpoint.due(5, 0, 1.0, 0.0, 5, None) and not checkpoint.due(4, 0, 1.0, 0.0, 5, None)
    assert checkpoint.due(1, 0, 300.0, 0.0, None, 300.0) and not checkpoint.due(9, 0, 299.0, 0.0, None, 300.0)
    assert checkpoint.due(2, 0, 1.0, 0.0, 2, 300.0) and checkpoint.due(1, 0, 301.0, 0.0, 2, 300.0)


def test_checkpoints_are_written_by_the_background_writer_in_order_and_errors_surface(tmp_path):
    import threading

    import pytest

    writer = checkpoint.BackgroundWriter(saved_window=0)
    where = []

    def write(w):
        def go():
            where.append(threading.current_thread().name)
            checkpoint.save(tmp_path, w, _leaves(w), {}, keep=5)
        return go

    for w in (1, 2, 3):
        writer.submit(w, write(w))
    assert writer.wait() == 3 and checkpoint.windows(tmp_path) == [1, 2, 3]
    assert all(name.startswith("checkpoint-writer") for name in where)

    def full_disk():
        raise OSError(28, "No space left on device")

    writer.submit(4, full_disk)
    with pytest.raises(OSError, match="No space left"):
        writer.wait()
    assert writer.saved_window == 3  # the failed write is not counted as saved
    writer.close()


def _count_saves(monkeypatch):

    calls, real_save = [], checkpoint.save

    def counting_save(run_dir, window, leaves, extra, keep=2):
        calls.append(window)
        real_save(run_dir, window, leaves, extra, keep)

    monkeypatch.setattr(checkpoint, "save", counting_save)
    return calls


def test_a_short_run_at_the_default_cadence_writes_no_checkpoint(tiny_config, tmp_path, monkeypatch):
    calls = _count_saves(monkeypatch)
    (summary,) = run_experiment(tiny_config("env=cartpole", "bonus=none", f"results_dir={tmp_path}"))
    assert summary.status == "complete" and calls == []  # every 300 s: a short run writes none
    assert summary.checkpoints_written == 0 and summary.checkpoint_wait_s == 0.0


def test_a_wall_clock_cadence_checkpoints_every_window_but_the_last_and_resumes_identically(
        tiny_config, tmp_path, monkeypatch):
    cfg = tiny_config("env=cartpole", "bonus=none", "checkpoint.every_seconds=1e-9", "agent.total_timesteps=384",
                      f"results_dir={tmp_path}")
    calls = _count_saves(monkeypatch)
    (first,) = run_experiment(cfg)
    assert first.checkpoints_written == 2 and 0.0 < first.checkpoint_wait_s < first.train_time_s
    run = find_run(tmp_path, "cartpole", "none")
    reference = (run / "metrics.csv").read_text()
    assert calls == [1, 2]  # windows 1 and 2 of 3; none after the last (its summary follows)
    # Kill it (as SIGKILL would) right after window 2's checkpoint reached the disk, then relaunch.
    real_save = checkpoint.save
    monkeypatch.setattr(checkpoint, "save", _save_then_die(2))
    cfg2 = tiny_config("env=cartpole", "bonus=none", "checkpoint.every_seconds=1e-9", "agent.total_timesteps=384",
                       f"results_dir={tmp_path}", "overwrite=true")
    try:
        run_experiment(cfg2)
    except SystemExit:
        pass
    assert not (run / "summary.json").exists()
    monkeypatch.setattr(checkpoint, "save", real_save)
    (summary,) = run_experiment(cfg)
    assert summary.resumed_from_windows == (2,)

    def without_wall_time(text):  # every column but the one that measures time
        rows = [r.split(",") for r in text.splitlines()]
        drop = rows[0].index("wall_time_s")
        return [[c for i, c in enumerate(r) if i != drop] for r in rows]

    assert without_wall_time((run / "metrics.csv").read_text()) == without_wall_time(reference)


def test_an_interrupted_wait_still_counts_the_write_that_lands():
    """Ctrl-C can land while the main thread waits for a write: the write goes on, and the
    interrupt handler's own wait must still report it (it names the window to resume from)."""
    import threading

    import pytest

    writer = checkpoint.BackgroundWriter(saved_window=0)
    release = threading.Event()
    writer.submit(1, release.wait)

    def interrupt():
        raise KeyboardInterrupt

    # Emulate the signal: result() raises KeyboardInterrupt before the write is done.
    real = writer._pending[1].result
    writer._pending[1].result = lambda: interrupt()
    with pytest.raises(KeyboardInterrupt):
        writer.wait()
    writer._pending[1].result = real
    release.set()
    assert writer.wait() == 1
    writer.close()

"""What a sweep says while it runs: the sweep-level line after each job, the local launcher's jobs'
own lines on the sweep's console, and the line that says a job is compiling."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from conftest import TINY

from rfig_exp.launch.runner import Tally, follow_logs
from rfig_exp.launch.task import JobOutcome

ROOT = Path(__file__).resolve().parents[1]


class _Task:
    """What follow_logs reads of a submitit job: its two log paths and whether it is done."""

    def __init__(self, folder: Path, name: str):
        self.paths = SimpleNamespace(stdout=folder / f"{name}.out", stderr=folder / f"{name}.err")
        self.finished = False

    def done(self) -> bool:
        return self.finished


def test_follow_logs_echoes_each_whole_line_once_without_submitits_chatter(tmp_path):
    a, b = _Task(tmp_path, "a"), _Task(tmp_path, "b")

    def write():
        with open(a.paths.stdout, "w") as f:
            f.write("[x] window 1/2\n[x] win")  # a line half written when a poll comes
            f.flush()
            time.sleep(0.3)
            f.write("dow 2/2\n[x] done")  # the last line has no newline when the task ends
        b.paths.stderr.write_text("submitit INFO (2026) - Starting with JobEnvironment\n"
                                  "[2026][submitit][INFO] - Job completed successfully\n[y] an error line\n")
        time.sleep(0.2)
        a.finished = b.finished = True

    writer = threading.Thread(target=write)
    writer.start()
    out = io.StringIO()
    follow_logs([a, b], poll_s=0.05, out=out)
    writer.join()
    lines = out.getvalue().splitlines()
    assert sorted(lines) == sorted(["[x] window 1/2", "[x] window 2/2", "[x] done", "[y] an error line"]), lines
    assert lines.index("[x] window 1/2") < lines.index("[x] window 2/2") < lines.index("[x] done")


def _job(members: int):
    return SimpleNamespace(members=members, parts=(SimpleNamespace(overrides=("env=x",)),))


def test_the_sweep_line_counts_jobs_and_runs_and_its_eta_ignores_skipped_jobs(tmp_path, caplog, monkeypatch):
    clock = iter([0.0, 0.5, 10.5, 30.5])  # created; a skipped job back at 0.5 s; two trained jobs, 10 s, 20 s
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    jobs = [_job(2), _job(2), _job(4), _job(4), _job(4)]
    tally = Tally(tmp_path, 0, jobs)
    with caplog.at_level("INFO", logger="rfig_exp"):
        tally.add(0, jobs[0], JobOutcome(skipped=True))
        tally.add(1, jobs[1], JobOutcome())
        tally.add(2, jobs[2], JobOutcome())
    lines = [m for m in caplog.messages if m.startswith("[sweep] job")]
    assert lines == ["[sweep] job 1/5 back | runs 2/16 | eta n/a",
                     "[sweep] job 2/5 back | runs 4/16 | eta 30s",      # 10 s per trained job, 3 left
                     "[sweep] job 3/5 back | runs 8/16 | eta 30s"]      # (10 + 20) / 2 per job, 2 left


def test_a_local_sweep_shows_its_jobs_progress_and_log_paths_on_its_own_console(tmp_path):
    """hydra/launcher=local: each job runs in a submitit process whose lines went only to its log."""
    proc = subprocess.run(
        [sys.executable, "launch.py", "-m", "hydra/launcher=local", "env=cartpole", "bonus=none,rnd", *TINY,
         f"results_dir={tmp_path}"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    console = proc.stdout + proc.stderr
    assert proc.returncode == 0, console[-3000:]
    for bonus in ("none", "rnd"):
        assert f"[cartpole/{bonus}/" in console and "initialising and compiling" in console
        assert any(f"[cartpole/{bonus}/" in line and "window 2/2" in line for line in console.splitlines()), console
    assert console.count("_0_log.out") == 2, "each job's log path is named once"
    assert "[sweep] job 2/2 back | runs 2/2 | all jobs back" in console
    assert "Starting with JobEnvironment" not in console

"""campaign/scripts/paper32_gpu.sh and its helpers, on this CPU: the deadline keeper (campaign/scripts/run_until.py)
on real process trees, the wheels a box lacks (campaign/scripts/gpu_tools.py), and dry runs of the script
itself (ALLOW_CPU=1, tiny budgets, a deadline that cuts a job)."""

from __future__ import annotations

import base64
import csv
import gzip
import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "campaign" / "scripts" / "paper32_gpu.sh"
RUN_UNTIL = ROOT / "campaign" / "scripts" / "run_until.py"
sys.path.insert(0, str(ROOT / "campaign" / "scripts"))

from gpu_tools import job_rows, missing, overlap, wheel_name  # noqa: E402

TINY = ["agent.num_envs=4", "agent.num_steps=16", "agent.num_minibatches=2", "agent.update_epochs=1",
        "eval_frequency=128", "agent.obs_norm_init_steps=8"]


def run_until(tmp_path: Path, tree: str, *flags: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    script = tmp_path / "tree.sh"
    script.write_text("#!/bin/bash\n" + tree)
    script.chmod(0o755)
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, str(RUN_UNTIL), *flags, "--", str(script)], capture_output=True, text=True,
                         timeout=timeout, cwd=tmp_path)
    return out, time.monotonic() - t0


@pytest.mark.kept_apart  # process trees timed to the second
def test_a_command_that_ends_by_itself_keeps_its_exit_status(tmp_path):
    out, took = run_until(tmp_path, "sleep 0.5; exit 3\n", "--deadline", "30")
    assert out.returncode == 3 and took < 10, out.stdout
    assert "SIGTERM" not in out.stdout and "ended (its exit status 3)" in out.stdout


@pytest.mark.kept_apart
def test_after_the_last_start_running_jobs_finish_and_are_waited_for(tmp_path):
    # the leader (a sweep) starts a job and would start another after 3 s: the last start stops
    # the leader; the job it had started goes on, and the command ends only once it has ended
    tree = ("(sleep 2; echo done > job1.txt) &\n"
            "sleep 3; echo started > job2.txt\n")
    out, took = run_until(tmp_path, tree, "--deadline", "30", "--last-start", "1")
    assert out.returncode == 124, out.stdout
    assert (tmp_path / "job1.txt").read_text() == "done\n" and not (tmp_path / "job2.txt").exists()
    assert 1.8 < took < 10


@pytest.mark.kept_apart
def test_at_the_deadline_jobs_get_sigterm_until_they_stop_then_sigkill(tmp_path):
    tree = ("(trap 'echo 143 > polite.txt; exit 143' TERM; while true; do sleep 0.1; done) &\n"
            "(trap 'echo ignored >> stubborn.txt' TERM; while true; do sleep 0.1; done) &\n"
            "echo $! > stubborn.pid\n"
            "wait\n")
    out, took = run_until(tmp_path, tree, "--deadline", "1", "--grace", "2", "--every", "0.5")
    assert out.returncode == 124, out.stdout
    assert (tmp_path / "polite.txt").read_text() == "143\n"
    assert len((tmp_path / "stubborn.txt").read_text().splitlines()) >= 3  # SIGTERM again and again
    assert "SIGKILL" in out.stdout and 2.8 < took < 10
    pid = int((tmp_path / "stubborn.pid").read_text())
    assert not Path(f"/proc/{pid}").exists()  # killed, and reaped


def test_bad_arguments_are_refused():
    out = subprocess.run([sys.executable, str(RUN_UNTIL), "--deadline", "-1", "--", "true"], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 2 and "--deadline=-1.0 must be >= 0" in out.stderr
    out = subprocess.run([sys.executable, str(RUN_UNTIL), "--deadline", "5"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 2 and "no command given" in out.stderr


def make_wheel(folder: Path, name: str, version: str = "0.1") -> Path:
    """A minimal pure-Python wheel of a package ``name`` whose module holds ``VALUE = 42``."""
    dist = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": "VALUE = 42\n",
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join(record + [f"{dist}/RECORD,,"]) + "\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return wheel


def test_only_the_wheels_of_missing_packages_are_installed(tmp_path):
    assert wheel_name("hydra_core-1.3.2-py3-none-any.whl") == "hydra-core"
    assert wheel_name("/w/mujoco_core-4.0.0-cp312-cp312-manylinux_2_28_x86_64.whl") == "mujoco-core"
    present = ["hydra_core-1.3.2-py3-none-any.whl", "Cloudpickle-9.9-py3-none-any.whl"]  # any version, any case
    assert missing([*present, "rfig_absent_pkg-0.1-py3-none-any.whl"]) == ["rfig_absent_pkg-0.1-py3-none-any.whl"]


def test_the_jobs_table_groups_seeds_by_process_and_keeps_rfigs_precision(tmp_path):
    def run(bonus, seed, finished, **extra):
        folder = tmp_path / "paper32" / "mountaincar" / bonus / "base" / f"seed_{seed}"
        folder.mkdir(parents=True)
        (folder / "metrics.csv").write_text("env_steps\n24576\n")
        (folder / "summary.json").write_text(json.dumps({
            "status": "complete", "finished_at": finished, "wall_time_s": 20.0, "compile_time_s": 8.0,
            "train_time_s": 11.0, "env_steps_per_second": 1e6, **extra,
            "placement": {"cores": "0-3", "device_memory_peak_bytes": 2**30, "device_memory_limit_bytes": 17 * 2**30}}))

    # one process of two seeds, whose summaries were written on either side of a second's edge
    for seed, residual, finished in ((0, 1e-3, "2026-11-27T03:00:09Z"), (1, 5e-4, "2026-11-27T03:00:10Z")):
        run("rfig", seed, finished, bonus_recoveries=float(seed), bonus_refreshes=2.0,
            bonus_max_inverse_residual=residual)
    run("none", 0, "2026-11-27T03:00:00Z")  # beside it
    run("rnd", 0, "2026-11-27T01:00:00Z")  # restored: ended before this run started
    rows = job_rows(tmp_path, "paper32", since="2026-11-27T02:00:00Z")
    assert [(r["bonus"], r["seeds"]) for r in rows] == [("none", 1), ("rfig", 2)]
    rfig = rows[1]
    assert (rfig["inverse_recoveries"], rfig["inverse_refreshes"], rfig["max_inverse_residual"]) == (1.0, 4.0, 1e-3)
    assert (rfig["device_memory_peak_gib"], rfig["device_memory_limit_gib"], rfig["cores"]) == (1.0, 17.0, "0-3")
    assert rows[0]["max_inverse_residual"] is None
    span, at_once = overlap(rows)  # 02:59:40-03:00:00 and 02:59:50-03:00:10: 30 s, 40 s of jobs
    assert (span, round(at_once, 2)) == (30.0, 1.33)


def script(tmp_path: Path, *args: str, timeout: float = 900, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHON": sys.executable, "RESULTS": str(tmp_path / "results"),
            "DATA": str(tmp_path / "committed"), "SITE": str(tmp_path / "site"), "WHEELS": str(tmp_path / "wheels"),
            **env}
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, env=full, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.extended
def test_the_script_installs_what_is_missing_and_needs_a_gpu(tmp_path):
    """Steps 1-2 on a machine without a GPU: the missing wheel lands in SITE; then exit 3."""
    (tmp_path / "wheels").mkdir()
    make_wheel(tmp_path / "wheels", "rfig_probe_pkg")
    out = script(tmp_path, str(tmp_path / "out"), timeout=300)
    assert out.returncode == 3, out.stdout + out.stderr
    log = (tmp_path / "out" / "paper32_gpu.log").read_text()
    assert "installing 1 wheel(s) into" in log and "rfig_probe_pkg-0.1-py3-none-any.whl" in log
    assert (tmp_path / "site" / "rfig_probe_pkg" / "__init__.py").read_text() == "VALUE = 42\n"
    assert "JAX sees no GPU here (ALLOW_CPU=1 runs on the CPU" in log
    assert not (tmp_path / "results").exists()  # nothing ran
    usage = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=30)
    assert usage.returncode == 2 and "usage:" in usage.stderr


def _runs(data: Path) -> list[dict]:
    with gzip.open(data / "runs.json.gz", "rt") as f:
        return json.load(f)


@pytest.mark.slow  # two compilations and a deadline that must outlast one: minutes on this loaded 2-core CPU
@pytest.mark.timeout(1500)
@pytest.mark.kept_apart  # two jobs at once on their own cores, and a deadline that cuts one
def test_a_dry_run_exports_only_whole_cells_and_the_next_run_skips_them(tmp_path):
    """The script end to end on the CPU: two cells at once (jobs_per_gpu=2), one of 256 steps that
    completes and one of 1G steps that the deadline cuts (it must outlast the deadline on any
    machine: 10M steps of this tiny config took 80 s on 2 AMD EPYC cores); only the complete cell is
    exported. Merged into a data folder, it is restored by the next run, whose sweep then skips it."""
    cells = ["env=cartpole", "bonus=none", "num_seeds=2", *TINY]
    out = script(tmp_path, str(tmp_path / "out"), *cells, "agent.total_timesteps=256,1000000000",
                 ALLOW_CPU="1", JOBS_PER_GPU="2", DEADLINE_S="480", LAST_START_S="480", GRACE_S="60")
    log = (tmp_path / "out" / "paper32_gpu.log").read_text()
    assert out.returncode == 0, log[-4000:]
    assert "no committed cells in" in log and "deadline: SIGTERM to every process left" in log
    assert "sweep ended (exit 124" in log and "left for a later export (not every run complete)" in log

    runs = _runs(tmp_path / "out" / "data")
    assert len(runs) == 2 and {r["seed"] for r in runs} == {0, 1}
    assert all(r["summary"]["status"] == "complete" and r["summary"]["env_steps"] == 256 for r in runs)
    assert all(r["origin"]["commit"] and r["origin"]["jax"] for r in runs)
    cut = [p for p in (tmp_path / "results" / "paper32" / "cartpole" / "none").iterdir()
           if p.is_dir() and p.name not in {r["variant"] for r in runs}]
    assert len(cut) == 1 and not list(cut[0].glob("seed_*/summary.json"))  # the cut cell: no summary
    assert not list((tmp_path / "results").rglob("owner.json"))  # every job let go of its seeds
    with open(tmp_path / "out" / "jobs.csv") as f:
        (job,) = list(csv.DictReader(f))
    assert (job["env"], job["bonus"], job["seeds"]) == ("cartpole", "none", "2") and job["cores"]

    # the export merged into a data folder; a new results tree and the same cell: restored, skipped
    merged = subprocess.run([sys.executable, "-m", "campaign.repro", "merge", "--from",
                             str(tmp_path / "out" / "data"), "--data", str(tmp_path / "committed")],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert merged.returncode == 0, merged.stderr
    again = tmp_path / "again"
    again.mkdir()
    out = script(again, str(again / "out"), *cells, "agent.total_timesteps=256", ALLOW_CPU="1", DEADLINE_S="300",
                 DATA=str(tmp_path / "committed"))
    log = (again / "out" / "paper32_gpu.log").read_text()
    assert out.returncode == 0, log[-4000:]
    assert "restored 2 committed complete runs" in log and "1 skipped (already complete)" in log, log[-4000:]
    assert len(_runs(again / "out" / "data")) == 2

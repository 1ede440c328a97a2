"""Job placement for local sweeps (no JAX), and the launcher presets in conf/hydra/launcher/."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rfig_exp.config.errors import ConfigError
from rfig_exp.config.jobs import memory_share, validate_placement
from rfig_exp.run.placement import (
    MEM_FRACTION_VARS,
    count_gpus,
    cpu_block,
    format_cores,
    jobs_at_once,
    place_job,
    slot_of,
)

ROOT = Path(__file__).resolve().parents[1]


def _no_affinity(*_):
    raise AssertionError("the affinity must not be changed here")


def fake_nvidia_smi(folder: Path, stdout: str, code: int = 0) -> str:
    exe = folder / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\ncat <<'EOF'\n{stdout}EOF\nexit {code}\n")
    exe.chmod(0o755)
    return str(exe)


def test_count_gpus_reads_nvidia_smi_lines_and_ignores_mig_slices(tmp_path):
    smi = fake_nvidia_smi(tmp_path, "GPU 0: NVIDIA H100 (UUID: GPU-a)\n  MIG 1g.10gb Device 0: (UUID: MIG-b)\n"
                                    "GPU 1: NVIDIA H100 (UUID: GPU-c)\n")
    assert count_gpus(smi, proc_dir=tmp_path / "absent") == 2


def test_count_gpus_falls_back_to_the_driver_folder_then_to_zero(tmp_path):
    proc = tmp_path / "gpus"
    for bus in ("0000:01:00.0", "0000:02:00.0", "0000:03:00.0"):
        (proc / bus).mkdir(parents=True)
    failing = fake_nvidia_smi(tmp_path, "NVIDIA-SMI has failed\n", code=9)
    assert count_gpus(failing, proc_dir=proc) == 3
    assert count_gpus(None, proc_dir=proc) == 3
    assert count_gpus(None, proc_dir=tmp_path / "absent") == 0


@pytest.mark.parametrize("cores", [2, 3, 8, 16])
@pytest.mark.parametrize("parallel", [1, 2, 3, 4, 8])
def test_cpu_blocks_of_jobs_running_together_are_equal_and_disjoint(cores, parallel):
    pool = list(range(10, 10 + cores))  # core ids need not start at 0
    blocks = [cpu_block(pool, slot_of(j, parallel), parallel) for j in range(parallel)]
    per = max(1, cores // parallel)
    assert all(len(b) == per for b in blocks)
    if parallel <= cores:  # enough cores: no two jobs of a batch share one
        assert len({c for b in blocks for c in b}) == per * parallel
    # independent check: job j of a batch gets the (j mod n_blocks)-th run of `per` cores
    n_blocks = cores // per
    for j, b in enumerate(blocks):
        start = (j % n_blocks) * per
        assert b == pool[start:start + per]


def test_later_batches_reuse_the_slots_of_the_first():
    pool = list(range(8))
    assert [slot_of(j, 4) for j in range(10)] == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    assert cpu_block(pool, slot_of(5, 4), 4) == [2, 3]
    assert slot_of(7, None) == 7 and cpu_block(pool, 7, None) == [7]  # unknown batch: one core per job
    assert cpu_block(pool, 0, 2, cores_per_job=3) == [0, 1, 2] and cpu_block(pool, 1, 2, cores_per_job=3) == [3, 4, 5]
    with pytest.raises(ValueError):
        slot_of(-1, 2)


def test_format_cores_uses_tasksets_ranges():
    assert format_cores([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert format_cores([3]) == "3"


@pytest.mark.parametrize("num_gpus", [1, 2, 4])
def test_each_job_of_a_batch_gets_its_own_gpu(num_gpus):
    for job in range(3 * num_gpus):
        env = dict(CUDA_VISIBLE_DEVICES="")  # what submitit_local sets without gpus_per_node
        line = place_job(job, num_gpus, local=True, environ=env, num_gpus=num_gpus, set_affinity=_no_affinity)
        assert env["CUDA_VISIBLE_DEVICES"] == str(job % num_gpus), line
        assert "XLA_PYTHON_CLIENT_PREALLOCATE" not in env
        assert f"GPU {job % num_gpus} of {num_gpus}" in line


def test_more_jobs_than_gpus_share_them_without_preallocating_memory():
    env = {}
    line = place_job(3, 4, local=True, environ=env, num_gpus=2, set_affinity=_no_affinity)
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "share" in line
    mine = dict(XLA_PYTHON_CLIENT_PREALLOCATE="true")
    place_job(0, None, local=True, environ=mine, num_gpus=2, set_affinity=_no_affinity)
    assert mine["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"  # the user's choice stands


def test_an_explicit_gpu_list_is_used_in_order():
    env = {}
    place_job(1, 2, local=True, environ=env, gpus=["GPU-aaa", "GPU-bbb"], set_affinity=_no_affinity)
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-bbb"
    place_job(2, 2, local=True, environ=env, gpus=[4, 6], set_affinity=_no_affinity)  # ids as a YAML list of ints
    assert env["CUDA_VISIBLE_DEVICES"] == "4"


def test_without_gpus_each_job_is_pinned_to_its_cores():
    calls = []
    line = place_job(1, 2, local=True, environ={}, num_gpus=0, set_affinity=lambda pid, cores: calls.append(cores),
                     get_affinity=lambda pid: {0, 1, 2, 3})
    assert calls == [[2, 3]] and "CPU cores 2-3 (2 of 4)" in line


def test_jobs_at_once_follows_jobs_per_gpu_unless_the_batch_size_is_set():
    assert jobs_at_once(None, None, 2) is None and jobs_at_once(3, None, 2) == 3  # as before
    assert jobs_at_once(None, 4, 1) == 4 and jobs_at_once(None, 4, 2) == 8
    assert jobs_at_once(None, 2, 0) == 2  # no GPU: that many jobs on the cores
    assert jobs_at_once(5, 4, 2) == 5  # an explicit max_batch_size wins


@pytest.mark.parametrize("per_gpu,share", [(1, None), (2, "0.45"), (3, "0.30"), (4, "0.22"), (8, "0.11")])
def test_jobs_sharing_one_gpu_split_its_memory_and_the_cores(per_gpu, share):
    cores = set(range(16))
    placed = []
    for job in range(2 * per_gpu):  # two batches: the second reuses the first's slots
        env = dict(CUDA_VISIBLE_DEVICES="")
        pinned = []
        line = place_job(job, None, local=True, jobs_per_gpu=per_gpu, environ=env, num_gpus=1,
                         set_affinity=lambda pid, c: pinned.append(c), get_affinity=lambda pid: cores)
        assert env["CUDA_VISIBLE_DEVICES"] == "0" and env.get("XLA_PYTHON_CLIENT_MEM_FRACTION") == share, line
        assert "XLA_CLIENT_MEM_FRACTION" not in env
        # a shared GPU's share is a cap, not preallocated; a job alone on it keeps JAX's default
        assert env.get("XLA_PYTHON_CLIENT_PREALLOCATE") == (None if share is None else "false"), line
        assert f"{per_gpu} in parallel" in line and f"({per_gpu} job(s) on it" in line
        placed.append(pinned[0])
    first = placed[:per_gpu]
    assert all(len(c) == 16 // per_gpu for c in first) and len({c for b in first for c in b}) == 16 // per_gpu * per_gpu
    assert placed[per_gpu:] == first
    if share is not None:
        assert per_gpu * float(share) <= 0.9


def test_jobs_per_gpu_spreads_jobs_over_every_gpu():
    seen = []
    for job in range(6):  # 3 per GPU on 2 GPUs: 6 at once
        env = {}
        place_job(job, None, local=True, jobs_per_gpu=3, environ=env, num_gpus=2, set_affinity=lambda pid, c: None,
                  get_affinity=lambda pid: set(range(12)))
        seen.append((env["CUDA_VISIBLE_DEVICES"], env["XLA_PYTHON_CLIENT_MEM_FRACTION"]))
    assert seen == [("0", "0.30"), ("1", "0.30")] * 3
    # a batch size that does not fill the GPUs evenly: each job's share follows the jobs on its GPU
    shares = []
    for job in range(3):
        env = {}
        place_job(job, 3, local=True, jobs_per_gpu=2, environ=env, num_gpus=2, set_affinity=lambda pid, c: None,
                  get_affinity=lambda pid: {0, 1, 2})
        shares.append(env.get("XLA_PYTHON_CLIENT_MEM_FRACTION"))
    assert shares == ["0.45", None, "0.45"]


@pytest.mark.parametrize("var", MEM_FRACTION_VARS)
def test_a_memory_fraction_the_user_set_stands_under_either_name(var):
    env = dict(**{var: "0.1"})
    line = place_job(1, None, local=True, jobs_per_gpu=4, environ=env, num_gpus=1, set_affinity=lambda pid, c: None,
                     get_affinity=lambda pid: {0, 1, 2, 3})
    assert env[var] == "0.1" and not any(v in env for v in MEM_FRACTION_VARS if v != var), env
    assert f"{var}=0.1" in line
    mine = {"XLA_PYTHON_CLIENT_PREALLOCATE": "true"}  # the user's choice stands here too
    place_job(1, None, local=True, jobs_per_gpu=4, environ=mine, num_gpus=1, set_affinity=lambda pid, c: None,
              get_affinity=lambda pid: {0, 1, 2, 3})
    assert mine["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"


def test_jobs_per_gpu_without_a_gpu_divides_the_cores():
    calls = []
    line = place_job(3, None, local=True, jobs_per_gpu=2, environ={}, num_gpus=0,
                     set_affinity=lambda pid, c: calls.append(c), get_affinity=lambda pid: {0, 1, 2, 3})
    assert calls == [[2, 3]] and "(slot 1, 2 in parallel) -> CPU cores 2-3 (2 of 4)" in line


def test_bad_jobs_per_gpu_names_the_key():
    for bad in (0, -1, True, 2.5, "4"):
        with pytest.raises(ConfigError, match=r"placement.jobs_per_gpu=.* must be null or an integer >= 1"):
            validate_placement(jobs_per_gpu=bad)
    with pytest.raises(ConfigError, match=r"placement.jobs_per_gpu=91 leaves each job under 1% .* at most 90"):
        validate_placement(jobs_per_gpu=91)
    assert memory_share(90) == 0.01
    validate_placement(jobs_per_gpu=90)


def test_the_sweeps_runner_batches_jobs_per_gpu_jobs_for_local_jobs_only():
    from rfig_exp.launch.hydra_adapter import launcher_kind
    from rfig_exp.launch.runner import jobs_at_once

    def batch(*overrides):
        cfg = compose_hydra(*overrides)
        return jobs_at_once(cfg, launcher_kind(cfg.hydra.launcher))

    assert batch("hydra/launcher=local", "placement.jobs_per_gpu=3", "placement.gpus=[0,1]") == 6
    assert batch("hydra/launcher=local", "placement.jobs_per_gpu=3", "placement.gpus=[0]",
                 "hydra.sweeper.max_batch_size=2") == 2
    assert batch("hydra/launcher=local") is None  # unchanged without jobs_per_gpu
    assert batch("hydra/launcher=local", "hydra.sweeper.max_batch_size=4") == 4
    assert batch("hydra/launcher=slurm", "placement.jobs_per_gpu=3") is None  # SLURM places its own jobs


@pytest.mark.parametrize("env,fragment", [
    ({"SLURM_JOB_ID": "42", "SLURM_ARRAY_JOB_ID": "40", "SLURM_ARRAY_TASK_ID": "2",
      "SLURM_CPUS_PER_TASK": "1", "SLURMD_NODENAME": "vm"},
     "SLURM job 40_2 on vm: 1 CPU(s) granted (the process may run on"),
    ({}, "not a local sweep job"),
])
def test_slurm_jobs_and_plain_runs_are_left_alone(env, fragment):
    before = dict(env)
    line = place_job(3, 2, local=False, environ=env, num_gpus=2, set_affinity=_no_affinity)
    assert fragment in line and env == before


def test_placement_off_and_bad_values():
    env = {}
    assert "off" in place_job(0, 2, local=True, mode="off", environ=env, num_gpus=2, set_affinity=_no_affinity)
    assert env == {}
    with pytest.raises(ConfigError, match="placement.mode='pin' is not one of: auto, off"):
        place_job(0, 2, local=True, mode="pin", environ={})
    with pytest.raises(ConfigError, match=r"hydra.sweeper.max_batch_size=0 must be >= 1"):
        place_job(0, 0, local=True, environ={})
    with pytest.raises(ConfigError, match=r"placement.cores_per_job=0 must be >= 1"):
        place_job(0, 2, local=True, cores_per_job=0, environ={})
    with pytest.raises(ConfigError, match=r"placement.gpus='0,1' must be null or a non-empty list"):
        place_job(0, 2, local=True, gpus="0,1", environ={})
    with pytest.raises(ConfigError, match=r"placement.gpus=\[\] must be null"):
        validate_placement(gpus=[])
    validate_placement("auto", 4, 2, [0, 1])  # integers from a YAML list are fine


def _placed_job():
    """Runs inside a submitit_local job: place it, report what the OS now says."""
    from rfig_exp.run.placement import place_job

    line = place_job(int(os.environ["JOB"]), 2, local=True, num_gpus=0)
    return line, sorted(os.sched_getaffinity(0)), os.environ.get("CUDA_VISIBLE_DEVICES")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores")
def test_two_real_submitit_local_jobs_land_on_disjoint_cores(tmp_path, monkeypatch):
    """The real thing: submitit_local processes, real sched_setaffinity (no JAX)."""
    import cloudpickle
    import submitit

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the job cannot import this test module
    cores = sorted(os.sched_getaffinity(0))
    results = []
    for job in range(2):
        monkeypatch.setenv("JOB", str(job))  # submitit_local copies the environment into the job
        executor = submitit.AutoExecutor(folder=tmp_path / "%j", cluster="local")
        executor.update_parameters(timeout_min=2)
        results.append(executor.submit(_placed_job))
    (line0, aff0, cuda0), (line1, aff1, _) = [r.result() for r in results]
    half = len(cores) // 2
    assert aff0 == cores[:half] and aff1 == cores[half:2 * half], (line0, line1)
    assert cuda0 == ""  # submitit_local hides GPUs unless told: placement must set them


def test_the_pinning_lasts_for_threads_started_later():
    """XLA starts its threads after placement: they must inherit the mask (a subprocess keeps the
    test process itself unpinned)."""
    code = ("import os, threading\n"
            "from rfig_exp.run.placement import place_job\n"
            "place_job(1, 2, local=True, num_gpus=0)\n"
            "out = []\n"
            "t = threading.Thread(target=lambda: out.append(sorted(os.sched_getaffinity(0))))\n"
            "t.start(); t.join()\n"
            "print(sorted(os.sched_getaffinity(0)), out[0])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert out.returncode == 0, out.stderr
    cores = sorted(os.sched_getaffinity(0))
    expected = cores[len(cores) // 2:2 * (len(cores) // 2)] if len(cores) > 1 else cores
    assert out.stdout.strip() == f"{expected} {expected}"


def test_placement_does_not_import_jax():
    out = subprocess.run([sys.executable, "-c", "import sys, rfig_exp.run.placement; print('jax' in sys.modules)"],
                         capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert out.stdout.strip() == "False", out.stderr


def compose_hydra(*overrides: str):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides), return_hydra_config=True)


def test_the_local_launcher_preset_composes_into_a_submitit_executor():
    from rfig_exp.launch.hydra_adapter import submitit_executor

    cfg = compose_hydra("hydra/launcher=local", "hydra.sweeper.max_batch_size=2", "experiment=x")
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("LocalLauncher") and launcher.timeout_min == 2880
    assert launcher.gpus_per_node is None and launcher.name == "rfig-x"
    assert cfg.hydra.sweeper.max_batch_size == 2
    executor = submitit_executor(launcher)  # the preset's keys as submitit's parameters
    assert executor.cluster == "local" and executor._executor.parameters["timeout_min"] == 2880
    assert "multirun_" in str(executor.folder) and str(executor.folder).endswith("/.submitit/%j")


def test_the_slurm_launcher_preset_composes_and_every_key_is_overridable():
    cfg = compose_hydra("hydra/launcher=slurm", "hydra.launcher.partition=gpu", "hydra.launcher.account=proj",
                        "hydra.launcher.qos=high", "hydra.launcher.timeout_min=60", "hydra.launcher.gpus_per_node=1",
                        "hydra.launcher.cpus_per_task=8", "hydra.launcher.mem_gb=32",
                        "hydra.launcher.array_parallelism=16", "hydra.launcher.max_num_timeout=5",
                        "hydra.launcher.setup=[module load cuda]",
                        "+hydra.launcher.additional_parameters.mail-type=END")
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert (launcher.partition, launcher.account, launcher.qos, launcher.timeout_min) == ("gpu", "proj", "high", 60)
    assert (launcher.gpus_per_node, launcher.cpus_per_task, launcher.mem_gb) == (1, 8, 32)
    assert (launcher.array_parallelism, launcher.max_num_timeout) == (16, 5)
    assert list(launcher.setup) == ["module load cuda"]
    assert launcher.additional_parameters["mail-type"] == "END"
    defaults = compose_hydra("hydra/launcher=slurm").hydra.launcher
    assert defaults.max_num_timeout == 3 and defaults.signal_delay_s == 120 and defaults.partition is None

"""A SLURM request checked against the partition before submitting (rfig_exp.launch.slurm), without
a cluster: sinfo's lines parsed and compared. tests/test_slurm.py does it on the real one."""

from __future__ import annotations

import subprocess

from rfig_exp.launch import slurm

SINFO = "debug*|2|21695|(null)\nurgent|2|21695|(null)\ngpu|16|257000|gpu:a100:4(S:0-1)\n"


def nodes():
    def run(cmd, **kw):
        assert cmd[:2] == ["sinfo", "-h"]
        return subprocess.CompletedProcess(cmd, 0, SINFO, "")
    return slurm.read_nodes(run=run)


def test_sinfo_lines_become_nodes():
    assert [(n.partition, n.default, n.cpus, n.memory_mb, n.gpus) for n in nodes()] == [
        ("debug", True, 2, 21695, 0), ("urgent", False, 2, 21695, 0), ("gpu", False, 16, 257000, 4)]


def test_a_request_no_node_meets_is_refused_with_its_key():
    fits = {"partition": None, "cpus_per_task": 1, "mem_gb": 4, "gpus_per_node": None}
    assert slurm.check_request(fits, nodes()) == []
    (cpus,) = slurm.check_request({**fits, "cpus_per_task": 4}, nodes())
    assert cpus.startswith("hydra.launcher.cpus_per_task=4 is more than any node of partition debug has (2)")
    (mem,) = slurm.check_request({**fits, "mem_gb": 64}, nodes())
    assert mem.startswith("hydra.launcher.mem_gb=64") and "21.2 GB" in mem
    (gpu,) = slurm.check_request({**fits, "gpus_per_node": 1}, nodes())
    assert gpu.startswith("hydra.launcher.gpus_per_node=1")
    assert slurm.check_request({**fits, "partition": "gpu", "gpus_per_node": 4, "cpus_per_task": 16}, nodes()) == []
    (part,) = slurm.check_request({**fits, "partition": "gpus"}, nodes())
    assert part == "hydra.launcher.partition=gpus is not a partition of this cluster; valid: debug, gpu, urgent"
    assert slurm.check_request({**fits, "cpus_per_task": 99}, None) == []  # no sinfo: nothing to check


def test_the_watcher_cancels_jobs_whose_reason_never_clears_and_reports_others(caplog):
    calls = []
    queue = {"now": "101|Resources|2099-01-01T00:00:00\n"}

    def run(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, queue["now"] if cmd[0] == "squeue" else "", "")

    watcher = slurm.PendingWatcher("rfig-x", run=run)
    with caplog.at_level("INFO", logger="rfig_exp"):
        watcher.check()
        assert watcher.reason is None and "1 job(s) pending (Resources)" in caplog.text
        queue["now"] = "101|PartitionConfig|2099-01-01T00:00:00\n102|PartitionConfig|2099-01-01T00:00:00\n"
        watcher.check()
    assert watcher.reason.startswith("pending with reason PartitionConfig")
    assert calls[-1][0] == "scancel" and sorted(calls[-1][1:]) == ["101", "102"]

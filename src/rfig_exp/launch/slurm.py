"""What a SLURM sweep asks of the cluster, checked before it is submitted and watched while it waits.

- :func:`check_request`: the launcher's ``cpus_per_task``, ``mem_gb`` and ``gpus_per_node``
  against what a node of the partition has (``sinfo``); a request no node can ever meet is
  refused before anything is submitted, with the key to change.
- :class:`PendingWatcher`: while the sweeper waits for its jobs, ``squeue`` every
  ``interval_s``; a pending reason that can never clear (the job asks more than the partition
  or its limits allow) cancels the sweep's jobs, so the sweep fails with that reason instead of
  waiting for ever; other reasons (Resources, Priority) are reported when they change.
- ``hydra_adapter.quiet_sacct``: submitit polls ``sacct``; on a cluster without accounting storage each
  poll printed ``Slurm accounting storage is disabled`` on the console.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence

log = logging.getLogger("rfig_exp")

# Pending reasons that no amount of waiting clears: the request exceeds the partition or a limit.
NEVER_CLEARS = {
    "PartitionConfig": "the partition can never give what the job asks (CPUs, memory or GPUs per node)",
    "PartitionNodeLimit": "the job asks more nodes than the partition allows",
    "PartitionTimeLimit": "hydra.launcher.timeout_min is above the partition's time limit",
    "BadConstraints": "hydra.launcher.constraint matches no node",
    "InvalidAccount": "hydra.launcher.account is not valid here",
    "InvalidQOS": "hydra.launcher.qos is not valid here",
    "QOSMaxCpuPerJobLimit": "hydra.launcher.cpus_per_task is above the QOS limit",
    "AssocMaxCpuPerJobLimit": "hydra.launcher.cpus_per_task is above the account's limit",
    "QOSMaxMemoryPerJob": "hydra.launcher.mem_gb is above the QOS limit",
    "QOSMaxWallDurationPerJobLimit": "hydra.launcher.timeout_min is above the QOS limit",
}


@dataclass(frozen=True)
class Node:
    partition: str
    default: bool
    cpus: int
    memory_mb: int
    gpus: int


def _number(text: str) -> int:
    digits = "".join(c for c in text.split("(")[0] if c.isdigit())
    return int(digits) if digits else 0


def _gpus(gres: str) -> int:
    """``gpu:4``, ``gpu:a100:4(S:0-1)`` or ``(null)`` -> GPUs on the node."""
    total = 0
    for item in gres.split(","):
        parts = item.split("(")[0].split(":")
        if parts[0] == "gpu":
            total += _number(parts[-1]) if len(parts) > 1 else 1
    return total


def read_nodes(run=subprocess.run) -> list[Node] | None:
    """Every (partition, node) of the cluster per ``sinfo``; None without ``sinfo``."""
    try:
        out = run(["sinfo", "-h", "-N", "-o", "%P|%c|%m|%G"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):  # no sinfo on this machine, or it hung
        return None
    if out.returncode != 0:
        return None
    nodes = []
    for line in out.stdout.splitlines():
        fields = line.strip().split("|")
        if len(fields) == 4:
            name, cpus, mem, gres = fields
            nodes.append(Node(name.rstrip("*"), name.endswith("*"), _number(cpus), _number(mem), _gpus(gres)))
    return nodes


def check_request(launcher: dict, nodes: Sequence[Node] | None) -> list[str]:
    """Errors (one line each, naming the key) for a request no node of its partition can meet."""
    if not nodes:
        return []
    partitions = sorted({n.partition for n in nodes})
    name = launcher.get("partition") or next((n.partition for n in nodes if n.default), None)
    if name not in partitions:
        return [f"hydra.launcher.partition={name} is not a partition of this cluster; valid: {', '.join(partitions)}"]
    members = [n for n in nodes if n.partition == name]
    errors = []
    cpus, most_cpus = launcher.get("cpus_per_task") or 1, max(n.cpus for n in members)
    if cpus > most_cpus:
        errors.append(f"hydra.launcher.cpus_per_task={cpus} is more than any node of partition {name} has "
                      f"({most_cpus}); the job would wait for ever: "
                      f"set hydra.launcher.cpus_per_task={most_cpus} or less")
    mem_gb, most_mb = launcher.get("mem_gb"), max(n.memory_mb for n in members)
    if mem_gb and most_mb and mem_gb * 1024 > most_mb:
        errors.append(f"hydra.launcher.mem_gb={mem_gb} is more than any node of partition {name} has "
                      f"({most_mb / 1024:.1f} GB): set hydra.launcher.mem_gb={int(most_mb // 1024)} or less")
    gpus, most_gpus = launcher.get("gpus_per_node") or 0, max(n.gpus for n in members)
    if gpus > most_gpus:
        errors.append(f"hydra.launcher.gpus_per_node={gpus} is more than any node of partition {name} has "
                      f"({most_gpus}); choose a GPU partition with hydra.launcher.partition")
    return errors


class PendingWatcher:
    """Watches the sweep's jobs (by job name, submitted since it started) while they are
    pending; cancels them when a reason can never clear. ``reason`` is that reason, if any."""

    def __init__(self, job_name: str, interval_s: float = 15.0, run: Callable = subprocess.run,
                 enabled: bool = True):
        self.job_name, self.interval_s, self.run, self.enabled = job_name, interval_s, run, enabled
        self.reason: str | None = None
        self._seen: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 5))

    def __enter__(self):  # once per batch of jobs the sweeper launches
        if self.enabled and shutil.which("squeue") and self.reason is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="slurm-pending-watcher", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def pending(self) -> dict[str, str]:
        """``{job id: reason}`` of this sweep's pending jobs."""
        out = self.run(["squeue", "-h", "-n", self.job_name, "-t", "PENDING", "-o", "%i|%r|%V"],
                       capture_output=True, text=True, timeout=60)
        found = {}
        for line in out.stdout.splitlines():
            fields = line.strip().split("|")
            if len(fields) == 3 and fields[2] >= self._since:
                found[fields[0]] = fields[1]
        return found

    def check(self) -> None:
        pending = self.pending()
        fatal = sorted({r for r in pending.values() if r in NEVER_CLEARS})
        if fatal:
            self.reason = f"pending with reason {fatal[0]}: {NEVER_CLEARS[fatal[0]]}"
            log.error("[slurm] %d job(s) %s; cancelling them instead of waiting for ever", len(pending), self.reason)
            self.run(["scancel", *pending], capture_output=True, text=True, timeout=60)
            self._stop.set()
            return
        reasons = sorted(set(pending.values()))
        if reasons and reasons != sorted(set(self._seen.values())):
            log.info("[slurm] %d job(s) pending (%s)", len(pending), ", ".join(reasons))
        self._seen = pending

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.check()
            except (OSError, subprocess.SubprocessError) as err:  # a slow controller: try again later
                log.debug("squeue failed: %s", err)

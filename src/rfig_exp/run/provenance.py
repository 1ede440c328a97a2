"""Where a run came from: the host, the machine, the share of it the run had, the package versions
and the git commit, for its summary.json (a published cell names the commit, machine and jax
version that made it; a speed is read knowing how many jobs shared the device)."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path

# A copy of the tree without its .git (what a GPU box gets) names its commit here
# (scripts/paper32_gpu.sh sets it from its COMMIT).
COMMIT_ENV = "RFIG_GIT_COMMIT"
PACKAGES = ("rfig_exp", "jax", "jaxlib", "flax", "optax", "gymnax", "brax", "mujoco", "mujoco-core", "mujoco-mjx",
            "hydra-core", "numpy", "wandb")
REPO = Path(__file__).resolve().parents[3]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=5, cwd=REPO)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def package_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    versions["git_commit"] = _git("rev-parse", "HEAD") or os.environ.get(COMMIT_ENV) or None
    return versions


def git_dirty() -> bool | None:
    """Whether the checkout had uncommitted changes to tracked files (None outside git)."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return None if status is None else bool(status)


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine(devices: list | None = None) -> dict:
    """What ran the job: CPU model and cores, memory, and the accelerator JAX trained on
    (``devices``: ``jax.devices()``; None: not asked, for callers that must not import JAX)."""
    out: dict = {"cpu": _cpu_model(), "cores": os.cpu_count(), "memory_gib": _memory_gib()}
    if devices:
        out["backend"] = devices[0].platform
        out["devices"] = len(devices)
        out["device_kind"] = devices[0].device_kind
    return out


# What decides a process's share of a GPU (rfig_exp.run.placement sets them for a local sweep's jobs).
GPU_SHARE_VARS = ("CUDA_VISIBLE_DEVICES", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION",
                  "XLA_PYTHON_CLIENT_PREALLOCATE")


def placement(devices: list | None = None) -> dict:
    """The share of the machine this process had: the cores it could run on (taskset's notation),
    the GPU variables it ran with, and on an accelerator its memory pool's limit and peak use in
    bytes (``devices``: ``jax.devices()``; a CPU reports no pool)."""
    from rfig_exp.run.placement import format_cores

    out: dict = {"cores": format_cores(sorted(os.sched_getaffinity(0)))}
    out.update({var: os.environ[var] for var in GPU_SHARE_VARS if var in os.environ})
    try:
        stats = devices[0].memory_stats() if devices else None
    except Exception:  # a backend without memory statistics
        stats = None
    if stats:
        out["device_memory_limit_bytes"] = stats.get("bytes_limit")
        out["device_memory_peak_bytes"] = stats.get("peak_bytes_in_use")
    return out


def describe(devices: list | None = None) -> dict:
    """``host``, ``machine``, ``placement``, ``git_dirty`` and ``versions``, in the order summary.json
    lists them."""
    versions, dirty = package_versions(), git_dirty()
    return {"host": socket.gethostname(), "machine": machine(devices), "placement": placement(devices),
            "git_dirty": dirty, "versions": versions}

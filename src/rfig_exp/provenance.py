"""Where a run came from: the host, the machine, the package versions and the git commit, for its
summary.json (a published cell names the commit, machine and jax version that made it)."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path

PACKAGES = ("rfig_exp", "jax", "jaxlib", "flax", "optax", "gymnax", "brax", "mujoco", "hydra-core", "numpy", "wandb")
REPO = Path(__file__).resolve().parents[2]


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
    versions["git_commit"] = _git("rev-parse", "HEAD")
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


def describe(devices: list | None = None) -> dict:
    """``host``, ``machine``, ``git_dirty`` and ``versions``, in the order summary.json lists them."""
    versions, dirty = package_versions(), git_dirty()
    return {"host": socket.gethostname(), "machine": machine(devices), "git_dirty": dirty, "versions": versions}

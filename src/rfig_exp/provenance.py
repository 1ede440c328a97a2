"""Where a run came from: the host, the package versions and the git commit, for its summary.json."""

from __future__ import annotations

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


def describe() -> dict:
    """``host``, ``git_dirty`` and ``versions``, in the order summary.json lists them."""
    versions, dirty = package_versions(), git_dirty()
    return {"host": socket.gethostname(), "git_dirty": dirty, "versions": versions}

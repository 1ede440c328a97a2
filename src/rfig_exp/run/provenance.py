"""Where a run came from: the host, the machine, the share of it the run had, the package versions
and the git commit, for its summary.json (a published cell names the commit, machine and jax
version that made it; a speed is read knowing how many jobs shared the device)."""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path

# A copy of the tree without its .git (what a GPU box gets) names its commit here
# (campaign/scripts/paper32_gpu.sh sets it from its COMMIT).
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
    versions: dict[str, str | None] = {"python": platform.python_version()}
    versions.update({name: _version(name) for name in PACKAGES})
    versions["git_commit"] = _git("rev-parse", "HEAD") or os.environ.get(COMMIT_ENV) or None
    return versions


def git_dirty() -> bool | None:
    """Whether the checkout had uncommitted changes to tracked files (None outside git)."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return None if status is None else bool(status)


CPUINFO = Path("/proc/cpuinfo")
CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
# Instruction-set features that change what XLA's CPU backend emits (it compiles for the host's
# features: vector width, fused multiply-add), so two machines with other sets of them can round
# differently. The whole set is kept as a hash; these are named so a reader sees the difference.
NOTABLE_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw", "avx512vl",
                 "avx512_bf16", "avx512_fp16", "avx512_vnni", "avx_vnni", "amx_tile", "amx_bf16", "asimd", "sve")
# The environment variables that change a run's numbers or its threads: XLA's flags (set by
# rfig_exp.set_cpu_flags before JAX is imported, so this is what XLA read), JAX's own, and the BLAS
# thread counts (LAPACK's rounding depends on its thread count).
NUMERICS_VARS = ("XLA_FLAGS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def cpuinfo_fields(text: str) -> dict[str, str]:
    """The first processor's ``key: value`` lines of a /proc/cpuinfo text (all processors of one
    machine are alike; on ARM the shared lines come after them, and are kept too)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        key = key.strip()
        if not colon or not key:
            continue
        if key == "processor" and "processor" in out:
            continue  # the next processor's block: its lines repeat the first one's
        out.setdefault(key, value.strip())
    return out


def cpu_identity(fields: dict[str, str]) -> dict:
    """What names a CPU's microarchitecture beyond its model name (a VM may show only "AMD EPYC"):
    vendor, family, model, stepping and microcode on x86; implementer, part, variant and revision
    on ARM. Only the fields present."""
    keys = {"vendor": "vendor_id", "family": "cpu family", "model": "model", "stepping": "stepping",
            "microcode": "microcode", "implementer": "CPU implementer", "part": "CPU part",
            "variant": "CPU variant", "revision": "CPU revision"}
    return {name: fields[key] for name, key in keys.items() if fields.get(key)}


def isa_flags(fields: dict[str, str]) -> dict | None:
    """The CPU's instruction-set features in short: how many, a hash of the sorted set (two
    machines with the same hash have the same features) and the notable ones present
    (:data:`NOTABLE_FLAGS`). None where cpuinfo lists none."""
    flags = sorted(set((fields.get("flags") or fields.get("Features") or "").split()))
    if not flags:
        return None
    digest = hashlib.sha256(" ".join(flags).encode()).hexdigest()[:16]
    return {"count": len(flags), "sha256_16": digest, "notable": [f for f in NOTABLE_FLAGS if f in flags]}


def cache_sizes(root: Path = CACHES) -> dict[str, str]:
    """The first core's caches as sysfs lists them: ``{"L1d": "48K", "L1i": "32K", "L2": ..., "L3": ...}``
    (empty where sysfs has none)."""
    out = {}
    for index in sorted(root.glob("index*")):
        try:
            level, kind, size = ((index / n).read_text().strip() for n in ("level", "type", "size"))
        except OSError:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
        out[f"L{level}{suffix}"] = size
    return out


def _cpuinfo() -> dict[str, str]:
    try:
        return cpuinfo_fields(CPUINFO.read_text())
    except OSError:
        return {}


def _cpu_model(fields: dict[str, str] | None = None) -> str | None:
    fields = _cpuinfo() if fields is None else fields
    return fields.get("model name") or platform.processor() or None


def jax_build(devices: list) -> dict:
    """What jaxlib says of its build and of the backend it runs (``devices``: ``jax.devices()``, so
    JAX is loaded already): version, the commit it was built from, the backend's platform version
    (on a GPU, the CUDA versions), a GPU's compute capability."""
    out: dict = {"jaxlib": _version("jaxlib")}
    try:
        import jaxlib.version as jaxlib_version

        out["jaxlib_git"] = getattr(jaxlib_version, "_git_hash", None)
    except ImportError:
        pass
    client = getattr(devices[0], "client", None)
    out["platform_version"] = getattr(client, "platform_version", None)
    capability = getattr(devices[0], "compute_capability", None)
    if capability:
        out["compute_capability"] = str(capability)
    return out


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine(devices: list | None = None) -> dict:
    """What ran the job: CPU model and cores, memory, and the accelerator JAX trained on
    (``devices``: ``jax.devices()``; None: not asked, for callers that must not import JAX); and
    what tells two machines apart that this much records alike (two "2 CPU cores (AMD EPYC)" VMs
    gave other numbers from the first window): the CPU's family and model, its instruction-set
    features, its caches, the architecture, the numerics variables (XLA_FLAGS) and, with
    ``devices``, jaxlib's build."""
    fields = _cpuinfo()
    out: dict = {"cpu": _cpu_model(fields), "cores": os.cpu_count(), "memory_gib": _memory_gib()}
    if devices:
        out["backend"] = devices[0].platform
        out["devices"] = len(devices)
        out["device_kind"] = devices[0].device_kind
    out["arch"] = platform.machine() or None
    out["cpu_id"] = cpu_identity(fields)
    out["isa"] = isa_flags(fields)
    out["caches"] = cache_sizes()
    out["numerics_env"] = {var: os.environ[var] for var in NUMERICS_VARS if var in os.environ}
    if devices:
        out["jax_build"] = jax_build(devices)
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

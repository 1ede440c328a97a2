"""Give each job of a local sweep its own GPU, or its own CPU cores, before JAX starts.

With ``hydra/launcher=local`` (submitit_local) every job of a batch is a separate process on
this machine, started at the same time. Left alone they would all land on GPU 0 (or, since
submitit_local sets ``CUDA_VISIBLE_DEVICES=""`` unless ``gpus_per_node`` is given, on no GPU
at all), or compete for the same cores, each XLA process spreading threads over all of
them. :func:`place_job` is called by the job itself, first thing, before JAX is imported:

- GPUs present (counted with ``nvidia-smi -L``, else ``/proc/driver/nvidia/gpus``; JAX is
  not imported): the job's slot picks one GPU, ``CUDA_VISIBLE_DEVICES=<that one>``. More
  jobs than GPUs share them round-robin, and then ``XLA_PYTHON_CLIENT_PREALLOCATE=false``
  (unless set) so that the second job on a GPU does not find 75% of its memory taken.
- no GPU: the job's slot picks a block of ``cores // jobs_in_parallel`` cores out of the
  process's affinity mask (``os.sched_setaffinity``); XLA's CPU thread pools size
  themselves from that mask.
- several jobs on each GPU (``jobs_per_gpu``): slot ``k`` gets GPU ``k mod n_gpus``, each job
  a share of that GPU's memory (``XLA_PYTHON_CLIENT_MEM_FRACTION``: ``config.jobs.GPU_MEMORY_FOR_JOBS``
  divided among the jobs on it; JAX alone would preallocate 75% and may grow to all of it) as a cap
  that is not taken upfront (``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless set: preallocated
  shares leave the compiler's scratch buffers too little), and its own block of the machine's
  cores, since the jobs compile on the CPU side by side.
- under SLURM (``SLURM_JOB_ID`` set) nothing is changed: SLURM already placed the job.
- a single run, or a sweep with Hydra's basic launcher (one process, jobs in turn): nothing
  is changed either (``mode="auto"``); ``mode="off"`` disables placement everywhere.

The slot of a job is its index within its batch: the basic sweeper cuts a sweep into batches
of ``hydra.sweeper.max_batch_size`` jobs (all jobs when unset; with ``jobs_per_gpu`` and no
``max_batch_size``, ``jobs_per_gpu`` per GPU: :func:`jobs_at_once`) and submitit_local runs each
batch at once, so job ``num`` runs beside jobs ``num - num % B ... + B - 1``. Nothing here
imports JAX.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping, MutableMapping, Sequence

from rfig_exp.config.jobs import memory_share, validate_placement
from rfig_exp.results.status import seed_ranges

NVIDIA_PROC = Path("/proc/driver/nvidia/gpus")
# JAX's memory-fraction variable under its long-standing name and the newer one that its latest docs
# prefer; a value the user set under either is left alone, and only one name is ever set here.
MEM_FRACTION_VARS = ("XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_CLIENT_MEM_FRACTION")


def count_gpus(nvidia_smi: str | None = "nvidia-smi", proc_dir: Path = NVIDIA_PROC) -> int:
    """Number of NVIDIA GPUs on this machine, without importing JAX or CUDA.

    ``nvidia-smi -L`` prints one ``GPU i: ...`` line per GPU (MIG slices are indented lines
    under their GPU and are not counted); without nvidia-smi, the driver's proc folder has one
    entry per GPU. 0 when neither exists.
    """
    exe = shutil.which(nvidia_smi) if nvidia_smi else None
    if exe:
        try:
            out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=20)
            if out.returncode == 0:
                return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        return sum(1 for _ in proc_dir.iterdir())
    except OSError:
        return 0


def gpu_pool(gpus: Sequence[str] | None = None, num_gpus: int | None = None) -> list[str]:
    """The GPU ids jobs are placed on: ``gpus`` as given, else ``0..n-1`` for the machine's
    ``num_gpus`` (counted when None)."""
    if gpus is not None:
        return [str(g) for g in gpus]
    return [str(i) for i in range(count_gpus() if num_gpus is None else num_gpus)]


def jobs_at_once(max_batch_size: int | None, jobs_per_gpu: int | None, num_gpus: int) -> int | None:
    """How many jobs of a local sweep run at once: ``max_batch_size`` when set; else ``jobs_per_gpu``
    per GPU (on a machine without GPUs, ``jobs_per_gpu`` on its cores); None (every job of the
    sweep at once) when neither is set."""
    if max_batch_size:
        return max_batch_size
    if jobs_per_gpu is None:
        return None
    return jobs_per_gpu * max(num_gpus, 1)


def jobs_on_gpu(gpu_index: int, jobs_in_parallel: int, num_gpus: int) -> int:
    """Jobs of a batch of ``jobs_in_parallel`` that land on GPU ``gpu_index`` (slots go round-robin)."""
    return len(range(gpu_index, jobs_in_parallel, num_gpus))


def slot_of(job_index: int, jobs_in_parallel: int | None) -> int:
    """Index of a job among the jobs running beside it (its position in its batch)."""
    if job_index < 0:
        raise ValueError(f"job_index={job_index} must be >= 0")
    return job_index % jobs_in_parallel if jobs_in_parallel else job_index


def cpu_block(cores: Sequence[int], slot: int, jobs_in_parallel: int | None,
              cores_per_job: int | None = None) -> list[int]:
    """The cores of the job in ``slot``: equal contiguous blocks of ``cores``.

    ``cores_per_job`` defaults to ``len(cores) // jobs_in_parallel`` (at least 1; when
    ``jobs_in_parallel`` is unknown, 1). With more jobs than blocks, jobs share blocks
    round-robin (slot modulo the number of blocks).
    """
    cores = sorted(cores)
    if not cores:
        raise ValueError("no cores to place the job on")
    if cores_per_job is None:
        cores_per_job = max(1, len(cores) // jobs_in_parallel) if jobs_in_parallel else 1
    per = min(cores_per_job, len(cores))
    blocks = len(cores) // per
    block = slot % blocks
    return cores[block * per:(block + 1) * per]


def format_cores(cores: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``: taskset's notation, which is how status writes seed ranges."""
    return seed_ranges(cores)


def slurm_grant(env: Mapping[str, str], usable_cores: int) -> str:
    """What SLURM gave the job: the CPUs per task it granted (which a cluster without CPU
    binding does not enforce, hence the cores the process may use beside it) and its GPUs."""
    job = env.get("SLURM_ARRAY_JOB_ID", env["SLURM_JOB_ID"])
    task = f"_{env['SLURM_ARRAY_TASK_ID']}" if env.get("SLURM_ARRAY_TASK_ID") else ""
    granted = env.get("SLURM_CPUS_PER_TASK") or env.get("SLURM_JOB_CPUS_PER_NODE") or "?"
    binding = "" if str(usable_cores) == granted else f" (the process may run on {usable_cores}: no CPU binding)"
    return (f"placement: SLURM job {job}{task} on {env.get('SLURMD_NODENAME', '?')}: {granted} CPU(s) granted"
            f"{binding}, CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES', 'unset')}")


def place_job(job_index: int, jobs_in_parallel: int | None, *, local: bool, mode: str = "auto",
              gpus: Sequence[str] | None = None, cores_per_job: int | None = None, jobs_per_gpu: int | None = None,
              environ: MutableMapping[str, str] | None = None, num_gpus: int | None = None,
              set_affinity=os.sched_setaffinity, get_affinity=os.sched_getaffinity) -> str:
    """Place the calling process (a job of a local sweep) on its own GPU or CPU cores.

    Call it before JAX is imported. ``job_index``: the job's index in the sweep (Hydra's
    ``job.num``); ``jobs_in_parallel``: how many jobs run at once (``max_batch_size``; None
    when unknown, then one device per job is assumed, unless ``jobs_per_gpu`` says how many
    jobs share each GPU: :func:`jobs_at_once`). ``local``: the job is a submitit_local task (its
    sweep's ``hydra/launcher=local``), the only kind placed. ``gpus``: the GPU ids to use
    (default: all GPUs of the machine). ``mode``: ``auto`` places the local tasks; ``off`` none.
    ``environ``, ``num_gpus`` and the affinity functions are for tests.

    Returns one line describing what was done (for the job's log). Bad arguments raise
    :class:`ConfigError` naming the config key.
    """
    env = os.environ if environ is None else environ
    validate_placement(mode, jobs_in_parallel, cores_per_job, gpus, jobs_per_gpu)
    if mode == "off":
        return "placement: off (placement.mode=off)"
    if env.get("SLURM_JOB_ID"):
        return slurm_grant(env, len(get_affinity(0)))
    if not local:
        return "placement: not a local sweep job; left to the OS"

    warn = ""
    if "jax" in sys.modules:
        warn = " (jax was already imported: threads it started keep their old placement)"
    pool = gpu_pool(gpus, num_gpus)
    jobs_in_parallel = jobs_at_once(jobs_in_parallel, jobs_per_gpu, len(pool))
    slot = slot_of(job_index, jobs_in_parallel)
    parallel = f"{jobs_in_parallel} in parallel" if jobs_in_parallel else "all jobs at once"
    head = f"placement: local job {job_index} (slot {slot}, {parallel}) ->"
    if pool and jobs_per_gpu is not None:
        assert jobs_in_parallel is not None  # jobs_at_once with jobs_per_gpu set
        return head + _share_gpu(env, pool, slot, jobs_in_parallel, cores_per_job, set_affinity, get_affinity) + warn
    if pool:
        gpu = pool[slot % len(pool)]
        env["CUDA_VISIBLE_DEVICES"] = gpu
        note = ""
        if jobs_in_parallel is None or jobs_in_parallel > len(pool):
            # Two processes on one GPU: the second would find 75% of its memory preallocated.
            env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
            note = (f"; jobs may share GPUs (set hydra.sweeper.max_batch_size), "
                    f"XLA_PYTHON_CLIENT_PREALLOCATE={env['XLA_PYTHON_CLIENT_PREALLOCATE']}")
        return f"{head} GPU {gpu} of {len(pool)}{note}{warn}"
    return f"{head} {_pin_cores(slot, jobs_in_parallel, cores_per_job, set_affinity, get_affinity)}{warn}"


def _pin_cores(slot: int, jobs_in_parallel: int | None, cores_per_job: int | None, set_affinity,
               get_affinity) -> str:
    """Pin the process to its block of cores; says which."""
    cores = sorted(get_affinity(0))
    chosen = cpu_block(cores, slot, jobs_in_parallel, cores_per_job)
    set_affinity(0, chosen)
    return f"CPU cores {format_cores(chosen)} ({len(chosen)} of {len(cores)})"


def _share_gpu(env: MutableMapping[str, str], pool: list[str], slot: int, jobs_in_parallel: int,
               cores_per_job: int | None, set_affinity, get_affinity) -> str:
    """``jobs_per_gpu``: the slot's GPU, its share of that GPU's memory (when others share it) and
    its block of cores; says which."""
    index = slot % len(pool)
    sharing = jobs_on_gpu(index, jobs_in_parallel, len(pool))
    env["CUDA_VISIBLE_DEVICES"] = pool[index]
    memory = ""
    if sharing > 1:
        if not any(var in env for var in MEM_FRACTION_VARS):
            env[MEM_FRACTION_VARS[0]] = f"{memory_share(sharing):.2f}"
        var = next(v for v in MEM_FRACTION_VARS if v in env)
        # The share is a cap, not an upfront grab: six jobs each preallocating 0.15 of an H200 left
        # too little beside the pools for the autotuner's scratch buffers, and the jobs crashed
        # out of memory while compiling (their peaks were 0.3-2 GiB).
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        memory = f", {var}={env[var]}, XLA_PYTHON_CLIENT_PREALLOCATE={env['XLA_PYTHON_CLIENT_PREALLOCATE']}"
    cores = _pin_cores(slot, jobs_in_parallel, cores_per_job, set_affinity, get_affinity)
    return f" GPU {pool[index]} of {len(pool)} ({sharing} job(s) on it{memory}), {cores}"

"""The checks of how a sweep's jobs are grouped and placed: ``seeds_per_job``, ``members_per_job``
and ``placement.*``.

The run's settings declare them (``run_spec.RunSettings``) and check them here, before any job
starts; ``launch/grouping.py`` groups the seeds, ``launch/stacking.py`` stacks settings into
compiled jobs and ``run/placement.py`` places each job, all with these rules and constants.
Nothing here imports JAX.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from rfig_exp.config.errors import ConfigError

AUTO = "auto"  # seeds_per_job: every seed of a cell in one job on a GPU, else grouping.CPU_SEEDS_PER_JOB
MODES = ("auto", "off")  # placement.mode
# The part of a GPU's memory that the jobs sharing it divide among themselves; the rest is left to
# each process's CUDA context (outside JAX's pool) and the driver.
GPU_MEMORY_FOR_JOBS = 0.9


def memory_share(jobs: int) -> float:
    """Each job's fraction of its GPU's memory when ``jobs`` share it (two decimals, rounded down)."""
    return math.floor(GPU_MEMORY_FOR_JOBS * 100 / jobs) / 100


def validate_seeds_per_job(value: Any) -> None:
    """Raise ValueError unless ``value`` is ``auto`` or an integer >= 1."""
    if value == AUTO:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"seeds_per_job={value!r} must be auto or an integer >= 1")


def validate_members_per_job(value: Any) -> None:
    """Raise ValueError unless ``value`` is ``auto`` or an integer >= 1 (``launch/stacking.py``)."""
    if value == AUTO:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"members_per_job={value!r} must be auto or an integer >= 1")


def validate_placement(mode: str = "auto", jobs_in_parallel: int | None = None, cores_per_job: int | None = None,
                       gpus: Sequence[str] | None = None, jobs_per_gpu: int | None = None) -> None:
    """Check placement settings before any job starts; :class:`ConfigError` names the key."""
    if mode not in MODES:
        raise ConfigError(f"placement.mode={mode!r} is not one of: {', '.join(MODES)}")
    if jobs_in_parallel is not None and (isinstance(jobs_in_parallel, bool) or jobs_in_parallel < 1):
        raise ConfigError(f"hydra.sweeper.max_batch_size={jobs_in_parallel} must be >= 1")
    if cores_per_job is not None and (isinstance(cores_per_job, bool) or cores_per_job < 1):
        raise ConfigError(f"placement.cores_per_job={cores_per_job} must be >= 1")
    if jobs_per_gpu is not None:
        if isinstance(jobs_per_gpu, bool) or not isinstance(jobs_per_gpu, int) or jobs_per_gpu < 1:
            raise ConfigError(f"placement.jobs_per_gpu={jobs_per_gpu!r} must be null or an integer >= 1")
        if memory_share(jobs_per_gpu) <= 0:
            most = int(GPU_MEMORY_FOR_JOBS * 100)
            raise ConfigError(f"placement.jobs_per_gpu={jobs_per_gpu} leaves each job under 1% of a GPU's memory: "
                              f"at most {most}")
    if gpus is not None and (isinstance(gpus, str) or not isinstance(gpus, Sequence) or not len(gpus)
                             or not all(str(g).strip() for g in gpus)):
        raise ConfigError(f"placement.gpus={gpus!r} must be null or a non-empty list of GPU ids (e.g. [0, 1])")

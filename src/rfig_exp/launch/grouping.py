"""Seeds of a sweep grouped into vmapped jobs.

``python launch.py -m env=minatar_breakout bonus=rfig,rnd 'seed=range(32)'`` asks for 64 one-seed
runs. Run one per process and each pays its start-up and compilation (measured on an H200:
~7 s a job, 230 s for 32 seeds against 28 s for one job of 32 vmapped seeds). So jobs that
differ only in ``seed`` (and train one seed each) become jobs of up to ``seeds_per_job``
consecutive seeds, ``seed=s num_seeds=n``. A seed's results do not depend on its job: its key
is ``PRNGKey(seed)`` and a vmapped seed matches the same seed run alone (tests/test_training.py),
and it writes the same ``seed_<k>`` directory. Each group is one job, hence one SLURM array
task and one placement slot; resume stays per seed.

``seeds_per_job``: ``auto`` = every seed of a cell in one job when the jobs get a GPU (a local
one, or ``hydra.launcher.gpus_per_node`` for SLURM), else :data:`CPU_SEEDS_PER_JOB`; or an
integer (1 keeps every seed in its own job). Nothing here imports JAX.

One exception, on a CPU only: vmapped seeds of sparse Brax PPO on brax's default ``generalized``
backend can wedge XLA's CPU runtime for ever (README, *XLA CPU wedges*; 2 of 3 attempts with 8
seeds, cause not found), so such a Brax job of a sweep that gets no GPU trains one seed per process
(:func:`one_seed_per_brax_job`), said once on the console; a backend in
``rfig_exp.envs.suites.brax.VMAP_SAFE_CPU_BACKENDS`` keeps its seeds vmapped (each env declares
whether its seeds vmap on a CPU). A single run of several Brax seeds on such a backend on a CPU is
warned about (:func:`brax_cpu_warning`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from rfig_exp.config.jobs import AUTO, validate_seeds_per_job

# On this project's 2-core CPU, 8 vmapped seeds gave 1.06-1.14x the env steps/s of 1 seed
# (docs/speed.md); larger groups gain little more on a CPU and lose more to a crash.
CPU_SEEDS_PER_JOB = 8


def gpu_visible() -> bool:
    """An NVIDIA GPU on this machine that CUDA_VISIBLE_DEVICES does not hide."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    gpus = Path("/proc/driver/nvidia/gpus")
    return gpus.is_dir() and any(gpus.iterdir())


def resolve(value: Any, gpu: bool) -> int | None:
    """Seeds per job for ``value`` (None: all seeds of a cell in one job)."""
    validate_seeds_per_job(value)
    if value == AUTO:
        return None if gpu else CPU_SEEDS_PER_JOB
    return int(value)


def _split(override: str) -> tuple[str, str]:
    key, _, value = override.partition("=")
    return key, value


def _chunks(seeds: list[int], size: int | None) -> list[list[int]]:
    """Runs of consecutive seeds, each cut into pieces of at most ``size`` (None: no cut)."""
    runs: list[list[int]] = []
    for s in sorted(set(seeds)):
        if runs and s == runs[-1][-1] + 1 and (size is None or len(runs[-1]) < size):
            runs[-1].append(s)
        else:
            runs.append([s])
    return runs


def group_seeds(jobs: Sequence[Sequence[str]], seeds_per_job: int | None,
                default_num_seeds: int = 1) -> list[list[str]]:
    """Jobs (override lists) that differ only in ``seed=`` and train one seed each, merged into
    jobs of consecutive seeds (``seed=s0 num_seeds=n``). Others are kept as they are; the order
    is that of each group's first job. ``default_num_seeds``: num_seeds where a job sets none."""
    if seeds_per_job == 1:
        return [list(j) for j in jobs]
    groups: dict[tuple, tuple[list[str], list[int]]] = {}
    order: list[tuple] = []
    for job in jobs:
        fields = [_split(o) for o in job]
        seed_at = [i for i, (k, _) in enumerate(fields) if k == "seed"]
        num = next((v for k, v in fields if k == "num_seeds"), None)
        single = (num is None and default_num_seeds == 1) or num == "1"
        if len(seed_at) != 1 or not single or not fields[seed_at[0]][1].lstrip("-").isdigit():
            key = ("as-is", len(order))
            groups[key] = (list(job), [])
            order.append(key)
            continue
        key = tuple(o for i, o in enumerate(job) if i != seed_at[0] and _split(o)[0] != "num_seeds")
        if key not in groups:
            groups[key] = (list(job), [])
            order.append(key)
        groups[key][1].append(int(fields[seed_at[0]][1]))
    out: list[list[str]] = []
    for key in order:
        template, seeds = groups[key]
        if not seeds:
            out.append(template)
            continue
        for chunk in _chunks(seeds, seeds_per_job):
            job = [o for o in template if _split(o)[0] != "num_seeds"]
            job = [f"seed={chunk[0]}" if _split(o)[0] == "seed" else o for o in job]
            out.append(job + ([f"num_seeds={len(chunk)}"] if len(chunk) > 1 or "num_seeds=1" in template else []))
    return out


def splits_on_cpu(env: str, backend: str | None) -> bool:
    """Whether several vmapped seeds of ``env`` on ``backend`` (None: the env's default) risk the
    XLA CPU wedge, so that a CPU sweep trains them one seed per process: what the env's declaration
    says (``EnvSettings.seeds_vmap_on_cpu``; an env that is not declared, a user's, vmaps)."""
    from rfig_exp.envs import declared_envs

    declared = declared_envs().get(str(env))
    return declared is not None and not declared.settings.seeds_vmap_on_cpu({"backend": backend} if backend else {})


def brax_cpu_warning(env: str, num_seeds: int, gpu: bool, seed: int = 0, backend: str | None = None) -> str | None:
    """The warning for one (non-sweep) run of ``num_seeds`` vmapped Brax seeds (None: no risk)."""
    if gpu or num_seeds <= 1 or not splits_on_cpu(env, backend):
        return None
    return (f"warning: env={env} num_seeds={num_seeds} on a CPU: vmapped Brax seeds can wedge XLA's CPU runtime "
            f"(README: XLA CPU wedges); its supervisor ends a wedged run with exit 75 (resumable). Safer: one seed per "
            f"process, e.g. python launch.py -m env={env} 'seed=range({seed},{seed + num_seeds})' "
            "(a sweep does this by "
            "itself)")


def one_seed_per_brax_job(jobs: Sequence[Sequence[str]], gpu: bool, default_env: str,
                          default_num_seeds: int = 1, default_seed: int = 0,
                          default_backend: str | None = None) -> list[list[str]]:
    """On a CPU (``gpu`` False), each Brax job of ``n > 1`` seeds (``seed=s num_seeds=n``, either
    from the job or from the defaults) on a backend that can wedge (:func:`splits_on_cpu`; the
    job's ``env.backend``, else ``default_backend``, else the env's own) becomes ``n`` jobs of one
    seed; the rest are kept."""
    out: list[list[str]] = []
    for job in jobs:
        fields = dict(_split(o.removeprefix("++")) for o in job)
        env = fields.get("env", default_env)
        num = int(fields.get("num_seeds", default_num_seeds))
        if gpu or num <= 1 or not splits_on_cpu(env, fields.get("env.backend", default_backend)):
            out.append(list(job))
            continue
        first = int(fields.get("seed", default_seed))
        rest = [o for o in job if _split(o)[0] not in ("seed", "num_seeds")]
        out.extend(rest + [f"seed={first + i}", "num_seeds=1"] for i in range(num))
    return out


def plan(jobs: Sequence[Sequence[str]], seeds_per_job, gpu: bool, default_env: str, default_num_seeds: int = 1,
         default_seed: int = 0, default_backend: str | None = None) -> tuple[list[list[str]], list[str]]:
    """A sweep's jobs as they run: seeds grouped (:func:`group_seeds`), then Brax split on a CPU
    (:func:`one_seed_per_brax_job`; ``default_backend``: the sweep's ``env.backend`` where a job sets
    none); with the console lines that say what changed. Shared by preflight and the sweeper, so
    both see the same jobs."""
    size = resolve(seeds_per_job, gpu)
    grouped = group_seeds(jobs, size, default_num_seeds)
    lines = [line for line in [describe(len(jobs), grouped, size)] if line]
    split = one_seed_per_brax_job(grouped, gpu, default_env, default_num_seeds, default_seed, default_backend)
    if len(split) != len(grouped):
        kept = {tuple(j) for j in grouped} & {tuple(j) for j in split}
        envs = {dict(_split(o) for o in j).get("env", default_env) for j in grouped if tuple(j) not in kept}
        brax = sorted(envs)  # the envs of the jobs split: those whose seeds do not vmap on a CPU
        lines.append(f"[sweep] no GPU: the Brax jobs ({', '.join(brax)}) train one seed per process, {len(grouped)} "
                     f"jobs -> {len(split)} (vmapped Brax seeds on the generalized backend can wedge XLA on a CPU: "
                     "README, XLA CPU wedges; env.backend=spring keeps them vmapped)")
    return split, lines


def describe(before: int, after: list[list[str]], seeds_per_job: int | None) -> str | None:
    """The console line that says what grouping did (None when it changed nothing)."""
    if len(after) == before:
        return None
    limit = "all seeds of a cell" if seeds_per_job is None else f"up to {seeds_per_job}"
    return (f"[sweep] {before} jobs that differ only in their seed run as {len(after)} jobs of {limit} vmapped "
            "seeds (seeds_per_job; seeds_per_job=1 keeps one seed per job)")

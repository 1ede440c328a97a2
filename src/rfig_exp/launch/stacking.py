"""A sweep's runs stacked into compiled jobs: split where the program changes, vmap the rest.

``python launch.py -m bonus.beta=0.25,0.5,1 agent.lr=1e-4,3e-4 'seed=range(8)'`` asks for 48 runs
that differ only in their seed and two traced settings (numbers the compiled function takes as
arguments, ``rfig_exp.spec.stack``). Seed grouping (:mod:`rfig_exp.launch.grouping`) makes them
6 jobs of 8 seeds, one per setting; :func:`stack` puts jobs of one compiled program and *different*
traced settings into one job, so the 48 runs train as one vmapped program with a hyperparameter
row per member. Jobs that differ in a static setting (the env, the bonus, a width, ``num_envs``)
stay apart, and so do jobs of the same settings (a cell's seed blocks, which ``seeds_per_job`` cut
on purpose): a seed-only sweep is planned exactly as before.

How many members a job may hold (``members_per_job``): ``auto`` = every stackable run of a program
on a GPU, and on a CPU at most :data:`CPU_MEMBERS_PER_JOB` (what measurement showed to pay here,
docs/speed.md); an integer caps it (1: no stacking). A job of one setting keeps its seeds whatever
the cap. Memory is checked where the job runs, on its device: a job whose members would not fit
trains them in equal turns (``rfig_exp.run.memory``, ``rfig_exp.run.experiment.in_turns``). Brax
jobs that a CPU sweep trains one seed per process are not stacked (grouping's XLA CPU wedge). Nothing here imports JAX.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from rfig_exp.config import variants
from rfig_exp.config.jobs import AUTO, validate_members_per_job
from rfig_exp.spec.run_spec import RunSpec
from rfig_exp.spec.stack import Job, JobPart, program_key, traced_values

# On this project's 2-core CPU, 48 stacked MountainCar RFIG runs took 0.95-0.96x the CPU time of the
# same runs as 6 jobs of 8 seeds (docs/speed.md, "Stacked sweep jobs"): stacking pays a little, so a
# CPU job holds up to a whole 3 x 2 x 8 grid; larger stacks gain nothing more and lose more to a crash.
CPU_MEMBERS_PER_JOB = 48


def resolve(value: Any, gpu: bool) -> int:
    """Members per stacked job for ``members_per_job=value``: an integer as given; ``auto`` on a CPU
    :data:`CPU_MEMBERS_PER_JOB`, on a GPU no cap (the job's memory decides when it runs)."""
    validate_members_per_job(value)
    if value != AUTO:
        return int(value)
    return 1 << 30 if gpu else CPU_MEMBERS_PER_JOB


def stack(validated: Sequence[tuple[Sequence[str], RunSpec]], cap: Callable[[RunSpec], int]) -> list[Job]:
    """``validated`` (each job's overrides and run spec, in launch order) as compiled jobs: a job
    joins the first earlier one of its program whose parts all have other traced settings and which
    stays within ``cap(spec)`` members (1: it stays alone), else starts one; jobs keep the order of
    their first part."""
    jobs: list[list[JobPart]] = []
    open_jobs: dict[str, list[int]] = {}  # program -> indices of its jobs in ``jobs``
    for overrides, spec in validated:
        part = JobPart(spec, tuple(overrides))
        key, values, limit = program_key(spec), repr(traced_values(spec)), cap(spec)
        for i in open_jobs.get(key, []):
            members = sum(len(p.spec.seeds) for p in jobs[i])
            if members + len(spec.seeds) <= limit and all(repr(traced_values(p.spec)) != values for p in jobs[i]):
                jobs[i].append(part)
                break
        else:
            open_jobs.setdefault(key, []).append(len(jobs))
            jobs.append([part])
    return [Job(tuple(parts)) for parts in jobs]


def _value(spec: RunSpec, key: str) -> str:
    """``key``'s value in ``spec``'s config as text (a group: its choice)."""
    flat = variants.flatten(spec.resolved_config)
    return str(flat.get(f"{key}.name", flat.get(key)) if key in variants.GROUPS else flat.get(key))


def describe(jobs: Sequence[Job], keys: Sequence[str], seconds: float, one_seed_envs: Sequence[str] = ()) -> str:
    """The one console line that says how a sweep's runs became compiled jobs and how long their
    validation took: ``[sweep] 96 runs as 4 compiled jobs of 24 runs, vmapped over seed, agent.lr,
    bonus.beta; split by env; validated in 2.1s``. ``keys``: the keys the sweep varies;
    ``one_seed_envs``: the Brax envs a CPU sweep trains one seed per job (grouping's XLA CPU wedge)."""
    runs = sum(job.members for job in jobs)
    within = ["seed"] if any(job.members > len(job.parts) for job in jobs) else []
    across = []
    for key in [*(g for g in variants.GROUPS if g != "agent"), *keys]:
        per_job = [{_value(p.spec, key) for p in job.parts} for job in jobs]
        if any(len(values) > 1 for values in per_job):
            within.append(key)
        elif len(set().union(*per_job)) > 1:
            across.append(key)
    # a cell's seeds cut into several jobs of one program and one setting: seeds_per_job's blocks
    cells: dict[tuple[str, str], set[int]] = {}
    for i, job in enumerate(jobs):
        for p in job.parts:
            cells.setdefault((program_key(p.spec), repr(traced_values(p.spec))), set()).add(i)
    blocks = max((len(p.spec.seeds) for job in jobs for p in job.parts
                  if len(cells[(program_key(p.spec), repr(traced_values(p.spec)))]) > 1), default=0)
    notes = [f"split by {', '.join(across)}"] if across else []
    if blocks:
        notes.append(f"a cell's seeds in jobs of up to {blocks} (seeds_per_job)")
    if one_seed_envs:
        notes.append(f"one seed per job for {', '.join(one_seed_envs)} (no GPU: vmapped Brax seeds on the "
                      "generalized backend can wedge XLA on a CPU, README; env.backend=spring keeps them vmapped)")
    sizes = sorted({job.members for job in jobs})
    each = "-".join(map(str, sizes[::max(1, len(sizes) - 1)]))
    line = (f"[sweep] {runs} run{'s' if runs != 1 else ''} as {len(jobs)} compiled job{'s' if len(jobs) != 1 else ''}"
            f" of {each} run{'s' if sizes[-1] > 1 else ''}, "
            + (f"vmapped over {', '.join(within)}" if within else "nothing vmapped"))
    return "; ".join([line, *notes, f"validated in {seconds:.1f}s"])

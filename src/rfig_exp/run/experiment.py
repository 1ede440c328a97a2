"""Run one job (env, bonus, one compiled program: a group of vmapped seeds, or of (seed, settings)
members of a stacked sweep job) and write the results contract of each of its runs.

This module decides what the job does and who does it; :mod:`rfig_exp.run.run_loop` trains.

Each seed's run directory is decided before anything is compiled
(:func:`rfig_exp.results.seed_plan.plan_seeds`): complete with the same config -> skipped; partial with
the same config -> resumed from its last checkpoint; saved with another config -> refused
(``overwrite=true`` replaces it).
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from rfig_exp.agents import trainer_module
from rfig_exp.bonuses import make_bonus
from rfig_exp.config import variants
from rfig_exp.envs import make_env
from rfig_exp.results import contract as results
from rfig_exp.results import ownership
from rfig_exp.results.seed_plan import SeedPlan, plan_seeds, seed_run_dir
from rfig_exp.run import checkpoint
from rfig_exp.run.observers import StopSignals
from rfig_exp.run.run_loop import JobRun, Member, run_label
from rfig_exp.run.tracking import log
from rfig_exp.spec.run_spec import RunSpec, build_run_spec
from rfig_exp.spec.stack import Job, JobPart, traced_values


def use_compile_cache(directory: str | None) -> None:
    """Point JAX's persistent compilation cache at ``directory`` (None: leave it off)."""
    if directory:
        import jax

        Path(directory).mkdir(parents=True, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", str(directory))
        # Cache everything that takes a second to compile: the windows, inits and features.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def run_experiment(cfg, command_line: Sequence[str] = (), sweep_varies: Sequence[str] = ()) -> list[results.RunSummary]:
    """Validate ``cfg``, train every seed that is not already complete, write results.

    ``command_line`` (the overrides as typed) goes into each summary; ``sweep_varies`` (the keys
    this job's sweep varies) come first in its console prefix. Trained in this process, unwatched
    (a launched job is trained by the same :func:`run_job` in a supervised process of its own,
    rfig_exp.launch.task). Returns the summaries written (empty when everything was complete
    already). Nothing reads ``cfg`` once its spec is built.
    """
    return run_spec(build_run_spec(cfg), command_line, sweep_varies)


def run_spec(spec: RunSpec, command_line: Sequence[str] = (), sweep_varies: Sequence[str] = (),
             signals: StopSignals | None = None) -> list[results.RunSummary]:
    """:func:`run_experiment` for a spec already built; ``signals``: the stop signals, entered by
    the caller (None: the job's own)."""
    return run_job(Job((JobPart(spec, tuple(command_line)),)), sweep_varies, signals)


def run_job(job: Job, sweep_varies: Sequence[str] = (), signals: StopSignals | None = None,
            pulse: Callable[[tuple], Any] | None = None) -> list[results.RunSummary]:
    """Train the runs of ``job`` (its parts' seeds, one compiled program) that are not complete:
    each member writes the run directory, metrics and summary it would write as a job of its own,
    and resumes from its own checkpoints. ``pulse``: the supervisor's pipe (``JobRun``'s); the
    other arguments as :func:`run_spec`'s."""
    spec = job.first
    plans = [(part, p) for part in job.parts for p in plan_seeds(part.spec)]
    env = make_env(spec.env)
    bonus, _ = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    name = _job_name(job, sweep_varies)
    todo = [(part, p) for part, p in plans if p.action == "run"]
    if not todo:
        log.info("[%s] already complete in %s; skipping (overwrite=true re-runs it)", _with_runs(name, plans),
                 _where([p for _, p in plans]))
        return []
    if len(todo) < len(plans):
        log.info("[%s] %s are complete; running only %s", name, _runs_named([(pt, p) for pt, p in plans
                                                                        if p.action == "skip"], job),
                 _runs_named(todo, job))
    for part in {id(pt): pt for pt, _ in todo}.values():
        if spec.bonus_name == "none" and getattr(part.spec.agent, "ext_coef", None) == 0.0:
            log.info("[%s] agent.ext_coef=0 with bonus=none: the entropy-only policy (no reward at all)", name)
    if spec.total_env_steps != spec.requested_timesteps:
        log.info("[%s] agent.total_timesteps=%s rounded up to %d windows of %s steps = %s env steps", name,
                 f"{spec.requested_timesteps:,}", spec.num_windows, f"{spec.eval_frequency:,}",
                 f"{spec.total_env_steps:,}")
    locks = _claim(spec, [p for _, p in todo], name)
    try:
        mine = [Member(part.spec, p, part.overrides) for part, p in todo if p.path in locks]
        if not mine:
            return []
        for path, overrides in {m.path.parent: m.spec.variant_overrides for m in mine}.items():
            results.write_variant(path, overrides)
        use_compile_cache(spec.compile_cache)
        summaries: list[results.RunSummary] = []
        for turn in in_turns(mine, env, bonus, name):
            summaries += JobRun(turn, env, bonus, member_hparams(turn),
                                _with_runs(name, [(None, m.plan) for m in turn]),
                                heartbeat=lambda: [lock.beat() for lock in locks.values()],
                                pulse=pulse, signals=signals).train()
        return summaries
    finally:
        for lock in locks.values():
            lock.release()


def runs_not_complete(job: Job) -> list[Path]:
    """The run folders of ``job`` that are not complete: after :func:`run_job` returned, those it
    left to another live process that trains them (``_claim``), which a relaunch must check."""
    return [path for part in job.parts for s in part.spec.seeds
            if not results.is_complete(path := seed_run_dir(part.spec, s))]


def in_turns(members: list[Member], env, bonus, name: str) -> list[list[Member]]:
    """The members of a stacked job in turns: those whose checkpoints resume at the same window
    together (a sweep extended by a setting, or a member resumed alone before: each resumes from
    its own checkpoint), each group cut into equal turns that fit in this process's memory
    (``rfig_exp.run.memory``). One turn when the members differ only in their seed: a job of
    vmapped seeds is trained whole, as it always was."""
    if len({repr(traced_values(m.spec)) for m in members}) == 1:
        return [members]
    groups: dict[int, list[Member]] = {}
    for m in members:
        groups.setdefault(_resume_window(m), []).append(m)
    if len(groups) > 1:
        log.info("[%s] its runs resume from different windows (%s): trained in turns, one per window", name,
                 ", ".join(f"{len(g)} from {w}" for w, g in sorted(groups.items())))
    return [turn for group in groups.values() for turn in _fitting(group, env, bonus, name)]


def _resume_window(member: Member) -> int:
    """The window of the newest checkpoint ``member`` may resume from (0: none), from the file names
    (the run loop checks the files themselves)."""
    if member.spec.overwrite:
        return 0
    rows = results.whole_rows(member.path)
    return max((w for w in checkpoint.windows(member.path) if w <= rows), default=0)


def _fitting(members: list[Member], env, bonus, name: str) -> list[list[Member]]:
    """``members`` in equal turns that fit in this process's memory (equal turns compile one program)."""
    from rfig_exp.run import memory

    spec = members[0].spec
    trainer = trainer_module(spec.agent).make_trainer(spec.train, env, bonus)
    per_member = memory.bytes_per_member(trainer.init, member_hparams(members[:1]), spec.loop.steps_per_update,
                                         env.obs_shape)
    available = memory.budget()
    fit = memory.members_that_fit(per_member, available)
    if fit is None or fit >= len(members):
        return [members]
    turns = -(-len(members) // fit)
    size = -(-len(members) // turns)
    log.info("[%s] %d runs of ~%.0f MB each do not fit in %.1f GB at once: %d turns of up to %d", name, len(members),
             per_member / 2**20, (available or 0) / 2**30, turns, size)
    return [members[i:i + size] for i in range(0, len(members), size)]


def member_hparams(members: Sequence[Member]):
    """The compiled function's hyperparameters for ``members``: one set of float32 scalars when they
    all have the same traced settings (every single run and seed-only job: the program of a run
    alone), else one row per member (``[M]`` leaves), the members' job-wide settings aside."""
    from rfig_exp.bonuses.base import float32_hparams

    first = members[0].spec.bonus
    as_arrays = trainer_module(members[0].spec.agent).as_arrays

    def of(spec: RunSpec):
        # bonus.beta is the agent's hparams.beta (PPOHparams.beta), a leaf; the bonus's own object carries it as
        # static data, which must be the same in every row for the rows to stack
        return as_arrays(spec.hparams(float32_hparams(dataclasses.replace(spec.bonus, beta=first.beta))))

    if len({repr(traced_values(m.spec)) for m in members}) == 1:
        return as_arrays(members[0].spec.hparams(float32_hparams(first)))
    import jax
    import jax.numpy as jnp

    rows = [of(m.spec) for m in members]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *rows)


def _job_name(job: Job, sweep_varies: Sequence[str]) -> str:
    """The console prefix: env/bonus, then what tells this job from the others of its sweep (a
    stacked job: how many settings it trains)."""
    spec = job.first
    if len(job.parts) > 1:
        return f"{spec.env_name}/{spec.bonus_name} {len({p.spec.variant for p in job.parts})} settings"
    varying = {k: _lookup(spec.resolved_config, k) for k in sweep_varies}
    tag = variants.variant_tag(spec.variant_overrides, {k: v for k, v in varying.items()
                                                        if v is not None and not isinstance(v, (dict, list))})
    return f"{spec.env_name}/{spec.bonus_name}" + (f"/{tag}" if tag else "")


def _with_runs(name: str, plans: Sequence[tuple[Any, SeedPlan]]) -> str:
    """``name`` and the seeds it trains: ``... seeds 0-7`` (a stacked job: ``... x seeds 0-7``)."""
    seeds = sorted({p.seed for _, p in plans})
    return f"{name}{' x' if ' settings' in name else ''} seeds {_seed_range(seeds)}"


def _runs_named(plans: Sequence[tuple[JobPart, SeedPlan]], job: Job) -> str:
    """Some runs of ``job`` as the console names them: ``seeds 0-3``, or with each one's variant."""
    if len(job.parts) == 1:
        return f"seeds {_seed_range([p.seed for _, p in plans])}"
    return ", ".join(f"{part.spec.variant}/seed_{p.seed}" for part, p in plans)


def _where(plans: Sequence[SeedPlan]) -> Path:
    """The folder that holds every run of ``plans`` (a variant's, or the bonus's for a stacked job)."""
    return Path(os.path.commonpath([str(p.path.parent) for p in plans]))


def _lookup(tree: dict, dotted: str):
    for part in dotted.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def _say_takeovers(name: str, taken: list[Any]) -> None:
    """One line for the run folders a job took over from processes that are gone (a relaunched
    sweep's job takes one per seed)."""
    if len(taken) == 1:
        log.warning("[%s] took over %s from a process that is gone (%s)", name, taken[0].path,
                    ownership.describe(taken[0].taken_from))
    elif taken:
        log.warning("[%s] took over %d run folders from processes that are gone (the first: %s, held by %s)", name,
                    len(taken), taken[0].path.parent, ownership.describe(taken[0].taken_from))


def _claim(spec: RunSpec, todo: list[SeedPlan], name: str) -> dict[Path, Any]:
    """One owner per run folder (rfig_exp.results.ownership): the locks of the runs this job trains,
    by folder, leaving out runs another live process trains and runs it completed meanwhile."""
    stall = spec.watch.stall_timeout_s
    stale_after = 3 * stall if stall > 0 else 3600.0
    locks: dict[Path, Any] = {}
    owners: dict[Path, Any] = {}
    label = run_label(todo)
    try:
        # A requeued job can start while its previous process is still exiting: give a live
        # owner a short grace period to let go before leaving its run to it.
        deadline = time.monotonic() + spec.watch.owner_grace_s
        waiting = list(todo)
        while waiting:
            for p in list(waiting):
                lock, owners[p.path] = ownership.acquire(p.path, stale_after)
                if lock is not None:
                    locks[p.path] = lock
                    waiting.remove(p)
            if not waiting or time.monotonic() >= deadline:
                break
            time.sleep(1.0)
        _say_takeovers(name, [lk for lk in locks.values() if lk.taken_from is not None])
        for p in waiting:
            log.info("[%s] %s is being trained by %s; leaving it to that process", name, label(p),
                     ownership.describe(owners[p.path] or {}))
        for p in todo:  # finished by the owner we waited for: nothing left to do
            if p.path in locks and not spec.overwrite and results.is_complete(p.path):
                log.info("[%s] %s was completed by %s while this job waited; skipping", name, label(p),
                         ownership.describe(owners.get(p.path) or {}) if owners.get(p.path) else "another process")
                locks.pop(p.path).release()
    except BaseException:
        for lock in locks.values():
            lock.release()
        raise
    return locks


def _seed_range(seeds) -> str:
    seeds = list(seeds)
    contiguous = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
    return f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 1 else ",".join(map(str, seeds))

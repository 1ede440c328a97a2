"""Run one experiment (env, bonus, variant, a group of vmapped seeds) and write the results contract.

This module decides what the job does and who does it; :mod:`rfig_exp.run.run_loop` trains.

Each seed's run directory is decided before anything is compiled
(:func:`rfig_exp.results.seed_plan.plan_seeds`): complete with the same config -> skipped; partial with
the same config -> resumed from its last checkpoint; saved with another config -> refused
(``overwrite=true`` replaces it).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

from rfig_exp.bonuses import make_bonus
from rfig_exp.config import variants
from rfig_exp.envs import make_env
from rfig_exp.results import contract as results
from rfig_exp.results import ownership
from rfig_exp.results.seed_plan import SeedPlan, plan_seeds
from rfig_exp.run.observers import StopSignals
from rfig_exp.run.run_loop import JobRun
from rfig_exp.run.tracking import log
from rfig_exp.spec.run_spec import RunSpec, build_run_spec


def use_compile_cache(directory: str | None) -> None:
    """Point JAX's persistent compilation cache at ``directory`` (None: leave it off)."""
    if directory:
        import jax

        Path(directory).mkdir(parents=True, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", str(directory))
        # Cache everything that takes a second to compile: the windows, inits and features.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def run_experiment(cfg, command_line: Sequence[str] = (), sweep_varies: Sequence[str] = (),
                   after_stall: Callable[[str], None] | None = None) -> list[results.RunSummary]:
    """Validate ``cfg``, train every seed that is not already complete, write results.

    ``command_line`` (the overrides as typed) goes into each summary; ``sweep_varies`` (the keys
    this job's sweep varies) come first in its console prefix; ``after_stall`` ends the process
    when the watchdog finds it wedged (None: exit 75). Returns the summaries written (empty when
    everything was complete already). Nothing reads ``cfg`` once its spec is built.
    """
    return run_spec(build_run_spec(cfg), command_line, sweep_varies, after_stall)


def run_spec(spec: RunSpec, command_line: Sequence[str] = (), sweep_varies: Sequence[str] = (),
             after_stall: Callable[[str], None] | None = None,
             signals: StopSignals | None = None) -> list[results.RunSummary]:
    """:func:`run_experiment` for a spec already built; ``signals``: the stop signals, entered by
    the caller (None: the job's own)."""
    plans = plan_seeds(spec)
    env = make_env(spec.env)
    bonus, bonus_hparams = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    from rfig_exp.agents.ppo.train import as_arrays

    hparams = as_arrays(spec.hparams(bonus_hparams))
    name = _job_name(spec, sweep_varies)
    todo = [p for p in plans if p.action == "run"]
    if not todo:
        log.info("[%s seeds %s] already complete in %s; skipping (overwrite=true re-runs it)",
                 name, _seed_range(spec.seeds), plans[0].path.parent)
        return []
    if len(todo) < len(plans):
        log.info("[%s] seeds %s are complete; running only seeds %s", name,
                 _seed_range([p.seed for p in plans if p.action == "skip"]), _seed_range([p.seed for p in todo]))
    if spec.bonus_name == "none" and float(hparams.agent.ext_coef) == 0.0:
        log.info("[%s] agent.ext_coef=0 with bonus=none: the entropy-only policy (no reward at all)", name)
    if spec.total_env_steps != spec.requested_timesteps:
        log.info("[%s] agent.total_timesteps=%s rounded up to %d windows of %s steps = %s env steps", name,
                 f"{spec.requested_timesteps:,}", spec.num_windows, f"{spec.eval_frequency:,}",
                 f"{spec.total_env_steps:,}")
    locks = _claim(spec, todo, name)
    try:
        mine = [p for p in todo if p.seed in locks]
        if not mine:
            return []
        results.write_variant(mine[0].path.parent, spec.variant_overrides)
        use_compile_cache(spec.compile_cache)
        return JobRun(spec, env, bonus, hparams, mine, f"{name} seeds {_seed_range([p.seed for p in mine])}",
                      command_line, heartbeat=lambda: [lock.beat() for lock in locks.values()],
                      release=lambda: [lock.release() for lock in locks.values()],
                      after_stall=after_stall, signals=signals).train()
    finally:
        for lock in locks.values():
            lock.release()


def _job_name(spec: RunSpec, sweep_varies: Sequence[str]) -> str:
    """The console prefix: env/bonus, then what tells this job from the others of its sweep."""
    varying = {k: _lookup(spec.resolved_config, k) for k in sweep_varies}
    tag = variants.variant_tag(spec.variant_overrides, {k: v for k, v in varying.items()
                                                        if v is not None and not isinstance(v, (dict, list))})
    return f"{spec.env_name}/{spec.bonus_name}" + (f"/{tag}" if tag else "")


def _lookup(tree: dict, dotted: str):
    for part in dotted.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


def _claim(spec: RunSpec, todo: list[SeedPlan], name: str) -> dict:
    """One owner per run folder (rfig_exp.results.ownership): the locks of the seeds this job trains,
    leaving out seeds another live process trains and seeds it completed meanwhile."""
    stall = spec.watch.stall_timeout_s
    stale_after = 3 * stall if stall > 0 else 3600.0
    locks, owners = {}, {}
    try:
        # A requeued job can start while its previous process is still exiting: give a live
        # owner a short grace period to let go before leaving its seed to it.
        deadline = time.monotonic() + spec.watch.owner_grace_s
        waiting = list(todo)
        while waiting:
            for p in list(waiting):
                lock, owners[p.seed] = ownership.acquire(p.path, stale_after, name)
                if lock is not None:
                    locks[p.seed] = lock
                    waiting.remove(p)
            if not waiting or time.monotonic() >= deadline:
                break
            time.sleep(1.0)
        for p in waiting:
            log.info("[%s] seed %d is being trained by %s; leaving it to that process", name, p.seed,
                     ownership.describe(owners[p.seed] or {}))
        for p in todo:  # finished by the owner we waited for: nothing left to do
            if p.seed in locks and not spec.overwrite and results.is_complete(p.path):
                log.info("[%s] seed %d was completed by %s while this job waited; skipping", name, p.seed,
                         ownership.describe(owners.get(p.seed) or {}) if owners.get(p.seed) else "another process")
                locks.pop(p.seed).release()
    except BaseException:
        for lock in locks.values():
            lock.release()
        raise
    return locks


def _seed_range(seeds) -> str:
    seeds = list(seeds)
    contiguous = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
    return f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 1 else ",".join(map(str, seeds))

"""One job's training loop: restore or initialise, then windows handed to observers, then summaries.

A thin Python loop around one compiled window function. Windows are pipelined: window w+1 is
dispatched before window w's metrics are read, so the host's work (rows, wandb, the progress
line) overlaps the device's. After each window the observers (:mod:`rfig_exp.run.observers`) write
the metrics, guard against divergence, mirror to wandb, checkpoint and print progress; nothing
inside a window touches the host.
"""

from __future__ import annotations

import datetime
import errno
import logging
import os
import signal
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from rfig_exp.agents import trainer_module
from rfig_exp.agents.contract import EVAL_LENGTH, EVAL_RETURN, Trainer
from rfig_exp.config.errors import ExitCode, Interrupted, RunFailed
from rfig_exp.results import contract as results
from rfig_exp.results.seed_plan import SeedPlan
from rfig_exp.run import checkpoint, provenance
from rfig_exp.run.observers import (
    Checkpointer,
    DivergenceGuard,
    MetricsFiles,
    ProgressLine,
    Pulse,
    StopSignals,
    WandbMirror,
    Window,
)
from rfig_exp.run.tracking import WandbRun, WandbRuns, run_labels
from rfig_exp.spec.run_spec import RunSpec

log = logging.getLogger("rfig_exp")


def run_label(plans: Sequence[SeedPlan]) -> Callable[[SeedPlan], str]:
    """How messages name a run of ``plans``: ``seed 3``, or ``<variant>/seed_3`` when the runs are
    of several variants (a stacked job)."""
    if len({p.path.parent for p in plans}) <= 1:
        return lambda p: f"seed {p.seed}"
    return lambda p: f"{p.path.parent.name}/seed_{p.seed}"


@dataclass(frozen=True)
class Member:
    """One run of a job: a (seed, settings) pair with its run folder (``plan``) and the overrides of
    the job it would have been alone (its summary records them)."""

    spec: RunSpec
    plan: SeedPlan
    command_line: tuple[str, ...] = ()

    @property
    def seed(self) -> int:
        return self.plan.seed

    @property
    def path(self):
        return self.plan.path


@dataclass
class Restored:
    """Where a job starts: its stacked states, and what its checkpoints carried over."""

    states: Any
    done_windows: int          # 0: a fresh start
    extra: dict                # train_time_s, resumed_from_windows of the checkpoint
    wandb_ids: dict[int, str]  # member -> its wandb run, continued on resume
    # agent.eval_episodes > 0: the step-0 evaluation, {eval/*: [S]}, of the initial states (a resumed
    # job rebuilds them from the same keys before loading its checkpoint, so it is always recomputed)
    at_start: dict = field(default_factory=dict)


class JobRun:
    """One job's runs trained together (its vmapped seeds, or the (seed, settings) members of a
    stacked sweep job, ``hparams`` then with a row per member); each resumable from its own
    checkpoints. Observers and files key the runs by their index in ``members``.

    ``heartbeat`` keeps the run folders' owner locks fresh; ``pulse`` tells the job's supervisor
    (rfig_exp.launch.task) that the job compiled, ``("compiled", tag)``, and that each window
    finished, ``("window", index)``: its stall clock runs on them (None: nobody watches, as in a
    test that trains in its own process). ``signals``: the stop signals, entered by the caller
    (None: the job's own, ``StopSignals()``)."""

    def __init__(self, members: Sequence[Member], env, bonus, hparams, tag: str,
                 heartbeat: Callable[[], Any] = lambda: None, pulse: Callable[[tuple], Any] | None = None,
                 signals: StopSignals | None = None):
        self.members = list(members)
        self.spec = self.members[0].spec  # the job-wide settings: every member's are the same
        self.env, self.bonus, self.hparams = env, bonus, hparams
        self.tag = tag
        self.heartbeat = heartbeat
        self.pulse: Callable[[tuple], Any] = pulse or (lambda message: None)
        self.signals = signals
        self.keys = list(range(len(self.members)))
        self.dirs = {i: m.path for i, m in enumerate(self.members)}
        label = run_label([m.plan for m in self.members])
        self.names = {i: label(m.plan) for i, m in enumerate(self.members)}
        # hyperparameters shared by every member (scalars), or a row per member
        self.hp_axis = 0 if np.ndim(hparams.beta) else None

    # -- restore or init ------------------------------------------------------------------
    def restore_or_init(self, trainer) -> Restored:
        keys = jnp.stack([jax.random.PRNGKey(m.seed) for m in self.members])
        states = jax.block_until_ready(jax.jit(jax.vmap(trainer.init, in_axes=(0, self.hp_axis)))(keys,
                                                                                                   self.hparams))
        at_start = {} if trainer.evaluate is None else jax.device_get(jax.jit(trainer.evaluate)(states, self.hparams))
        leaves, treedef = jax.tree.flatten(states)
        window, found = self._resume_point(leaves)
        if not window:
            for m in self.members:
                checkpoint.remove(m.path)
                results.start_run(m.path, m.plan.config_yaml)  # also removes an orphaned wandb run of a dead attempt
            return Restored(states, 0, {}, {}, at_start)
        stacked = [np.stack([c.leaves[i] for c in found]) for i in range(len(leaves))]
        states = jax.tree.unflatten(treedef, [jnp.asarray(x, dtype=leaf.dtype) for x, leaf in zip(stacked, leaves)])
        log.info("[%s] resuming from the checkpoint after window %d of %d", self.tag, window, self.spec.num_windows)
        for m in self.members:
            if m.plan.config_damaged:
                results.atomic_write_text(m.path / results.CONFIG, m.plan.config_yaml)
        return Restored(states, window, found[0].extra,
                        {i: c.extra.get("wandb_id") for i, c in zip(self.keys, found)}, at_start)

    def _resume_point(self, template_leaves) -> tuple[int, list]:
        """The window all runs can resume from and their checkpoints (0 and [] for a fresh start)."""
        if self.spec.overwrite:
            return 0, []
        shapes = [tuple(np.shape(x))[1:] for x in template_leaves]
        # a checkpoint is only as good as the metrics rows it continues: never past the whole ones
        rows = {i: results.whole_rows(self.dirs[i]) for i in self.keys}
        newest = [checkpoint.latest(self.dirs[i], shapes, at_most=rows[i]) for i in self.keys]
        for i in self.keys:
            beyond = [w for w in checkpoint.windows(self.dirs[i]) if w > rows[i]]
            if beyond:
                log.warning("[%s] %s: metrics.csv has only %d whole rows; its checkpoint(s) after window %s "
                            "cannot be resumed without the rows before them", self.tag, self.names[i], rows[i],
                            ", ".join(map(str, beyond)))
        usable = [c for c in newest if c is not None]
        if len(usable) < len(newest):
            if usable:
                log.warning("[%s] only some seeds have a usable checkpoint; starting all afresh", self.tag)
            return 0, []
        window = min(c.window for c in usable)
        found = [c if c.window == window else checkpoint.latest(self.dirs[i], shapes, at_most=window)
                 for i, c in zip(self.keys, usable)]
        if any(c is None or c.window != window for c in found):
            log.warning("[%s] the seeds' checkpoints are at different windows; starting all afresh", self.tag)
            return 0, []
        return window, found

    # -- the loop -------------------------------------------------------------------------
    def train(self) -> list[results.RunSummary]:
        spec = self.spec
        start = time.perf_counter()
        trainer: Trainer = trainer_module(spec.agent).make_trainer(spec.train, self.env, self.bonus)
        self.readout = trainer.readout
        # initialising and compiling take 15-60 s on a CPU before the first window's line
        log.info("[%s] initialising and compiling%s", self.tag,
                 f" (compile cache: {spec.compile_cache})" if spec.compile_cache else "")
        restored = self.restore_or_init(trainer)
        done = restored.done_windows
        resumed_from = list(restored.extra.get("resumed_from_windows", [])) + ([done] if done else [])
        self._window = done
        with ExitStack() as stack:
            wandb_runs = self._wandb(restored.wandb_ids)
            self.completed = False  # wandb marks the runs failed unless the job got to its summaries
            stack.callback(lambda: wandb_runs.finish_all(failed=not self.completed))
            files = MetricsFiles(self.dirs, keep_rows=done, tensorboard=spec.tensorboard)
            if spec.tensorboard:
                log.info("[%s] TensorBoard events beside each metrics.csv: tensorboard --logdir %s", self.tag,
                         Path(spec.results_dir) / spec.experiment)
            stack.callback(files.close)
            signals = self.signals or stack.enter_context(StopSignals())
            guard = DivergenceGuard(self.tag, self.names)
            saver = Checkpointer(spec.checkpoint, self.dirs, done, resumed_from, wandb_runs.ids)
            progress = ProgressLine(self.tag, spec.num_windows, spec.eval_frequency, spec.total_env_steps,
                                    spec.loop.updates_per_window, done, self.bonus.intrinsic, self.bonus.progress_note,
                                    runs_noun="runs" if len({m.path.parent for m in self.members}) > 1 else "seeds")
            try:
                window_fn = jax.jit(trainer.run_window, donate_argnums=0).lower(restored.states, self.hparams).compile()
                compile_time = time.perf_counter() - start
                self._describe(restored.states)
                # the stall clock starts after compiling: a long compile is not a stall
                self.pulse(("compiled", self.tag))
                stack.callback(saver.close, self.tag)  # a hung write is still a stall: no pulse comes
                mirror = WandbMirror(wandb_runs, files.kept, self.tag)  # first replays what wandb lacks
                observers = [Pulse(self.pulse, self.heartbeat), files, guard, mirror, saver, progress]
                states, train_time, attempt_time = self._windows(window_fn, restored, observers, signals, saver,
                                                                 start)
                saver.wait()  # before the summaries remove the checkpoints
                summaries = self._finish(states, files.final_returns, guard.failures, saver, compile_time,
                                         train_time, attempt_time, start, resumed_from, wandb_runs,
                                         restored.at_start)
                self.completed = not guard.failures
            except KeyboardInterrupt:
                last = saver.wait()  # a write in flight lands before the message names its window
                at = f"interrupted at window {self._window + 1} of {spec.num_windows}; relaunch the same command"
                raise Interrupted(f"{at} to resume from window {last}" if last else f"{at} to start it again",
                                  ExitCode.INTERRUPTED) from None
        if guard.failures:
            raise RunFailed("; ".join(f"{self.names[i]} {why}" for i, why in sorted(guard.failures.items()))
                            + f" (status failed in its summary.json under {self._where()})")
        return summaries

    def _windows(self, window_fn, restored: Restored, observers, signals: StopSignals, saver: Checkpointer,
                 start: float):
        """Windows ``done+1 .. num_windows``, each handed to the observers; the final states, the
        training time (earlier attempts' included) and this attempt's share of it."""
        spec, keys, done = self.spec, self.keys, restored.done_windows
        earlier = float(restored.extra.get("train_time_s", 0.0))
        train_time = earlier
        states = restored.states
        pending = window_fn(states, self.hparams) if done < spec.num_windows else None
        last_arrival = time.perf_counter()
        for w in range(done + 1, spec.num_windows + 1):
            assert pending is not None  # dispatched by the window before (or above, for the first)
            states, metrics = pending
            stopping = signals.received  # read once: a signal from now on is seen after window w+1
            saver.snapshot(w, states, last=w == spec.num_windows, stopping=stopping)
            pending = window_fn(states, self.hparams) if w < spec.num_windows and stopping is None else None
            metrics = jax.device_get(metrics)  # the only host round-trip: [S] scalars per metric
            now = time.perf_counter()
            train_time += now - last_arrival
            last_arrival = now
            self._window = w
            env_steps = w * spec.eval_frequency
            rows = {i: {"env_steps": env_steps, "update": w * spec.loop.updates_per_window,
                        **{k: float(v[i]) for k, v in metrics.items()}, "wall_time_s": now - start}
                    for i in keys}
            window = Window(w, env_steps, rows, metrics, train_time, train_time - earlier, stopping)
            for observer in observers:
                observer.on_window(window)
            if stopping is not None:
                if stopping == signal.SIGINT:
                    raise Interrupted(f"interrupted (Ctrl-C) after window {w} of {spec.num_windows}; its checkpoint "
                                      f"is saved: relaunch the same command to resume from window {w}",
                                      ExitCode.INTERRUPTED)
                raise Interrupted(f"terminated (signal {stopping}) after window {w} of {spec.num_windows}; its "
                                  "checkpoint is saved: relaunch the same command to resume", 128 + stopping)
        return states, train_time, train_time - earlier

    def _wandb(self, run_ids: dict) -> WandbRuns:
        settings = self.spec.wandb

        def labels(spec: RunSpec):
            return run_labels(spec.experiment, spec.env_name, spec.bonus_name, spec.variant, settings.group,
                              settings.tags)

        return WandbRuns(settings.mode, settings.project, settings.entity, init_timeout=settings.init_timeout,
                         runs={i: WandbRun(str(m.path), {**m.spec.resolved_config, "seed": m.seed}, run_ids.get(i),
                                           labels(m.spec), m.seed) for i, m in enumerate(self.members)})

    def _where(self) -> Path:
        """The folder that holds the job's runs (a variant's, or its bonus's for a stacked job)."""
        return Path(os.path.commonpath([str(m.path.parent) for m in self.members]))

    def _describe(self, states) -> None:
        if self.bonus.describe is not None:
            for key, values in jax.device_get(jax.vmap(self.bonus.describe)(self.readout(states).bonus_state)).items():
                if not np.any(np.ravel(values)):  # counters that start at 0 say nothing yet
                    continue
                log.info("[%s] %s: %s", self.tag, key, ", ".join(f"{v:.4g}" for v in np.ravel(values)))

    # -- the end --------------------------------------------------------------------------
    def _finish(self, states, final_returns, failures, saver, compile_time, train_time, attempt_time, start,
                resumed_from, wandb_runs, at_start: dict) -> list[results.RunSummary]:
        spec, n = self.spec, len(self.members)
        readout = self.readout(states)
        described = jax.device_get(jax.vmap(self.bonus.describe)(readout.bonus_state)) if self.bonus.describe else {}
        grid = self.env.coverage if readout.visits is not None else None  # None: the agent counts no visits
        visits = np.asarray(jax.device_get(readout.visits)) if grid is not None else None
        origin = provenance.describe(jax.devices())  # host, machine, placement, git_dirty, versions
        wall = time.perf_counter() - start
        steps_trained = (spec.num_windows - (resumed_from[-1] if resumed_from else 0)) * spec.eval_frequency
        for i in self.keys:  # a summary is only ever written over the whole metrics of its run
            rows = results.whole_rows(self.dirs[i])
            if rows != spec.num_windows:
                raise FileNotFoundError(errno.ENOENT, f"has {rows} whole rows of "
                                        f"{spec.num_windows} at the end of the run (its folder deleted or "
                                        "replaced while it ran?)", str(self.dirs[i] / results.METRICS))
        summaries = []
        for i, m in enumerate(self.members):
            if grid is not None:
                assert visits is not None
                results.write_visits(self.dirs[i], visits[i].reshape(grid.shape))
            summary = results.RunSummary(
                status="failed" if i in failures else "complete", failure=failures.get(i),
                experiment=spec.experiment, env=spec.env_name, bonus=spec.bonus_name,
                variant=m.spec.variant, variant_overrides=m.spec.variant_overrides,
                seed=m.seed, num_seeds_in_process=n,
                env_steps=spec.total_env_steps, num_windows=spec.num_windows,
                requested_timesteps=spec.requested_timesteps, final_return=final_returns[i],
                wall_time_s=wall, compile_time_s=compile_time, train_time_s=train_time,
                checkpoints_written=saver.written, checkpoint_wait_s=saver.wait_s,
                env_steps_per_second=steps_trained * n / max(attempt_time, 1e-9),
                warmup_env_steps=spec.agent.warmup_env_steps,
                # a window's return averages the episodes that ended in it; until each env has run
                # max_episode_steps, the longest episodes cannot have ended (analysis: survivor bias)
                num_envs=spec.agent.parallel_envs, max_episode_steps=int(self.env.max_episode_steps),
                finished_at=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                resumed_from_windows=tuple(resumed_from), overrides=tuple(m.command_line), **origin,
                bonus_values={k: float(np.ravel(v)[i]) for k, v in described.items()},
                coverage_grid=grid.describe() if grid is not None else None,
                final_coverage=float((visits[i] > 0).mean()) if visits is not None else None,
                eval_return_at_start=float(at_start[EVAL_RETURN][i]) if at_start else None,
                eval_length_at_start=float(at_start[EVAL_LENGTH][i]) if at_start else None,
            )
            results.write_summary(self.dirs[i], summary)
            checkpoint.remove(self.dirs[i])  # complete: the summary and metrics are the record now
            wandb_runs.finish(i, summary.to_json(), failed=i in failures)
            if i not in failures:
                summaries.append(summary)
        noun = "runs" if len({m.path.parent for m in self.members}) > 1 else "seeds" if n > 1 else "seed"
        log.info("[%s] done in %.1fs (compile %.1fs, %.0f env steps/s over %d %s); results in %s",
                 self.tag, wall, compile_time, steps_trained * n / max(attempt_time, 1e-9), n, noun, self._where())
        return summaries

"""Run one experiment (env, bonus, variant, a group of vmapped seeds) and write the results contract.

A thin Python loop around one compiled window function: after each window it appends the
window's metrics, checkpoints every seed's state, prints a progress line and mirrors to
wandb. Nothing inside a window touches the host.

Each seed's run directory is decided before anything is compiled (:func:`plan_seeds`):
complete with the same config -> skipped; partial with the same config -> resumed from its
last checkpoint; saved with another config -> refused (``overwrite=true`` replaces it).
"""

from __future__ import annotations

import errno
import math
import os
import platform
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from omegaconf import OmegaConf

from rfig_exp import checkpoint, faults, ownership, results, variants
from rfig_exp.agents.ppo.train import as_arrays, make_trainer
from rfig_exp.bonuses import make_bonus
from rfig_exp.config import RunSpec, build_run_spec, checkpoint_cadence
from rfig_exp.envs import make_env
from rfig_exp.errors import EXIT_INTERRUPTED, ConfigError
from rfig_exp.tracking import WandbRuns, inverse_note, log, progress_line
from rfig_exp.watchdog import Watchdog

PACKAGES = ("rfig_exp", "jax", "jaxlib", "flax", "optax", "gymnax", "brax", "mujoco", "hydra-core", "numpy", "wandb")
REPO = Path(__file__).resolve().parents[2]


# A seed whose optimisation produced one of these non-finite has diverged: it is finished as
# "failed" (never "complete") while the other seeds of the job go on.
DIVERGENCE_METRICS = ("policy_loss", "value_loss_ext", "entropy", "grad_norm")


class RunFailed(Exception):
    """Some seeds of the job failed at run time (e.g. diverged to NaN); the others completed."""


class Interrupted(Exception):
    """Training stopped by Ctrl-C (exit 130) or SIGTERM (exit 143); the message says where."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


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


def seed_config_yaml(cfg, seed: int) -> str:
    """The resolved config as this seed's run saw it (its own ``seed``, ``num_seeds: 1``)."""
    resolved = OmegaConf.to_container(cfg, resolve=True)
    resolved.pop("hydra", None)
    resolved.update(seed=seed, num_seeds=1)
    return OmegaConf.to_yaml(OmegaConf.create(resolved))


@dataclass
class SeedPlan:
    seed: int
    path: Path
    config_yaml: str
    action: str  # "skip" (complete), "run" (fresh or resumed from a checkpoint)
    config_damaged: bool = False  # its saved config.yaml is rewritten when the run resumes


def plan_seeds(cfg, spec: RunSpec) -> list[SeedPlan]:
    """Decide, from the results tree alone, what each seed of the job does.

    Raises ConfigError when a seed's directory holds a run with another config (the
    variant cannot express the difference, e.g. a changed default), unless ``overwrite``.
    """
    plans, conflicts = [], []
    for s in spec.seeds:
        path = results.run_dir(spec.results_dir, spec.experiment, spec.env_name, spec.bonus_name, spec.variant, s)
        text = seed_config_yaml(cfg, s)
        saved = path / results.CONFIG
        damaged = None if spec.overwrite else results.damaged_config(path)
        if damaged:
            # nothing to compare against: the run is redone (a partial one resumed), and the file rewritten
            log.warning("%s is damaged (%s): the run there is not taken as complete, and the file is rewritten "
                        "from this job's config", saved, damaged)
        elif saved.exists() and not spec.overwrite:
            diffs = results.config_differences(saved.read_text(), text)
            if diffs:
                conflicts.append(f"{path}: {'; '.join(diffs)}")
        complete = not spec.overwrite and not damaged and results.is_complete(path)
        if not complete and not spec.overwrite and (path / results.SUMMARY).exists():
            log.warning("%s: its summary.json, metrics.csv or config.yaml is damaged or says it did not complete; "
                        "running it again", path)
        plans.append(SeedPlan(s, path, text, "skip" if complete else "run", bool(damaged)))
    if conflicts:
        raise ConfigError("results with a different config already exist (" + " | ".join(conflicts)
                          + "); choose another experiment=, or overwrite=true to replace them")
    return plans


def use_compile_cache(directory: str | None) -> None:
    """Point JAX's persistent compilation cache at ``directory`` (None: leave it off)."""
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", str(directory))
        # Cache everything that takes a second to compile: the windows, inits and features.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def run_experiment(cfg, command_line: Sequence[str] = (), sweep_varies: Sequence[str] = ()) -> list[dict]:
    """Validate ``cfg``, train every seed that is not already complete, write results.

    ``command_line`` (the overrides as typed) goes into each summary; ``sweep_varies`` (the keys
    this job's sweep varies) come first in its console prefix. Returns the summaries written
    (empty when everything was complete already).
    """
    spec = build_run_spec(cfg)
    plans = plan_seeds(cfg, spec)
    env = make_env(cfg.env)
    # [compiled_path] the bonus from its checked settings; hparams: PPOHparams of float32 scalars
    bonus, bonus_hparams = make_bonus(spec.bonus, env.obs_shape, env.action_space,
                                      (spec.train.num_steps, spec.train.num_envs))
    hparams = as_arrays(spec.agent.hparams(spec.bonus.beta, bonus_hparams))
    varying = {k: OmegaConf.select(cfg, k) for k in sweep_varies}
    tag = variants.variant_tag(spec.variant_overrides,
                               {k: v for k, v in varying.items() if v is not None and not OmegaConf.is_config(v)})
    name = f"{spec.env_name}/{spec.bonus_name}" + (f"/{tag}" if tag else "")
    todo = [p for p in plans if p.action == "run"]
    if not todo:
        log.info("[%s seeds %s] already complete in %s; skipping (overwrite=true re-runs it)",
                 name, _seed_range(spec.seeds), plans[0].path.parent)
        return []
    if len(todo) < len(plans):
        log.info("[%s] seeds %s are complete; running only seeds %s", name,
                 _seed_range([p.seed for p in plans if p.action == "skip"]), _seed_range([p.seed for p in todo]))
    if spec.bonus_name == "none" and float(hparams.ext_coef) == 0.0:
        log.info("[%s] agent.ext_coef=0 with bonus=none: the entropy-only policy (no reward at all)", name)
    if spec.total_env_steps != spec.requested_timesteps:
        log.info("[%s] agent.total_timesteps=%s rounded up to %d windows of %s steps = %s env steps", name,
                 f"{spec.requested_timesteps:,}", spec.num_windows, f"{spec.eval_frequency:,}",
                 f"{spec.total_env_steps:,}")
    # One owner per run folder (rfig_exp.ownership): leave out seeds another live process trains.
    stall = float(cfg.stall_timeout_s)
    stale_after = 3 * stall if stall > 0 else 3600.0
    locks, owners = {}, {}
    try:
        # A requeued job can start while its previous process is still exiting: give a live
        # owner a short grace period to let go before leaving its seed to it.
        deadline = time.monotonic() + float(cfg.owner_grace_s)
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
                     ownership.describe(owners[p.seed]))
        for p in todo:  # finished by the owner we waited for: nothing left to do
            if p.seed in locks and not spec.overwrite and results.is_complete(p.path):
                log.info("[%s] seed %d was completed by %s while this job waited; skipping", name, p.seed,
                         ownership.describe(owners[p.seed]) if owners.get(p.seed) else "another process")
                locks.pop(p.seed).release()
        mine = [p for p in todo if p.seed in locks]
        if not mine:
            return []
        results.write_variant(mine[0].path.parent, spec.variant_overrides)
        use_compile_cache(cfg.get("compile_cache"))
        return _Run(cfg, spec, env, bonus, hparams, mine, f"{name} seeds {_seed_range([p.seed for p in mine])}",
                    list(command_line), heartbeat=lambda: [lock.beat() for lock in locks.values()],
                    release=lambda: [lock.release() for lock in locks.values()]).train()
    finally:
        for lock in locks.values():
            lock.release()


def _seed_range(seeds) -> str:
    seeds = list(seeds)
    contiguous = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
    return f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 1 else ",".join(map(str, seeds))


class _Run:
    """One job's training loop; resumable from per-seed checkpoints."""

    def __init__(self, cfg, spec: RunSpec, env, bonus, hparams, plans: list[SeedPlan], tag: str,
                 command_line: list[str], heartbeat=None, release=None):
        self.cfg, self.spec, self.env, self.bonus, self.hparams = cfg, spec, env, bonus, hparams
        self.plans, self.tag, self.command_line = plans, tag, command_line
        self.heartbeat = heartbeat or (lambda: None)  # keeps the run folders' owner locks fresh
        self.release = release or (lambda: None)  # lets them go when the watchdog ends the process
        self.seeds = [p.seed for p in plans]
        self.dirs = {p.seed: p.path for p in plans}
        self.every_windows, self.every_seconds = checkpoint_cadence(cfg)
        self.keep = int(cfg.checkpoint.keep)
        self.stop_signal: int | None = None
        self._submitit_usr2 = None  # submitit's own SIGUSR2 handler (requeue), called after our checkpoint
        self.failures: dict[int, str] = {}
        self._warned_recoveries = False
        # What checkpoints cost the training loop: host copies, and waits for a previous write.
        self.checkpoint_wait_s, self.checkpoints = 0.0, 0

    # -- resume ---------------------------------------------------------------------------
    def _resume_point(self, template_leaves) -> tuple[int, list]:
        """The window all seeds can resume from and their checkpoints (0 and [] for a fresh start)."""
        if self.spec.overwrite:
            return 0, []
        shapes = [tuple(np.shape(x))[1:] for x in template_leaves]
        # a checkpoint is only as good as the metrics rows it continues: never past the whole ones
        rows = {s: results.whole_rows(self.dirs[s]) for s in self.seeds}
        newest = [checkpoint.latest(self.dirs[s], shapes, at_most=rows[s]) for s in self.seeds]
        for s in self.seeds:
            beyond = [w for w in checkpoint.windows(self.dirs[s]) if w > rows[s]]
            if beyond:
                log.warning("[%s] seed %d: metrics.csv has only %d whole rows; its checkpoint(s) after window %s "
                            "cannot be resumed without the rows before them", self.tag, s, rows[s],
                            ", ".join(map(str, beyond)))
        if any(c is None for c in newest):
            if any(c is not None for c in newest):
                log.warning("[%s] only some seeds have a usable checkpoint; starting all afresh", self.tag)
            return 0, []
        window = min(c.window for c in newest)
        found = [c if c.window == window else checkpoint.latest(self.dirs[s], shapes, at_most=window)
                 for s, c in zip(self.seeds, newest)]
        if any(c is None or c.window != window for c in found):
            log.warning("[%s] the seeds' checkpoints are at different windows; starting all afresh", self.tag)
            return 0, []
        return window, found

    def _start_fresh(self) -> None:
        for p in self.plans:
            checkpoint.remove(p.path)
            results.start_run(p.path, p.config_yaml)  # also removes an orphaned wandb run of a dead attempt

    # -- the loop -------------------------------------------------------------------------
    def train(self) -> list[dict]:
        spec, seeds = self.spec, self.seeds
        start = time.perf_counter()
        trainer = make_trainer(spec.train, self.env, self.bonus)
        keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
        states = jax.block_until_ready(jax.jit(jax.vmap(trainer.init, in_axes=(0, None)))(keys, self.hparams))
        leaves, treedef = jax.tree.flatten(states)
        done_windows, found = self._resume_point(leaves)
        extra = found[0].extra if found else {}
        if done_windows:
            stacked = [np.stack([c.leaves[i] for c in found]) for i in range(len(leaves))]
            states = jax.tree.unflatten(treedef, [jnp.asarray(x, dtype=leaf.dtype) for x, leaf in zip(stacked, leaves)])
            log.info("[%s] resuming from the checkpoint after window %d of %d", self.tag, done_windows,
                     spec.num_windows)
        else:
            self._start_fresh()
        for p in self.plans:
            if done_windows and p.config_damaged:
                results.atomic_write_text(p.path / results.CONFIG, p.config_yaml)
        resumed_from = list(extra.get("resumed_from_windows", [])) + ([done_windows] if done_windows else [])
        writers = {s: results.MetricsWriter(self.dirs[s], keep_rows=done_windows) for s in seeds}
        final_returns = {s: writers[s].last_finite("episode_return") for s in seeds}
        wandb_ids = {s: found[i].extra.get("wandb_id") for i, s in enumerate(seeds)} if found else {}
        cfg = self.cfg
        group = cfg.wandb.group or f"{spec.experiment}/{spec.env_name}/{spec.bonus_name}/{spec.variant}"
        wandb_runs = WandbRuns(
            cfg.wandb.mode, cfg.wandb.project, cfg.wandb.entity, group=group, tags=list(cfg.wandb.tags or []),
            init_timeout=float(cfg.wandb.init_timeout),
            runs={s: (str(self.dirs[s]), {**OmegaConf.to_container(cfg, resolve=True), "seed": s}, wandb_ids.get(s))
                  for s in seeds})
        failed = True
        previous_handler = self._catch_sigterm()
        window_w = done_windows
        watchdog = None
        writer = checkpoint.BackgroundWriter(saved_window=done_windows)
        try:
            window_fn = jax.jit(trainer.run_window, donate_argnums=0).lower(states, self.hparams).compile()
            compile_time = time.perf_counter() - start
            self._describe(states)
            train_time = float(extra.get("train_time_s", 0.0))
            last_rows: dict[int, dict] = {}
            watchdog = Watchdog(self.tag, float(cfg.stall_timeout_s), release=self.release).start()  # after compiling
            last_saved_w, last_saved_t = done_windows, time.perf_counter()
            # Windows are pipelined: window w+1 is dispatched before window w's metrics are read,
            # so the host's work (rows, wandb, progress) overlaps the device's. A checkpoint takes
            # a device copy of window w's state first (w+1 takes over the donated buffers) and
            # brings it to the host in the background.
            pending = window_fn(states, self.hparams) if done_windows < spec.num_windows else None
            last_arrival = time.perf_counter()
            for w in range(done_windows + 1, spec.num_windows + 1):
                states, metrics = pending
                stopping = self.stop_signal  # read once: a signal from now on is seen after window w+1
                snapshot = None
                if stopping is not None or (w < spec.num_windows and checkpoint.due(
                        w, last_saved_w, time.perf_counter(), last_saved_t, self.every_windows, self.every_seconds)):
                    t_blocked = time.perf_counter()
                    snapshot = self._snapshot(states)
                    self.checkpoint_wait_s += time.perf_counter() - t_blocked
                    last_saved_w, last_saved_t = w, time.perf_counter()
                pending = window_fn(states, self.hparams) if w < spec.num_windows and stopping is None else None
                metrics = jax.device_get(metrics)  # the only host round-trip: [S] scalars per metric
                watchdog.beat()
                self.heartbeat()
                now = time.perf_counter()
                train_time += now - last_arrival
                last_arrival = now
                window_w = w
                env_steps = w * spec.eval_frequency
                for i, s in enumerate(seeds):
                    row = {"env_steps": env_steps, "update": w * spec.train.updates_per_window,
                           **{k: float(v[i]) for k, v in metrics.items()},
                           "wall_time_s": now - start}
                    writers[s].append(row)
                    if math.isfinite(row["episode_return"]):
                        final_returns[s] = row["episode_return"]
                    wandb_runs.log(s, row, step=env_steps)
                    last_rows[s] = row
                    bad = [k for k in DIVERGENCE_METRICS if k in row and not math.isfinite(row[k])]
                    if bad and s not in self.failures:
                        self.failures[s] = f"diverged: non-finite {', '.join(bad)} in window {w}"
                        log.error("[%s] seed %d %s; it will be marked failed", self.tag, s, self.failures[s])
                faults.hit("window")
                # Written once window w's rows are: a checkpoint never covers a row the metrics
                # file lacks. No checkpoint after the last window: the summary follows at once.
                # A stop signal waits for its checkpoint to be on disk before the process exits.
                if snapshot is not None:
                    t_blocked = time.perf_counter()
                    self._checkpoint(writer, snapshot, w, train_time, resumed_from, wandb_runs.ids())
                    self.checkpoint_wait_s += time.perf_counter() - t_blocked  # only if a write was in flight
                    self.checkpoints += 1
                    if stopping is not None:
                        writer.wait()
                steps_done = (w - done_windows) * spec.eval_frequency
                log.info(progress_line(self.tag, w, spec.num_windows, env_steps, spec.total_env_steps,
                                       steps_done * len(seeds) / train_time,
                                       [last_rows[s]["episode_return"] for s in seeds],
                                       [last_rows[s]["intrinsic_reward"] for s in seeds] if self.bonus.intrinsic
                                       else None,
                                       (spec.num_windows - w) * train_time / max(w - done_windows, 1),
                                       self._inverse_upkeep(metrics, spec, len(seeds))))
                if stopping == signal.SIGUSR2 and callable(self._submitit_usr2):
                    log.info("[%s] SIGUSR2 (time limit or preemption) after window %d: checkpoint saved, "
                             "handing over to submitit to requeue", self.tag, w)
                    self._submitit_usr2(signal.SIGUSR2, None)  # requeues the job and exits
                if stopping is not None:
                    raise Interrupted(f"terminated (signal {stopping}) after window {w} of "
                                      f"{spec.num_windows}; its checkpoint is saved: relaunch the same command "
                                      "to resume", 128 + stopping)
            writer.wait()  # before _finish removes the checkpoints
            summaries = self._finish(states, final_returns, compile_time, train_time, start, resumed_from,
                                     wandb_runs)
            failed = bool(self.failures)
            if self.failures:
                raise RunFailed("; ".join(f"seed {s} {why}" for s, why in sorted(self.failures.items()))
                                + f" (status failed in its summary.json under {self.dirs[seeds[0]].parent})")
            return summaries
        except KeyboardInterrupt:
            last = writer.wait()  # a write in flight lands before the message names its window
            raise Interrupted(f"interrupted at window {window_w + 1} of {spec.num_windows}; relaunch the same "
                              f"command to resume from window {last}" if last else
                              f"interrupted at window {window_w + 1} of {spec.num_windows}; relaunch the same "
                              "command to start it again", EXIT_INTERRUPTED) from None
        finally:
            try:
                writer.close()
            except Exception as err:  # noqa: BLE001 - reported; the exception in flight (if any) wins
                log.error("[%s] a checkpoint write failed: %s", self.tag, err)
            if watchdog is not None:
                watchdog.stop()
            if previous_handler is not None:
                signal.signal(signal.SIGTERM, previous_handler)
            if self._submitit_usr2 is not None:
                signal.signal(signal.SIGUSR2, self._submitit_usr2)
            for writer in writers.values():
                writer.close()
            wandb_runs.finish_all(failed=failed)

    def _inverse_upkeep(self, metrics, spec, num_seeds: int) -> str:
        """The progress line's note on a bonus's exact-inverse upkeep (RFIG), with a warning the
        first time every update of a window needed a recovery (its inverse was wrong each time)."""
        if "bonus/refresh_count" not in metrics:
            return ""
        seed_updates = spec.train.updates_per_window * num_seeds
        refreshes = float(sum(metrics["bonus/refresh_count"]))
        recoveries = float(sum(metrics.get("bonus/divergence_count", [0.0])))
        if recoveries >= seed_updates and not self._warned_recoveries:
            self._warned_recoveries = True
            log.warning("[%s] every update of this window replaced a diverged inverse by an exact one: the "
                        "Woodbury update is losing precision (bonus.matmul_precision=%s; on a GPU, TF32 "
                        "matmuls do this)", self.tag, self.cfg.bonus.get("matmul_precision", "n/a"))
        return inverse_note(refreshes, recoveries, seed_updates)

    def _catch_sigterm(self):
        """SIGTERM (a scheduler's stop, ``kill``) ends training after the current window, with
        a checkpoint, instead of killing it mid-window; under submitit, SIGUSR2 likewise."""
        if threading.current_thread() is not threading.main_thread():
            return None

        def handler(signum, frame):
            self.stop_signal = signum

        if os.environ.get("SUBMITIT_EXECUTOR"):
            # submitit requeues on SIGUSR2 (time limit, preemption) by exiting at once; let the
            # current window finish and checkpoint first, then call its handler.
            self._submitit_usr2 = signal.signal(signal.SIGUSR2, handler)
        return signal.signal(signal.SIGTERM, handler)

    @staticmethod
    @jax.jit
    def _snapshot(states):
        """A device copy of the run state, dispatched without waiting (one jitted call: an eager
        ``jnp.array(x, copy=True)`` per leaf waits for the window that computes ``x``, 2.3 s of
        an 8-seed RFIG window on this CPU). The next window takes over the donated buffers; the
        copy stays ours until the background writer has brought it to the host."""
        return jax.tree.leaves(jax.tree.map(jnp.copy, states))

    def _checkpoint(self, writer, snapshot, window: int, train_time: float, resumed_from: list[int],
                    wandb_ids: dict) -> None:
        """Bring a ``_snapshot`` to the host and write every seed's slice, in the background."""
        extra = {"train_time_s": train_time, "resumed_from_windows": list(resumed_from)}

        def write():
            leaves = [np.asarray(x) for x in jax.device_get(snapshot)]
            for i, s in enumerate(self.seeds):
                checkpoint.save(self.dirs[s], window, [x[i] for x in leaves],
                                {**extra, "wandb_id": wandb_ids.get(s)}, keep=self.keep)

        writer.submit(window, write)

    def _describe(self, states) -> None:
        if self.bonus.describe is not None:
            for key, values in jax.device_get(jax.vmap(self.bonus.describe)(states.bonus_state)).items():
                if not np.any(np.ravel(values)):  # counters that start at 0 say nothing yet
                    continue
                log.info("[%s] %s: %s", self.tag, key, ", ".join(f"{v:.4g}" for v in np.ravel(values)))

    def _finish(self, states, final_returns, compile_time, train_time, start, resumed_from, wandb_runs) -> list[dict]:
        spec, seeds = self.spec, self.seeds
        described = jax.device_get(jax.vmap(self.bonus.describe)(states.bonus_state)) if self.bonus.describe else {}
        grid = self.env.coverage
        visits = np.asarray(jax.device_get(states.visits)) if grid is not None else None
        versions, dirty, host = package_versions(), git_dirty(), socket.gethostname()
        wall = time.perf_counter() - start
        steps_trained = (spec.num_windows - (resumed_from[-1] if resumed_from else 0)) * spec.eval_frequency
        summaries = []
        for s in seeds:  # a summary is only ever written over the whole metrics of its run
            if results.whole_rows(self.dirs[s]) != spec.num_windows:
                raise FileNotFoundError(errno.ENOENT, f"has {results.whole_rows(self.dirs[s])} whole rows of "
                                        f"{spec.num_windows} at the end of the run (its folder deleted or "
                                        "replaced while it ran?)", str(self.dirs[s] / results.METRICS))
        for i, s in enumerate(seeds):
            if grid is not None:
                results.write_visits(self.dirs[s], visits[i].reshape(grid.shape))
            summary = {
                "status": "failed" if s in self.failures else "complete",
                **({"failure": self.failures[s]} if s in self.failures else {}),
                "experiment": spec.experiment, "env": spec.env_name,
                "bonus": spec.bonus_name, "variant": spec.variant, "variant_overrides": spec.variant_overrides,
                "seed": s, "num_seeds_in_process": len(seeds),
                "env_steps": spec.total_env_steps, "num_windows": spec.num_windows,
                "requested_timesteps": spec.requested_timesteps,
                "final_return": final_returns[s],
                "wall_time_s": wall, "compile_time_s": compile_time, "train_time_s": train_time,
                "checkpoints_written": self.checkpoints, "checkpoint_wait_s": self.checkpoint_wait_s,
                "env_steps_per_second": steps_trained * len(seeds) / max(train_time, 1e-9),
                "warmup_env_steps": spec.train.obs_norm_init_steps * spec.train.num_envs,
                "resumed_from_windows": resumed_from,
                "overrides": self.command_line, "host": host, "git_dirty": dirty, "versions": versions,
                **{f"bonus_{k}": float(np.ravel(v)[i]) for k, v in described.items()},
            }
            if grid is not None:
                summary["coverage_grid"] = grid.describe()
                summary["final_coverage"] = float((visits[i] > 0).mean())
            results.write_summary(self.dirs[s], summary)
            checkpoint.remove(self.dirs[s])  # complete: the summary and metrics are the record now
            wandb_runs.finish(s, summary, failed=s in self.failures)
            if s not in self.failures:
                summaries.append(summary)
        log.info("[%s] done in %.1fs (compile %.1fs, %.0f env steps/s over %d seeds); results in %s",
                 self.tag, wall, compile_time, steps_trained * len(seeds) / max(train_time, 1e-9), len(seeds),
                 self.dirs[seeds[0]].parent)
        return summaries

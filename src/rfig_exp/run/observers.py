"""What happens after each training window: one small observer per concern.

The run loop (:mod:`rfig_exp.run.run_loop`) trains a window, brings its ``[S]`` metrics to the host
and hands the :class:`Window` to each observer in a fixed order: the pulse (the supervisor's stall
clock and the run folders' owner locks), the metrics files (they are the record; TensorBoard's event
files beside them), the divergence guard, the
wandb mirror, the checkpointer (so a checkpoint never covers a row the metrics file lacks), then
the progress line. Like Brax's ``progress_fn``, an
observer sees a window after it happened and cannot change the training.

:class:`StopSignals` is the signal handling around the loop, as a context manager.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from rfig_exp.config.run_settings import CheckpointSettings
from rfig_exp.results import contract as results
from rfig_exp.run import checkpoint
from rfig_exp.run.stop_signals import StopSignalScope
from rfig_exp.run.tracking import EventFile, WandbRuns, progress_line

log = logging.getLogger("rfig_exp")

# A seed whose optimisation produced one of these non-finite has diverged: it is finished as
# "failed" (never "complete") while the other seeds of the job go on.
DIVERGENCE_METRICS = ("policy_loss", "value_loss_ext", "entropy", "grad_norm", "td_loss")  # PPO's; the DQN's


@dataclass
class Window:
    """One finished window as the observers see it."""

    index: int                          # 1-based
    env_steps: int                      # per seed, since the run's start
    rows: dict[int, dict[str, float]]   # run (its index in the job) -> its metrics.csv row
    metrics: Mapping[str, np.ndarray]   # metric -> [S] host values, in the job's order of runs
    train_time_s: float                 # training wall time so far (resumed attempts included)
    attempt_train_time_s: float         # this process's share of it: the windows it trained
    stopping: int | None = None         # the signal that ends the run after this window


class Pulse:
    """A window finished: the run folders' owner locks are touched and the supervisor hears the job
    is alive (``send``: its pipe, rfig_exp.launch.task). Training only reports; the supervisor, a
    process that no XLA wedge can block, judges a stall and ends this process."""

    def __init__(self, send: Callable[[tuple], Any], beat_locks: Callable[[], Any]):
        self.send, self.beat_locks = send, beat_locks

    def on_window(self, window: Window) -> None:
        self.beat_locks()
        self.send(("window", window.index))


class MetricsFiles:
    """Each seed's ``metrics.csv`` (the record), its TensorBoard event file (``tensorboard``: the
    same rows, written right after them, so that a window is in both or replayed into the events
    on resume; :class:`~rfig_exp.run.tracking.EventFile`), and its last finite episode return."""

    def __init__(self, dirs: Mapping[int, Path], keep_rows: int, tensorboard: bool = False):
        self.writers = {s: results.MetricsWriter(d, keep_rows=keep_rows) for s, d in dirs.items()}
        self.final_returns = {s: w.last_finite("episode_return") for s, w in self.writers.items()}
        self.events = {s: EventFile(d, self.writers[s].kept) for s, d in dirs.items()} if tensorboard else {}

    @property
    def kept(self) -> dict[int, list[dict]]:
        """The rows of ``metrics.csv`` a resumed run kept (as read: strings), by run."""
        return {s: w.kept for s, w in self.writers.items()}

    def on_window(self, window: Window) -> None:
        for s, row in window.rows.items():
            self.writers[s].append(row)
            if s in self.events:
                self.events[s].append(row, window.env_steps)
            if math.isfinite(row["episode_return"]):
                self.final_returns[s] = row["episode_return"]

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()
        for events in self.events.values():
            events.close()


class DivergenceGuard:
    """Marks a run failed at its first non-finite loss; the other runs go on. ``names``: how
    messages name each run, by its key in the window's rows (None: ``seed <key>``)."""

    def __init__(self, tag: str, names: Mapping[int, str] | None = None):
        self.tag, self.names = tag, names
        self.failures: dict[int, str] = {}

    def on_window(self, window: Window) -> None:
        for s, row in window.rows.items():
            bad = [k for k in DIVERGENCE_METRICS if k in row and not math.isfinite(row[k])]
            if bad and s not in self.failures:
                self.failures[s] = f"diverged: non-finite {', '.join(bad)} in window {window.index}"
                name = self.names[s] if self.names is not None else f"seed {s}"
                log.error("[%s] %s %s; it will be marked failed", self.tag, name, self.failures[s])


class WandbMirror:
    """Mirrors each row to the seed's wandb run (never the record: it may stop working). ``kept``:
    the rows of ``metrics.csv`` a resumed run kept, by run; those its wandb run lacks (a kill lost
    what wandb had not written out) are replayed first, under the same run id."""

    def __init__(self, runs: WandbRuns, kept: Mapping[int, Sequence[Mapping[str, str]]] | None = None,
                 tag: str = ""):
        self.runs = runs
        replayed = sum(runs.replay(s, rows) for s, rows in (kept or {}).items())
        if replayed:
            log.info("[%s] wandb: %d window(s) the resumed runs lacked replayed from metrics.csv", tag, replayed)

    def on_window(self, window: Window) -> None:
        for s, row in window.rows.items():
            self.runs.log(s, row, step=window.env_steps)


@dataclass
class Checkpointer:
    """Saves every seed's run state when a cadence is due, and always before a stop signal ends
    the run; written in the background while the next window trains.

    Two steps, because windows are pipelined: :meth:`snapshot` takes a device copy of window w's
    state before window w+1 is dispatched (w+1 takes over the donated buffers); :meth:`on_window`
    hands that copy to the background writer once window w's rows are written."""

    settings: CheckpointSettings
    dirs: Mapping[int, Path]
    saved_window: int
    resumed_from: Sequence[int]
    wandb_ids: Callable[[], dict]
    last_time: float = field(default_factory=time.perf_counter)
    wait_s: float = 0.0   # what checkpoints cost the loop: device copies, waits for a write in flight
    written: int = 0
    _pending: Any = None

    def __post_init__(self):
        self.writer = checkpoint.BackgroundWriter(saved_window=self.saved_window)
        self.last_window = self.saved_window

    def snapshot(self, window: int, states, last: bool, stopping: int | None) -> None:
        due = stopping is not None or (not last and checkpoint.due(
            window, self.last_window, time.perf_counter(), self.last_time,
            self.settings.every_windows, self.settings.every_seconds))
        if not due:  # no checkpoint after the last window: the summary follows at once
            self._pending = None
            return
        t = time.perf_counter()
        self._pending = device_copy(states)
        self.wait_s += time.perf_counter() - t
        self.last_window, self.last_time = window, time.perf_counter()

    def on_window(self, window: Window) -> None:
        if self._pending is None:
            return
        snapshot, self._pending = self._pending, None
        extra = {"train_time_s": window.train_time_s, "resumed_from_windows": list(self.resumed_from)}
        wandb_ids, seeds, keep = self.wandb_ids(), list(self.dirs), self.settings.keep

        def write():
            leaves = [np.asarray(x) for x in jax.device_get(snapshot)]
            for i, s in enumerate(seeds):
                checkpoint.save(self.dirs[s], window.index, [x[i] for x in leaves],
                                {**extra, "wandb_id": wandb_ids.get(s)}, keep=keep)

        t = time.perf_counter()
        self.writer.submit(window.index, write)
        self.wait_s += time.perf_counter() - t  # only if a write was in flight
        self.written += 1
        if window.stopping is not None:  # a stop waits for its checkpoint to be on disk
            self.writer.wait()

    def wait(self) -> int:
        """Waits for the write in flight; the window of the newest checkpoint on disk."""
        return self.writer.wait()

    def close(self, tag: str) -> None:
        try:
            self.writer.close()
        except Exception as err:  # noqa: BLE001 - reported; the exception in flight (if any) wins
            log.error("[%s] a checkpoint write failed: %s", tag, err)


@jax.jit
def device_copy(states):
    """A device copy of the run state, dispatched without waiting (one jitted call: an eager
    ``jnp.array(x, copy=True)`` per leaf waits for the window that computes ``x``, 2.3 s of an
    8-seed RFIG window on this CPU). The copy stays ours until the background writer has
    brought it to the host."""
    return jax.tree.leaves(jax.tree.map(jnp.copy, states))


class ProgressLine:
    """One console line per window: steps, speed, returns, intrinsic reward, ETA, and the bonus's
    own note (``note``: its ``progress_note``, e.g. RFIG's inverse upkeep), whose warning is said
    once."""

    def __init__(self, tag: str, num_windows: int, eval_frequency: int, total_env_steps: int,
                 updates_per_window: int, done_windows: int, intrinsic: bool,
                 note: Callable[[Mapping[str, Any], int], tuple[str, str | None]] | None = None,
                 runs_noun: str = "seeds"):
        self.tag, self.num_windows, self.total_env_steps = tag, num_windows, total_env_steps
        self.runs_noun = runs_noun  # what the median of the returns is over: seeds, or runs of several settings
        self.eval_frequency = eval_frequency
        self.updates_per_window, self.done_windows, self.intrinsic = updates_per_window, done_windows, intrinsic
        self.note = note
        self._warned = False

    def on_window(self, window: Window) -> None:
        seeds = list(window.rows)
        # speed and ETA from the windows this process trained: a resumed run's earlier attempts
        # add time but none of these windows
        trained = window.index - self.done_windows
        steps_done = trained * self.eval_frequency
        train_time = max(window.attempt_train_time_s, 1e-9)
        log.info(progress_line(
            self.tag, window.index, self.num_windows, window.env_steps, self.total_env_steps,
            steps_done * len(seeds) / train_time, [window.rows[s]["episode_return"] for s in seeds],
            [window.rows[s]["intrinsic_reward"] for s in seeds] if self.intrinsic else None,
            (self.num_windows - window.index) * train_time / max(trained, 1),
            self.bonus_note(window.metrics, len(seeds)), noun=self.runs_noun))

    def bonus_note(self, metrics: Mapping[str, Any], num_seeds: int) -> str:
        """The bonus's note on this window ("" without one), its warning logged the first time."""
        if self.note is None:
            return ""
        text, warning = self.note(metrics, self.updates_per_window * num_seeds)
        if warning and not self._warned:
            self._warned = True
            log.warning("[%s] %s", self.tag, warning)
        return text


class StopSignals(StopSignalScope):
    """SIGTERM (a scheduler's stop, ``kill``) and SIGINT (Ctrl-C) end training after the current
    window, with a checkpoint, instead of killing it mid-window; in a submitit task
    (``submitit=True``), SIGUSR2 (time limit, preemption) likewise: the job's supervisor then hands
    that signal to submitit's own handler, which requeues the task. A Ctrl-C while a stop is
    already pending quits at once (``KeyboardInterrupt``: no checkpoint waited for).

    ``received`` is the signal number once one came. Outside the main thread (where Python
    cannot install handlers) it does nothing."""

    def __init__(self, submitit: bool = False) -> None:
        super().__init__(submitit)
        self.received: int | None = None

    def _handle(self, signum, frame) -> None:
        if signum == signal.SIGINT:
            if self.received is not None:
                raise KeyboardInterrupt
            # os.write: a handler can run inside a print or a log call, which must not be re-entered
            os.write(2, b"Ctrl-C: stopping after this window with a checkpoint (Ctrl-C again quits at once)\n")
        self.received = signum

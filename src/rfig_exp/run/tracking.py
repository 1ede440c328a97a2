"""Progress lines and the optional wandb mirror of the metrics (never the source of truth)."""

from __future__ import annotations

import hashlib
import logging
import math
import shutil
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, NamedTuple, Sequence

from rfig_exp.config.errors import ConfigError

log = logging.getLogger("rfig_exp")


def _fmt(value: float) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4g}"


def seeds_phrase(n: int, noun: str = "seeds") -> str:
    """How a progress line names the runs a return stands for: ``1 seed``, ``median of 8 seeds``
    (``noun`` "runs" for the members of a stacked job, which differ in more than their seed)."""
    return f"1 {noun.rstrip('s')}" if n == 1 else f"median of {n} {noun}"


def progress_line(tag: str, window: int, num_windows: int, env_steps: int, total_steps: int,
                  steps_per_s: float, returns: Sequence[float], intrinsic: Sequence[float] | None, eta_s: float,
                  extra: str = "", noun: str = "seeds") -> str:
    """One window's progress; ``intrinsic`` None for a bonus without an intrinsic reward (none)."""
    finite = [r for r in returns if not math.isnan(r)]
    median = statistics.median(finite) if finite else float("nan")
    r_int = "" if intrinsic is None else f" | r_int {_fmt(sum(intrinsic) / max(len(intrinsic), 1))}"
    return (f"[{tag}] window {window}/{num_windows} | {env_steps:,}/{total_steps:,} steps "
            f"({100 * env_steps / total_steps:.0f}%) | {steps_per_s / 1e3:.1f}k steps/s | "
            f"return {_fmt(median)} ({seeds_phrase(len(returns), noun)}){r_int}"
            + (f" | {extra}" if extra else "") + f" | eta {eta_s:.0f}s")


MAX_TAG = 64  # wandb.init refuses an empty tag or a longer one


@dataclass(frozen=True)
class RunLabels:
    """How a job's runs show in the wandb UI, so a sweep is browsed by clicks, not typed strings.

    ``group``: one per cell, its seeds side by side (``<experiment>/<env>/<bonus>/<variant>`` unless
    ``wandb.group``); ``job_type``: the experiment, so one click groups or filters a whole sweep in a
    project that holds several; ``tags``: ``env:<env>``, ``bonus:<bonus>``, ``variant:<variant>``, then
    ``wandb.tags``; ``folder``: the cell's folder under the experiment, which names each run
    ``<env>/<bonus>/<variant>/seed_<k>`` as in the results tree.
    """

    group: str
    job_type: str
    tags: tuple[str, ...]
    folder: str

    def name(self, seed: int) -> str:
        return f"{self.folder}/seed_{seed}"


def _fit_tag(tag: str) -> str:
    """``tag`` cut to wandb's limit, a digest of the whole keeping two long variants apart."""
    if len(tag) <= MAX_TAG:
        return tag
    return tag[: MAX_TAG - 9] + "~" + hashlib.sha1(tag.encode()).hexdigest()[:8]


def run_labels(experiment: str, env: str, bonus: str, variant: str, group: str | None = None,
               tags: Sequence[str] = ()) -> RunLabels:
    """The labels of one cell's runs; ``group`` and ``tags`` are ``wandb.group`` and ``wandb.tags``."""
    bad = [t for t in tags if not 1 <= len(t) <= MAX_TAG]
    if bad:
        raise ConfigError(f"wandb.tags: {bad[0]!r} is {len(bad[0])} characters; wandb takes tags of 1 to "
                          f"{MAX_TAG} characters")
    own = (f"env:{env}", f"bonus:{bonus}", _fit_tag(f"variant:{variant}"))
    return RunLabels(group=group or f"{experiment}/{env}/{bonus}/{variant}", job_type=experiment,
                     tags=tuple(dict.fromkeys((*own, *tags))), folder=f"{env}/{bonus}/{variant}")


class WandbRun(NamedTuple):
    """What one run's wandb run is made from: its folder, config, the id it continues (None: a
    new run), its labels and its seed (its name's last part)."""

    directory: str
    config: dict
    run_id: str | None
    labels: RunLabels
    seed: int


class WandbRuns:
    """One wandb run per run of a job, by the job's key for it. ``mode``: online | offline | disabled.

    Online without a key or network falls back to offline after ``init_timeout`` seconds
    with one warning line, so a sweep never blocks on it; offline runs land in
    ``<run_dir>/wandb/`` and upload later with ``make wandb-sync`` (``rfig_exp.results.wandb_sync``).
    A seed given a run id (a resumed run) continues that wandb run instead of starting a second one.
    """

    def __init__(self, mode: str, project: str, entity: str | None, runs: Mapping[int, WandbRun],
                 init_timeout: float = 10.0):
        self._runs = {}
        if mode == "disabled":
            return
        import wandb

        for key, (directory, config, run_id, labels, seed) in runs.items():
            kwargs = dict(project=project, entity=entity, group=labels.group, job_type=labels.job_type,
                          name=labels.name(seed), dir=directory, config=config, tags=list(labels.tags),
                          reinit="create_new",
                          **({"id": run_id, "resume": "allow"} if run_id else {}))
            try:
                # silent: wandb's own history/summary blocks were most of a sweep's console
                run = wandb.init(mode=mode, settings=wandb.Settings(init_timeout=init_timeout, silent=True),
                                 **kwargs)
            except Exception as err:  # noqa: BLE001 - any online failure means "go offline"
                if mode != "online":
                    raise
                log.warning("wandb: online init failed (%s); logging offline instead (upload later with "
                            "`make wandb-sync`)", str(err).splitlines()[0] if str(err) else type(err).__name__)
                mode = "offline"  # the other seeds of this job go straight to offline
                for leftover in Path(directory, "wandb").glob("run-*"):  # the failed online attempt
                    shutil.rmtree(leftover, ignore_errors=True)
                run = wandb.init(mode="offline", settings=wandb.Settings(silent=True), **kwargs)
            self._runs[key] = run
        if self._runs:
            first = next(iter(runs.values()))
            log.info("wandb (%s): one run per seed under %s/wandb/%s", mode,
                     Path(first.directory).parent.name + "/seed_*",
                     f"; upload with `make wandb-sync EXPERIMENT={first.labels.job_type}`" if mode == "offline" else "")
    def ids(self) -> dict[int, str]:
        return {key: run.id for key, run in self._runs.items()}

    def log(self, key: int, row: Mapping[str, float], step: int) -> None:
        if key in self._runs:
            try:
                self._runs[key].log({k: v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))},
                                     step=step)
            except Exception as err:  # noqa: BLE001 - a mirror must never stop the training it mirrors
                self._give_up(err)

    def finish(self, key: int, summary: Mapping | None = None, failed: bool = False) -> None:
        run = self._runs.pop(key, None)
        if run is not None:
            try:
                if summary:
                    run.summary.update({k: v for k, v in summary.items() if isinstance(v, (int, float))})
                run.finish(exit_code=1 if failed else 0)
            except Exception as err:  # noqa: BLE001 - as in log
                self._give_up(err)

    def _give_up(self, err: Exception) -> None:
        """wandb broke mid-run (its service process died, say): say so once and stop mirroring."""
        log.warning("wandb stopped working (%s: %s); training goes on without it, metrics.csv is the record",
                    type(err).__name__, str(err).splitlines()[0] if str(err) else "")
        self._runs = {}
        import wandb

        try:
            wandb.teardown()  # also drops its exit hook, which would fail on the dead service again
        except Exception:  # noqa: BLE001 - the service is gone; nothing more to close
            pass

    def finish_all(self, failed: bool) -> None:
        for key in list(self._runs):
            self.finish(key, failed=failed)

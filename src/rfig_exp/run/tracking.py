"""Progress lines and the optional mirrors of the metrics: wandb runs and TensorBoard event files
(never the source of truth: ``metrics.csv`` is).

A mirror of a resumed run holds what the killed attempt got into it, which is not what
``metrics.csv`` kept: a kill loses the rows a mirror had not yet written out (wandb's service writes
its transaction log in blocks, not row by row: a short run killed has none of its rows on disk), and
keeps those it wrote after the checkpoint that the run resumes from. So each mirror of a resumed
run is read back first (its event files, its wandb transaction logs), the windows of ``metrics.csv``
it lacks are replayed into it, and the windows it holds already are not logged again: every window
once, in order of steps.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import shutil
import socket
import statistics
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, NamedTuple, Sequence

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
    A seed given a run id (a resumed run) continues that wandb run instead of starting a second one;
    what its earlier attempts' transaction logs hold (:func:`wandb_logged_step`) is not logged again,
    and :meth:`replay` logs the rows of ``metrics.csv`` they lack.
    """

    def __init__(self, mode: str, project: str, entity: str | None, runs: Mapping[int, WandbRun],
                 init_timeout: float = 10.0):
        self._runs: dict[int, Any] = {}
        self._held: dict[int, int] = {}  # run -> the last env step its wandb run holds
        if mode == "disabled":
            return
        import wandb

        for key, (directory, config, run_id, labels, seed) in runs.items():
            held = _logged_step_or_none(Path(directory) / "wandb", run_id) if run_id else 0
            kwargs = dict(project=project, entity=entity, group=labels.group, job_type=labels.job_type,
                          name=labels.name(seed), dir=directory, config=config, tags=list(labels.tags),
                          reinit="create_new",
                          **({"id": run_id, "resume": "allow"} if run_id else {}))
            try:
                # silent: wandb's own history/summary blocks were most of a sweep's console
                run = _init_when_free(wandb, mode=mode, settings=wandb.Settings(init_timeout=init_timeout, silent=True),
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
            if mode == "online" and run_id and run.resumed:
                # the server's history, not the local log, is what an online run holds: it starts
                # after the last step the server has (a replayed step it holds is dropped by wandb)
                held = max(run.starting_step - 1, 0)
            self._runs[key] = run
            self._held[key] = held
        if self._runs:
            first = next(iter(runs.values()))
            log.info("wandb (%s): one run per seed under %s/wandb/%s", mode,
                     Path(first.directory).parent.name + "/seed_*",
                     f"; upload with `make wandb-sync EXPERIMENT={first.labels.job_type}`" if mode == "offline" else "")
    def ids(self) -> dict[int, str]:
        return {key: run.id for key, run in self._runs.items()}

    def log(self, key: int, row: Mapping[str, float], step: int) -> None:
        """Logs ``row`` at ``step`` unless the run holds that step already (an earlier attempt logged
        it); committed at once, so that it goes to wandb's service now, not with the next row."""
        if key in self._runs and step > self._held.get(key, 0):
            try:
                self._runs[key].log({k: v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))},
                                     step=step, commit=True)
                self._held[key] = step
            except Exception as err:  # noqa: BLE001 - a mirror must never stop the training it mirrors
                self._give_up(err)

    def replay(self, key: int, rows: Sequence[Mapping[str, str]]) -> int:
        """Logs the rows of ``metrics.csv`` (as read, strings) that the run's wandb run lacks; how many."""
        before = self._held.get(key, 0)
        for row in rows:
            self.log(key, csv_values(row), int(row["env_steps"]))
        return sum(before < int(row["env_steps"]) <= self._held.get(key, 0) for row in rows)

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


def csv_values(row: Mapping[str, str]) -> dict[str, float]:
    """A ``metrics.csv`` row as read (strings) as the numbers the run logged: an empty cell (NaN)
    left out, an integer column as an ``int``."""
    out: dict[str, float] = {}
    for key, text in row.items():
        if text:
            try:
                out[key] = int(text)
            except ValueError:
                out[key] = float(text)
    return out


# -- TensorBoard ---------------------------------------------------------------------------------
EVENTS = "events.out.tfevents."  # what TensorBoard looks for in a file's name


def _masked_crc32c(data: bytes) -> int:
    from tensorboardX.record_writer import masked_crc32c

    return masked_crc32c(data)


def _tfrecords(path: Path) -> tuple[list[bytes], int]:
    """The whole records of a TFRecord file and the length they span: a record torn by a kill (or
    one whose length is garbled) ends them. Only each length is checked against its checksum: a
    file is read once per resume, and checking every payload in pure Python would cost seconds."""
    data = path.read_bytes()
    records, pos = [], 0
    while pos + 12 <= len(data):
        header = data[pos:pos + 8]
        if struct.unpack("<I", data[pos + 8:pos + 12])[0] != _masked_crc32c(header):
            break
        (length,) = struct.unpack("<Q", header)
        end = pos + 12 + length + 4
        if end > len(data):
            break
        records.append(data[pos + 12:pos + 12 + length])
        pos = end
    return records, pos


def events_logged_step(run_dir: Path) -> int:
    """The last env step of the metrics in a run folder's TensorBoard event files (0: none), each
    file cut back to its whole records (a torn last record, which TensorBoard could not read
    either, goes: its window is replayed)."""
    from tensorboardX.proto import event_pb2

    last = 0
    for path in sorted(run_dir.glob(EVENTS + "*")):
        records, whole = _tfrecords(path)
        if whole < path.stat().st_size:
            os.truncate(path, whole)
        for data in records:
            try:
                event = event_pb2.Event.FromString(data)
            except Exception:  # noqa: BLE001 - protobuf's DecodeError: a garbled record ends the file
                break
            if event.HasField("summary"):
                last = max(last, event.step)
    return last


class EventFile:
    """One run's metrics as TensorBoard scalars, in an event file of its own folder, so that
    ``tensorboard --logdir <results_dir>/<experiment>`` shows every run of a sweep, each named by its
    folder (``<env>/<bonus>/<variant>/seed_<k>``). One event per window, its step the window's env
    steps, one scalar per metrics column (NaN left out), flushed like ``metrics.csv``.

    Each attempt writes a file of its own (TensorBoard reads a folder's files in order of their
    names, which begin with the time): ``kept``, the rows of ``metrics.csv`` a resumed run keeps,
    are replayed into it from the first the earlier files lack, and a window they hold already is
    not written again (:func:`events_logged_step`). A replayed window carries the time of its replay.
    """

    def __init__(self, run_dir: Path, kept: Sequence[Mapping[str, str]] = ()):
        try:
            from tensorboardX.proto import event_pb2, summary_pb2
        except ImportError:
            raise ImportError("tensorboard=true writes TensorBoard event files with tensorboardX: "
                              "pip install tensorboardX, or set tensorboard=false") from None
        self._event, self._summary = event_pb2.Event, summary_pb2.Summary
        self.path = run_dir / f"{EVENTS}{time.time():.6f}.{socket.gethostname()}.{os.getpid()}"
        self.held = events_logged_step(run_dir)
        self._file: Any = None
        self.replayed = 0
        for row in kept:
            step = int(row["env_steps"])
            if step > self.held:
                self.append(csv_values(row), step)
                self.replayed += 1

    def append(self, row: Mapping[str, float], step: int) -> None:
        """Writes ``row`` at ``step`` (unless an earlier attempt's file holds that step) and flushes."""
        if step <= self.held:
            return
        if self._file is None:
            self._file = open(self.path, "ab")
            self._write(self._event(wall_time=time.time(), file_version="brain.Event:2"))
        values = [self._summary.Value(tag=k, simple_value=float(v)) for k, v in row.items()
                  if not math.isnan(float(v))]
        self._write(self._event(wall_time=time.time(), step=step, summary=self._summary(value=values)))
        self._file.flush()
        self.held = step

    def _write(self, event: Any) -> None:
        data = event.SerializeToString()
        header = struct.pack("<Q", len(data))
        self._file.write(header + struct.pack("<I", _masked_crc32c(header)) + data
                         + struct.pack("<I", _masked_crc32c(data)))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


# -- what a wandb run holds ------------------------------------------------------------------------
def _init_when_free(wandb, attempts: int = 10, wait_s: float = 3.0, **kwargs):
    """``wandb.init(**kwargs)``, retried while wandb's service says the run id is in use: a resumed
    run's id is still held, for some seconds, by the service of the attempt before it (one that was
    killed, or one finishing in the same process), longer on a loaded machine."""
    for attempt in range(attempts):
        try:
            return wandb.init(**kwargs)
        except Exception as err:  # noqa: BLE001 - wandb raises its service's error types
            if "is in use" not in str(err) or attempt == attempts - 1:
                raise
            log.info("wandb: run id %s still in use by an earlier attempt; retrying in %.0f s",
                     kwargs.get("id"), wait_s)
            time.sleep(wait_s)
    raise AssertionError("unreachable")


_WANDB_BLOCK, _WANDB_FILE_HEADER, _WANDB_RECORD_HEADER = 32768, 7, 7
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def wandb_records(path: Path) -> Iterator[bytes]:
    """The whole records of a wandb transaction log (``run-<id>.wandb``): LevelDB's log format,
    32 KiB blocks of checksummed pieces after a 7-byte file header, as wandb's service writes it.
    A piece torn or lost by a kill ends them (a record cut across blocks is left out whole), as
    ``wandb sync`` would read the file too."""
    try:
        data = path.read_bytes()
    except OSError:
        return
    if not data.startswith(b":W&B"):
        return
    pos, pending = _WANDB_FILE_HEADER, None
    while True:
        left = _WANDB_BLOCK - pos % _WANDB_BLOCK
        if left < _WANDB_RECORD_HEADER:  # a block's tail too short for a header is padding
            pos += left
            continue
        if pos + _WANDB_RECORD_HEADER > len(data):
            return
        crc, length, kind = struct.unpack_from("<IHB", data, pos)
        body = data[pos + _WANDB_RECORD_HEADER:pos + _WANDB_RECORD_HEADER + length]
        if kind not in (_FULL, _FIRST, _MIDDLE, _LAST) or len(body) < length or \
                zlib.crc32(body, zlib.crc32(bytes([kind]))) != crc:
            return
        pos += _WANDB_RECORD_HEADER + length
        if kind == _FULL:
            yield body
        elif kind == _FIRST:
            pending = body
        elif pending is not None:
            pending += body
            if kind == _LAST:
                yield pending
                pending = None


def wandb_logged_step(wandb_dir: Path, run_id: str) -> int:
    """The last step of history the earlier attempts of wandb run ``run_id`` wrote into their
    transaction logs under ``wandb_dir`` (0: none), what ``wandb sync`` would upload. An attempt
    whose log lost even its run record (killed before wandb's service wrote a block) holds nothing
    to upload and is removed, so that ``wandb sync`` is not handed an empty run."""
    from wandb.proto import wandb_internal_pb2

    last = 0
    for folder in sorted(wandb_dir.glob(f"*run-*-{run_id}")):
        has_run = False
        for body in wandb_records(folder / f"run-{run_id}.wandb"):
            record = wandb_internal_pb2.Record.FromString(body)
            kind = record.WhichOneof("record_type")
            has_run = has_run or kind == "run"
            if kind == "history":
                last = max(last, record.history.step.num)
        if not has_run and not any(folder.glob("*.synced")):
            shutil.rmtree(folder, ignore_errors=True)
    return last


def _logged_step_or_none(wandb_dir: Path, run_id: str) -> int:
    """:func:`wandb_logged_step`, or 0 with a warning when the logs cannot be read (a wandb whose
    format this reader does not know): the resumed run then logs the kept rows again."""
    try:
        return wandb_logged_step(wandb_dir, run_id)
    except Exception as err:  # noqa: BLE001 - a mirror must never stop the training it mirrors
        log.warning("wandb: cannot read the earlier attempts of run %s (%s: %s); its kept windows are logged again",
                    run_id, type(err).__name__, err)
        return 0

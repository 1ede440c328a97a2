"""Hydra (and submitit) beyond their public API, in one small module checked against their versions.

An upgrade has this one file to read. What it reaches into, and why:

- Hydra's command line (``hydra._internal.utils``): :func:`run` is ``@hydra.main`` given the
  arguments as a value instead of reading ``sys.argv``; :func:`run_sweep` is Hydra's multirun
  with the jobs planned already (``Hydra.multirun`` asks its sweeper to expand the command line
  again): it hands the sweeper the plan.
- Hydra's basic sweeper and launcher (``hydra._internal.core_plugins``): the resilient sweeper
  extends the basic sweeper, asks whether the launcher runs jobs in this process, and the plan
  expands a sweep exactly as that sweeper would (:func:`expand_sweep`).
- A job's result: ``JobReturn.return_value`` re-raises a failed job's exception; the sweeper
  reads the exception itself (``_return_value``) to count it and go on (:func:`job_result`), and a
  submitit task that ends itself writes such a result (:func:`failed_job_return`).
- submitit's requeue (``JobEnvironment._requeue``), its result file, and its sacct poll command
  (``SlurmInfoWatcher._make_command``, wrapped to drop the poll's stderr).

What a sweep job returns to the sweeper is :class:`JobOutcome`, a documented value.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import hydra

# The versions this module was written and tested against (pyproject.toml pins the same).
HYDRA_SERIES = "1.3."
SUBMITIT_SERIES = "1.5."

if not hydra.__version__.startswith(HYDRA_SERIES):
    raise ImportError(f"rfig-exp needs hydra-core {HYDRA_SERIES}x (pyproject.toml pins it), found {hydra.__version__}: "
                      "rfig_exp/launch/hydra_adapter.py uses its internals; check them before allowing another version")

from hydra.core.override_parser.overrides_parser import OverridesParser  # noqa: E402
from hydra.core.utils import JobReturn, JobStatus  # noqa: E402
from hydra.errors import HydraException  # noqa: E402


@dataclass(frozen=True)
class JobOutcome:
    """What a sweep job tells the sweeper (``launch.main``'s return value): whether everything was
    complete already, whether it resumed from a checkpoint, and the stall retries it used."""

    skipped: bool = False
    resumed: bool = False
    stall_retries: int = 0


# Where a sweep's jobs run (``launcher_kind``): in the sweep's own process, or each a submitit task.
IN_PROCESS, LOCAL, SLURM = "in-process", "local", "slurm"


@dataclass(frozen=True)
class CurrentJob:
    """The Hydra job this process runs."""

    multirun: bool
    overrides: list[str]          # the job's overrides as typed
    index: int                    # its index in the sweep (0 outside one)
    jobs_in_parallel: int | None  # jobs that run at once (None: all, or not a sweep)
    searchpath: tuple[str, ...] = ()  # hydra.searchpath: the user's config folders (envs, bonuses of their own)
    launcher: str = IN_PROCESS    # where the sweep runs it: IN_PROCESS, LOCAL or SLURM (a single run: IN_PROCESS)

    @property
    def submitit(self) -> bool:
        """A task of its own under submitit (hydra/launcher=local or slurm)."""
        return self.launcher in (LOCAL, SLURM)


def current_job() -> CurrentJob:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    return CurrentJob(multirun, list(hc.overrides.task), *job_slot(hc), searchpath=tuple(hc.searchpath),
                      launcher=launcher_kind(hc.launcher) if multirun else IN_PROCESS)


def launcher_kind(launcher) -> str:
    """Where a config's ``hydra.launcher`` node runs a sweep's jobs: :data:`LOCAL` or :data:`SLURM`
    (each a submitit task), else :data:`IN_PROCESS` (Hydra's basic launcher: the sweep's own process)."""
    from omegaconf import OmegaConf

    target = str(OmegaConf.select(launcher, "_target_", default=""))
    return LOCAL if target.endswith(".LocalLauncher") else SLURM if target.endswith(".SlurmLauncher") else IN_PROCESS


def job_slot(hydra_cfg) -> tuple[int, int | None]:
    """``(job_index, jobs_in_parallel)`` from a job's Hydra config: ``job.num`` is its index in the
    whole sweep (-1 outside a multirun, read as 0); ``sweeper.max_batch_size`` the number of jobs
    submitit_local runs at once (None: all)."""
    from omegaconf import OmegaConf

    num = OmegaConf.select(hydra_cfg, "job.num", default=-1)
    batch = OmegaConf.select(hydra_cfg, "sweeper.max_batch_size", default=None)
    return max(int(num if num is not None else 0), 0), (int(batch) if batch else None)


def run(task_function: Callable, argv: Sequence[str], config_path: str = "conf") -> None:
    """Hydra's command line ``argv`` with ``task_function`` as its job, as ``@hydra.main`` runs it
    (``config_path`` relative to the task function's file), given the arguments instead of
    reading them from ``sys.argv``."""
    from hydra._internal.utils import _run_hydra, get_args_parser

    parser = get_args_parser()
    _run_hydra(args=parser.parse_args(list(argv)), args_parser=parser, task_function=task_function,
               config_path=config_path, config_name="config")


def run_sweep(task_function: Callable, jobs: Sequence[Sequence[str]], overrides: Sequence[str], conf_dir: Path,
              task_name: str) -> None:
    """Hydra's multirun of ``jobs`` (override lists, in launch order): the sweep's config composed
    from ``overrides`` (the command line's, as Hydra's first composition of a sweep reads them) in
    ``conf_dir``, its sweeper given the jobs. ``task_name``: Hydra's job name (its log file's)."""
    from hydra._internal.callbacks import Callbacks
    from hydra._internal.hydra import Hydra
    from hydra._internal.utils import create_config_search_path, run_and_report
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.plugins import Plugins
    from hydra.types import HydraContext, RunMode

    hydra = run_and_report(lambda: Hydra.create_main_hydra2(task_name=task_name,
                                                             config_search_path=create_config_search_path(str(conf_dir))))

    def multirun() -> None:
        cfg = hydra.compose_config("config", [*overrides, "hydra.mode=MULTIRUN"], run_mode=RunMode.MULTIRUN,
                                   with_log_configuration=True)
        callbacks = Callbacks(cfg)
        callbacks.on_multirun_start(config=cfg, config_name="config")
        sweeper = Plugins.instance().instantiate_sweeper(
            config=cfg, hydra_context=HydraContext(config_loader=hydra.config_loader, callbacks=callbacks),
            task_function=task_function)
        sweeper.run_jobs(jobs)  # type: ignore[attr-defined]  # the resilient sweeper of conf/config.yaml
        callbacks.on_multirun_end(config=cfg, config_name="config")

    try:
        run_and_report(multirun)
    finally:
        GlobalHydra.instance().clear()


def basic_sweeper():
    """Hydra's basic sweeper class, looked up when asked: Hydra's plugin scan re-executes its core
    plugin modules, so a class object kept from an earlier import is not the one Hydra uses."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    return BasicSweeper


def parse_overrides(overrides: Sequence[str], config_loader=None) -> list:
    """Hydra's parsed overrides; :class:`HydraException` for a line it cannot parse."""
    return OverridesParser.create(config_loader=config_loader).parse_overrides(list(overrides))


def expand_sweep(overrides: Sequence[str], config_loader=None) -> list[list[str]]:
    """Every job's override list, as Hydra's basic sweeper expands a multirun command line."""
    batches = basic_sweeper().split_arguments(parse_overrides(overrides, config_loader), None)
    return [list(job) for job in batches[0]]


def runs_in_process(launcher) -> bool:
    """Whether ``launcher`` runs each job in this process (Hydra's basic launcher)."""
    from hydra._internal.core_plugins.basic_launcher import BasicLauncher

    return isinstance(launcher, BasicLauncher)


def job_result(job: JobReturn) -> tuple[bool, Any]:
    """``(completed, value)``: a completed job's return value, or a failed job's exception."""
    if job.status == JobStatus.COMPLETED:
        return True, job.return_value
    return False, job._return_value


def failed_job_return(cfg, error: Exception) -> JobReturn:
    """The current job's result as Hydra's launchers return a job that raised ``error``."""
    from hydra.core.hydra_config import HydraConfig

    hc = HydraConfig.get()
    hydra_cfg = HydraConfig.instance().cfg  # the job's whole config, hydra node included
    return JobReturn(overrides=list(hc.overrides.task), cfg=cfg, hydra_cfg=hydra_cfg,  # type: ignore[arg-type]
                     working_dir=os.getcwd(), task_name=hc.job.name, status=JobStatus.FAILED, _return_value=error)


# -- submitit ---------------------------------------------------------------------------------
def _submitit():
    import submitit

    if not submitit.__version__.startswith(SUBMITIT_SERIES):
        raise ImportError(f"rfig-exp needs submitit {SUBMITIT_SERIES}x (pyproject.toml pins it), found "
                          f"{submitit.__version__}: rfig_exp/launch/hydra_adapter.py uses its internals")
    return submitit


def requeue_submitit_task() -> None:
    """Requeue this submitit task as submitit does at a time limit (``scontrol requeue`` under
    SLURM; submitit_local requeues a task by its exit code, so that one ends the process)."""
    env = _submitit().JobEnvironment()
    try:
        env._requeue(0)
    except SystemExit as requeue:
        os._exit(requeue.code if isinstance(requeue.code, int) else 1)


def write_submitit_result(result: Any) -> None:
    """Record ``result`` as this submitit task's return value (a task that dies without one would
    make the launcher raise for its whole batch)."""
    from submitit.core import utils

    utils.cloudpickle_dump(("success", result), _submitit().JobEnvironment().paths.result_pickle)


def quiet_sacct() -> None:
    """submitit's sacct polls without their stderr on the console (on a cluster without
    accounting storage every poll fails; its own warning still reaches the log once)."""
    _submitit()
    from submitit.slurm import slurm as submitit_slurm

    watcher = submitit_slurm.SlurmInfoWatcher
    if getattr(watcher, "_rfig_quiet", False):
        return
    make = watcher._make_command

    def make_command(self):
        command = make(self)
        return None if command is None else ["sh", "-c", 'exec "$0" "$@" 2>/dev/null', *command]

    watcher._make_command = make_command  # type: ignore[method-assign]
    watcher._rfig_quiet = True  # type: ignore[attr-defined]


__all__ = ["CurrentJob", "HydraException", "JobOutcome", "basic_sweeper", "current_job", "expand_sweep",
           "failed_job_return", "job_result", "job_slot", "launcher_kind", "parse_overrides", "quiet_sacct",
           "requeue_submitit_task", "run", "run_sweep", "runs_in_process", "write_submitit_result"]

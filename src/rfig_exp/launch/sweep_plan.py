"""A ``-m`` command line's jobs, as they will run: planned once, by preflight, as values.

A sweep is planned in the two steps Hydra takes: its *primary config* is composed (the defaults, a
preset ``sweep=NAME`` and the command line's single values; a sweep ``a,b`` is left for later),
then the preset's ``hydra.sweeper.params`` followed by the command line are expanded into one
override list per job (``hydra_adapter.expand_sweep``, as Hydra's basic sweeper expands them).
:func:`plan_sweep` is that second step with what this project adds to it: per-env options applied
to the envs that have them (:mod:`rfig_exp.launch.env_options`) and one-seed jobs grouped into
vmapped ones (:mod:`rfig_exp.launch.grouping`), whose settings it reads from the primary config
(:class:`SweepSettings`), so Hydra's precedence decides them. Preflight composes and validates each
job once, stacks jobs of one compiled program (:mod:`rfig_exp.launch.stacking`, with
:func:`stacking_cap`) and hands the result, a :class:`LaunchPlan`, to the runner
(:mod:`rfig_exp.launch.runner`).

Hydra composes the primary config from the command line with every per-env option as ``++env.K=V``
(:attr:`SweepPlan.overrides`, :func:`rfig_exp.launch.env_options.for_primary_compose`): it uses the
default env, which may lack the key; the plan gives each job the option as typed, or leaves it out.

Nothing here imports JAX.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from omegaconf import DictConfig, OmegaConf

from rfig_exp.config import folders, jobs, variants
from rfig_exp.config.folders import CONF_DIR
from rfig_exp.launch import env_options, grouping
from rfig_exp.launch.hydra_adapter import compose, expand_sweep, parse_overrides
from rfig_exp.spec.stack import Job


@dataclass(frozen=True)
class SweepSettings:
    """What the plan reads of a sweep's primary config."""

    seeds_per_job: Any          # auto or an integer (checked by grouping.plan)
    members_per_job: Any        # auto or an integer (checked by stacking.resolve)
    num_seeds: int              # of a job that sets none
    seed: int                   # of a job that sets none
    default_env: str            # the env of a job without env=
    env_backend: str | None     # env.backend where a job sets none (a preset's, or the command line's)
    gpu: bool                   # jobs get a GPU: hydra.launcher.gpus_per_node, or one visible here

    @classmethod
    def of(cls, primary: DictConfig, gpu: bool | None = None) -> SweepSettings:
        """From a primary config (its ``hydra`` node included); ``gpu`` None: asked of the config
        and this machine. A value that is not an integer (a sweep of it) counts as the default."""
        gpus = OmegaConf.select(primary, "hydra.launcher.gpus_per_node", default=None)
        return cls(seeds_per_job=OmegaConf.select(primary, "seeds_per_job", default=jobs.AUTO),
                   members_per_job=OmegaConf.select(primary, "members_per_job", default=jobs.AUTO),
                   num_seeds=_int_or(OmegaConf.select(primary, "num_seeds", default=1), 1),
                   seed=_int_or(OmegaConf.select(primary, "seed", default=0), 0),
                   default_env=str(OmegaConf.select(primary, "env.name", default=env_options.default_env())),
                   env_backend=OmegaConf.select(primary, "env.backend", default=None),
                   gpu=bool(gpus) or grouping.gpu_visible() if gpu is None else gpu)


def _int_or(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True)
class SweepPlan:
    """The jobs of a sweep (override lists, in launch order), the console lines that say what the
    plan changed (options left out of some envs, seeds grouped, Brax split; ``notes``: the first of
    these alone, which count no jobs: launch.py says the jobs in one line, after validation), the keys whose value
    is not the same in every job (each job's console label shows them first: its own overrides
    cannot tell which of them the other jobs share), and the command line as Hydra composes the
    sweep's primary config from it."""

    jobs: list[list[str]]
    lines: list[str]
    varying: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaunchPlan:
    """A command line as it runs: its compiled jobs (each a list of run specs that share one
    program, ``rfig_exp.spec.stack.Job``), composed and validated once by preflight, in launch
    order; the config whose ``hydra`` node says where and how they run (a sweep's primary config,
    a single run's own); whether it is a ``-m`` sweep; and the keys whose value is not the same in
    every run of the sweep (each job's console label shows them first)."""

    jobs: tuple[Job, ...]
    config: DictConfig
    multirun: bool
    varying: tuple[str, ...] = ()

    @property
    def runs(self) -> int:
        return sum(job.members for job in self.jobs)


def stacking_cap(primary: DictConfig, gpu: bool | None = None):
    """``spec -> members per job`` for a sweep whose primary config is ``primary`` (``gpu`` None: as
    on this machine): ``members_per_job`` resolved (rfig_exp.launch.stacking), 1 for a Brax program
    that a CPU sweep trains one seed per process (grouping's XLA CPU wedge)."""
    from rfig_exp.launch import stacking

    s = SweepSettings.of(primary, gpu)
    cap = stacking.resolve(s.members_per_job, s.gpu)

    def of(spec) -> int:
        if not s.gpu and grouping.splits_on_cpu(spec.env_name, getattr(spec.env, "backend", None)):
            return 1
        return cap

    return of


def sweep_params(primary: DictConfig) -> list[str]:
    """A preset's ``hydra.sweeper.params`` as overrides (``env=a,b``), as Hydra's basic sweeper reads them."""
    params = OmegaConf.select(primary, "hydra.sweeper.params", default=None) or {}
    return [f"{key}={value}" for key, value in params.items()]


def task_overrides(overrides: Sequence[str]) -> list[str]:
    """The overrides that reach the jobs (``hydra.overrides.task``): all but Hydra's own, each env
    option as typed (``env.K=V``: launch.py hands Hydra ``++env.K=V`` for the primary compose only).
    Hydra's sweeper lets a later override of a key replace an earlier one only when both spell the
    key alike, so ``-m sweep=NAME env.size=40`` must reach it as ``env.size=40`` to replace a
    preset's ``env.size: 10,20,30,40`` (one size, not four sizes each overridden)."""
    return [env_options.as_typed(o.input_line) for o in parse_overrides(overrides) if not o.is_hydra_override()]


def plan_sweep(primary: DictConfig, overrides: Sequence[str], gpu: bool | None = None) -> SweepPlan:
    """Every job of a sweep whose primary config is ``primary`` and whose command line (as Hydra
    composes ``primary`` from it) is ``overrides``. Raises ``HydraException`` for a sweep Hydra
    cannot expand and ``ValueError`` for a bad ``seeds_per_job``."""
    expanded = expand_sweep(sweep_params(primary) + task_overrides(overrides))
    jobs, notes = env_options.apply_to_envs_that_have_them(expanded, _conf_dirs(primary))
    s = SweepSettings.of(primary, gpu)
    grouped, lines = grouping.plan(jobs, s.seeds_per_job, s.gpu, s.default_env, s.num_seeds, s.seed, s.env_backend)
    # the seeds and the env/bonus choices aside: the label names them anyway
    return SweepPlan(grouped, notes + lines, tuple(variants.varying_keys(jobs)), tuple(overrides), tuple(notes))


def _conf_dirs(primary: DictConfig) -> tuple[Path, ...]:
    """conf/ and the user's config folders of the sweep (its ``hydra.searchpath``)."""
    return folders.config_dirs(list(OmegaConf.select(primary, "hydra.searchpath", default=None) or []))


def primary_overrides(overrides: Sequence[str]) -> list[str]:
    """What Hydra's primary compose applies of a ``-m`` command line (as Hydra is handed it): every
    override but the sweeps, which only the jobs get."""
    return [o.input_line for o in parse_overrides(overrides) if not o.is_sweep_override()]


def compose_primary(overrides: Sequence[str], conf_dir: Path = CONF_DIR) -> DictConfig:
    """The primary config of ``python launch.py -m OVERRIDES``: the defaults, a preset and the
    command line's single values (``hydra`` node included: launcher, sweep folder, logging). Raises
    ``HydraException`` for a config Hydra cannot compose."""
    return compose(primary_overrides(env_options.for_primary_compose(overrides)), conf_dir, hydra_node=True)


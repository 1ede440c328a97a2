"""Everything ``launch.py`` checks before Hydra starts: nothing is created or compiled first.

- ``--help`` prints the project's own help (envs, bonuses, sweeps, every setting's key, examples).
- Group choices (``env=``, ``bonus=``, ``agent=``, ``sweep=``) must exist; a sweep preset or
  a comma-separated value needs ``-m``.
- Every job of a sweep is expanded as Hydra's basic sweeper would (the preset's
  ``hydra.sweeper.params`` first, the command line after it), composed, and validated like
  a single run: the config itself, the env and bonus options, and the results tree (a
  seed directory holding a run with another config). All bad jobs are reported at once.

Errors are :class:`PreflightError` (exit code 2, one line each); the caller prints them. A
command line that passes comes back as its plan (:class:`rfig_exp.launch.sweep_plan.LaunchPlan`):
its compiled jobs, each job composed and its run specs built once, the runs of one program and
different traced settings stacked (:mod:`rfig_exp.launch.stacking`); launch.py runs that plan.
"""

from __future__ import annotations

import copy
import datetime as _dt
import re
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from omegaconf import DictConfig, OmegaConf

from rfig_exp.config import folders, variants
from rfig_exp.config.errors import ConfigError, PreflightError, exit_codes_help, unknown_choice
from rfig_exp.spec.defaults import defaults

if TYPE_CHECKING:
    from rfig_exp.launch.sweep_plan import LaunchPlan, SweepPlan
    from rfig_exp.spec.run_spec import RunSpec

CONF_DIR = folders.CONF_DIR
GROUP_LABELS = {"env": "environment", "bonus": "bonus", "agent": "agent", "sweep": "sweep preset"}
# Hydra's own flags: these that take a value, and these that make Hydra do something else than running.
_FLAGS_WITH_VALUE = {"--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd", "--cfg", "-c",
                     "--package", "-p", "--experimental-rerun"}
_FLAGS_NOT_RUNNING = {"--cfg", "-c", "--info", "-i", "--hydra-help", "--shell-completion", "-sc"}
# Hydra's flags that would run jobs from another config than the plan's: refused, with the way that works
_FLAGS_REFUSED = {"--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd", "--experimental-rerun"}
HELP_WIDTH = 100
# A full stop that ends a sentence, not one inside "e.g." or a number.
_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)\.(?=\s|$)")


def split_argv(argv: Sequence[str]) -> tuple[set[str], list[str]]:
    """Hydra flags and overrides of a ``launch.py`` command line."""
    flags, overrides, skip = set(), [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg.startswith("-"):
            flags.add(arg.split("=")[0])
            skip = arg in _FLAGS_WITH_VALUE
        else:
            overrides.append(arg)
    return flags, overrides


def help_text(argv: Sequence[str] = ()) -> str:
    """``launch.py --help`` for the command line ``argv``: the sweep presets of ``conf/sweep/`` and
    of the config folders its ``hydra.searchpath`` names among the rest."""
    from rfig_exp.bonuses import bonus_names
    from rfig_exp.envs import env_names
    from rfig_exp.launch.hydra_adapter import HydraException
    from rfig_exp.spec import registry

    try:
        dirs = folders.config_dirs(searchpath_of(split_argv(argv)[1]))
    except HydraException:  # a command line Hydra cannot parse still gets the help
        dirs = (CONF_DIR,)
    sweeps = []
    for name in folders.group_options("sweep", dirs):
        sweeps += textwrap.wrap(preset_summary(name, dirs), HELP_WIDTH, initial_indent=f"  {name:<17}",
                                subsequent_indent=" " * 19)
    return "\n".join([
        "rfig-exp: PPO with exploration bonuses (RFIG and baselines), one run or a Hydra sweep.",
        "",
        "usage: python launch.py [-m] [group=choice ...] [key=value ...]",
        "",
        *textwrap.wrap(", ".join(env_names()), HELP_WIDTH, initial_indent="environments (env=):  ",
                       subsequent_indent=" " * 22),
        "bonuses (bonus=):     " + ", ".join(bonus_names()),
        "sweep presets (-m sweep=NAME):",
        *sweeps,
        "",
        "settings (each with its default and doc in docs/configuration.md and conf/):",
        *registry.help_lines(HELP_WIDTH),
        "",
        "examples:",
        "  python launch.py                                              # mountaincar + rfig, 1 seed, 1M steps",
        "  python launch.py env=minatar_breakout bonus=rnd num_seeds=4   # 4 vmapped seeds",
        "  python launch.py -m env=minatar_breakout bonus=rfig,rnd 'seed=range(32)'",
        "  python launch.py -m bonus=rfig 'bonus.lengthscale=0.5,1,2' experiment=sens   # a sensitivity sweep",
        "  python launch.py -m hydra/launcher=slurm hydra.launcher.partition=gpu sweep=paper",
        "  PYTHONPATH=. python launch.py 'hydra.searchpath=[file://my_conf]' env=mine bonus=mine",
        "    # an env and a bonus of your own modules, their YAML in my_conf/env/, my_conf/bonus/ (docs/extending.md)",
        "",
        "results: <results_dir>/<experiment>/<env>/<bonus>/<variant>/seed_<k>/ (docs/running.md, 'Results')",
        "exit codes:",
        *exit_codes_help(HELP_WIDTH),
        "Hydra's own help: python launch.py --hydra-help",
    ])


def preset_summary(name: str, dirs: folders.ConfDirs = CONF_DIR) -> str:
    """The first sentence of a sweep preset's header comment, however many lines it spans."""
    lines = folders.group_file("sweep", name, dirs).read_text().splitlines()
    header = []
    for line in lines[1:]:  # lines[0] is the "# @package" directive
        if not line.startswith("#"):
            break
        header.append(line.lstrip("#").strip())
    text = " ".join(header)
    end = _SENTENCE_END.search(text)
    return text[:end.start() + 1] if end else text


def _check_choice(group: str, value: str, errors: list[str], dirs: folders.ConfDirs = CONF_DIR) -> None:
    options = folders.group_options(group, dirs)
    if value not in options:
        # a preset may live in a config folder of its own (a project's, the campaign's): say how to add it
        elsewhere = " (a preset of another config folder: add 'hydra.searchpath=[file://DIR]')" \
            if group == "sweep" else ""
        errors.append(unknown_choice(group, value, GROUP_LABELS[group], options) + elsewhere)


def searchpath_of(overrides: Sequence[str]) -> list[str]:
    """The ``hydra.searchpath`` a command line sets (the user's config folders), else none."""
    from rfig_exp.launch.hydra_adapter import parse_overrides

    found = [o.value() for o in parse_overrides(overrides) if o.key_or_group == "hydra.searchpath"]
    return [str(p) for p in found[-1]] if found and isinstance(found[-1], list) else []


def _shadowed(dirs: Sequence[Path]) -> list[str]:
    """A file of the user's folders that a built-in choice hides (Hydra would compose the built-in)."""
    return [f"hydra.searchpath: {path} has the name of the built-in {group} {path.stem} (Hydra would compose "
            f"conf/{group}/{path.stem}.yaml): rename it" for group in ("env", "bonus")
            for path in folders.shadowed_choices(group, dirs)]


def _say(line: str) -> None:
    print(line, flush=True)


def _silent(line: str) -> None:
    """A plan's console lines, unsaid."""


def expand_jobs(overrides: Sequence[str], multirun: bool, check_choices: bool = True,
                gpu: bool | None = None, say: Callable[[str], None] = _say) -> list[list[str]]:
    """The override list of every job the command line asks for (one without ``-m``), as the
    sweeper will run them (:func:`rfig_exp.launch.sweep_plan.plan_sweep`; ``gpu`` None: as on this machine).

    ``check_choices=False`` leaves unknown ``env=``/``bonus=``/``agent=`` choices in the jobs, for
    :func:`validate_jobs` to report with every other bad job of the sweep; ``say`` gets the plan's
    console lines."""
    plan, _, primary_error = _planned_jobs(overrides, multirun, check_choices, gpu, say, say_jobs=True)
    if primary_error:
        raise PreflightError([primary_error])
    return plan.jobs if plan is not None else [list(overrides)]


def _planned_jobs(overrides: Sequence[str], multirun: bool, check_choices: bool, gpu: bool | None,
                  say: Callable[[str], None], say_jobs: bool = False
                  ) -> tuple[SweepPlan | None, DictConfig | None, str | None]:
    """The sweep's plan and primary config (None, None without ``-m``), and why Hydra's compose of
    that config would fail (None: it composes); a job that fails alike is reported with the other
    bad jobs, so the caller says it only when every job passes. ``say`` gets the plan's notes, and
    with ``say_jobs`` its lines that count jobs too (launch.py says its jobs once, after validation)."""
    from rfig_exp.launch.hydra_adapter import HydraException, empty_sweep_error, parse_overrides

    try:
        parsed = parse_overrides(overrides)
    except HydraException as err:
        raise PreflightError([f"cannot parse the command line: {str(err).splitlines()[0]}"]) from None
    dirs = folders.config_dirs(searchpath_of(overrides))
    errors: list[str] = _shadowed(dirs)
    for o in parsed:
        group = o.key_or_group
        values = list(o.sweep_string_iterator()) if o.is_sweep_override() else [o.get_value_element_as_str()]
        if group in GROUP_LABELS and not o.is_delete() and (check_choices or group == "sweep"):
            for v in values:
                _check_choice(group, v, errors, dirs)
        if group == "sweep":
            if not multirun:
                errors.append(f"sweep={','.join(values)} is a sweep preset: add -m "
                              f"(python launch.py -m sweep={values[0]} ...)")
        elif o.is_sweep_override() and not multirun:
            errors.append(f"{o.input_line} sweeps over several values: add -m to run one job per value" if values
                          else empty_sweep_error(o))
    if errors:
        raise PreflightError(errors)
    if not multirun:
        return None, None, None
    from rfig_exp.launch import env_options, sweep_plan

    handed = env_options.for_primary_compose(overrides)  # the command line as Hydra composes the sweep from it
    primary, primary_error = _primary(handed)
    try:
        plan = sweep_plan.plan_sweep(primary, handed, gpu)
    except HydraException as err:
        raise PreflightError([str(err).splitlines()[0]]) from None
    except ValueError as err:  # seeds_per_job
        raise PreflightError([str(err)]) from None
    for line in plan.lines if say_jobs else plan.notes:
        say(line)
    return plan, primary, primary_error


def _primary(handed: Sequence[str]):
    """The sweep's primary config as Hydra composes it, and why that fails (None: it does not). On
    a failure the plan's settings come from the defaults, the preset and Hydra's own overrides."""
    from rfig_exp.launch import sweep_plan
    from rfig_exp.launch.hydra_adapter import HydraException, parse_overrides

    try:
        return sweep_plan.compose_primary(handed), None
    except HydraException as err:
        error = _primary_error(err, handed)
    kept = [o.input_line for o in parse_overrides(handed) if o.is_hydra_override() or o.key_or_group == "sweep"]
    try:
        return sweep_plan.compose_primary(kept), error
    except HydraException:
        raise PreflightError([error]) from None


def _primary_error(err: Exception, handed: Sequence[str]) -> str:
    """Hydra's primary compose of a sweep applies the command line's single values to the default
    choices: a key that only some swept choice has (``-m bonus=rnd,vime bonus.lr=1e-3``) fails there."""
    from rfig_exp.launch.sweep_plan import primary_overrides

    first = str(err).splitlines()[0]
    if not first.startswith("Could not override '"):
        return first
    key = first.split("'")[1]
    if key.startswith("hydra."):
        return f"{key} is not a key of this sweep's Hydra config (its launcher's keys: conf/hydra/launcher/)"
    typed = next((o for o in handed if o.lstrip("+").partition("=")[0] == key), key)
    chosen = _job_choices(primary_overrides(handed))
    group = key.split(".")[0]
    where = f"{group}={chosen[group]}" if group in chosen else "the defaults"
    base = variants.flatten(defaults(chosen, folders.config_dirs(searchpath_of(handed))))
    return (f"{variants.with_suggestion(key, base)} is not a key of {where}, the config Hydra composes a -m sweep "
            f"with before its jobs: write ++{typed.lstrip('+')} to set it in the jobs")


def _varying(jobs: Sequence[Sequence[str]]) -> set[str]:
    """Overrides that are not the same in every job: what tells one job from another."""
    common = set(jobs[0]).intersection(*map(set, jobs[1:])) if jobs else set()
    return {o for job in jobs for o in job} - common


def _composition_error(err: Exception, job: Sequence[str], dirs: folders.ConfDirs = CONF_DIR) -> str:
    first = str(err).splitlines()[0]
    if first.startswith("Could not override '"):
        key = first.split("'")[1]
        picked = ", ".join(o for o in job if o.split("=")[0] in GROUP_LABELS) or "the defaults"
        base = variants.flatten(defaults(_job_choices(job), dirs))
        return (f"{variants.with_suggestion(key, base)} is not a key of this job's config ({picked}); "
                "every key is documented in conf/")
    return first


def _job_choices(job: Sequence[str]) -> dict[str, str]:
    """The env/bonus/agent files a job composes: conf/config.yaml's defaults, then the job's own."""
    chosen = {}
    for item in OmegaConf.to_container(OmegaConf.load(CONF_DIR / "config.yaml").defaults):
        if isinstance(item, dict):
            chosen.update({k: v for k, v in item.items() if k in folders.GROUPS})
    for o in job:
        key, _, value = o.lstrip("+").partition("=")
        if key in folders.GROUPS:
            chosen[key] = value
    return chosen


def _bad_choices(job: Sequence[str], dirs: folders.ConfDirs) -> list[str]:
    errors: list[str] = []
    for o in job:
        key, _, value = o.lstrip("+").partition("=")
        if key in GROUP_LABELS and not o.startswith("~"):
            _check_choice(key, value, errors, dirs)
    return errors


def validate_jobs(jobs: Sequence[Sequence[str]], searchpath: Sequence[str] = (),
                  composed_with_hydra: list[DictConfig] | None = None,
                  make_envs: bool = True) -> list[tuple[list[str], RunSpec]]:
    """Compose and validate every job; return ``(overrides, run spec)`` pairs or raise with all errors.
    ``searchpath``: the command line's ``hydra.searchpath`` (the user's config folders);
    ``composed_with_hydra``: a list that gets each job's config with its ``hydra`` node, composed
    with Hydra's own overrides too (a single run's: where it logs), instead of without it;
    ``make_envs=False``: the env's own checks are left out (a plan that is costed, not run).

    The checks that need no environment run first for every job; only the jobs that pass them
    make their env, once per distinct env setting, which imports its suite (brax: 10-20 s), unless
    every run of the job is complete already (it will be skipped: nothing of its env is needed).
    No bonus is made and nothing is trained: every bonus setting is checked with the config."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException

    from rfig_exp.envs import make_env
    from rfig_exp.launch.hydra_adapter import without_hydra
    from rfig_exp.results.seed_plan import plan_seeds
    from rfig_exp.spec.run_spec import build_run_spec

    errors: list[str] = []
    invalid = 0
    varying = _varying(jobs)
    where = {id(job): f"[{' '.join(o for o in job if o in varying)}] " if len(jobs) > 1 else "" for job in jobs}
    checked = []
    composed: dict[tuple, DictConfig] = {}
    dirs = folders.config_dirs(searchpath)
    search = [f"hydra.searchpath=[{','.join(searchpath)}]"] if searchpath else []
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        for job in jobs:
            bad = _bad_choices(job, dirs)
            if bad:  # one line per unknown choice, however many jobs share it
                errors.extend(line for line in bad if line not in errors)
                invalid += 1
                continue
            try:
                if composed_with_hydra is None:
                    cfg = _compose(job, composed, search)
                else:
                    composed_with_hydra.append(compose("config", overrides=list(job), return_hydra_config=True))
                    cfg = without_hydra(composed_with_hydra[-1])
                spec = build_run_spec(cfg, searchpath)  # every setting, the bonus's too
                complete = all(p.action == "skip" for p in plan_seeds(spec))
                checked.append((job, spec, complete))
            except ConfigError as err:
                errors.append(f"{where[id(job)]}{err}")
                invalid += 1
            except HydraException as err:
                errors.append(f"{where[id(job)]}{_composition_error(err, job, dirs)}")
                invalid += 1
    envs: dict[str, object] = {}
    good = []
    for job, spec, complete in checked:
        try:
            env_key = repr(spec.env)  # the checked settings: equal settings, one env
            # a job whose runs are all complete trains nothing: no env (a relaunch imports no suite)
            if make_envs and not complete and env_key not in envs:
                envs[env_key] = make_env(spec.env)
            good.append((list(job), spec))
        except ConfigError as err:
            errors.append(f"{where[id(job)]}{err}")
            invalid += 1
    if errors:
        if len(jobs) > 1:
            errors.append(f"{invalid} of {len(jobs)} jobs are invalid; nothing was started")
        raise PreflightError(errors)
    return good


_SEEDS = ("seed", "num_seeds")
_INTEGER = re.compile(r"^-?\d+$")


def _compose(job: Sequence[str], composed: dict[tuple, DictConfig], search: Sequence[str] = ()) -> DictConfig:
    """A job's config as Hydra composes it (Hydra's own overrides aside). Jobs that differ only in
    their plain integer ``seed=``/``num_seeds=`` values (a sweep's seeds, a Brax cell split into
    one-seed jobs) are composed once and given their own values, as Hydra sets a top-level key:
    the 800 jobs of sweep=paper on a CPU are 240 compositions."""
    from hydra import compose

    overrides = [*search, *(o for o in job if not o.lstrip("+~").startswith("hydra"))]
    seeds = {k: v for k, _, v in (o.partition("=") for o in overrides) if k in _SEEDS}
    rest = tuple(o for o in overrides if o.partition("=")[0] not in _SEEDS)
    simple = len(seeds) == sum(o.partition("=")[0] in _SEEDS for o in overrides) and all(
        _INTEGER.match(v) for v in seeds.values())
    key = (rest, tuple(sorted(seeds)))
    if not simple:
        return compose("config", overrides=overrides)
    if key not in composed:
        composed[key] = compose("config", overrides=overrides)
    cfg = copy.deepcopy(composed[key])
    for k, v in seeds.items():
        OmegaConf.update(cfg, k, int(v))
    return cfg


def write_manifest(validated: Sequence[tuple[list[str], RunSpec]]) -> None:
    """Append the runs a sweep expects to ``<results_dir>/<experiment>/manifest.jsonl``
    (``python -m rfig_exp.results.status`` counts what is missing against it)."""
    from rfig_exp.results import contract as results

    stamp = _dt.datetime.now().isoformat(timespec="seconds")
    entries: dict[Path, list] = {}
    for job, spec in validated:
        entries.setdefault(Path(spec.results_dir) / spec.experiment, []).append(results.ManifestEntry(
            spec.env_name, spec.bonus_name, spec.variant, tuple(spec.seeds), tuple(job), stamp))
    for experiment_dir, launched in entries.items():
        results.append_manifest(experiment_dir, launched)


def check_launcher(primary: DictConfig) -> None:
    """Refuse a launcher launch.py cannot run the jobs under, and under the SLURM launcher a request
    no node of the partition can meet (rfig_exp.launch.slurm), before anything is submitted.
    ``primary``: the sweep's primary config."""
    from rfig_exp.launch import hydra_adapter, slurm

    try:
        kind = hydra_adapter.launcher_kind(primary.hydra.launcher)
    except hydra_adapter.UnsupportedLauncher as err:
        raise PreflightError([str(err)]) from None
    if kind != hydra_adapter.SLURM:
        return

    launcher = OmegaConf.to_container(primary.hydra.launcher, resolve=False)
    errors = slurm.check_request(launcher, slurm.read_nodes())
    if errors:
        raise PreflightError(errors)


def _one_seed_envs(primary: DictConfig, validated: Sequence[tuple[list[str], RunSpec]],
                   gpu: bool | None = None) -> list[str]:
    """The envs of a sweep that trains without a GPU whose seeds run one per job (grouping's XLA CPU
    wedge; ``gpu`` None: as on this machine)."""
    from rfig_exp.launch import grouping
    from rfig_exp.launch.sweep_plan import SweepSettings

    if SweepSettings.of(primary, gpu).gpu:
        return []
    return sorted({spec.env_name for _, spec in validated
                   if grouping.splits_on_cpu(spec.env_name, getattr(spec.env, "backend", None))})


def plan_launch(overrides: Sequence[str], multirun: bool, gpu: bool | None = None, make_envs: bool = True,
                say: Callable[[str], None] = _silent) -> LaunchPlan:
    """The plan of ``launch.py [-m] OVERRIDES``, made with no side effect: every job expanded, composed
    and validated once, the runs of one program stacked; raises PreflightError with every error.
    Nothing is written and nothing is printed: ``say`` gets the console lines launch.py prints (the
    plan's notes, how its runs became compiled jobs). ``gpu`` None: grouped and stacked as on this
    machine; ``make_envs=False`` leaves out the env's own checks (an estimate's plan, costed, not run)."""
    from rfig_exp.launch import stacking
    from rfig_exp.launch.sweep_plan import LaunchPlan, stacking_cap
    from rfig_exp.spec.stack import Job, JobPart

    t0 = time.perf_counter()
    plan, primary, primary_error = _planned_jobs(overrides, multirun, False, gpu, say)
    if primary is not None:
        check_launcher(primary)
    single: list[DictConfig] | None = None if plan is not None else []
    validated = validate_jobs(plan.jobs if plan is not None else [list(overrides)], searchpath_of(overrides),
                              composed_with_hydra=single, make_envs=make_envs)
    if primary_error:  # every job composes, but Hydra would stop at the sweep's primary config
        raise PreflightError([primary_error])
    if plan is not None:
        assert primary is not None  # planned with it
        jobs = stacking.stack(validated, stacking_cap(primary, gpu))
        say(stacking.describe(jobs, plan.varying, time.perf_counter() - t0, _one_seed_envs(primary, validated, gpu)))
        return LaunchPlan(tuple(jobs), primary, True, plan.varying)
    assert single
    job, spec = validated[0]
    return LaunchPlan((Job((JobPart(spec, tuple(job)),)),), single[0], False)


def preflight(argv: Sequence[str]) -> LaunchPlan | None:
    """Check a ``launch.py`` command line: raise PreflightError, or return its plan (:func:`plan_launch`),
    its console lines printed and a sweep's expected runs added to its experiment's manifest (None: a
    command line that Hydra runs some other way: ``--cfg``, ``--info``)."""
    flags, overrides = split_argv(argv)
    if flags & _FLAGS_REFUSED:
        raise PreflightError([f"{flag}: launch.py composes conf/config.yaml; add a config folder of your own with "
                              "'hydra.searchpath=[file://DIR]' (docs/extending.md)"
                              for flag in sorted(flags & _FLAGS_REFUSED)])
    if flags & _FLAGS_NOT_RUNNING:
        return None
    plan = plan_launch(overrides, multirun=bool(flags & {"-m", "--multirun"}), say=_say)
    if plan.multirun:
        write_manifest([(list(part.overrides), part.spec) for job in plan.jobs for part in job.parts])
        return plan
    from rfig_exp.launch import grouping

    spec = plan.jobs[0].first
    warning = grouping.brax_cpu_warning(spec.env_name, len(spec.seeds), grouping.gpu_visible(), spec.seeds[0],
                                        getattr(spec.env, "backend", None))
    if warning:
        print(warning, file=sys.stderr, flush=True)
    return plan

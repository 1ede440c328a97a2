"""What makes a run a *variant*: the hyperparameters that differ from its defaults.

The defaults of a run are the declared defaults of its settings and of its config groups' choices
(``rfig_exp.config.reference``: what ``conf/config.yaml``, ``conf/env/<env>.yaml``,
``conf/bonus/<bonus>.yaml`` and ``conf/agent/<agent>.yaml`` are written from), without a sweep
preset or command-line overrides; a user's own env or bonus, its YAML file. Every leaf of the
run's config that differs from them, except the bookkeeping keys (:func:`not_hyperparameters`),
is part of the variant, which names the run's directory:

    <results_dir>/<experiment>/<env>/<bonus>/<variant>/seed_<k>/

``variant = "base"`` when nothing differs; otherwise the sorted ``key=value`` pairs joined
by ``,`` (``agent.lr=0.001,bonus.lengthscale=2.0``), with characters outside
``[A-Za-z0-9._=,+-]`` replaced and names longer than :data:`MAX_NAME` cut and given a hash
suffix (``~<8 hex>``); the full mapping is always saved next to the runs (``variant.yaml``).

Leaves of the run's config that the defaults do not have are *unknown keys* (a key that
nothing reads, e.g. ``+agent.learning_rate=1e-4``): they are errors, not variants.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence, Union

from rfig_exp.config.errors import ConfigError

CONF_DIR = Path(__file__).resolve().parents[3] / "conf"
GROUPS = ("env", "bonus", "agent")
BASE = "base"
MAX_NAME = 96
_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+-]")


# One config folder, or the folders Hydra searches in order: conf/ first, then the user's own
# (config_dirs), whose env/ and bonus/ files add envs and bonuses of the user's modules.
ConfDirs = Union[Path, Sequence[Path]]


def config_dirs(searchpath: Sequence[str] = ()) -> tuple[Path, ...]:
    """``conf/``, then the folders of the ``file://`` entries of ``hydra.searchpath`` (a relative
    one is relative to the working directory, as Hydra reads it)."""
    return (CONF_DIR, *(Path(p.removeprefix("file://")) for p in searchpath if p.startswith("file://")))


def _as_dirs(conf_dir: ConfDirs) -> tuple[Path, ...]:
    return (conf_dir,) if isinstance(conf_dir, Path) else tuple(conf_dir)


def group_options(group: str, conf_dir: ConfDirs = CONF_DIR) -> list[str]:
    """The choices of a config group: the YAML files in ``<folder>/<group>/`` of each folder."""
    return sorted({p.stem for d in _as_dirs(conf_dir) for p in (d / group).glob("*.yaml")})


def group_file(group: str, choice: str, conf_dir: ConfDirs = CONF_DIR) -> Path:
    """The YAML file of ``group=choice``: the first folder's that has one, as Hydra picks it."""
    dirs = _as_dirs(conf_dir)
    return next((d / group / f"{choice}.yaml" for d in dirs if (d / group / f"{choice}.yaml").is_file()),
                dirs[0] / group / f"{choice}.yaml")


def shadowed_choices(group: str, conf_dir: ConfDirs) -> list[Path]:
    """The files of the user's folders (all but the first) named as a choice of the first folder:
    Hydra would compose the built-in one instead."""
    dirs = _as_dirs(conf_dir)
    built_in = set(group_options(group, dirs[0]))
    return [p for d in dirs[1:] for p in sorted((d / group).glob("*.yaml")) if p.stem in built_in]


def check_own_name(group: str, name: Any, module: Any) -> None:
    """An env or bonus of the user's ``module`` must not take a built-in one's name (its results
    would mix with the built-in's, and Hydra would compose the built-in's file)."""
    if not isinstance(module, str) or not module:
        raise ConfigError(f"{group}.module={module!r} must be the name of an importable module")
    if name in group_options(group):
        raise ConfigError(f"{group}.name={name} is a built-in {group}: the {group} of {group}.module={module} needs a "
                          "name of its own (its YAML file's name)")


@lru_cache(maxsize=None)
def _defaults(choices: tuple[tuple[str, str], ...], conf_dirs: tuple[Path, ...]) -> dict:
    from omegaconf import OmegaConf  # here, not at the top: the bonuses' library use has no omegaconf

    from rfig_exp.config import reference  # it reads the declarations, which build on this module

    top = reference.run_defaults()
    for group, choice in choices:
        path = group_file(group, choice, conf_dirs)
        built_in = reference.written_defaults(group, choice) if path.parent.parent == CONF_DIR else None
        top[group] = built_in if built_in is not None else OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    return top


def defaults(choices: Mapping[str, str], conf_dir: ConfDirs = CONF_DIR) -> dict:
    """The composed defaults for ``choices`` (``{"env": "mountaincar", "bonus": "rfig", ...}``): the
    declared ones of the run's settings and of each built-in choice (``rfig_exp.config.reference``),
    and a user's own env or bonus as its YAML file (in a folder of ``hydra.searchpath``) writes them."""
    return _defaults(tuple(sorted((g, choices[g]) for g in GROUPS if g in choices)), _as_dirs(conf_dir))


def flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    """``{"agent": {"lr": 3e-4}}`` -> ``{"agent.lr": 3e-4}``; lists are leaves."""
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(tree, (DictConfig, ListConfig)):
        tree = OmegaConf.to_container(tree, resolve=True)
    if isinstance(tree, Mapping):
        out: dict[str, Any] = {}
        for k, v in tree.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, Mapping) and v:
                out.update(flatten(v, key))
            else:
                out[key] = v
        return out
    return {prefix: tree}


@cache
def not_hyperparameters() -> frozenset[str]:
    """The top-level keys that say where or how a run is stored, mirrored or watched, not what it
    computes: those declared so (``hyperparameter=False``) in ``rfig_exp.config.run_spec.RunSettings``."""
    from rfig_exp.config.run_spec import RunSettings  # rfig_exp.config.run_spec builds on this module
    from rfig_exp.config.settings import declared

    return frozenset(name for name, d in declared(RunSettings) if not d.hyperparameter)


def is_hyperparameter(key: str) -> bool:
    return key != "hydra" and not key.startswith("hydra.") and key.split(".")[0] not in not_hyperparameters()


def same_value(a: Any, b: Any) -> bool:
    """Equality that treats an integral float as the integer (``1e6 == 1000000``) but keeps
    booleans apart from numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b


def variant_overrides(config: Mapping, choices: Mapping[str, str], conf_dir: ConfDirs = CONF_DIR) -> dict[str, Any]:
    """The hyperparameters of ``config`` that differ from the defaults of its ``choices``."""
    base = flatten(defaults(choices, conf_dir))
    return {k: v for k, v in sorted(flatten(config).items())
            if is_hyperparameter(k) and k in base and not same_value(v, base[k])}


def unknown_keys(config: Mapping, choices: Mapping[str, str], conf_dir: ConfDirs = CONF_DIR) -> list[str]:
    """Keys of ``config`` that no default defines, each with a suggestion where one is close."""
    base = flatten(defaults(choices, conf_dir))
    out = []
    for key in flatten(config):
        if key == "hydra" or key.startswith("hydra.") or key in base:
            continue
        if any(key.startswith(k + ".") for k in base if base[k] is None or base[k] == {}):
            continue  # inside a mapping whose default is empty/null (free-form)
        out.append(with_suggestion(key, base))
    return out


def with_suggestion(key: str, base: Mapping[str, Any]) -> str:
    """``key``, followed by the closest key of ``base`` (flat) under the same parent, if one is close."""
    parent, _, leaf = key.rpartition(".")
    siblings = {k.rpartition(".")[2]: k for k in base if k.rpartition(".")[0] == parent}
    close = difflib.get_close_matches(leaf, list(siblings), n=1)
    return f"{key} (did you mean {siblings[close[0]]}?)" if close else key


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    if isinstance(value, list):
        return "x".join(format_value(v) for v in value) or "empty"
    if value is None:
        return "null"
    return str(value)


def variant_name(overrides: Mapping[str, Any]) -> str:
    """A readable, sorted, filesystem-safe name for a set of overrides (``base`` for none)."""
    if not overrides:
        return BASE
    full = ",".join(f"{k}={format_value(v)}" for k, v in sorted(overrides.items()))
    name = _UNSAFE.sub("_", full)
    if len(name) > MAX_NAME:
        digest = hashlib.sha1(full.encode()).hexdigest()[:8]
        name = name[: MAX_NAME - 9] + "~" + digest
    return name


# A job's console prefix shows first the keys its sweep varies (rfig_exp.launch.sweep_plan.varying_keys);
# it names the job's seeds, env and bonus anyway.
_NOT_SHOWN = ("seed", "num_seeds", "seeds_per_job")
MAX_TAG = 48


def varying_keys(jobs: list[list[str]]) -> list[str]:
    """The keys whose override is not the same in every job (a key some jobs lack varies too)."""
    keyed = [dict(o.lstrip("+~").partition("=")[::2] for o in job) for job in jobs]
    return sorted(k for k in set().union(*keyed)
                  if len({d.get(k) for d in keyed}) > 1 and is_hyperparameter(k) and "/" not in k
                  and k not in _NOT_SHOWN and k not in GROUPS)


def variant_tag(overrides: Mapping[str, Any], varying: Mapping[str, Any]) -> str:
    """A job's variant as its console prefix shows it: the keys its sweep varies (``varying``:
    key -> this job's value) first and whole, ``lengthscale=2`` where the last part of the key
    is unambiguous; then its other overrides while the tag stays within :data:`MAX_TAG`
    characters, and how many were left out."""
    leaves = [k.rpartition(".")[2] for k in {**overrides, **varying}]
    shown = [f"{k.rpartition('.')[2] if leaves.count(k.rpartition('.')[2]) == 1 else k}={format_value(v)}"
             for k, v in varying.items()]
    rest = [f"{k}={format_value(v)}" for k, v in sorted(overrides.items()) if k not in varying]
    while rest and len(",".join(shown + rest[:1])) <= MAX_TAG:
        shown.append(rest.pop(0))
    tag = ",".join(shown)
    if rest:
        tag += f"{',' if tag else ''}+{len(rest)} more"
    return tag

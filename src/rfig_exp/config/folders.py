"""The config folders: this checkout's ``conf/`` and the user's own, and the choices they hold.

Hydra composes a run from ``conf/`` and the folders of ``hydra.searchpath`` (the user's, whose
``env/`` and ``bonus/`` files add envs and bonuses of the user's modules). Listing a group's
choices, finding a choice's file and refusing a user's file that takes a built-in's name is all
this module does: it reads the folders' file names, never a file's content. Nothing here imports
JAX or a component.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence, Union

from rfig_exp.config.errors import ConfigError

CONF_DIR = Path(__file__).resolve().parents[3] / "conf"
GROUPS = ("env", "bonus", "agent")  # the config groups a run chooses one file of

# One config folder, or the folders Hydra searches in order: conf/ first, then the user's own
# (config_dirs), whose env/ and bonus/ files add envs and bonuses of the user's modules.
ConfDirs = Union[Path, Sequence[Path]]


def config_dirs(searchpath: Sequence[str] = ()) -> tuple[Path, ...]:
    """``conf/``, then the folders of the ``file://`` entries of ``hydra.searchpath`` (a relative
    one is relative to the working directory, as Hydra reads it)."""
    return (CONF_DIR, *(Path(p.removeprefix("file://")) for p in searchpath if p.startswith("file://")))


def as_dirs(conf_dir: ConfDirs) -> tuple[Path, ...]:
    """One folder or several, as a tuple of folders."""
    return (conf_dir,) if isinstance(conf_dir, Path) else tuple(conf_dir)


def group_options(group: str, conf_dir: ConfDirs = CONF_DIR) -> list[str]:
    """The choices of a config group: the YAML files in ``<folder>/<group>/`` of each folder."""
    return sorted({p.stem for d in as_dirs(conf_dir) for p in (d / group).glob("*.yaml")})


def group_file(group: str, choice: str, conf_dir: ConfDirs = CONF_DIR) -> Path:
    """The YAML file of ``group=choice``: the first folder's that has one, as Hydra picks it."""
    dirs = as_dirs(conf_dir)
    return next((d / group / f"{choice}.yaml" for d in dirs if (d / group / f"{choice}.yaml").is_file()),
                dirs[0] / group / f"{choice}.yaml")


def shadowed_choices(group: str, conf_dir: ConfDirs) -> list[Path]:
    """The files of the user's folders (all but the first) named as a choice of the first folder:
    Hydra would compose the built-in one instead."""
    dirs = as_dirs(conf_dir)
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

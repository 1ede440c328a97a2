"""The campaign's sweep presets: the reproduction's grids, in a config folder of its own.

``campaign/conf/sweep/`` holds the presets only the reproduction runs (its stages' grids, the
paper's cells at 32 seeds, DeepSea's sizes, the sensitivity study); ``conf/sweep/`` keeps the
users' (``smoke``, ``coverage`` and the paper's grid, ``paper``). ``launch.py`` composes the
campaign's as it composes any user's config folder, through Hydra's search path: every command
of the campaign names it (:data:`SEARCHPATH`), and the campaign's code that reads a preset
itself looks in both folders, as Hydra does (:func:`preset_file`). Nothing here imports JAX.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Sequence

from omegaconf import OmegaConf

from rfig_exp.config import folders

CONF_DIR = Path(__file__).resolve().parent / "conf"
# The search path as the campaign's commands name it: relative to the checkout's root, where they
# run (repro.sh and paper32_gpu.sh go there first); Hydra reads a relative file:// path from the
# working directory. No machine's path, so a command recorded in the published data runs anywhere.
SEARCHPATH = "hydra.searchpath=[file://campaign/conf]"


def config_dirs() -> tuple[Path, ...]:
    """The folders a campaign command composes from, in Hydra's order: conf/, then the campaign's."""
    return (folders.CONF_DIR, CONF_DIR)


def preset_names() -> list[str]:
    """The campaign's own presets (those of ``campaign/conf/sweep/``)."""
    return folders.group_options("sweep", CONF_DIR)


def preset_file(preset: str) -> Path:
    """The YAML file of ``sweep=PRESET`` as a campaign command composes it: conf/'s, else the
    campaign's (a path that may not exist, for a name neither has)."""
    return folders.group_file("sweep", preset, config_dirs())


def yaml_tree(path: Path) -> dict:
    """The YAML file at ``path`` as plain containers (interpolations unresolved), a fresh copy each
    call. Stage plans read the same few dozen files tens of thousands of times, so each is parsed
    once per version of the file (its path and modification time are the cache's key)."""
    return copy.deepcopy(_parsed_yaml(str(path), Path(path).stat().st_mtime_ns))


@functools.lru_cache(maxsize=512)
def _parsed_yaml(path: str, mtime_ns: int) -> dict:
    tree = OmegaConf.to_container(OmegaConf.load(path))
    assert isinstance(tree, dict), f"{path}: a YAML mapping expected"
    return tree


def preset_values(preset: str, key: str) -> list[str]:
    """The values a sweep preset sweeps ``key`` over (``hydra.sweeper.params.<key>``)."""
    params = (yaml_tree(preset_file(preset)).get("hydra") or {}).get("sweeper", {}).get("params") or {}
    return [e.strip() for e in str(params.get(key, "")).split(",") if e.strip()]


def with_searchpath(overrides: Sequence[str]) -> list[str]:
    """``overrides`` composed from the campaign's folder too, wherever they run: its absolute path
    first on their ``hydra.searchpath`` (a user's own folders, given there, after it)."""
    from rfig_exp.launch.preflight import searchpath_of

    theirs = [p for p in searchpath_of(overrides)
              if not (p.startswith("file://") and Path(p.removeprefix("file://")).resolve() == CONF_DIR)]
    rest = [o for o in overrides if not o.startswith("hydra.searchpath=")]
    return [f"hydra.searchpath=[{','.join(repr(p) for p in [f'file://{CONF_DIR}', *theirs])}]", *rest]

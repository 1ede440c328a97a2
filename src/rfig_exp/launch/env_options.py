"""Per-env options (``env.backend=spring``, ``env.size=30``) in a sweep over several envs.

An option such as ``env.backend`` exists only in the envs that have it (conf/env/<name>.yaml).
In ``-m env=sparse_ant,mountaincar env.backend=spring`` (or ``-m sweep=paper env.backend=spring``)
it applies to the envs that have the key and is left out of the other envs' jobs, said once
on the console; an option that no env of the sweep has stays in every job, so validation
names it as an unknown key.

Hydra composes a sweep's primary config with the default env before it expands the sweep,
and would refuse ``env.backend`` there (mountaincar has none): launch.py hands Hydra the
command line with ``++env.backend=spring`` (set or add; :func:`for_primary_compose`), and each
job gets the option as typed, or not at all (:func:`apply_to_envs_that_have_them`, where
either spelling is the same option), in the one plan of the sweep that preflight and the
sweeper share (:func:`rfig_exp.launch.sweep_plan.plan_sweep`).
"""

from __future__ import annotations

import functools
import re
from typing import Sequence

from omegaconf import OmegaConf

from rfig_exp.config.folders import CONF_DIR, ConfDirs, group_file

_OPTION = re.compile(r"^(?:\+\+)?env\.([A-Za-z_][\w]*)((?:\.[\w]+)*)=(.*)$")


def default_env() -> str:
    """The env a job gets without env= (conf/config.yaml's defaults list)."""
    for entry in OmegaConf.load(CONF_DIR / "config.yaml").defaults:
        if isinstance(entry, dict) or OmegaConf.is_dict(entry):
            if "env" in entry:
                return str(entry["env"])
    raise RuntimeError("conf/config.yaml has no default env")


@functools.lru_cache(maxsize=None)
def env_keys(name: str, conf_dirs: ConfDirs = CONF_DIR) -> frozenset[str]:
    """The top-level option keys of ``env/<name>.yaml`` in ``conf/`` or the user's config folders
    (empty for an unknown env)."""
    path = group_file("env", name, conf_dirs)
    return frozenset(OmegaConf.load(path).keys()) if path.exists() else frozenset()


def for_primary_compose(overrides: Sequence[str]) -> list[str]:
    """A ``-m`` command line's overrides with every ``env.K=V`` as ``++env.K=V``."""
    return [f"++{o}" if o.startswith("env.") and _OPTION.match(o) else o for o in overrides]


def as_typed(override: str) -> str:
    """``override`` with the ``++`` of :func:`for_primary_compose` taken off an env option."""
    return override.removeprefix("++") if _OPTION.match(override) else override


def _env_of(job: Sequence[str]) -> str:
    chosen = [o.split("=", 1)[1] for o in job if o.split("=", 1)[0] == "env"]
    return chosen[-1] if chosen else default_env()


def apply_to_envs_that_have_them(jobs: Sequence[Sequence[str]],
                                 conf_dirs: ConfDirs = CONF_DIR) -> tuple[list[list[str]], list[str]]:
    """Every job with the ``env.K=V`` options its env has (as ``env.K=V``), the others left
    out; and one console line per option that some of the sweep's envs lack. ``conf_dirs``: where
    the envs' files are (``rfig_exp.config.folders.config_dirs``)."""
    envs = [_env_of(job) for job in jobs]
    options = {}
    for job in jobs:
        for o in job:
            m = _OPTION.match(o)
            if m:
                options.setdefault(o.removeprefix("++"), m.group(1))
    having = {o: sorted({e for e in envs if key in env_keys(e, conf_dirs)}) for o, key in options.items()}
    out = []
    for job, env in zip(jobs, envs):
        kept = []
        for o in job:
            plain = o.removeprefix("++")
            if plain not in options:
                kept.append(o)
            elif not having[plain] or options[plain] in env_keys(env, conf_dirs):
                kept.append(plain)  # as typed: an option no env has is then refused by name
        out.append(kept)
    notes = []
    for o, envs_with in having.items():
        lacking = sorted(set(envs) - set(envs_with))
        if envs_with and lacking:
            notes.append(f"[sweep] {o} applies to {', '.join(envs_with)}; left out for {', '.join(lacking)} "
                         f"(no env.{options[o]} there)")
    return out, notes

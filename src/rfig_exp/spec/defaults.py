"""The defaults a run's variant is named against, and the keys of a config that nothing reads.

The defaults of a run are the declared defaults of its settings and of its config groups' choices
(``rfig_exp.spec.registry``: the same values ``conf/config.yaml``, ``conf/env/<env>.yaml``,
``conf/bonus/<bonus>.yaml`` and ``conf/agent/<agent>.yaml`` are written with), without a sweep
preset or command-line overrides; a built-in choice's file is not read. A user's own env or
bonus (a file of a folder of ``hydra.searchpath``) is its YAML file: it has no declaration here.
Every leaf of the run's config that differs from them and is a hyperparameter is part of its
variant (``rfig_exp.config.variants`` names it); a leaf that the defaults do not have is an
*unknown key* (``+agent.learning_rate=1e-4``): an error, not a variant. Nothing here imports JAX.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from rfig_exp.agents import DEFAULT_AGENT
from rfig_exp.config.folders import CONF_DIR, GROUPS, ConfDirs, as_dirs, group_file
from rfig_exp.config.variants import flatten, is_hyperparameter, same_value, with_suggestion
from rfig_exp.spec import registry


@lru_cache(maxsize=None)
def _defaults(choices: tuple[tuple[str, str], ...], conf_dirs: tuple[Path, ...]) -> dict:
    top = registry.run_defaults()
    for group, choice in choices:
        path = group_file(group, choice, conf_dirs)
        built_in = registry.written_defaults(group, choice) if path.parent.parent == CONF_DIR else None
        top[group] = built_in if built_in is not None else _user_file(path)
    return top


def _user_file(path: Path) -> Any:
    """A user's own env or bonus file, as Hydra composes it (interpolations unresolved)."""
    from omegaconf import OmegaConf  # here, not at the top: the bonuses' library use has no omegaconf

    return OmegaConf.to_container(OmegaConf.load(path), resolve=False)


def defaults(choices: Mapping[str, str], conf_dir: ConfDirs = CONF_DIR) -> dict:
    """The composed defaults for ``choices`` (``{"env": "mountaincar", "bonus": "rfig", ...}``): the
    declared ones of the run's settings and of each built-in choice, and a user's own env or bonus
    as its YAML file (in a folder of ``hydra.searchpath``) writes them."""
    return _defaults(tuple(sorted((g, choices[g]) for g in GROUPS if g in choices)), as_dirs(conf_dir))


def variant_overrides(config: Mapping, choices: Mapping[str, str], conf_dir: ConfDirs = CONF_DIR) -> dict[str, Any]:
    """The hyperparameters of ``config`` that differ from the defaults of its ``choices``, and, first, the
    agent when it is not the default one (``{"agent": "dqn"}``): an agent is part of a method's identity,
    so another agent's run never shares PPO's folder, and PPO's variants keep the names they had."""
    base = flatten(defaults(choices, conf_dir))
    agent = choices.get("agent", DEFAULT_AGENT)
    return {**({"agent": agent} if agent != DEFAULT_AGENT else {}),
            **{k: v for k, v in sorted(flatten(config).items())
               if is_hyperparameter(k) and k in base and not same_value(v, base[k])}}


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

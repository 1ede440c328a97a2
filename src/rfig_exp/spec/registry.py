"""Every config group's names, mapped to the settings their components declare.

The components fill it by declaring: each agent its settings (``agents/<name>/config.py``, found by
name: ``rfig_exp.agents``),
each bonus its module's ``BonusSettings`` subclass (``rfig_exp.bonuses``), each env its suite's
settings (``rfig_exp.envs``). From these come the defaults of each built-in choice as its composed
config node holds them (:func:`written_defaults`, what ``conf/`` is written from and what a
variant is named against) and ``launch.py --help``'s list of keys (:func:`help_lines`). Nothing
here reads a YAML file or imports JAX.
"""

from __future__ import annotations

import functools
import textwrap
from typing import Any, Mapping

from rfig_exp.agents import agent_names
from rfig_exp.agents import settings_class as agent_settings
from rfig_exp.bonuses import bonus_names, settings_class
from rfig_exp.config.run_settings import RunSettings
from rfig_exp.config.settings import Settings, declared
from rfig_exp.envs.settings import declared_envs


def as_written(value: Any) -> Any:
    """A declared default as a config holds it: tuples as lists."""
    if isinstance(value, (tuple, list)):
        return [as_written(v) for v in value]
    if isinstance(value, dict):
        return {k: as_written(v) for k, v in value.items()}
    return value


def fields(cls: type[Settings], values: Mapping[str, Any] | None = None) -> tuple[dict, dict]:
    """``(values as written, docs)`` of ``cls``'s declared settings, a group's nested (its docs
    under ``<name>.*``); ``values``: the defaults unless given."""
    values = cls.defaults() if values is None else values
    out: dict[str, Any] = {}
    docs: dict[str, Any] = {}
    for name, d in declared(cls):
        if d.group is not None:
            out[name], docs[f"{name}.*"] = fields(d.group)
        else:
            out[name] = as_written(values[name])
        docs[name] = d.doc
    return out, docs


def choice_settings(group: str, choice: str) -> tuple[type[Settings], dict] | None:
    """The settings class of built-in choice ``group=choice`` and its values as its file writes
    them; None for a choice that is not built in. Only that choice's declaration is imported."""
    if group == "agent":
        if choice not in agent_names():
            return None
        agent = agent_settings(choice)
        return agent, agent.defaults()
    if group == "bonus":
        if choice not in bonus_names():
            return None
        cls = settings_class(choice)
        return cls, cls.defaults()
    env = declared_envs().get(choice)
    if env is None:
        return None
    return env.settings, env.settings.written(choice, env.suite_id)


@functools.cache
def group_settings() -> dict[str, dict[str, tuple[type[Settings], dict]]]:
    """Every built-in choice of each group: ``{group: {choice: (settings class, its values)}}``."""
    names = {"agent": agent_names(), "bonus": bonus_names(), "env": list(declared_envs())}
    return {group: {choice: found for choice in choices if (found := choice_settings(group, choice))}
            for group, choices in names.items()}


@functools.cache
def written_defaults(group: str, choice: str) -> dict | None:
    """The defaults of built-in choice ``group=choice`` as its composed config node holds them
    (``name`` first), from the declarations; None for a choice that is not built in."""
    found = choice_settings(group, choice)
    if found is None:
        return None
    cls, values = found
    return {"name": choice, **fields(cls, values)[0]}


def run_defaults() -> dict:
    """The run's top-level settings (the groups' nested) as ``conf/config.yaml`` holds them."""
    return fields(RunSettings)[0]


def _keys(cls: type[Settings], prefix: str = "") -> list[str]:
    """Every declared setting's full key, a group's nested ones in place of the group."""
    out = []
    for name, d in declared(cls):
        out += _keys(d.group, f"{prefix}{name}.") if d.group is not None else [f"{prefix}{name}"]
    return out


def help_lines(width: int = 100) -> list[str]:
    """``launch.py --help``'s list of keys: every declared setting's name, by group (the envs
    that read the same keys on one line)."""
    groups = group_settings()
    entries = [("the run", _keys(RunSettings))]
    entries += [(f"agent={a}", _keys(cls, "agent.")) for a, (cls, _) in groups["agent"].items()]
    entries += [(f"bonus={b}", _keys(cls, "bonus.")) for b, (cls, _) in groups["bonus"].items()]
    seen: dict[tuple[str, ...], list[str]] = {}
    for env, (cls, _) in groups["env"].items():
        seen.setdefault(tuple(_keys(cls, "env.")), []).append(env)
    entries += [(f"env={_common_name(envs)}", list(keys)) for keys, envs in seen.items() if keys]
    lines = []
    for label, keys in entries:
        lines += textwrap.wrap(", ".join(keys), width, initial_indent=f"  {label:<17}", subsequent_indent=" " * 19)
    return lines


def _common_name(envs: list[str]) -> str:
    """One env's name, or the prefix the envs share followed by ``*``."""
    if len(envs) == 1:
        return envs[0]
    prefix = envs[0][:next((i for i in range(len(envs[0])) if any(e[:i + 1] != envs[0][:i + 1] for e in envs)),
                           len(envs[0]))]
    return f"{prefix}*"

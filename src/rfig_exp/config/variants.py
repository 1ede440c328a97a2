"""A run's *variant*, as a name: the hyperparameters that differ from its defaults.

Every leaf of a run's config that differs from its defaults, except the bookkeeping keys
(:func:`not_hyperparameters`, read from the run's declared settings), is part of the variant,
which names the run's directory:

    <results_dir>/<experiment>/<env>/<bonus>/<variant>/seed_<k>/

``variant = "base"`` when nothing differs; otherwise the sorted ``key=value`` pairs joined
by ``,`` (``agent.lr=0.001,bonus.lengthscale=2.0``), with characters outside
``[A-Za-z0-9._=,+-]`` replaced and names longer than :data:`MAX_NAME` cut and given a hash
suffix (``~<8 hex>``); the full mapping is always saved next to the runs (``variant.yaml``).
Which leaves differ is the run spec's to say, against the declared defaults
(``rfig_exp.spec.defaults``); this module names them, and tags a job's console lines with them.
Nothing here imports JAX or a component.
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
from functools import cache
from typing import Any, Mapping

from rfig_exp.config.folders import GROUPS
from rfig_exp.config.run_settings import RunSettings
from rfig_exp.config.settings import declared

BASE = "base"
MAX_NAME = 96
_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+-]")


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
    computes: those declared so (``hyperparameter=False``) in ``rfig_exp.config.run_settings.RunSettings``."""
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

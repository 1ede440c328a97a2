"""The one family of config checks: each reads a value, checks it, and names the key when it fails.

Used by the run config (``rfig_exp.config``), the agent's and each bonus's settings. Nothing here
imports JAX, so a whole config is validated before any compiler or accelerator is touched.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from rfig_exp.errors import ConfigError

_MISSING = object()


def select(node: Any, key: str, prefix: str = "") -> Any:
    """``node[key]`` for a dotted ``key``; ConfigError naming ``prefix + key`` when it is absent."""
    value = node
    for part in key.split("."):
        try:
            value = value[part] if part in value else _MISSING
        except TypeError:  # a scalar where a node was expected
            value = _MISSING
        if value is _MISSING:
            raise ConfigError(f"{prefix}{key} is missing from the config")
    return value


def require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def integer(value: Any, key: str, minimum: int | None = None) -> int:
    """An integer (``1e6`` written on a command line is a float to Hydra and accepted; bools are not)."""
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key}={value!r} must be an integer")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{key}={value} must be >= {minimum}")
    return value


def positive_int(value: Any, key: str) -> int:
    """An integer >= 1, written exactly (no float coercion); the neural bonuses' sizes."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{key}={value!r} must be a positive integer")
    return value


def number(value: Any, key: str, low: float | None = None, high: float | None = None,
           low_open: bool = False, finite: bool = True) -> float:
    """A real number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}={value!r} must be a number")
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key}={value!r} must be a number") from None
    if finite and not math.isfinite(value):
        raise ConfigError(f"{key}={value} must be finite")
    if low is not None and (value <= low if low_open else value < low):
        raise ConfigError(f"{key}={value} must be {'>' if low_open else '>='} {low}")
    if high is not None and value > high:
        raise ConfigError(f"{key}={value} must be <= {high}")
    return value


def choice(value: Any, key: str, options: Sequence[str]) -> str:
    if value not in options:
        raise ConfigError(f"{key}={value!r} is not known; valid: {', '.join(options)}")
    return value


def widths(value: Any, key: str) -> tuple[int, ...]:
    """A non-empty list of positive integer layer widths (e.g. ``bonus.hidden``)."""
    try:
        sizes = tuple(value)
    except TypeError:
        sizes = None
    if not sizes or any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in sizes):
        raise ConfigError(f"{key}={value!r} must be a non-empty list of positive integer layer widths")
    return sizes


def boolean(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}={value!r} must be true or false")
    return value

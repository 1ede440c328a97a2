"""The one family of config checks: each reads a value, checks it, and names the key when it fails.

The functions check one value. The rules (``Number``, ``Interval``, ``Count``, ``Integer``,
``Choice``, ``Widths``, ``Boolean``) are the checks as declared settings (``rfig_exp.config.settings``)
use them: ``rule(value, key, earlier)``, with ``earlier`` the settings of the same group read
before it (a bound, or an error text, may name one of them). Used by the run config
(``rfig_exp.config.run_settings``), the agent's, each bonus's and each env suite's settings. Nothing here
imports JAX, so a whole config is validated before any compiler or accelerator is touched.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from rfig_exp.config.errors import ConfigError

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


def to_float32(value: float) -> float:
    """``value`` rounded to float32, as the compiled function gets it (beyond float32's range: inf)."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


# -- the rules of declared settings -------------------------------------------------------------


@dataclass(frozen=True)
class Number:
    """:func:`number`: a finite real number, each bound with its own message (``must be > 0.0``,
    ``must be <= 1.0``)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False

    def __call__(self, value: Any, key: str, earlier: Mapping[str, Any]) -> float:
        return number(value, key, self.low, self.high, self.low_open)


@dataclass(frozen=True)
class Interval:
    """A real number in an interval, one message (``text``, a template over the earlier settings,
    e.g. ``must be in (0, 1]``) for any value outside it, inf and nan included (nan is outside
    every interval; inf inside one without an upper bound). ``high`` may name an earlier setting
    of the group. ``float32``: the value is rounded to float32 first, so the checks (and what is
    derived from it) see the value the compiled function gets."""

    low: float
    text: str
    high: float | str | None = None
    low_open: bool = False
    high_open: bool = False
    float32: bool = False

    def __call__(self, value: Any, key: str, earlier: Mapping[str, Any]) -> float:
        x = number(value, key, finite=False)
        if self.float32:
            x = to_float32(x)
        high = earlier[self.high] if isinstance(self.high, str) else self.high
        inside = ((x > self.low if self.low_open else x >= self.low)
                  and (high is None or (x < high if self.high_open else x <= high)))
        if not inside:
            raise ConfigError(f"{key}={x} {self.text.format_map(earlier)}")
        return x


@dataclass(frozen=True)
class Count:
    """An integer ``>= minimum`` written as one (neither a float nor a bool), that divides the
    earlier setting ``divides`` if given; ``text``: the message (a template over the earlier
    settings), by default ``must be an integer >= <minimum>``."""

    minimum: int
    text: str | None = None
    divides: str | None = None

    def __call__(self, value: Any, key: str, earlier: Mapping[str, Any]) -> int:
        ok = (isinstance(value, int) and not isinstance(value, bool) and value >= self.minimum
              and (self.divides is None or earlier[self.divides] % value == 0))
        if not ok:
            text = f"must be an integer >= {self.minimum}" if self.text is None else self.text
            raise ConfigError(f"{key}={value!r} {text.format_map(earlier)}")
        return value


POSITIVE_INT = Count(1, "must be a positive integer")


@dataclass(frozen=True)
class Integer:
    """:func:`integer`: an integer, ``1e6`` accepted (Hydra reads it as a float), bools not."""

    minimum: int | None = None

    def __call__(self, value: Any, key: str, earlier: Mapping[str, Any]) -> int:
        return integer(value, key, self.minimum)


@dataclass(frozen=True)
class Choice:
    options: tuple[str, ...]

    def __call__(self, value: Any, key: str, earlier: Mapping[str, Any]) -> str:
        return choice(value, key, self.options)


@dataclass(frozen=True)
class Widths:
    """:func:`widths`: a non-empty list of positive integer layer widths, as a tuple."""

    def __call__(self, value: Any, key: str, earlier: Mapping[str, Any]) -> tuple[int, ...]:
        return widths(value, key)


@dataclass(frozen=True)
class Boolean:
    def __call__(self, value: Any, key: str, earlier: Mapping[str, Any]) -> bool:
        return boolean(value, key)

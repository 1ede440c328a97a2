"""Methods: what a report compares is a (bonus, variant) pair, not a bonus.

A *variant* is the set of hyperparameter overrides that distinguish a run
from the composed defaults of its env and bonus (the launcher writes it as
``<env>/<bonus>/<variant>/variant.yaml``; ``base`` = no override). Rules:

* Key. The *primary* method of a bonus is its ``base`` variant, or, when the
  selection holds no base run of that bonus, its only variant (a sweep run
  entirely at a smaller budget still has an ``rfig`` to compare). Its key is
  the bonus name, so a bonus's runs at its defaults are found by its name
  (the bonus of each role: :func:`reference_method`). Other methods are
  keyed ``<bonus>/<variant>``.
* Label. Overrides shared by every selected method (same key, same value) are
  *common*: stated once in the report header, not in labels. A method's label
  is its bonus's label (``RFIG``), followed by the overrides it has among the
  remaining (*differing*) keys: ``RFIG (lengthscale=2)``. A dotted key is
  shortened to its last part when that part is unique among the differing
  keys. Two methods never get the same label (a differing key that separates
  them is listed by at least one of them; methods with the same overrides, or
  bonuses with the same label, get their key appended: ``RFIG [rfig/<variant>]``).
* Colour. A primary method has its bonus's fixed colour (analysis.names);
  every other method gets a colour from OTHER_COLOURS (analysis.names) chosen by a hash of
  ``<bonus>/<variant>`` (so it does not depend on the other methods present),
  moved on to the next free colour that is far enough from every colour taken
  in this report (VARIANT_MIN_DISTANCE), else to the free colour farthest from
  them (so colours are distinct while the palette lasts, and as unlike as it allows).
* Line style. The methods of one bonus, in report order, are drawn solid,
  dashed, dash-dotted, dotted, ... (LINE_STYLES): variants stay apart even
  where two colours look alike or more methods than colours are drawn.
"""

from __future__ import annotations

import json
import math
import zlib
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Mapping

from rfig_exp.config.variants import BASE, format_value

from .names import BUILT_IN, OTHER_COLOURS, Names

# Below this "redmean" RGB distance two palette colours read as one on a plot
# (e.g. #56B4E9 and #88CCEE, both light blue, are 92 apart; most pairs are over 200).
VARIANT_MIN_DISTANCE = 150.0
LINE_STYLES: tuple = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)))


def colour_distance(a: str, b: str) -> float:
    """The "redmean" approximation of perceived distance between two ``#RRGGBB`` colours."""
    (r1, g1, b1), (r2, g2, b2) = ([int(c[i:i + 2], 16) for i in (1, 3, 5)] for c in (a, b))
    rm = (r1 + r2) / 2
    return math.sqrt((2 + rm / 256) * (r1 - r2) ** 2 + 4 * (g1 - g2) ** 2 + (2 + (255 - rm) / 256) * (b1 - b2) ** 2)


def _variant_colour(start: int, taken: set[str], names: Names) -> str:
    n = len(OTHER_COLOURS)
    declared = {names.colour(b) for b in names.declared}
    free = [c for i in range(n) if (c := OTHER_COLOURS[(start + i) % n]) not in taken and c not in declared]
    if not free:
        return OTHER_COLOURS[start]
    gap = {c: min((colour_distance(c, t) for t in taken), default=math.inf) for c in free}
    return next((c for c in free if gap[c] >= VARIANT_MIN_DISTANCE), max(free, key=gap.__getitem__))


@dataclass(frozen=True)
class Method:
    """One (bonus, variant) of a report.

    overrides: sorted ((dotted key, value), ...) that define the variant.
    """

    key: str
    bonus: str
    variant: str
    overrides: tuple[tuple[str, Any], ...]
    label: str
    colour: str
    primary: bool
    linestyle: Any = "-"

    @property
    def overrides_dict(self) -> dict[str, Any]:
        return dict(self.overrides)


def format_overrides(overrides: Mapping[str, Any], short: Mapping[str, str] | None = None) -> str:
    """``k=v, k2=v2`` in key order; ``short`` maps dotted keys to the names shown."""
    short = short or {}
    return ", ".join(f"{short.get(k, k)}={format_value(v)}" for k, v in sorted(overrides.items()))


def _canon(v: Any) -> str:
    # Equality of override values across runs: 1e-3 read from two YAML files
    # compares equal; 1 and 1.0 do too (the launcher may write either).
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return repr(float(v))
    return json.dumps(v, sort_keys=True, default=str)


def as_number(v: Any) -> float | None:
    """A finite float for numeric override values (bools and text excluded)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _variant_sort_key(overrides: Mapping[str, Any]) -> tuple:
    out = []
    for k, v in sorted(overrides.items()):
        num = as_number(v)
        out.append((k, (0, num, "") if num is not None else (1, 0.0, _canon(v))))
    return tuple(out)


def common_overrides(groups: Mapping[tuple[str, str], Mapping[str, Any]]) -> dict[str, Any]:
    """Overrides every (bonus, variant) of ``groups`` has, with the same value."""
    items = list(groups.values())
    if not items:
        return {}
    first = items[0]
    return {k: v for k, v in sorted(first.items())
            if all(k in o and _canon(o[k]) == _canon(v) for o in items[1:])}


def short_names(keys) -> dict[str, str]:
    """dotted key -> its last part when that part is unique among ``keys``, else the whole key."""
    keys = sorted(set(keys))
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: (s if last.count(s) == 1 else k) for k, s in zip(keys, last, strict=True)}


def build_methods(groups: Mapping[tuple[str, str], Mapping[str, Any]],
                  names: Names = BUILT_IN) -> tuple[list[Method], dict[str, Any]]:
    """Methods of one report.

    groups: (bonus, variant) -> overrides of that variant (``{}`` for base); names: how the
    report names its bonuses (analysis.names).
    Returns (methods in report order, common overrides); see the module
    docstring for the key, label and colour rules.
    """
    common = common_overrides(groups)
    differing = {k for o in groups.values() for k in o if k not in common}
    short = short_names(differing)
    by_bonus: dict[str, list[str]] = {}
    for bonus, variant in groups:
        by_bonus.setdefault(bonus, []).append(variant)
    primary = {}
    for bonus, variants in by_bonus.items():
        if BASE in variants:
            primary[bonus] = BASE
        elif len(variants) == 1:
            primary[bonus] = variants[0]

    drafts = []
    for (bonus, variant), ov in groups.items():
        is_primary = primary.get(bonus) == variant
        key = bonus if is_primary else f"{bonus}/{variant}"
        shown = {k: v for k, v in ov.items() if k in differing}
        label = names.label(bonus) + (f" ({format_overrides(shown, short)})" if shown else "")
        drafts.append((bonus, variant, key, tuple(sorted(ov.items())), label, is_primary))
    # Labels that still clash (two folders with the same overrides, or a user's bonus labelled like
    # another) get their key, which is unique: a table never has two rows of one name.
    clash = Counter(d[4] for d in drafts)
    drafts = [(*d[:4], d[4] if clash[d[4]] == 1 else f"{d[4]} [{d[2]}]", d[5]) for d in drafts]

    taken = {names.colour(b) for b, _, _, _, _, p in drafts if p}
    colours = {}
    for bonus, variant, key, _, _, is_primary in sorted(drafts, key=lambda d: d[2]):
        if is_primary:
            colours[key] = names.colour(bonus)
            continue
        colours[key] = _variant_colour(zlib.crc32(f"{bonus}/{variant}".encode()) % len(OTHER_COLOURS), taken, names)
        taken.add(colours[key])

    methods = [Method(key, bonus, variant, ov, label, colours[key], is_primary)
               for bonus, variant, key, ov, label, is_primary in drafts]
    # The method at the bonus's defaults first (the primary, or a variant with the common overrides only).
    methods.sort(key=lambda m: (names.sort_key(m.bonus), 0 if m.primary or not any(k in differing for k, _ in
                                                                                  m.overrides) else 1,
                                _variant_sort_key(dict(m.overrides)), m.variant))
    drawn: dict[str, int] = {}
    for i, m in enumerate(methods):
        k = drawn[m.bonus] = drawn.get(m.bonus, -1) + 1
        methods[i] = replace(m, linestyle=LINE_STYLES[k % len(LINE_STYLES)])
    return methods, common


def swept_key(methods: list[Method], base_values: Mapping[str, Mapping[str, Any]] | None = None):
    """The one numeric key a bonus's methods sweep, or None.

    methods: the methods of ONE bonus. A key is swept when it is the only key
    whose value differs between them (a method without the key has the
    default, read from ``base_values[method.key][key]`` -- the resolved config
    -- when given). Returns (key, {method key: value}) with every value a
    number and at least two distinct values; methods whose value is unknown or
    not a number are left out; None when no such single key exists.
    """
    if len(methods) < 2:
        return None
    base_values = base_values or {}
    keys = {k for m in methods for k, _ in m.overrides}

    def value(m: Method, k: str):
        ov = m.overrides_dict
        return ov[k] if k in ov else base_values.get(m.key, {}).get(k)

    varying = [k for k in sorted(keys) if len({_canon(value(m, k)) for m in methods}) > 1]
    if len(varying) != 1:
        return None
    k = varying[0]
    vals = {m.key: as_number(value(m, k)) for m in methods}
    vals = {mk: v for mk, v in vals.items() if v is not None}
    if len(set(vals.values())) < 2:
        return None
    return k, vals


def reference_method(methods: list[Method], bonus: str, common: Mapping[str, Any]) -> str | None:
    """The method that stands for ``bonus`` where one is compared with the others (the bonus of role
    method, RFIG, in the probability of improvement; of role reference, PPO, in the reference
    normalisation): its primary method, else its one
    method with no override beyond ``common`` (a sweep ``agent.lr=1e-3,3e-4`` with 3e-4 the default
    writes no base folder, and that variant runs the defaults), else None."""
    own = [m for m in methods if m.bonus == bonus]
    if any(m.primary for m in own):
        return next(m.key for m in own if m.primary)
    plain = [m.key for m in own if all(k in common for k, _ in m.overrides)]
    return plain[0] if len(plain) == 1 else None

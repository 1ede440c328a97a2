"""Rule 11 of the rule book (:mod:`campaign.claims.verdicts`): every verdict again on the seeds that had
not been read when the rule book was first written (seeds from ``HELD_OUT_FROM`` on), by the same
rules on those runs only. :func:`seeds_only` makes the collection of those runs; :func:`on_held_out`
judges a claims table on both and writes the second verdict beside each claim's first."""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterable

from analysis.align import EnvData
from analysis.collect import Collection

from . import verdicts as V
from .claim_rows import Claim


def seeds_only(coll: Collection, seeds: Iterable[int]) -> Collection:
    """The collection with the runs of ``seeds`` only: every env and method kept (a cell without such
    runs is empty), the runs' curves as they were. ``coll`` is left as it is."""
    keep = set(seeds)
    envs = {e: EnvData(d.env, d.steps, {m: [c for c in cs if c.seed in keep] for m, cs in d.curves.items()})
            for e, d in coll.env_data.items()}
    return dataclasses.replace(coll, env_data=envs, runs=[r for r in coll.runs if r.seed in keep],
                               issues=list(coll.issues))


def held_out_seeds(coll: Collection) -> list[int]:
    """The seeds of ``coll``'s scored runs that rule 11 judges again (from :data:`HELD_OUT_FROM` on)."""
    return sorted({c.seed for c in coll.curves() if c.scored and c.seed >= V.HELD_OUT_FROM})


def held_out_of(coll: Collection | None) -> Collection | None:
    """The runs of ``coll`` on the held-out seeds (:func:`held_out_seeds`), or None without any."""
    seeds = held_out_seeds(coll) if coll is not None else []
    return seeds_only(coll, seeds) if seeds else None


def seeds_text(seeds: list[int]) -> str:
    """Seeds in words: a run of consecutive ones as "8-31"; empty without any."""
    if not seeds:
        return ""
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    return ", ".join(map(str, seeds))


def on_held_out(table: Callable[[Collection, bool], list[Claim]], coll: Collection) -> list[Claim]:
    """``table(coll, False)``, each claim with its verdict on the held-out seeds (rule 11) in
    ``held_out`` and ``held_out_kind``: the claim of the same words in ``table(held-out runs, True)``
    (a table that measures a claim without seeds, the execution-time benchmark, leaves it out there,
    and the claim gets no second verdict). Without held-out seeds the claims are as ``table`` made them."""
    claims = table(coll, False)
    seeds = held_out_seeds(coll)
    if not seeds:
        return claims
    late = {c.claim: c for c in table(seeds_only(coll, seeds), True)}
    out = []
    for c in claims:
        o = late.get(c.claim)
        if o is None or (o.kind == V.NOT_MEASURED and c.kind != V.NOT_MEASURED):
            out.append(c)
            continue
        out.append(dataclasses.replace(c, held_out=f"{o.verdict} ({o.value})", held_out_kind=o.kind))
    return out


__all__ = ["held_out_of", "held_out_seeds", "on_held_out", "seeds_only", "seeds_text"]

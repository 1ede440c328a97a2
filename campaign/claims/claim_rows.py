"""A row of a claims table (:class:`Claim`) and how its numbers are written, shared by the paper's
claims (:mod:`campaign.claims.claims`), its sensitivity claims and the control's table."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from . import verdicts as V

BETA = "bonus.beta"
# how an interim verdict's words continue: "<verdict> (interim; <what it waits for>)"
_INTERIM = " (interim; "


@dataclass
class Claim:
    """One row of the claims table: the paper's words, how they were measured, the value with its
    interval, the verdict (``kind`` one of campaign.claims.verdicts' five; ``verdict`` its words)."""

    claim: str
    measure: str
    value: str
    verdict: str
    detail: str = ""
    kind: str = ""
    scope: str = "paper"  # "paper": judged on the paper's panels; "beyond": the envs the paper did not run
    deciding: str = ""    # the interval that decided the verdict (rule 5), level and correction named
    second: str = ""      # rule 12: the test without a normal approximation beside the deciding interval
    panels: str = ""      # rule 10: each panel's own value beside a pooled verdict (or each panel's verdict)
    held_out: str = ""    # rule 11: the verdict (and value) on the seeds not read when the rules were written
    held_out_kind: str = ""

    @classmethod
    def judged(cls, claim: str, measure: str, value: str, verdict: V.Verdict, detail: str = "",
               scope: str = "paper", panels: str = "") -> Claim:
        deciding = verdict.deciding.text if verdict.deciding is not None else ""
        return cls(claim, measure, value, verdict.text, detail, verdict.kind, scope, deciding, verdict.second, panels)

    def interim(self, why: str) -> Claim:
        """This claim with its verdict marked interim, ``why`` saying what it still waits for."""
        return dataclasses.replace(self, verdict=f"{self.verdict}{_INTERIM}{why})")

    @property
    def standing_verdict(self) -> str:
        """The verdict's words without the interim marks :meth:`interim` added."""
        return self.verdict.split(_INTERIM)[0]



def fmt(d: V.Dist | V.PoiDist | tuple[float, float, float], digits: int = 2) -> str:
    point, (lo, hi) = (d.point, d.interval()) if isinstance(d, (V.Dist, V.PoiDist)) else (d[0], (d[1], d[2]))
    return f"{point:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def panels_text(k: int) -> str:
    return f"{k} panel" + ("" if k == 1 else "s")

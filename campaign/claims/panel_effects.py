"""Rule 10 of the rule book (:mod:`campaign.claims.verdicts`): beside a verdict on a statistic pooled
over panels, each panel's own value with its 95% interval, and a mark on each panel whose interval at
the Bonferroni level over the pooled panels lies entirely on a side of the threshold that the pooled
verdict does not state. A mean can sit inside a parity band while panels differ both ways; this names
them, so that the pooled verdict is read as a statement about the mean only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from . import pooled as P
from . import verdicts as V


@dataclass(frozen=True)
class PanelEffect:
    """One panel's own value of a pooled statistic: ``point`` and its 95% interval (``lo``, ``hi``),
    its interval at the Bonferroni level over the pooled panels (``b_lo``, ``b_hi``), and ``side``: +1
    when that interval lies entirely above the threshold, -1 entirely below, 0 neither; ``beyond``:
    it lies entirely outside rule 9's parity band as well."""

    panel: str
    point: float
    lo: float
    hi: float
    b_lo: float
    b_hi: float
    side: int
    beyond: bool = False


def _effect(panel: str, point: float, interval, m: int, threshold: float,
            band: tuple[float, float] | None) -> PanelEffect:
    lo, hi = interval(V.LEVEL)
    b_lo, b_hi = interval(1 - (1 - V.LEVEL) / m)
    side = 1 if b_lo > threshold else (-1 if b_hi < threshold else 0)
    beyond = band is not None and (b_lo > band[1] or b_hi < band[0])
    return PanelEffect(panel, point, lo, hi, b_lo, b_hi, side, beyond)


def poi_effects(x: Mapping[str, np.ndarray], y: Mapping[str, np.ndarray], labels: Mapping[str, str],
                threshold: float = 0.5, band: tuple[float, float] | None = None) -> list[PanelEffect]:
    """P(X > Y) on each panel ``x`` and ``y`` share (DeLong intervals, rule 7), in ``x``'s order."""
    panels = [e for e in x if e in y]
    out = []
    for e in panels:
        d = V.poi_over_panels({e: x[e]}, {e: y[e]})
        out.append(_effect(labels.get(e, e), d.point, d.interval, len(panels), threshold, band))
    return out


def odds_effects(tables: Mapping[str, tuple[int, int, int, int]], labels: Mapping[str, str]) -> list[PanelEffect]:
    """Each informative panel's own Mantel-Haenszel odds ratio (one table: Woolf's interval), on the log
    scale against 0 as the pooled verdict judges it; points and intervals are odds ratios."""
    own = {e: P.mantel_haenszel([t]) for e, t in tables.items()}
    own = {e: o for e, o in own.items() if o.strata}
    return [_effect(labels.get(e, e), o.point, o.interval, len(own), 1.0, None) for e, o in own.items()]


def departing(effects: Sequence[PanelEffect], kind: str) -> list[PanelEffect]:
    """The panels a pooled verdict of ``kind`` does not speak for: significantly below the threshold
    under a supported claim, above under a contradicted one, either way otherwise."""
    allowed = {V.SUPPORTED: (1, 0), V.CONTRADICTED: (-1, 0)}.get(kind, (0,))
    return [e for e in effects if e.side not in allowed]


def effects_text(effects: Sequence[PanelEffect], kind: str, threshold: float, digits: int = 2) -> str:
    """Every panel's own value and 95% interval, the ones the pooled verdict does not speak for in
    bold with the side their Bonferroni interval lies on, after a count of them."""
    if not effects:
        return ""
    marked = {id(e) for e in departing(effects, kind)}
    level = 1 - (1 - V.LEVEL) / len(effects)
    cells = []
    for e in effects:
        text = f"{e.panel} {e.point:.{digits}f} [{e.lo:.{digits}f}, {e.hi:.{digits}f}]"
        if id(e) in marked:
            where = "above" if e.side > 0 else "below"
            bonferroni = f"[{e.b_lo:.{digits}f}, {e.b_hi:.{digits}f}]"
            text = (f"**{text}: {where} {threshold:g} at Bonferroni {level:.2%} {bonferroni}"
                    + (", beyond d = 0.2" if e.beyond else "") + "**")
        cells.append(text)
    k = len(marked)
    head = (f"{k} of {len(effects)} panels {'differs' if k == 1 else 'differ'} on their own from what the pooled "
            "verdict says (rule 10): "
            if k else f"None of {len(effects)} panels differs on its own from the pooled verdict (rule 10). ")
    return head + "; ".join(cells) + "."


def qualified(verdict: str, effects: Sequence[PanelEffect], kind: str) -> str:
    """A pooled verdict's words with rule 10's qualification where panels differ on their own."""
    marked = departing(effects, kind)
    if not marked:
        return verdict
    names = ", ".join(f"{e.panel} {'above' if e.side > 0 else 'below'}" for e in marked)
    differ = "differs" if len(marked) == 1 else "differ"
    return f"{verdict}, as a mean over {len(effects)} panels; on their own, {len(marked)} of them {differ} ({names})"


__all__ = ["PanelEffect", "departing", "effects_text", "odds_effects", "poi_effects", "qualified"]

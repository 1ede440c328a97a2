"""Each bonus against the control as well as against PPO: exploration told apart from the rest of a
bonus's machinery.

A bonus reaches the agent through a second value head, a reward scaled by its return's running
std and an intrinsic advantage in every minibatch. The control (``bonus=noise``: i.i.d. rewards
that know nothing about the states, docs/bonuses/noise.md) goes through all of it. So on a panel

- P(control > PPO) is what that machinery does without information;
- P(bonus > control) is what the bonus's information adds to it;
- P(bonus > PPO) is the two together, the comparison the paper makes.

These are measurements, not claims of the paper (the rule book judges none of them): the
probability of improvement of final scores on each panel, with its 95% stratified-bootstrap
interval over seeds, and its mean over the panels (the panels held fixed, as the claims do). A
cell whose bonus the signal check names degenerate on that panel says so beside its numbers.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from analysis.markdown import render_markdown
from analysis.names import CONTROLS, REFERENCES, env_label

from . import verdicts as V
from .claim_rows import fmt
from .claims import Panels


def control_comparisons(p: Panels, methods: Sequence[str], control: str,
                        reference: str) -> dict[tuple[str, str, str], V.PoiDist]:
    """(panel or "all", method, against) -> P(method > against), for every method against the
    reference and the control, and the control against the reference, on the paper's panels that
    have both (saturated ones left out of the mean, as rule 3 leaves them out of the claims)."""
    pairs = [(control, reference)] + [(m, against) for m in methods for against in (reference, control)]
    out: dict[tuple[str, str, str], V.PoiDist] = {}
    for x, y in pairs:
        envs = [e for e in p.paper if x in p.scores.get(e, {}) and y in p.scores.get(e, {})]
        for e in envs:
            out[(e, x, y)] = V.poi_over_panels({e: p.runs(e, x)}, {e: p.runs(e, y)})
        pooled = [e for e in envs if not p.saturated(e, x, y)]
        if pooled:
            out[("all", x, y)] = V.poi_over_panels({e: p.runs(e, x) for e in pooled},
                                                   {e: p.runs(e, y) for e in pooled})
    return out


def control_md(p: Panels, degenerate: Mapping[tuple[str, str], Sequence[str]] | None = None,
               label: Callable[[str], str] | None = None) -> str:
    """The panel x bonus table: in each cell P(bonus > PPO) / P(bonus > control); the control's
    own column P(control > PPO). Empty when the collection has no control or no PPO."""
    coll = p.coll
    label = label or coll.label
    control = next((m for m in coll.methods if coll.bonus_of(m) in CONTROLS), None)
    reference = next((m for m in coll.methods if coll.bonus_of(m) in REFERENCES), None)
    if control is None or reference is None:
        return ""
    methods = [m for m in coll.methods if m not in (control, reference)]
    d = control_comparisons(p, methods, control, reference)
    degenerate = degenerate or {}

    def value(panel: str, x: str, y: str) -> str:
        if (panel, x, y) not in d:
            return "—"
        count = sum(1 for key in d if key[1:] == (x, y) and key[0] != "all" and not p.saturated(key[0], x, y))
        if panel == "all":
            return fmt(d[(panel, x, y)]) + f" ({count})"
        return fmt(d[(panel, x, y)]) + (" (not discriminating)" if p.saturated(panel, x, y) else "")

    def cell(panel: str, m: str) -> str:
        if m == control:
            return value(panel, control, reference)
        parts = [value(panel, m, a) for a in (reference, control)]
        flag = " (degenerate)" if (panel, m) in degenerate else ""
        return " / ".join(parts) + flag

    panels = [e for e in p.paper if any((e, m, a) in d for m in [control, *methods] for a in (reference, control))]
    rows = [[env_label(e)] + [cell(e, m) for m in [control, *methods]] for e in panels]
    if any(key[0] == "all" for key in d):
        rows.append(["**mean over panels**"] + [cell("all", m) for m in [control, *methods]])
    header = ["Panel", f"{label(control)} > {label(reference)}"] + [
        f"{label(m)} > {label(reference)} / > {label(control)}" for m in methods]
    return (render_markdown(header, rows, align="l" + "l" * (len(header) - 1)) + "\n\n"
            f"*Probability of improvement of final scores, P(X > Y) [95% interval over seeds, from its DeLong "
            f"variance]: "
            f"in each cell against {label(reference)}, then against the control ({label(control)}: i.i.d. rewards "
            f"through the same two-head agent). A bonus's gain over PPO that it does not keep over the control is "
            f"the second value head's and the reward scaling's, not exploration's. The mean is over the panels "
            f"that have both methods and discriminate between them (rule 3, on the two methods' runs; their "
            f"number in brackets), held fixed. Measurements, not "
            f"verdicts; (degenerate): the signal check names the bonus degenerate on that panel.*\n")


__all__ = ["control_comparisons", "control_md"]

"""Which panels the competitive claim (RFIG against the best of the NN baselines) judges, and against
which baselines: on each panel those that work there (runs, not degenerate by the signal check); a
panel judged without one is named (rule 6, campaign.claims.verdicts)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.names import BASELINES, env_label, method_label

if TYPE_CHECKING:
    from .claims import Panels


def working_baselines(p: Panels, env: str) -> list[str]:
    """The paper's NN baselines with runs on ``env`` that the signal check does not find degenerate there."""
    return [b for b in BASELINES if b in p.scores.get(env, {}) and not p.broken(env, b)]


def competitive_panels(p: Panels, norm) -> tuple[list[str], str]:
    """The paper's panels the competitive claim judges (RFIG there, degenerate or not: rule 6 judges
    the method under test as it runs; at least one working baseline; the comparison with them
    discriminating), and the sentences that name the panels judged
    without one of the baselines (no runs there yet, or degenerate: rule 6) and those left out."""
    judged, without, left, own = [], [], [], []
    for e in p.paper:
        if "rfig" not in p.scores.get(e, {}) or not norm.usable(e):
            continue
        working = working_baselines(p, e)
        if not working:
            left.append(f"{env_label(e)} (no working baseline)")
            continue
        if e not in p.discriminating([e], "rfig", *working):
            rule = "rule 3" if p.saturated(e, "rfig", *working) else "rule 3b"
            left.append(f"{env_label(e)} (not discriminating, {rule})")
            continue
        judged.append(e)
        if p.broken(e, "rfig"):
            own.append(env_label(e))
        missing = [method_label(b) + (" degenerate" if p.broken(e, b) else "") for b in BASELINES if b not in working]
        if missing:
            without.append(f"{env_label(e)} (without {', '.join(missing)})")
    return judged, ((f" Judged against the working baselines only (no runs there yet, or degenerate by the signal "
                     f"check; rule 6: the claim is then at best undecided): {'; '.join(without)}." if without else "")
                    + (f" Not judged: {'; '.join(left)}." if left else "")
                    + (f" Judged although RFIG is degenerate there by the signal check (rule 6: the method a claim "
                       f"is about is judged as it runs): {', '.join(own)}." if own else ""))

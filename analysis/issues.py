"""What the analysis reports about a results tree: an :class:`Issue` per problem or adjustment,
and :class:`AnalysisError` for a user-facing problem that stops it."""

from __future__ import annotations

from dataclasses import dataclass


class AnalysisError(Exception):
    """A user-facing problem (bad path, nothing to analyse); the CLI prints it."""


@dataclass
class Issue:
    """One reported problem or adjustment.

    severity: "error" (run or data left out), "warning" (data used but altered,
    e.g. interpolated or forward-filled failure), "info" (expected behaviour
    worth knowing, e.g. empty windows forward-filled).
    """

    kind: str
    severity: str
    env: str | None
    bonus: str | None
    seed: int | None
    detail: str
    handling: str
    variant: str | None = None


def fmt_list(xs: list, limit: int = 6) -> str:
    shown = ", ".join(str(x) for x in xs[:limit])
    return shown + (f", ... ({len(xs)} in all)" if len(xs) > limit else "")

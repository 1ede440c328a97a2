"""RFIG's note on the progress line: its exact-inverse upkeep in the window (host side, no JAX)."""

from __future__ import annotations

from typing import Callable, Mapping, Sequence


def inverse_note(refreshes: float, recoveries: float, seed_updates: int) -> str:
    """RFIG's precision-matrix upkeep in one window: exact refreshes (recoveries included) and
    recoveries (an inverse so wrong it was replaced) over ``seed_updates`` = updates x seeds."""
    return f"inverse: {int(round(refreshes))} refreshes, {int(round(recoveries))} recoveries in {seed_updates} updates"


def progress_note(matmul_precision: str) -> Callable[[Mapping[str, Sequence[float]], int], tuple[str, str | None]]:
    """The bonus's ``progress_note`` (rfig_exp.bonuses.base.Bonus): the window's upkeep from its
    ``bonus/refresh_count`` and ``bonus/divergence_count`` (``[S]`` each), and a warning when every
    update needed a recovery (its inverse was wrong each time)."""

    def note(metrics: Mapping[str, Sequence[float]], seed_updates: int) -> tuple[str, str | None]:
        refreshes = float(sum(metrics["bonus/refresh_count"]))
        recoveries = float(sum(metrics.get("bonus/divergence_count", [0.0])))
        warning = None
        if recoveries >= seed_updates:
            warning = ("every update of this window replaced a diverged inverse by an exact one: the Woodbury update "
                       f"is losing precision (bonus.matmul_precision={matmul_precision}; on a GPU, TF32 matmuls do "
                       "this)")
        return inverse_note(refreshes, recoveries, seed_updates), warning

    return note

"""How far a campaign of fixed-size stages has come in a data folder, and the report's claims marked
interim while the campaign that judges them is not whole. Nothing here imports JAX."""

from __future__ import annotations

import dataclasses

from analysis.names import env_label
from campaign.claims.claim_rows import Claim
from campaign.claims.sensitivity_claims import SENSITIVITY_CLAIMS

from .stages import block_stage, stage_coverage, stages, stages_not_whole


@dataclasses.dataclass(frozen=True)
class Progress:
    """How far a campaign of fixed-size stages has come in a data folder: its stages in the lanes'
    order, those not whole there (``left``), those of them with some complete runs (``partly``),
    and env -> the number of seeds of its complete runs."""

    stages: tuple[str, ...]
    left: tuple[str, ...]
    partly: tuple[str, ...]
    seeds: dict[str, int]

    @property
    def whole(self) -> bool:
        return not self.left

    def text(self) -> str:
        """In words: how many stages are whole, which are partly run, and what the runs cover."""
        done = len(self.stages) - len(self.left)
        cover = ", ".join(f"{env_label(e)} {n} seed{'s' if n != 1 else ''}" for e, n in self.seeds.items()) or "no runs"
        return (f"{done} of {len(self.stages)} stages whole"
                + (f", {', '.join(self.partly)} partly run" if self.partly else "")
                + f"; its complete runs cover {cover}")


def campaign_progress(stored: dict, campaign: str) -> Progress:
    """:class:`Progress` of ``campaign`` in ``stored`` (a data folder's runs, campaign.repro.data.read_data):
    a stage is whole when it holds all of its runs (:func:`campaign.repro.stages.stages_left`)."""
    held = stage_coverage(stored)
    left = stages_not_whole(held, campaign)
    order = [s.name for s in stages(campaign)]
    seeds: dict[str, set] = {}
    first: dict[str, int] = {}  # env -> the place of its first stage, so envs are named in the lanes' order
    for run in stored.values():
        stage = block_stage(run.record)
        if run.complete and stage in order:
            env = run.record["env"]
            seeds.setdefault(env, set()).add(run.record["seed"])
            first[env] = min(first.get(env, len(order)), order.index(stage))
    return Progress(tuple(order), tuple(left), tuple(s for s in left if held.get(s, 0) > 0),
                    {e: len(seeds[e]) for e in sorted(seeds, key=first.__getitem__)})


def interim_sensitivity(claims: list[Claim], progress: Progress | None, campaign: str) -> list[Claim]:
    """``claims`` with the verdicts of the sensitivity claims marked interim while ``progress`` (of the
    campaign ``campaign`` that judges them) is not whole, saying what they rest on; as they are otherwise."""
    if progress is None or progress.whole:
        return claims
    why = f"`{campaign}` still running: {progress.text()}"
    return [c.interim(why) if c.claim in SENSITIVITY_CLAIMS else c for c in claims]

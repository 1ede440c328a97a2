"""The signal check tested on known answers, drawn from real runs' visit maps.

A check that decides which comparisons are judged must tell a working bonus from a broken one. On
each panel with a coverage grid this module draws transitions from committed runs' own final visit
maps (``visits.npy``, ``visits.npz`` in the committed data) and scores them with four bonuses whose
answer is known:

- **(a) distance**: a state's standardised distance from the visit-weighted mean cell
  (``rfig_exp.agents.signal.distance_score``), a score that learns nothing and that an untrained
  network's output tends to follow. It must be rejected.
- **(b) count**: ``1 / sqrt(n + 1)`` of the visit count ``n`` of the transition's cell, a count
  bonus known to work (Tang et al.'s, with the coverage grid as its hash). It must pass. A static
  SimHash count of the normalised state would be closer to #Explo, but the committed data holds no
  states, only each run's visit map, so the count is of the grid's own cells: the best case for a
  count bonus, which the check must not reject.
- **(c) constant** and **(d) noise** (i.i.d. Exponential(1), the control's reward): rejected.

Each committed run's map gives one known-answer run: :data:`N_DRAW` transitions drawn with
probability proportional to the cells' counts (a position uniform within its cell), each paired
with its cell's count as the visits before the batch. The statistics are the ones the runs record
(``rfig_exp.agents.signal.batch_signal``, over the batch as ``[64, 64]``) and the rule is the check's
(``campaign.claims.signal.judge``), both unchanged here. The distance score's rank correlation
on a second, independent draw from the same map is that run's *reference*, the number the revised
rule (2026-12-02) compares a bonus with; :func:`references` computes it the same way for every run
of a collection, for the check of the real bonuses (no committed run records it during training).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from analysis.collect import Collection
from rfig_exp.agents.signal import batch_signal, distance_score
from rfig_exp.results import contract

from .signal import OLD_RULE, RULE, SignalRule, judge, short_verdict

N_DRAW = 4096                  # transitions per known-answer run
BATCH = (64, 64)               # the draw as a [T, B] batch (the statistics flatten it)
KNOWN = ("distance", "count", "constant", "noise")
MUST = {"distance": "degenerate", "count": "ok", "constant": "degenerate", "noise": "degenerate"}
LABELS = {"distance": "(a) distance score", "count": "(b) count 1/√(n+1)", "constant": "(c) constant",
          "noise": "(d) noise"}
MapKey = tuple  # (env, bonus, variant, seed): which run's final visit map
REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "docs" / "results" / "paper32" / "data"


def _rng(key: MapKey, purpose: str) -> np.random.Generator:
    """A generator fixed by the run's key and the draw's purpose (the same numbers on every machine)."""
    return np.random.default_rng([zlib.crc32("|".join(map(str, (*key, purpose))).encode())])


def draw(visits: np.ndarray, rng: np.random.Generator, n: int = N_DRAW) -> tuple[np.ndarray, np.ndarray]:
    """``n`` transitions from a visit map ``[H, W]``: ``(positions [n, 2] in cell units, counts [n])``,
    cells drawn in proportion to their counts, each position uniform within its cell."""
    flat = np.asarray(visits, np.float64).ravel()
    cells = rng.choice(flat.size, size=n, p=flat / flat.sum())
    width = visits.shape[1]
    coords = np.stack([cells // width, cells % width], axis=1) + rng.uniform(size=(n, 2))
    return coords.astype(np.float32), flat[cells].astype(np.float32)


_distance = jax.jit(jax.vmap(distance_score))
_stats = jax.jit(jax.vmap(batch_signal))


def _as_batch(x: np.ndarray) -> jax.Array:
    return jnp.asarray(x, jnp.float32).reshape((x.shape[0], *BATCH))


def _stacked(maps: list[np.ndarray]) -> np.ndarray:
    shapes = {m.shape for m in maps}
    if len(shapes) != 1:
        raise ValueError(f"visit maps of one panel with different shapes: {sorted(shapes)}")
    return np.stack([np.asarray(m, np.float32) for m in maps])


def reference_ranks(keys: list[MapKey], maps: list[np.ndarray]) -> np.ndarray:
    """Each run's reference: the distance score's rank correlation with the counts on a draw
    (purpose ``reference``) from its map. ``maps`` share one shape."""
    grids = _stacked(maps)
    drawn = [draw(m, _rng(k, "reference")) for k, m in zip(keys, maps)]
    coords = jnp.asarray(np.stack([c for c, _ in drawn]))
    counts = np.stack([n for _, n in drawn])
    score = np.asarray(_distance(coords, jnp.asarray(grids)))
    return np.asarray(_stats(_as_batch(score), _as_batch(counts))["visit_rank_corr"], np.float64)


def known_answers(keys: list[MapKey], maps: list[np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """Known answer -> the statistics the runs record (``at_max``, ``cv``, ``rank``, one per map), on a
    draw (purpose ``known``) from each map, independent of the reference's draw."""
    grids = _stacked(maps)
    drawn = [draw(m, _rng(k, "known")) for k, m in zip(keys, maps)]
    coords = np.stack([c for c, _ in drawn])
    counts = np.stack([n for _, n in drawn])
    noise = np.stack([_rng(k, "noise").exponential(1.0, N_DRAW) for k in keys])
    raw = {"distance": np.asarray(_distance(jnp.asarray(coords), jnp.asarray(grids))),
           "count": 1.0 / np.sqrt(counts + 1.0), "constant": np.ones_like(counts), "noise": noise}
    out = {}
    for name in KNOWN:
        s = _stats(_as_batch(raw[name]), _as_batch(counts))
        out[name] = {"at_max": np.asarray(s["at_max_fraction"], np.float64), "cv": np.asarray(s["cv"], np.float64),
                     "rank": np.asarray(s["visit_rank_corr"], np.float64)}
    return out


@dataclass(frozen=True)
class KnownAnswer:
    """One known-answer bonus on one panel: its statistics over the maps and each rule's verdict."""

    panel: str
    bonus: str                          # one of KNOWN
    runs: int                           # maps drawn from
    rank: float                         # mean rank correlation with visits
    reference: float                    # mean of the maps' reference (the distance score on another draw)
    verdicts: dict[str, tuple[str, tuple[str, ...]]]   # rule's date -> (verdict, causes)

    def right(self, rule: SignalRule) -> bool:
        """The rule gives the answer a valid check must give."""
        return self.verdicts[rule.fixed][0] == MUST[self.bonus]


def calibrate_panel(panel: str, keys: list[MapKey], maps: list[np.ndarray],
                    rules: tuple[SignalRule, ...] = (OLD_RULE, RULE)) -> list[KnownAnswer]:
    """The four known answers on one panel's maps (at least two), judged by each of ``rules``."""
    stats, reference = known_answers(keys, maps), reference_ranks(keys, maps)
    out = []
    for name in KNOWN:
        s = stats[name]
        verdicts = {r.fixed: judge(s["at_max"], s["cv"], s["rank"], r, reference, count=name == "count")[:2]
                    for r in rules}
        out.append(KnownAnswer(panel, name, len(maps), float(np.mean(s["rank"])), float(np.mean(reference)),
                               verdicts))
    return out


def valid(answers: list[KnownAnswer], rule: SignalRule = RULE) -> bool:
    """Whether ``rule`` rejects (a), (c), (d) and passes (b) on every panel of ``answers``."""
    return bool(answers) and all(a.right(rule) for a in answers)


# --------------------------------------------------------------------------- where the maps come from

def committed_maps(data_dir: str | Path = COMMITTED, experiment: str = "paper32", seeds=None,
                   defaults_only: bool = True) -> dict[str, tuple[list[MapKey], list[np.ndarray]]]:
    """panel (env folder) -> (keys, maps) of the committed runs' final visit maps in ``data_dir``'s
    ``visits.npz`` (``seeds``: only those; ``defaults_only``: the variants with no ``bonus.``
    override, every bonus at its defaults and PPO)."""
    out: dict[str, tuple[list[MapKey], list[np.ndarray]]] = {}
    with np.load(Path(data_dir) / "visits.npz") as z:
        for name in sorted(z.files):
            exp, env, bonus, variant, seed = name.split("|")
            if exp != experiment or (seeds is not None and int(seed) not in seeds):
                continue
            if defaults_only and "bonus." in variant:
                continue
            keys, maps = out.setdefault(env, ([], []))
            keys.append((env, bonus, variant, int(seed)))
            maps.append(z[name])
    return out


@lru_cache(maxsize=8192)
def _load(path: str) -> np.ndarray:
    return np.load(path, allow_pickle=False)


def collection_maps(coll: Collection) -> dict[str, tuple[list[MapKey], list[np.ndarray]]]:
    """env -> (keys, maps) of every used run of ``coll`` that has a 2-D ``visits.npy`` with visits,
    keyed ``(env, bonus, variant, seed)`` as the signal check keys its runs; maps of another shape
    than the env's most common one are left out."""
    out: dict[str, tuple[list[MapKey], list[np.ndarray]]] = {}
    for env in coll.envs:
        found = []
        for method in coll.methods:
            info = coll.method_info.get(method)
            for c in coll.env_data[env].used(method):
                path = c.run.path / contract.VISITS
                if path.is_file():
                    v = _load(str(path))
                    if v.ndim == 2 and v.sum() > 0:
                        found.append(((env, coll.bonus_of(method), info.variant if info else "base", int(c.seed)), v))
        if found:
            shapes = [v.shape for _, v in found]
            common = max(set(shapes), key=shapes.count)
            kept = [(k, v) for k, v in found if v.shape == common]
            out[env] = ([k for k, _ in kept], [v for _, v in kept])
    return out


_REFERENCES: dict[tuple[str, str, MapKey], float] = {}   # (results dir, experiment, run key) -> reference


def references(coll: Collection) -> dict[MapKey, float]:
    """(env, bonus, variant, seed) -> that run's reference (the distance score's rank correlation on
    a draw from its final visit map), for every run of ``coll`` with a map (kept for the process:
    the grid's collections share their runs)."""
    where = (str(coll.results_dir), coll.experiment)
    out: dict[MapKey, float] = {}
    for keys, maps in collection_maps(coll).values():
        todo = [i for i, k in enumerate(keys) if (*where, k) not in _REFERENCES]
        if todo:
            ranks = reference_ranks([keys[i] for i in todo], [maps[i] for i in todo])
            _REFERENCES.update({(*where, keys[i]): float(r) for i, r in zip(todo, ranks)})
        out.update({k: _REFERENCES[(*where, k)] for k in keys})
    return out


def calibrate(panels: dict[str, tuple[list[MapKey], list[np.ndarray]]]) -> list[KnownAnswer]:
    """The known answers on every panel with at least two maps."""
    return [a for panel, (keys, maps) in panels.items() if len(maps) >= 2
            for a in calibrate_panel(panel, keys, maps)]


# --------------------------------------------------------------------------- the report's table

def _both(a: KnownAnswer) -> str:
    old, new = short_verdict(a.verdicts[OLD_RULE.fixed]), short_verdict(a.verdicts[RULE.fixed])
    return f"{new} under both" if old == new else f"{old} → {new}"


def calibration_md(answers: list[KnownAnswer], env_label: Callable[[str], str] = str) -> str:
    """Per panel, each known answer's verdict under the 2026-11-28 rule and under the revised one,
    and whether each rule is a valid check there."""
    by = {(a.panel, a.bonus): a for a in answers}
    head = ["Panel", "maps", "ρ: (a) / (b) / (d); reference", *(LABELS[k] for k in KNOWN), "valid check?"]
    lines = ["| " + " | ".join(head) + " |", "| :--- |" + " ---: |" * 2 + " :--- |" * (len(KNOWN) + 1)]
    for panel in dict.fromkeys(a.panel for a in answers):
        row = [by[(panel, k)] for k in KNOWN]
        ranks = " / ".join(f"{by[(panel, k)].rank:+.2f}" for k in ("distance", "count", "noise"))
        cells = [_both(a) for a in row]
        verdict = ", ".join(f"{r.fixed}: {'yes' if valid(row, r) else '**no**'}" for r in (OLD_RULE, RULE))
        lines.append(f"| {env_label(panel)} | {row[0].runs} | {ranks}; {row[0].reference:+.2f} | "
                     + " | ".join(cells) + f" | {verdict} |")
    caption = (
        f"*The signal check on known answers: each run's final visit map on the panel (maps) gives one known-answer "
        f"run of {N_DRAW:,} transitions drawn from it, each paired with its cell's count; the statistics are those "
        f"the runs record, the rule the check's. (a) a state's standardised distance from the visit-weighted mean "
        f"cell, which learns nothing; (b) 1/√(n+1) of its cell's count, a count bonus known to work (the data holds "
        f"visit maps, not states, so it counts the grid's cells rather than a SimHash of the state); (c) a "
        f"constant; (d) i.i.d. Exponential(1) noise, the control's reward. A valid check rejects (a), (c) and (d) "
        f"and passes (b). Each cell: the verdict under the rule as fixed {OLD_RULE.fixed} → under the rule revised "
        f"{RULE.fixed} (*under both* where they agree). ρ: the mean rank correlation with visits; reference: the "
        f"distance score's on a second, independent draw from the same maps, the number the revised rule compares "
        f"each bonus with (campaign/claims/signal_calibration.py).*")
    return "\n".join(lines) + "\n\n" + caption + "\n"


def calibration_section(coll: Collection, env_label: Callable[[str], str] = str) -> str:
    """The known-answer table on ``coll``'s runs' visit maps ('' where no panel has two maps)."""
    answers = calibrate(collection_maps(coll))
    return calibration_md(answers, env_label) if answers else ""


__all__ = ["BATCH", "COMMITTED", "KNOWN", "KnownAnswer", "MUST", "N_DRAW", "calibrate", "calibrate_panel",
           "calibration_md", "calibration_section", "collection_maps", "committed_maps", "draw", "known_answers",
           "reference_ranks", "references", "valid"]

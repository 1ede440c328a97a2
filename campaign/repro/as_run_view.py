"""The as-run grid's runs as the report reads them: each filed under its method, scored as the
authors scored it.

:func:`report_runs` takes the runs :func:`campaign.repro.as_run_methods.sort_runs` assigned and files
each under the variant of its method (``base`` for the preset's six, ``own_settings`` for our VIME
under the protocol), so that the report's method keys are the bonus names the claims look for
(``rfig``, ``none``, ``vime``, ...) and our VIME is a method of its own. The protocol's settings,
shared by all of them, are said once in the report instead of in every folder name; the env options
the protocol sets (a Brax backend, a milestone distance) are the protocol's too, so a panel keeps
its plain name.

Its score (``score="eval"``): the protocol evaluates 128 fresh episodes per seed after every window
(``agent.eval_episodes``; ``eval/episode_return``), which is what the authors' code plots; the
report's ``episode_return`` becomes that mean (and ``episode_length`` its length, ``episodes_finished``
the number of episodes), so the same analysis code scores the runs by it. An evaluation episode is
a whole episode from a reset, so no window is left out for survivor bias (the rebuilt runs carry no
``num_envs``: analysis.align.censored_windows). ``score="train"`` keeps the training episodes' return.
Every number stays what the run recorded. Nothing here imports JAX.
"""

from __future__ import annotations

import io
from dataclasses import replace
from typing import Mapping

import numpy as np
import pandas as pd
import yaml

from .as_run_methods import Declared
from .data import ID_COLUMNS, StoredRun, _canonical_rows
from .protocol_stages import own_bonus_overrides

EVAL_RETURN, EVAL_LENGTH = "eval/episode_return", "eval/episode_length"
SCORES = ("eval", "train")


def own_overrides(bonus: str) -> dict:
    """What our own settings of ``bonus`` set over the protocol's (``own_bonus_overrides``), as values."""
    return {k: yaml.safe_load(v) for k, v in (w.split("=", 1) for w in own_bonus_overrides(bonus))}


def eval_episodes(record: Mapping) -> int | None:
    """The evaluation episodes per seed a run made (its config, else its variant's overrides)."""
    agent = (record.get("config") or {}).get("agent") or {}
    n = agent.get("eval_episodes", (record.get("variant_overrides") or {}).get("agent.eval_episodes"))
    return int(n) if n else None


def scored_rows(run: StoredRun, score: str) -> tuple[str, str | None]:
    """The run's metrics rows with ``episode_return`` the chosen score, and why the run cannot be
    scored so (None when it can)."""
    if score == "train" or not run.rows:
        return run.rows, None
    df = pd.read_csv(io.StringIO(run.rows))
    n = eval_episodes(run.record)
    if EVAL_RETURN not in df.columns or not n or not np.isfinite(df[EVAL_RETURN]).any():
        return run.rows, "it records no evaluation episodes (eval/episode_return)"
    df = df.assign(episode_return=df[EVAL_RETURN], episodes_finished=n)
    if EVAL_LENGTH in df.columns:
        df = df.assign(episode_length=df[EVAL_LENGTH])
    return _canonical_rows(df), None


def _filed(record: dict, made: Declared, eval_score: bool, final: float | None) -> dict:
    """``record`` under its method's variant (the overrides it had kept in ``as_run_variant``)."""
    overrides = own_overrides(made.bonus) if made.own else {}
    out = {**record, "variant": made.variant, "variant_overrides": overrides,
           "as_run_variant": record.get("variant"), "as_run_method": made.key}
    summary = dict(record.get("summary") or {})
    if summary:
        summary.update(variant=made.variant, variant_overrides=overrides)
        if eval_score:
            summary.pop("num_envs", None)
            summary["final_return"] = final
        out["summary"] = summary
    if eval_score and isinstance(record.get("config"), dict):
        config = dict(record["config"])
        config["agent"] = {k: v for k, v in (config.get("agent") or {}).items() if k != "num_envs"}
        out["config"] = config
    return out


def report_runs(stored: Mapping[tuple, StoredRun], assigned: Mapping[tuple, Declared],
                score: str = "eval") -> tuple[dict, list[tuple[tuple, str]]]:
    """The assigned runs filed under their methods and scored by ``score`` (``eval`` or ``train``):
    ``(new run key -> StoredRun, [(run key, why it was left out), ...])``."""
    if score not in SCORES:
        raise ValueError(f"score={score!r}: one of {', '.join(SCORES)}")
    out: dict[tuple, StoredRun] = {}
    left: list[tuple[tuple, str]] = []
    for key, made in sorted(assigned.items()):
        run = stored[key]
        rows, problem = scored_rows(run, score)
        if problem:
            left.append((key, problem))
            continue
        final = None
        if rows and score == "eval":
            values = pd.read_csv(io.StringIO(rows))["episode_return"].to_numpy(float)
            finite = values[np.isfinite(values)]
            final = float(finite[-1]) if len(finite) else None
        record = _filed(run.record, made, score == "eval", final)
        moved = replace(run, record=record, rows=rows)
        new_key = tuple(record[k] for k in ID_COLUMNS)
        assert new_key not in out, f"two runs filed as {new_key}"
        out[new_key] = moved
    return out, left


__all__ = ["EVAL_RETURN", "SCORES", "eval_episodes", "own_overrides", "report_runs", "scored_rows"]

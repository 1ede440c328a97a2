"""A grid's cells against what its sweep presets ask for: which cells are still missing, which
commit, machine and jax version made each one, and the verdicts of another report beside this
one's (the 32-seed claims beside the 8-seed ones). Read from the compact data
(campaign.repro.data) and the sweep presets (campaign.presets); nothing here imports JAX."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Sequence

from omegaconf import OmegaConf

from analysis.markdown import render_markdown
from analysis.names import env_label, method_label, sort_envs, sort_methods
from analysis.runs import ENV_OPTION_PREFIX, task_name
from campaign.presets import preset_file
from rfig_exp.config.folders import CONF_DIR


def expected_cells(presets: list[str]) -> dict[tuple[str, str], int]:
    """(task, bonus) -> seeds that the sweep presets ask for (a task is the env with the env
    options that make another task: a DeepSea size, a Brax backend; analysis.runs)."""
    out: dict[tuple[str, str], int] = {}
    for preset in presets:
        path = preset_file(preset)
        if not path.is_file():
            continue
        cfg = OmegaConf.load(path)
        params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
        seeds = int(cfg.get("num_seeds", 1))
        fixed = {f"{ENV_OPTION_PREFIX}{k}": v for k, v in (cfg.get("env") or {}).items()}
        sizes = [s.strip() for s in str(params.get("env.size", "")).split(",") if s.strip()]
        for env in (e.strip() for e in str(params.get("env", "")).split(",")):
            for size in sizes or [None]:
                options = dict(fixed)
                if size is not None and int(size) != _default(env, "size"):
                    options["env.size"] = int(size)
                for bonus in (b.strip() for b in str(params.get("bonus", "")).split(",")):
                    out[(task_name(env, options), bonus)] = seeds
    return out


def _default(env: str, key: str):
    path = CONF_DIR / "env" / f"{env}.yaml"
    return OmegaConf.load(path).get(key) if path.is_file() else None


def _task_of(record: dict) -> str:
    options = {k: v for k, v in (record.get("variant_overrides") or {}).items() if k.startswith(ENV_OPTION_PREFIX)}
    return task_name(record["env"], options)


def held_cells(stored: dict, experiment: str) -> dict[tuple[str, str], list]:
    """(task, bonus) -> the complete stored runs of ``experiment`` (campaign.repro.data.StoredRun)."""
    out: dict[tuple[str, str], list] = defaultdict(list)
    for run in stored.values():
        rec = run.record
        if rec["experiment"] == experiment and run.complete:
            out[(_task_of(rec), rec["bonus"])].append(run)
    return out


def missing_cells(stored: dict, experiment: str, presets: list[str]) -> list[tuple[str, str, int, int]]:
    """The cells the presets ask for that the data does not hold in full: (task, bonus, seeds held,
    seeds asked for) each."""
    have = held_cells(stored, experiment)
    return [(task, bonus, len(have.get((task, bonus), [])), n) for (task, bonus), n in expected_cells(presets).items()
            if len(have.get((task, bonus), [])) < n]


def missing_md(short: list[tuple[str, str, int, int]], presets: list[str]) -> str:
    """The cells the presets ask for that the data does not hold in full (``short``, from
    :func:`missing_cells`), one line each."""
    want = expected_cells(presets)
    if not short:
        return f"None: every cell of `sweep={'`, `sweep='.join(presets)}` is here with all its seeds."
    by_task: dict[str, list[str]] = defaultdict(list)
    for task, bonus, got, n in short:
        by_task[task].append(f"{method_label(bonus)} ({got}/{n} seeds)" if got else method_label(bonus))
    lines = [f"{len(short)} of {len(want)} cells of `sweep={'`, `sweep='.join(presets)}` are not here in full "
             "(a run goes into the data only once it is complete):", ""]
    lines += [f"- {env_label(t)}: {', '.join(by_task[t])}" for t in sort_envs(by_task)]
    return "\n".join(lines)


def origins_md(stored: dict, experiment: str) -> str:
    """Which commit, machine and jax version made each cell (one row per distinct origin of a task)."""
    groups: dict[tuple, dict] = {}
    for (task, bonus), runs in held_cells(stored, experiment).items():
        for run in runs:
            o = run.record.get("origin") or {}
            key = (task, o.get("commit") or "unknown", o.get("machine") or "unknown", o.get("jax") or "not recorded")
            groups.setdefault(key, defaultdict(int))[bonus] += 1
    rows = []
    for (task, commit, machine, jax) in sorted(groups, key=lambda k: (sort_envs([k[0]]), k)):
        per = groups[(task, commit, machine, jax)]
        rows.append([env_label(task), ", ".join(f"{method_label(b)} {n}" for b, n in
                                                 ((b, per[b]) for b in sort_methods(per))),
                     commit, machine, jax])
    if not rows:
        return "No complete cells yet."
    return render_markdown(["Env", "runs per bonus", "commit", "machine", "jax"], rows, align="lllll")


def compare_claims(claims: list, others: Sequence[tuple[Path, str]]) -> list[list[str]] | None:
    """Rows of claim, this value and verdict, the interval that decided it, and each other report's
    verdict for the same claim, one column per report in ``others`` ((claims.json, label), those
    that exist); None when none exists."""
    read = [{c["claim"]: c for c in json.loads(Path(path).read_text())} for path, _ in others if Path(path).is_file()]
    if not read:
        return None
    rows = []
    for c in claims:
        row = [c.claim, c.value, f"**{c.verdict}**", getattr(c, "deciding", "") or "—"]
        for other in read:
            o = other.get(c.claim)
            row.append(f"{o['verdict']} ({o['value']})" if o else "—")
        rows.append(row)
    return rows


FORECAST = r"(estimate [^;]*); an effect of this size is resolved at about ([\d,]+) seeds"


def forecasts_md(claims: list, earlier_json: Path, earlier_label: str) -> str:
    """The seeds an earlier report forecast for its undecided claims (rule 4, as it then stood: an
    effect of the measured size resolved at about k seeds) set against what this report shows for
    the same claims. Empty when the earlier report forecast nothing."""
    if not Path(earlier_json).is_file():
        return ""
    earlier = {c["claim"]: c for c in json.loads(Path(earlier_json).read_text())}
    rows = []
    for c in claims:
        o = earlier.get(c.claim)
        found = re.search(FORECAST, o["verdict"]) if o else None
        if found:
            rows.append([c.claim, f"{found.group(1)}, about {found.group(2)} seeds", c.verdict])
    if not rows:
        return ""
    return (render_markdown(["The paper says", f"Forecast at {earlier_label}", "Verdict here"], rows, align="lll")
            + "\n\n*A forecast n (h / e)^2 is the seeds at which an effect of the size then measured has about 50% "
              "power, not the seeds at which it is resolved; the estimates themselves moved as seeds arrived. Rule 4 "
              "now gives the seeds for 80% power.*\n")

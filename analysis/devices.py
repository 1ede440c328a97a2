"""Which device made which runs: throughput per device only, and the device confound per cell.

A GPU's env steps/s and a CPU core's are not one quantity (the 32-seed report's rule), so a
method's speed, and its speed against PPO's, is taken on one device at a time. And where one
method's runs of a panel came from a GPU while the others' came from a CPU (Acrobot's RFIG seeds
8-31; Asterix alike), a difference between methods could be one between devices: each cell says
which devices made its runs, and where a cell has runs of two devices their final scores are
tested against each other (Mann-Whitney U, two-sided).

A run's device is what its summary records (``machine.device_kind``: ``cpu`` or the accelerator);
for runs older than that field, what the data folder's record of its origin says
(:func:`devices_from_data`), else "not recorded". Nothing here imports JAX."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import scipy.stats

from .aggregate import iqm
from .collect import Collection, final_scores
from .markdown import render_markdown
from .names import env_label
from .runs import Run

CPU, NOT_RECORDED = "CPU", "not recorded"
MIN_RUNS_TO_TEST = 3  # per device group: fewer runs cannot show a difference


def device_from_machine(machine: dict | None) -> str | None:
    """``CPU`` or the accelerator's kind, from a summary's ``machine`` (None when it says nothing)."""
    m = machine or {}
    if m.get("backend") not in (None, "cpu") and m.get("device_kind"):
        return str(m["device_kind"])
    if m.get("backend") == "cpu" or m.get("device_kind") == "cpu":
        return CPU
    return None


def device_from_origin(text: str | None) -> str | None:
    """The device in an origin's machine text (campaign.repro.data.describe_machine, or the older
    campaign notes): ``... no GPU ...`` is the CPU, ``1 x NVIDIA H200 (gpu), ...`` the accelerator."""
    if not text:
        return None
    found = re.match(r"\s*\d+ x (.+?) \(", text)
    if found:
        return found.group(1)
    return CPU if "no GPU" in text or "jax on CPU" in text else None


def run_key(run: Run) -> tuple:
    """A run's key as a data folder files it: (experiment, env folder, bonus, variant folder, seed)."""
    return (run.experiment, run.env_folder or run.env, run.bonus, run.variant_folder or run.variant, run.seed)


def devices_from_data(stored: dict) -> dict[tuple, str]:
    """run key -> device of every run of a data folder (campaign.repro.data.read_data) that records
    one, in its summary or, for runs made before summaries did, in its origin."""
    out = {}
    for key, run in stored.items():
        summary = run.record.get("summary") or {}
        device = device_from_machine(summary.get("machine")) or device_from_origin(
            (run.record.get("origin") or {}).get("machine"))
        if device:
            out[key] = device
    return out


def run_device(run: Run, known: dict[tuple, str] | None = None) -> str:
    """The device that made ``run``: its summary's, else ``known``'s (devices_from_data), else not recorded."""
    return (device_from_machine(run.summary.machine if run.summary else None)
            or (known or {}).get(run_key(run)) or NOT_RECORDED)


def _median(values: list[float]) -> float:
    values = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.median(values)) if values else float("nan")


def speed_by_device(coll: Collection, known: dict[tuple, str] | None = None) -> dict[str, dict[str, dict]]:
    """device -> method -> {"sps": median env steps/s, "rel": median over envs of (sps / PPO's sps on
    the same env and device), "compile": median s, "runs": complete runs, "envs": envs they ran}:
    nothing pooled across devices. PPO = the primary method of the report's first bonus of role
    reference (analysis.names: plain PPO, bonus none)."""
    ref = next((b for b, _ in coll.role_methods("reference")), "")  # "": none here, no method has that key
    per: dict[tuple[str, str, str], list] = {}
    for r in coll.runs:
        if r.complete and r.summary and r.env in coll.env_data and r.method in coll.methods:
            per.setdefault((run_device(r, known), r.env, r.method), []).append(r.summary)
    out: dict[str, dict[str, dict]] = {}
    for dev in sorted({k[0] for k in per}, key=lambda d: (d != CPU, d == NOT_RECORDED, d)):
        for m in coll.methods:
            sums = [s for (d, _e, mm), ss in per.items() if d == dev and mm == m for s in ss]
            if not sums:
                continue
            rel = []
            for e in coll.envs:
                mine = _median([s.env_steps_per_second for s in per.get((dev, e, m), [])])
                ppo = _median([s.env_steps_per_second for s in per.get((dev, e, ref), [])])
                if math.isfinite(mine) and math.isfinite(ppo) and ppo > 0:
                    rel.append(mine / ppo)
            envs = sum(1 for (d, _e, mm) in per if d == dev and mm == m)
            out.setdefault(dev, {})[m] = {"sps": _median([s.env_steps_per_second for s in sums]),
                                          "compile": _median([s.compile_time_s for s in sums]),
                                          "rel": float(np.median(rel)) if rel else float("nan"), "runs": len(sums),
                                          "envs": envs}
    return out


# --------------------------------------------------------------------------- the device confound


def cell_devices(coll: Collection, known: dict[tuple, str] | None = None,
                 last_k: int = 1) -> dict[tuple[str, str], dict[str, list[float]]]:
    """(env, method) -> device -> the final scores of its scored runs made there."""
    scores = final_scores(coll, last_k)
    out: dict[tuple[str, str], dict[str, list[float]]] = {}
    for env in coll.envs:
        for m, (seeds, values) in scores[env].items():
            by_seed = {r.seed: r for r in coll.runs if r.env == env and r.method == m}
            for s, v in zip(seeds, values, strict=True):
                dev = run_device(by_seed[int(s)], known) if int(s) in by_seed else NOT_RECORDED
                out.setdefault((env, m), {}).setdefault(dev, []).append(float(v))
    return out


def device_test(groups: dict[str, list[float]]) -> tuple[str, str, float, float] | None:
    """(device a, device b, U, p) of the two largest device groups of a cell, Mann-Whitney U
    two-sided; None with fewer than two groups of :data:`MIN_RUNS_TO_TEST` runs."""
    big = sorted((d for d, v in groups.items() if len(v) >= MIN_RUNS_TO_TEST), key=lambda d: (-len(groups[d]), d))
    if len(big) < 2:
        return None
    a, b = big[:2]
    if len(set(groups[a] + groups[b])) == 1:
        return a, b, len(groups[a]) * len(groups[b]) / 2, 1.0  # every score equal: nothing to test
    res = scipy.stats.mannwhitneyu(groups[a], groups[b], alternative="two-sided")
    return a, b, float(res.statistic), float(res.pvalue)


def _mix(groups: dict[str, list[float]]) -> str:
    return " · ".join(f"{d} {len(v)}" for d, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def confounded_panels(cells: dict[tuple[str, str], dict[str, list[float]]], coll: Collection) -> list[str]:
    """One line per env whose methods' runs came from different mixes of devices: there a
    difference between methods can be one between devices."""
    lines = []
    for env in coll.envs:
        mixes = {m: Counter({d: len(v) for d, v in cells[(env, m)].items()}) for m in coll.methods if (env, m) in cells}
        if len({tuple(sorted(c.items())) for c in mixes.values()}) > 1:
            lines.append(f"{env_label(env)}: " + "; ".join(f"{coll.label(m)} {_mix(cells[(env, m)])}" for m in mixes))
    return lines


def device_confound_md(coll: Collection, known: dict[tuple, str] | None = None, last_k: int = 1) -> str:
    """The device confound, stated: which devices made each cell's runs, the panels where methods'
    device mixes differ, and per cell with runs of two devices the Mann-Whitney test of their final
    scores (with the Bonferroni threshold over the cells tested). ``known``: devices_from_data of
    the data folder, for runs whose summary records none."""
    cells = cell_devices(coll, known, last_k)
    tested, rows = [], []
    for (env, m), groups in cells.items():
        if len(groups) < 2:
            continue
        test = device_test(groups)
        if test:
            tested.append(test[3])
        per = ", ".join(f"{d} {iqm(np.array(v)):.4g}" for d, v in groups.items())
        rows.append([env_label(env), coll.label(m), _mix(groups), per,
                     f"{test[0]} vs {test[1]}: U = {test[2]:.0f}, p = {test[3]:.3g}" if test else "—"])
    envs = [e for e in coll.envs if any(k[0] == e for k in cells)]
    one = [env_label(e) for e in envs if all(list(g) == [CPU] for (ee, _m), g in cells.items() if ee == e)]
    confounded = confounded_panels(cells, coll)
    lines = ["**Which device made which runs.** A difference between methods whose runs came from different "
             "devices can be one between devices. "
             + (f"Every run of {', '.join(one)} came from a CPU. " if one else "")
             + ("Panels where the methods' runs came from different mixes of devices (the device is confounded "
                "with the method): " + "; ".join(confounded) + "." if confounded else
                "On every panel, each method's runs came from the same mix of devices.")]
    if rows:
        alpha = 0.05 / max(len(tested), 1)
        low = sum(p < alpha for p in tested)
        lines += ["", render_markdown(["Env", "Method", "runs per device", "IQM final score per device",
                                       "Mann-Whitney (two-sided)"], rows, align="lllll"), "",
                  f"*{len(tested)} cells have two devices with at least {MIN_RUNS_TO_TEST} runs each; "
                  f"{low} of them differ at the Bonferroni threshold p < {alpha:.2g} (0.05 / {len(tested)}). The "
                  "device groups are also different seeds, and often different commits: a difference need not be "
                  "the device's; no difference says the device does not show at this n.*"]
    return "\n".join(lines)

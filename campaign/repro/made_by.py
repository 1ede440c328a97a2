"""Who made which runs of a campaign, and what each stage cost: the report's *Made by* table.

A run belongs to the stage that makes it (:func:`campaign.repro.stages.stage_of`), or, when a GPU
made it, to one row per experiment and device. Each stage's measured cost (the wall time of its
processes, each counted once) stands beside its estimate from the campaign's ``meta.json``. A job
cut short and resumed from its checkpoint records only its last process's wall time; its checkpoint
carries the training time of the earlier attempts, so such a process counts as that training time
plus its own compile time (:func:`process_seconds`), a lower bound: the earlier attempts' compile
and start-up are not recorded anywhere.
"""

from __future__ import annotations

from .stages import block_stage, stage_coverage, stage_sizes

__all__ = ["made_in", "process_seconds", "stage_costs", "stage_coverage", "stage_rows"]


def made_in(rec: dict, summary: dict) -> str | None:
    """The stage a run belongs to: its CPU block stage (``stage_of``), or, for a run made on a
    GPU, one row per experiment and device (its jobs span every block of 8 seeds)."""
    machine = summary.get("machine") or {}
    if machine.get("backend") == "gpu":
        return f"{rec['experiment']} on a GPU ({machine.get('device_kind') or 'unknown device'})"
    return block_stage(rec)


def process_seconds(summary: dict) -> float:
    """What a run's process cost, in seconds: its wall time, or, for a job resumed from a checkpoint
    (``resumed_from_windows``), the training time its checkpoints carried over every attempt plus
    this process's compile time where that is more (its wall time covers only the last attempt)."""
    wall = float(summary.get("wall_time_s") or 0.0)
    if not summary.get("resumed_from_windows"):
        return wall
    return max(wall, float(summary.get("train_time_s") or 0.0) + float(summary.get("compile_time_s") or 0.0))


def stage_costs(stored: dict) -> dict[tuple[str, str], dict]:
    """(stage, commit) -> what the data says of the runs that stage made at that commit: runs,
    summed cost of their processes (s, :func:`process_seconds`; the seeds of a process share one),
    how many of those processes resumed a cut job, the machines, and the latest finish.
    ``stored``: the data folder's runs (campaign.repro.data.read_data)."""
    out: dict[tuple[str, str], dict] = {}
    processes: dict[tuple, tuple[float, bool]] = {}
    for key, run in stored.items():
        rec, summary = run.record, run.record.get("summary") or {}
        stage = made_in(rec, summary)
        if stage is None or not run.complete:
            continue
        origin = rec.get("origin") or {}
        commit = origin.get("commit") or "unknown"
        row = out.setdefault((stage, commit), {"runs": 0, "wall_s": 0.0, "resumed": 0, "machines": set(),
                                               "finished": None})
        row["runs"] += 1
        if origin.get("machine"):
            row["machines"].add(origin["machine"])
        if summary.get("finished_at") and (row["finished"] is None or summary["finished_at"] > row["finished"]):
            row["finished"] = summary["finished_at"]
        if summary.get("wall_time_s"):
            processes[(stage, commit, *key[:4], summary["wall_time_s"])] = (
                process_seconds(summary), bool(summary.get("resumed_from_windows")))
    for (stage, commit, *_), (cost, resumed) in processes.items():
        out[(stage, commit)]["wall_s"] += cost
        out[(stage, commit)]["resumed"] += resumed
    return out


def _minutes(x) -> str:
    return f"{x:.0f}" if x else "—"


def _ratio(a, b) -> str:
    return f"{a / b:.2f}" if a and b else "—"


def stage_rows(meta: dict, costs: dict[tuple[str, str], dict], coverage: dict[str, int]) -> list[list[str]]:
    """One row per stage of each campaign (a stage key ``a+b`` is a joint estimate), then the
    stages the data holds that no campaign names (e.g. an export merged from another machine).

    ``coverage``: stage -> its cells' complete runs in the data from any machine. A stage whose
    size is fixed (:func:`stage_sizes`) and that did not make all of its runs itself gets no
    measured / estimated ratio: its estimate is of the whole stage, its measurement of a part."""
    rows, named, sizes = [], set(), stage_sizes()
    for camp in meta.get("campaigns", []):
        # a campaign restarted at a later commit (one that changed nothing its stages run) lists them all
        commits = camp.get("commits") or [camp.get("commit") or "unknown"]
        for key, est in (camp.get("stages") or {}).items():
            parts = [(stage, commit) for stage in key.split("+") for commit in commits]
            named.update(parts)
            found = [costs[p] for p in parts if p in costs]
            runs = sum(c["runs"] for c in found)
            wall = sum(c["wall_s"] for c in found) / 60
            # A stage that made none of its runs names no machine: the campaign's own is where it
            # started, not where this stage will run.
            fallback = (camp.get("machine") or "—") if runs else "—"
            machines = sorted({m for c in found for m in c["machines"]}) or [fallback]
            finished = max([c["finished"] for c in found if c["finished"]] or [camp.get("finished") or "—"])
            stages = list(dict.fromkeys(s for s, _ in parts))
            size = sum(sizes[s] for s in stages) if all(s in sizes for s in stages) else None
            whole = size is None or runs == size
            before, after = est.get("before"), est.get("after")
            made_at = [c for c in commits if any((s, c) in costs for s in stages)] or commits[-1:]
            resumed = " ‡" if any(c["resumed"] for c in found) else ""
            rows.append([key.replace("+", " + "), str(runs), _in_data(stages, coverage, size), ", ".join(made_at),
                         "; ".join(machines), finished if runs and whole else "—", _minutes(before),
                         _minutes(wall) + resumed,
                         _ratio(wall, before) if whole else "—", _minutes(after),
                         _ratio(wall, after) if whole else "—"])
    for (stage, commit), c in sorted(costs.items()):
        if (stage, commit) not in named:
            rows.append([stage, str(c["runs"]), _in_data([stage], coverage, sizes.get(stage)), commit,
                         "; ".join(sorted(c["machines"])) or "—", c["finished"] or "—",
                         "—", _minutes(c["wall_s"] / 60) + (" ‡" if c["resumed"] else ""), "—", "—", "—"])
    return rows


def _in_data(stages: list[str], coverage: dict[str, int], size: int | None) -> str:
    """How many of the stages' runs the data holds, from any machine, of how many: ``40/40``."""
    if size is None:
        return "—"
    return f"{sum(coverage.get(s, 0) for s in stages)}/{size}"

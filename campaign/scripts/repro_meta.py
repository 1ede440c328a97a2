"""Record a reproduction campaign in ``docs/results/repro/data/meta.json``: how its data was made.

    python campaign/scripts/repro_meta.py --clone RUN_CLONE --log LANES_LOG --results RESULTS \
        --label "what this campaign ran" [--note "a line for the report" ...]

A campaign is one `campaign/scripts/repro.sh` run from a clone at a fixed commit. From that clone, its lane
log and its results tree this records: the commit, this machine, the first and last timestamps of
the log, the lane that ran each stage and whether it completed, and per stage the estimate of the
jobs that completed, made from the throughput table *at the campaign's commit* (what `make
estimate` printed before the runs) and from the table now (after `python -m campaign.estimate
--record` added what the runs measured). The campaign replaces an earlier record of the same
commit; the report (campaign.repro) reads every campaign, and the measured times come from
the runs' own summaries.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from campaign import estimate_sweep, estimate_throughput  # noqa: E402
from campaign.repro.stages import split_command, stages  # noqa: E402
from rfig_exp.config import folders, variants  # noqa: E402
from rfig_exp.results import contract  # noqa: E402
from rfig_exp.run import provenance  # noqa: E402
from rfig_exp.spec import defaults  # noqa: E402

STAGE_LINE = re.compile(r"^(?:\[lane (\w)\] )?\[repro\] (\S+Z) stage (\S+) (started|complete|NOT complete)")
STAMP = re.compile(r"\[repro\] (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")
COMMON = "results_dir=RESULTS wandb.mode=disabled stall_timeout_s=300"


def job_state(cfg: dict, results: Path, commit: str) -> str:
    """``made`` when every seed of this composed job is complete and was trained at ``commit``,
    ``earlier`` when complete but made before (restored from the committed data), else ``missing``."""
    choices = {g: cfg[g]["name"] for g in folders.GROUPS}
    name = variants.variant_name(defaults.variant_overrides(cfg, choices))
    states = set()
    for seed in range(int(cfg["seed"]), int(cfg["seed"]) + int(cfg["num_seeds"])):
        path = contract.run_dir(results, cfg["experiment"], choices["env"], choices["bonus"], name, seed)
        if not contract.is_complete(path):
            return "missing"
        summary, _ = contract.read_summary(path)
        made = str(((summary.versions if summary else None) or {}).get("git_commit") or "")
        states.add("made" if made.startswith(commit) else "earlier")
    return "made" if states == {"made"} else "earlier"


def read_log(log: Path) -> tuple[dict[str, dict], str | None, str | None]:
    """stage -> {lane, started, ended, complete} from the lines campaign/scripts/repro.sh writes, and the
    log's first and last timestamps."""
    out: dict[str, dict] = {}
    text = log.read_text(errors="replace")
    for line in text.splitlines():
        m = STAGE_LINE.match(line)
        if not m:
            continue
        lane, stamp, stage, what = m.groups()
        row = out.setdefault(stage, {"lane": lane, "started": stamp, "ended": None, "complete": False})
        if what != "started":
            row["ended"], row["complete"] = stamp, what == "complete"
    stamps = STAMP.findall(text)
    return out, (min(stamps) if stamps else None), (max(stamps) if stamps else None)


def stage_estimates(names: list[str], table: list[dict], results: Path,
                    commit: str) -> tuple[dict[str, float], list[str]]:
    """Minutes of each stage on one slot over its jobs that this campaign completed under
    ``results``, from ``table`` alone; and the jobs that nobody completed."""
    known = {s.name: s for s in stages()}
    minutes, missing = {}, []
    compiled: set = set()  # one compilation cache for the whole campaign, as it ran
    for name in names:
        total = 0.0
        for command in known[name].commands:
            preset, overrides = split_command(command)
            jobs = [(j, cfg, job_state(cfg, results, commit))
                    for j, cfg in estimate_sweep.sweep_jobs(estimate_sweep.launch_plan(preset, overrides, say=None))]
            missing += [" ".join(j) for j, _, state in jobs if state == "missing"]
            done = [(j, cfg) for j, cfg, state in jobs if state == "made"]
            costs = estimate_sweep.cost_jobs(done, [], "", table, "cpu", compiled)
            total += sum(c.hours for c in costs if c.rate is not None) * 60
        minutes[name] = round(total, 1)
    return minutes, missing


def machine_line() -> str:
    m = provenance.machine()
    return f"{m['cores']} CPU cores ({m['cpu']}), {m['memory_gib']:.0f} GiB memory, no GPU; jax on CPU"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clone", type=Path, required=True, help="the clone the runs used (its commit and table)")
    p.add_argument("--log", type=Path, required=True, help="campaign/scripts/repro.sh's output (both lanes)")
    p.add_argument("--results", type=Path, required=True, help="the results the runs wrote")
    p.add_argument("--label", required=True, help="what this campaign ran, in a few words")
    p.add_argument("--out", type=Path, default=ROOT / "docs/results/repro/data/meta.json")
    p.add_argument("--note", action="append", default=[], help="a line for the report (repeatable)")
    args = p.parse_args()
    commit = subprocess.run(["git", "-C", str(args.clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    ran, started, finished = read_log(args.log)
    names = [s.name for s in stages() if s.name in ran]
    table_then = estimate_throughput.read_throughput_table(args.clone / "benchmarks/throughput.csv")
    before, missing = stage_estimates(names, table_then, args.results, commit)
    after, _ = stage_estimates(names, estimate_throughput.read_throughput_table(), args.results, commit)
    wall = None
    if started and finished:
        span = datetime.fromisoformat(finished.replace("Z", "+00:00")) - datetime.fromisoformat(
            started.replace("Z", "+00:00"))
        wall = f"{span.total_seconds() / 3600:.2f} h for both lanes together (2 cores)"
    lanes: dict[str, list[str]] = {}
    for name in names:
        lanes.setdefault(ran[name]["lane"] or "-", []).append(name)
    campaign = {
        "label": args.label, "commit": commit, "machine": machine_line(), "started": started, "finished": finished,
        "wall_time": wall,
        "commands": [f"lane {lane}: " + " ; ".join(f"{s} ({'complete' if ran[s]['complete'] else 'NOT complete'})"
                                                   for s in stage_names)
                     for lane, stage_names in sorted(lanes.items())]
        + [f"stage {s.name}: " + " ; ".join(f"python launch.py -m {c} {COMMON}" for c in s.commands)
           for s in stages() if s.name in ran],
        "stages": {n: {"before": before[n], "after": after[n]} for n in names if before[n] or after[n]},
        "not_run": missing, "notes": args.note,
        "estimate_note": ("Each estimate is the sum of the costs of the stage's jobs that completed, on one slot; "
                          "each lane ran on one core while the other lane ran on the other, and other work (tests, "
                          "development) shared the machine."),
    }
    meta = json.loads(args.out.read_text()) if args.out.is_file() else {}
    meta["campaigns"] = [c for c in meta.get("campaigns", []) if c.get("commit") != commit] + [campaign]
    args.out.write_text(json.dumps(meta, indent=1) + "\n")
    print(json.dumps(campaign, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

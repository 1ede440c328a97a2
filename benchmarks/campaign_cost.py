"""Where a campaign job's time went, from the summaries its seeds wrote (no JAX, nothing rerun).

    python benchmarks/campaign_cost.py --results RESULTS --experiment paper32
    python benchmarks/campaign_cost.py --data docs/results/repro/data --experiment repro

One line per job (the seeds of one process share its summary's times): its wall time split into
compile (trace, lower, compile or load from the persistent cache, initialise), training windows,
the time training waited for checkpoints, and the rest (making the env, writing results, wandb);
its env steps/s over the vmapped seeds and its cost per seed. Then the totals, and the compile
time of the first job of a shape against the later ones of the same shape (the cache's saving).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]


def summaries_from_tree(results: Path, experiment: str) -> list[dict]:
    from rfig_exp.results import contract

    out = []
    for run in contract.iter_runs(results, experiment):
        path = run.path / contract.SUMMARY
        if path.is_file():
            s = json.loads(path.read_text())
            if s.get("status") == "complete":
                out.append(s)
    return out


def summaries_from_data(data: Path, experiment: str) -> list[dict]:
    from campaign.repro.data import read_data

    return [r.record["summary"] for k, r in read_data(data).items() if k[0] == experiment and r.complete]


def jobs(summaries: list[dict]) -> list[dict]:
    """One record per process: the seeds that share (env, bonus, variant, first seed's block, wall time)."""
    grouped: dict[tuple, list[dict]] = defaultdict(list)
    for s in summaries:
        commit = (s.get("versions") or {}).get("git_commit") or ""
        grouped[(s["env"], s["bonus"], s.get("variant", "base"), s.get("wall_time_s"), s.get("compile_time_s"),
                 commit)].append(s)
    out = []
    for (env, bonus, variant, wall, compile_s, commit), members in grouped.items():
        s0 = members[0]
        train = float(s0.get("train_time_s") or 0.0)
        wait = float(s0.get("checkpoint_wait_s") or 0.0)
        seeds = sorted(m["seed"] for m in members)
        out.append({"env": env, "bonus": bonus, "variant": variant, "seeds": seeds, "commit": commit[:7],
                    "wall": float(wall or 0.0),
                    "compile": float(compile_s or 0.0), "train": train, "wait": wait,
                    "resumed": bool(s0.get("resumed_from_windows")), "sps": float(s0.get("env_steps_per_second") or 0),
                    "finished": s0.get("finished_at") or ""})
    return sorted(out, key=lambda j: (j["finished"], j["env"], j["bonus"]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--results", type=Path, help="a live results tree")
    src.add_argument("--data", type=Path, help="a committed data folder")
    p.add_argument("--experiment", default="paper32")
    args = p.parse_args()
    summaries = (summaries_from_tree(args.results, args.experiment) if args.results
                 else summaries_from_data(args.data, args.experiment))
    rows = jobs(summaries)
    if not rows:
        print("no complete runs")
        return 1
    print(f"{'env':<20} {'bonus':<9} {'seeds':<6} {'wall s':>7} {'compile':>8} {'train':>7} {'ckpt wait':>9} "
          f"{'other':>6} {'steps/s':>8} {'min/seed':>8}")
    for j in rows:
        other = j["wall"] - j["compile"] - j["train"] if not j["resumed"] else float("nan")
        print(f"{j['env']:<20} {j['bonus']:<9} {j['seeds'][0]:>2}-{j['seeds'][-1]:<3} {j['wall']:>7.0f} "
              f"{j['compile']:>8.1f} {j['train']:>7.0f} {j['wait']:>9.2f} {other:>6.1f} {j['sps']:>8,.0f} "
              f"{j['wall'] / 60 / len(j['seeds']):>8.2f}"
              + ("  (resumed: train spans attempts)" if j["resumed"] else ""))
    whole = [j for j in rows if not j["resumed"]]
    wall = sum(j["wall"] for j in whole)
    if wall:
        parts = {k: sum(j[k] for j in whole) for k in ("compile", "train", "wait")}
        other = wall - parts["compile"] - parts["train"]
        print(f"\n{len(whole)} whole jobs, {wall / 3600:.2f} core-hours: compile {parts['compile'] / wall:.1%}, "
              f"training {parts['train'] / wall:.1%} (of it waiting for checkpoints {parts['wait'] / wall:.2%}), "
              f"other {other / wall:.1%}; {wall / 60 / sum(len(j['seeds']) for j in whole):.2f} min per seed")
    by_shape: dict[tuple, list[dict]] = defaultdict(list)
    for j in rows:
        by_shape[(j["env"], j["bonus"], j["variant"], len(j["seeds"]), j["commit"])].append(j)
    firsts = [v[0]["compile"] for v in by_shape.values() if len(v) > 1]
    laters = [x["compile"] for v in by_shape.values() if len(v) > 1 for x in v[1:]]
    if laters:
        print(f"compile of a shape's first job {sum(firsts) / len(firsts):.1f} s, of its later jobs "
              f"{sum(laters) / len(laters):.1f} s (the persistent compilation cache), over {len(firsts)} shapes "
              "(jobs of one commit, in order of finishing)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

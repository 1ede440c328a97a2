"""The signal check of the #Explo probe runs (experiment ``hashprobe``): one line per panel x variant
with the check's values and verdict, and the occupied buckets at the end of a run (median run). The
numbers of docs/bonuses/hashexplo.md, *Why bin_penalty is 0.1*, come from here:

    python campaign/scripts/hash_probe.py docs/results/hashprobe/data
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from analysis.collect import collect  # noqa: E402
from campaign.claims.signal import cell_signal  # noqa: E402
from campaign.repro.data import restore_tree  # noqa: E402

BUCKETS = "bonus/occupied_buckets"


def probe_lines(results: Path, experiment: str) -> list[str]:
    """The check of every (env, method) cell of ``experiment`` under ``results``."""
    coll = collect(results, experiment)
    lines = []
    for env in coll.envs:
        for method in coll.methods:
            cell = cell_signal(coll, env, method)
            if cell.runs == 0:
                continue
            _, buckets = coll.column(env, method, BUCKETS)
            last = np.median(buckets[:, -1]) if buckets.size else float("nan")
            rank = (f"rank {cell.rank:+.3f} [{cell.rank_interval[0]:+.3f}, {cell.rank_interval[1]:+.3f}]"
                    if cell.rank is not None and cell.rank_interval else "rank -")
            causes = ": " + "; ".join(cell.causes) if cell.causes else ""
            lines.append(f"{env:18s} {method:48s} runs {cell.runs}  at-max {cell.at_max:.3f}  CV {cell.cv:.2f}  "
                         f"{rank}  buckets {last:,.0f}  {cell.verdict}{causes}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("data", type=Path, help="a compact data folder holding the probe's runs")
    p.add_argument("--experiment", default="hashprobe")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        restore_tree(args.data, Path(tmp))
        print("\n".join(probe_lines(Path(tmp), args.experiment)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The execution-time claim's evidence: the controlled benchmark's rows beside a grid's data
(``timing.csv``, written by benchmarks/bench_timing_claim.py, and ``timing.json``, the machine and
command that made them), its table in the report, and the claim's verdict scoped to that hardware."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from analysis.markdown import render_markdown
from analysis.names import BASELINES, env_label
from campaign.claims import verdicts as V

from .sections import NOT_RECORDED

TIMING = "timing.csv"  # benchmarks/bench_timing_claim.py's rows, beside the data


def read_timing(data_dir: Path) -> dict[str, dict[str, np.ndarray]] | None:
    """env -> variant -> a run's wall time in each paired round (s), from the controlled benchmark
    (``timing.csv``: round, env, variant, run_s, ...); None when it was not run."""
    import csv

    path = Path(data_dir) / TIMING
    if not path.is_file():
        return None
    rows = list(csv.DictReader(path.open()))
    out: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        out[r["env"]][r["variant"]].append((int(r["round"]), float(r["run_s"])))
    return {e: {v: np.array([x for _, x in sorted(pairs)]) for v, pairs in by.items()} for e, by in out.items()}


def timing_section(data_dir: Path) -> str:
    """The controlled benchmark's table: per env and variant, the median cost per update and a
    run's wall time, and the machine and command that made it."""
    import csv
    import json

    path = Path(data_dir) / TIMING
    if not path.is_file():
        return ""
    rows = list(csv.DictReader(path.open()))
    meta_path = path.with_suffix(".json")
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    by: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        by[(r["env"], r["variant"])].append(r)
    md = []
    for (env, variant), rs in sorted(by.items()):
        upd = np.median([float(r["update_s"]) for r in rs]) * 1e3
        run = np.median([float(r["run_s"]) for r in rs])
        md.append([env_label(env), variant, f"{upd:.0f}", f"{run / 60:.1f}", str(len(rs))])
    return (f"Measured by `{meta.get('command', 'python benchmarks/bench_timing_claim.py')}` on "
            f"{meta.get('machine', 'this machine')} ({meta.get('date', '')}): each round runs every variant one "
            "after another in a shuffled order, so slow spells of the machine fall on all of them. A run's wall time "
            "is the compile plus the paper's 41 windows of 6 updates at the measured time per window, one seed. "
            "`rfig` is RFIG as the campaign ran it (its Woodbury-updated inverse); `rfig_exact` inverts the full "
            "matrix at every update, as the paper's final experiments did.\n\n"
            + render_markdown(["Env", "variant", "ms per update (median)", "a run (min, median)", "rounds"], md,
                              align="llrrr"))


def scoped_timing(claims: list, data_dir: Path, speed: dict) -> list:
    """The execution-time claim's verdict scoped to the hardware the controlled benchmark ran on
    (``timing.json``), with the campaign's own accelerator jobs beside it: RFIG's time per env step
    over the median NN baseline's on each panel where one device ran both (``speed``: device -> env
    -> bonus -> env steps/s), not evidence, as other work shared those machines."""
    import json

    meta_path = Path(data_dir) / TIMING
    meta = json.loads(meta_path.with_suffix(".json").read_text()) if meta_path.with_suffix(".json").is_file() else {}
    beside = []
    for dev, per_env in sorted(speed.items()):
        if dev in ("cpu", NOT_RECORDED):
            continue
        ratios = [(e, np.median([d[b] for b in BASELINES if b in d]) / d["rfig"]) for e, d in per_env.items()
                  if "rfig" in d and any(b in d for b in BASELINES)]
        if ratios:
            beside.append(f"{dev}: " + ", ".join(f"{env_label(e)} {r:.2f}x" for e, r in ratios))
    for c in claims:
        if c.claim.startswith("no significant execution time") and c.kind != V.NOT_MEASURED:
            c.verdict = f"{c.verdict} on the benchmark's hardware ({meta.get('machine', 'not recorded')})"
            if beside:
                c.detail = (f"{c.detail} Beside it, not evidence (other work shared the machines, jobs differ in "
                            "size): the campaign's own jobs, RFIG's time per env step over the median NN "
                            f"baseline's on the same device: {'; '.join(beside)}.")
    return claims


__all__ = ["TIMING", "read_timing", "scoped_timing", "timing_section"]

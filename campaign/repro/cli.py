"""``python -m campaign.repro``: the command line over the compact data (export, merge, relabel-variant,
restore) and the report (build); the commands and what they do: ``build.py``'s docstring."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.collect import AnalysisError, find_experiments
from campaign.claims.constants import REPS

from .build import EXPECTED_PRESETS, MAIN, MAIN_VARIANTS, build
from .build import __doc__ as BUILD_DOC
from .data import (
    DataConflict,
    export_tree,
    merge_data,
    merge_relabelled,
    refile_data,
    restore_tree,
)
from .readme_summary import readme_markers, update_readme
from .sections import SENS
from .stages import AS_RUN, BACKEND, SIGNAL, preset_envs


def parser() -> argparse.ArgumentParser:
    """The subcommands and their options."""
    p = argparse.ArgumentParser(prog="python -m campaign.repro", description=(BUILD_DOC or "").split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export", help="add the runs of a results tree to the compact data (a run already there "
                                      "is kept once if identical; a different one is refused)")
    e.add_argument("--results", type=Path, required=True)
    e.add_argument("--data", type=Path, default=Path("docs/results/repro/data"))
    e.add_argument("--experiment", default=MAIN, help="the main grid's experiment (default repro)")
    only = e.add_mutually_exclusive_group()
    only.add_argument("--complete-cells", action="store_true",
                      help="only cells (env x bonus x variant) whose every run is complete; the rest are named "
                           "and left")
    only.add_argument("--complete-runs", action="store_true",
                      help="every complete run (whole jobs: a job's seeds finish together), also of a cell whose "
                           "next block of seeds still runs; the incomplete ones are named and left")
    m = sub.add_parser("merge", help="add the runs of another data folder (an export from another machine)")
    m.add_argument("--from", dest="source", type=Path, required=True)
    m.add_argument("--data", type=Path, default=Path("docs/results/repro/data"))
    m.add_argument("--relabel", metavar="FROM:TO", default=None,
                   help="take only FROM's main-grid runs on the envs of TO's sweep presets, filed under experiment "
                        "TO (repro:paper32: the reproduction's seeds 0-7 into the 32-seed grid)")
    r = sub.add_parser("restore", help="put the committed complete runs back into a results tree (missing ones "
                                       "only), so that a sweep there runs only what the data lacks")
    r.add_argument("--results", type=Path, required=True)
    r.add_argument("--data", type=Path, default=Path("docs/results/repro/data"))
    v = sub.add_parser("relabel-variant", help="file every run made before a declared fix of its bonus's defaults "
                                               "(campaign/repro/fixes.py) under the variant of the old values, "
                                               "numbers unchanged; export and merge do this to arriving runs")
    v.add_argument("--data", type=Path, required=True)
    b = sub.add_parser("build", help="write the report from the compact data")
    b.add_argument("--data", type=Path, default=Path("docs/results/repro/data"))
    b.add_argument("--out", type=Path, default=Path("docs/results/repro"))
    b.add_argument("--reps", type=int, default=2000,
                   help="bootstrap resamples of the figures' and aggregates' intervals (default 2000)")
    b.add_argument("--verdict-reps", type=int, default=REPS,
                   help=f"resamples of the verdicts' intervals (default rule 5's {REPS:,}; fewer only for a quick "
                        "look: the index then says the verdicts are not the rule book's)")
    b.add_argument("--experiment", default=MAIN, help="the main grid's experiment (default repro)")
    b.add_argument("--readme", type=Path, default=None,
                   help="also write the figure, table and verdicts between this README's markers")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "export":
            exps = [x for x in (args.experiment, SENS, BACKEND, SIGNAL) if x in find_experiments(args.results)]
            if args.experiment not in exps:
                raise AnalysisError(f"no {args.experiment!r} experiment under {args.results}")
            counts = export_tree(args.results, args.data, exps, complete_cells=args.complete_cells,
                                 complete_runs=args.complete_runs)
            for cell in counts["held_back"]:
                print(f"left for a later export (not every run complete): {cell}")
            print(_stored_line(counts, f"{', '.join(exps)} of {args.results}", args.data))
        elif args.command == "merge" and args.relabel:
            source, _, target = args.relabel.partition(":")
            if target not in EXPECTED_PRESETS:
                raise AnalysisError(f"--relabel {args.relabel}: {target!r} is not a grid; valid: "
                                    + ", ".join(EXPECTED_PRESETS))
            envs = [e for preset in EXPECTED_PRESETS[target] for e in preset_envs(preset)]
            counts = merge_relabelled(args.source, args.data, source, target, envs, MAIN_VARIANTS)
            print(_stored_line(counts, f"{source} runs of {args.source} as {target}", args.data))
        elif args.command == "merge":
            print(_stored_line(merge_data(args.source, args.data), str(args.source), args.data))
        elif args.command == "relabel-variant":
            print(refile_data(args.data))
        elif args.command == "restore":
            written = restore_tree(args.data, args.results)
            print(f"restored {written} committed complete runs from {args.data} into {args.results} (runs already "
                  "there were left alone); a sweep there skips them")
        else:
            if args.experiment == AS_RUN:  # the grid as the authors ran it: its own report (as_run_report)
                from .as_run_report import build_as_run

                index = build_as_run(args.data, args.out, reps=args.reps, verdict_reps=args.verdict_reps)
            else:
                index = build(args.data, args.out, reps=args.reps, experiment=args.experiment,
                              verdict_reps=args.verdict_reps)
            print(f"report: {index}")
            if args.readme is not None:
                if not update_readme(args.readme, (args.out / "summary.md").read_text(), args.experiment):
                    begin, end = readme_markers(args.experiment)
                    raise AnalysisError(f"{args.readme} has no markers for {args.experiment} ({begin} ... {end})")
                print(f"summary written into {args.readme}")
    except AnalysisError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except DataConflict as err:
        for line in err.lines:
            print(f"error: {line}", file=sys.stderr)
        print(f"error: {len(err.lines)} run(s) conflict; nothing was written", file=sys.stderr)
        return 1
    return 0


def _stored_line(counts: dict, source: str, data: Path) -> str:
    return (f"{source} -> {data}: {counts['added']} runs added, {counts['identical']} already there (identical), "
            f"{counts['replaced_incomplete']} incomplete ones replaced, {counts['kept_complete']} incomplete arrivals "
            f"not taken over complete ones; it now holds {counts['runs']} runs ({counts['complete']} complete, "
            f"{counts['rows']} metric rows, {counts['bytes'] / 1e6:.2f} MB)")


if __name__ == "__main__":
    sys.exit(main())

"""CLI: ``python -m analysis --results DIR [--experiment NAME] [--out DIR] ...``

Exit status:

* 0: report written, no error listed in it;
* 1: nothing to analyse (bad path, unknown experiment, filters match nothing);
* 2: bad arguments;
* 3: report written, but a figure/table maker failed (see index.md);
* 4: report written, and it lists errors (missing, incomplete or failed runs,
  requested names without runs, ...): the numbers leave those runs out. Pass
  ``--allow-incomplete`` to accept that and exit 0.

3 takes precedence over 4.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def _name_list(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list of names, got an empty one")
    return items


EXIT_OK, EXIT_NOTHING, EXIT_USAGE, EXIT_MAKER_FAILED, EXIT_REPORT_ERRORS = 0, 1, 2, 3, 4


def _name_text(text: str) -> str:
    _name_list(text)  # the same "not empty" check
    return text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m analysis",
        description="Collect a results tree (<results>/<experiment>/<env>/<bonus>/<variant>/seed_<k>/, or the "
                    "older <bonus>/seed_<k>/ read as variant base) into figures, tables and an index.md report. "
                    "A method is a (bonus, variant) pair.",
        epilog="Exit status: 0 report written without errors; 1 nothing to analyse; 2 bad arguments; 3 a figure or "
               "table maker failed; 4 the report lists errors (missing/incomplete/failed runs) -- pass "
               "--allow-incomplete to exit 0 anyway.")
    p.add_argument("--results", required=True, type=Path, help="results directory (the launcher's results_dir)")
    p.add_argument("--experiment", help="experiment name; optional when the results directory holds exactly one")
    p.add_argument("--out", type=Path, help="report folder (default: reports/<experiment>)")
    p.add_argument("--envs", type=_name_list, help="comma-separated envs to include (default: all)")
    p.add_argument("--bonuses", type=_name_list,
                   help="comma-separated bonus names to include (every variant of each), e.g. none,rfig,rnd")
    # Kept as text: variant names and labels hold commas; collect() splits them against the names present.
    p.add_argument("--variants", type=_name_text,
                   help="comma-separated variant folder names to include, e.g. base,agent.lr=0.001")
    p.add_argument("--methods", type=_name_text,
                   help="comma-separated methods to include: bonus names (all their variants), labels as shown in "
                        "an unfiltered report (e.g. 'RFIG', 'RFIG (lengthscale=2)') or keys (rfig/<variant>)")
    p.add_argument("--reps", type=_positive_int, default=2000, help="bootstrap replications (default 2000)")
    p.add_argument("--last-k", type=_positive_int, default=1,
                   help="final score = mean of the last K evaluation points (default 1)")
    p.add_argument("--normalisation", choices=("minmax", "ppo"), default="minmax",
                   help="per-env normalisation for cross-env aggregates (default minmax)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap random seed (default 0)")
    p.add_argument("--curve-points", type=_positive_int, default=40,
                   help="max eval points in the bootstrapped aggregate curve (default 40)")
    p.add_argument("--include-incomplete", action="store_true",
                   help="show partial curves of runs without summary.json (never in final scores)")
    p.add_argument("--keep-failed", action="store_true",
                   help="keep failed seeds, forward-filling their NaN/missing windows (default: exclude them)")
    p.add_argument("--only", type=_name_list, help="run only these report makers (names as in analysis.report.MAKERS)")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="exit 0 even when the report lists errors (missing, incomplete or failed runs)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .collect import AnalysisError, collect

    t0 = time.time()
    try:
        coll = collect(args.results, args.experiment, envs=args.envs, bonuses=args.bonuses,
                       include_incomplete=args.include_incomplete, keep_failed=args.keep_failed,
                       variants=args.variants, methods=args.methods)
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NOTHING
    n_err = sum(i.severity == "error" for i in coll.issues)
    print(f"collected {len(coll.runs)} run(s) of experiment {coll.experiment!r}: {len(coll.envs)} env(s), "
          f"{len(coll.methods)} method(s); {n_err} problem(s) reported", flush=True)

    from .maker import ReportOptions
    from .report import MAKERS, build_report

    if args.only:
        known = [n for n, _ in MAKERS]
        unknown = [n for n in args.only if n not in known]
        if unknown:
            print(f"error: unknown maker(s) {', '.join(unknown)}; known: {', '.join(known)}", file=sys.stderr)
            return EXIT_USAGE
    out = args.out or Path("reports") / coll.experiment
    opts = ReportOptions(reps=args.reps, last_k=args.last_k, normalisation=args.normalisation, seed=args.seed,
                         curve_points=args.curve_points)
    result = build_report(coll, out, opts, only=args.only)
    for e in result.errors:
        print(f"warning: maker failed: {e}", file=sys.stderr)
    print(f"report written to {result.index.parent.resolve()} (open {result.index.name}) in {time.time() - t0:.1f} s")
    if result.errors:
        return EXIT_MAKER_FAILED
    # Counted after the makers: computing final scores can add errors (no finished episode).
    n_err = sum(i.severity == "error" for i in coll.issues)
    if n_err and not args.allow_incomplete:
        print(f"error: the report lists {n_err} error(s) (missing, incomplete or failed runs; see the Data section "
              f"of {result.index.name}); exit {EXIT_REPORT_ERRORS}. Pass --allow-incomplete to accept them.",
              file=sys.stderr)
        return EXIT_REPORT_ERRORS
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

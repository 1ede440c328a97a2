"""CLI: ``python -m analysis --results DIR [--experiment NAME] [--out DIR] ...``

Without ``--experiment`` it builds the report of every experiment under ``--results`` that holds
runs, one after another, each into its own ``reports/<experiment>/``; with it, that one's.

Exit status:

* 0: report written, no error listed in it;
* 1: nothing to analyse (bad path, no runs, unknown experiment, filters match nothing);
* 2: bad arguments;
* 3: report written, but a figure/table maker failed (see index.md);
* 4: report written, and it lists errors (missing, incomplete or failed runs,
  requested names without runs, ...): the numbers leave those runs out. Pass
  ``--allow-incomplete`` to accept that and exit 0.

3 takes precedence over 4. With several experiments every report is built first; the status is
then the most serious of theirs: 3, then 1 (a report not written), then 4.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .names import NORMALISATION_HELP, NORMALISATIONS


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


@dataclass(frozen=True)
class Spelling:
    """How the caller spells the options in a message: this CLI's flags, or ``make figures``'s
    variables (``{}`` stands for the option's value)."""

    results: str
    experiment: str
    pick: str
    out: str
    allow_incomplete: str


SPELLINGS = {
    "python": Spelling(results="{}", experiment="experiment {!r}", pick="--experiment NAME", out="--out",
                       allow_incomplete="Pass --allow-incomplete"),
    "make": Spelling(results="RESULTS={}", experiment="EXPERIMENT={}", pick="EXPERIMENT=NAME", out="REPORT=",
                     allow_incomplete="Set ALLOW_INCOMPLETE=1"),
}

MAKE_RUNS = "make some with `make run` or `python launch.py` (docs/running.md), then build the report"


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
    p.add_argument("--experiment",
                   help="experiment name (default: every experiment under --results, one after another)")
    p.add_argument("--out", type=Path,
                   help="report folder (default: reports/<experiment>); only with one experiment")
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
    p.add_argument("--normalisation", choices=NORMALISATIONS, default="minmax",
                   help="per-env normalisation for cross-env aggregates (default minmax): "
                        + "; ".join(f"{k}: {NORMALISATION_HELP[k]}" for k in NORMALISATIONS))
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
    # How messages name the options: `make figures` passes `--caller make`, so that they name its
    # variables (EXPERIMENT=..., RESULTS=...), which are what its user typed.
    p.add_argument("--caller", choices=tuple(SPELLINGS), default="python", help=argparse.SUPPRESS)
    return p


class Refusal(Exception):
    """Nothing is built: the message says why, ``code`` is the exit status."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def experiments_to_build(args: argparse.Namespace, spell: Spelling) -> list[str]:
    """The experiments the command line asks for: the one named, or every one under the results
    folder that holds runs. Refusal when there is none, or when one ``--out`` folder would get
    several reports."""
    from .runs import find_experiments

    root: Path = args.results
    where = spell.results.format(root)
    if not root.exists():
        raise Refusal(EXIT_NOTHING, f"results directory {where} does not exist: no runs yet; {MAKE_RUNS}")
    if not root.is_dir():
        raise Refusal(EXIT_NOTHING, f"results path {where} is not a directory")
    found = find_experiments(root)
    layout = f"{root}/{args.experiment or '<experiment>'}/<env>/<bonus>/<variant>/seed_<k>/"
    if args.experiment is not None:
        if args.experiment not in found:
            raise Refusal(EXIT_NOTHING, f"no runs for {spell.experiment.format(args.experiment)} under {where} "
                                        f"(expected {layout}); experiments found: {', '.join(found) or 'none'}")
        return [args.experiment]
    if not found:
        raise Refusal(EXIT_NOTHING, f"no runs under {where} (expected {layout}): {MAKE_RUNS}")
    if args.out is not None and len(found) > 1:
        raise Refusal(EXIT_USAGE, f"{spell.out} names one report folder, and {where} holds {len(found)} experiments "
                                  f"({', '.join(found)}): name one with {spell.pick}, or drop {spell.out} "
                                  "to write each to reports/<experiment>/")
    return found


def check_makers(only: list[str] | None) -> None:
    """Refusal for ``--only`` names that no maker has."""
    from .report import MAKERS

    known = [n for n, _ in MAKERS]
    unknown = [n for n in only or () if n not in known]
    if unknown:
        raise Refusal(EXIT_USAGE, f"unknown maker(s) {', '.join(unknown)}; known: {', '.join(known)}")


def report_folder(args: argparse.Namespace, experiment: str) -> Path:
    """Where an experiment's report goes: ``--out``, or ``reports/<experiment>``: one folder per
    experiment, so that reports of several experiments never overwrite each other."""
    return args.out or Path("reports") / experiment


def build_one(args: argparse.Namespace, experiment: str, spell: Spelling) -> int:
    """Collect one experiment and write its report; the exit status it earns (module docstring)."""
    from .collect import AnalysisError, collect
    from .maker import ReportOptions
    from .report import build_report

    t0 = time.time()
    try:
        coll = collect(args.results, experiment, envs=args.envs, bonuses=args.bonuses,
                       include_incomplete=args.include_incomplete, keep_failed=args.keep_failed,
                       variants=args.variants, methods=args.methods)
    except AnalysisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NOTHING
    n_err = sum(i.severity == "error" for i in coll.issues)
    print(f"collected {len(coll.runs)} run(s) of experiment {coll.experiment!r}: {len(coll.envs)} env(s), "
          f"{len(coll.methods)} method(s); {n_err} problem(s) reported", flush=True)
    opts = ReportOptions(reps=args.reps, last_k=args.last_k, normalisation=args.normalisation, seed=args.seed,
                         curve_points=args.curve_points)
    result = build_report(coll, report_folder(args, experiment), opts, only=args.only)
    for e in result.errors:
        print(f"warning: maker failed: {e}", file=sys.stderr)
    print(f"report written to {result.index.parent.resolve()} (open {result.index.name}) in {time.time() - t0:.1f} s",
          flush=True)
    if result.errors:
        return EXIT_MAKER_FAILED
    # Counted after the makers: computing final scores can add errors (no finished episode).
    n_err = sum(i.severity == "error" for i in coll.issues)
    if n_err and not args.allow_incomplete:
        print(f"error: the report lists {n_err} error(s) (missing, incomplete or failed runs; see the Data section "
              f"of {result.index.name}); exit {EXIT_REPORT_ERRORS}. {spell.allow_incomplete} to accept them.",
              file=sys.stderr, flush=True)
        return EXIT_REPORT_ERRORS
    return EXIT_OK


# The status of several reports: the most serious first (a report not written outranks one that lists errors).
_PRECEDENCE = (EXIT_MAKER_FAILED, EXIT_NOTHING, EXIT_REPORT_ERRORS)
_OUTCOME = {EXIT_OK: "written", EXIT_NOTHING: "not written (nothing to analyse)",
            EXIT_MAKER_FAILED: "written, a maker failed", EXIT_REPORT_ERRORS: "written, lists errors"}


def combined_status(codes: list[int]) -> int:
    """One exit status for several reports' (:data:`_PRECEDENCE`)."""
    return next((c for c in _PRECEDENCE if c in codes), EXIT_OK)


def build_all(args: argparse.Namespace, experiments: list[str], spell: Spelling) -> int:
    """Every report in turn, each announced before it is built, then one line per report; a report
    with problems does not stop the ones after it."""
    n = len(experiments)
    codes = []
    for i, experiment in enumerate(experiments, 1):
        print(f"[{i}/{n}] building the report of {spell.experiment.format(experiment)} "
              f"into {report_folder(args, experiment)}/", flush=True)
        codes.append(build_one(args, experiment, spell))
    print(f"{n} report(s) of {spell.results.format(args.results)}:")
    for experiment, code in zip(experiments, codes):
        print(f"  {experiment}: {_OUTCOME[code]} ({report_folder(args, experiment)}/, exit {code})")
    status = combined_status(codes)
    if status:
        bad = [e for e, c in zip(experiments, codes) if c]
        print(f"error: {len(bad)} of {n} report(s) have problems ({', '.join(bad)}); exit {status}", file=sys.stderr)
    return status


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    spell = SPELLINGS[args.caller]
    try:
        check_makers(args.only)
        experiments = experiments_to_build(args, spell)
    except Refusal as refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return refusal.code
    if len(experiments) == 1:
        return build_one(args, experiments[0], spell)
    return build_all(args, experiments, spell)


if __name__ == "__main__":
    sys.exit(main())

"""Check that two checkouts of the project produce bit-identical metrics for the same configs.

Each case is a tiny run (``launch.py`` with a few overrides) made once from each tree, each
tree's own code first on ``PYTHONPATH``, with separate results folders and no compilation
cache, and one OpenBLAS thread (see ``run_case``). The two ``metrics.csv``
files must be equal as text once the ``wall_time_s`` column is
dropped (every other column, every digit); ``--added-columns`` names columns the new tree adds, which
must be in every new file and in no old one, and are then left out. One line per case: ``IDENTICAL`` or ``DIFFERENT``
with the first differing column (or why the comparison failed); exit status 1 if any differ.

    python benchmarks/identical_metrics.py --old-tree b9a7ad6 --new-tree .     # a commit, or a checkout
    python benchmarks/identical_metrics.py --old-tree ../base --new-tree . --cases mountaincar-rfig
    python benchmarks/identical_metrics.py --old-tree ../base --new-tree . --reuse-old
    python benchmarks/identical_metrics.py --old-tree HEAD --new-tree . --added-columns signal/novelty_rank_corr

``--old-tree`` given a git commit (or any ref) instead of a folder runs a clean checkout of it,
made with ``git worktree add --detach`` in the work dir and removed afterwards.
``--reuse-old`` keeps an old tree's results from an earlier call (same ``--work-dir``), so
repeated checks of a changing tree rerun only the new one (``--old-only`` makes those results first).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

TINY = ["agent.total_timesteps=65536", "eval_frequency=16384", "wandb.mode=disabled", "compile_cache=null"]

CASES: dict[str, list[str]] = {
    "mountaincar-none": ["env=mountaincar", "bonus=none"],
    "mountaincar-rfig": ["env=mountaincar", "bonus=rfig"],
    "mountaincar-rnd": ["env=mountaincar", "bonus=rnd"],
    "mountaincar-vime": ["env=mountaincar", "bonus=vime"],
    "mountaincar-hashexplo": ["env=mountaincar", "bonus=hashexplo"],
    "mountaincar-rfig-exact": ["env=mountaincar", "bonus=rfig", "bonus.inverse=exact"],
    "mountaincar-rfig-newton_schulz": ["env=mountaincar", "bonus=rfig", "bonus.inverse=newton_schulz"],
    "minatar_breakout-rnd": ["env=minatar_breakout", "bonus=rnd"],
    "minatar_breakout-rfig": ["env=minatar_breakout", "bonus=rfig"],
    "pointmaze_umaze-rfig": ["env=pointmaze_umaze", "bonus=rfig"],
    "pointmaze_umaze-hashexplo": ["env=pointmaze_umaze", "bonus=hashexplo"],
    "mountaincar_continuous-vime": ["env=mountaincar_continuous", "bonus=vime"],
    "cartpole-rnd-2seeds": ["env=cartpole", "bonus=rnd", "num_seeds=2"],  # vmapped seeds, one file each
}
IGNORED = ("wall_time_s",)


def run_case(tree: Path, overrides: list[str], results_dir: Path, python: str, timeout: float) -> str | None:
    """Run one case from ``tree`` into ``results_dir``; None on success, else the error's tail."""
    shutil.rmtree(results_dir, ignore_errors=True)
    # One OpenBLAS thread in both trees, as rfig_exp asks: LAPACK's rounding depends on its
    # thread count, and trees before the setting moved to rfig_exp/__init__.py loaded OpenBLAS
    # before their linalg.py could set it on some paths, so their RFIG runs used every core.
    env = dict(os.environ, PYTHONPATH=f"{tree}/src:{tree}", OPENBLAS_NUM_THREADS="1")
    env.pop("RFIG_COMPILE_CACHE", None)
    cmd = [python, str(tree / "launch.py"), *overrides, *TINY, f"results_dir={results_dir}"]
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"
    if proc.returncode:
        return f"exit {proc.returncode}: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}"
    return None


def metrics_rows(results_dir: Path) -> dict[str, tuple[list[str], list[list[str]]]] | str:
    """Each seed's ``metrics.csv`` under ``results_dir`` (by relative path) without the ignored
    columns, or an error."""
    found = sorted(results_dir.rglob("metrics.csv"))
    if not found:
        return f"no metrics.csv under {results_dir}"
    out = {}
    for path in found:
        rows = list(csv.reader(io.StringIO(path.read_text())))
        header, body = rows[0], rows[1:]
        keep = [i for i, name in enumerate(header) if name not in IGNORED]
        out[str(path.relative_to(results_dir))] = ([header[i] for i in keep], [[row[i] for i in keep] for row in body])
    return out


def without_added(new: dict, old: dict, added: list[str]) -> dict | str:
    """``new``'s files without the ``added`` columns, or why they are not what was said: each added
    column must be in every new file and in no old one."""
    out = {}
    for name, (header, body) in new.items():
        missing = [c for c in added if c not in header]
        present = [c for c in added if c in old.get(name, ([], []))[0]]
        if missing or present:
            return f"{name}: added column(s) {missing} not in the new file" if missing else \
                f"{name}: added column(s) {present} already in the old file"
        keep = [i for i, c in enumerate(header) if c not in added]
        out[name] = ([header[i] for i in keep], [[row[i] for i in keep] for row in body])
    return out


def first_difference(old: dict, new: dict, added: list[str] = ()) -> str | None:
    """None when every seed's metrics are equal (``new``'s ``added`` columns aside), else where they
    first differ."""
    if sorted(old) != sorted(new):
        return f"different runs: {sorted(set(old) ^ set(new))}"
    if added:
        new = without_added(new, old, list(added))
        if isinstance(new, str):
            return new
    for name in sorted(old):
        diff = _file_difference(old[name], new[name])
        if diff:
            return f"{name}: {diff}" if len(old) > 1 else diff
    return None


def _file_difference(old, new) -> str | None:
    (old_header, old_rows), (new_header, new_rows) = old, new
    if old_header != new_header:
        only = sorted(set(old_header) ^ set(new_header))
        return f"columns differ: {only or 'order'}"
    if len(old_rows) != len(new_rows):
        return f"{len(old_rows)} rows vs {len(new_rows)}"
    for r, (a, b) in enumerate(zip(old_rows, new_rows)):
        for name, x, y in zip(old_header, a, b):
            if x != y:
                return f"column {name} (row {r}): {x} vs {y}"
    return None


def compare(case: str, args) -> bool:
    overrides = CASES[case]
    out = {}
    for tag, tree in (("old", args.old_tree), ("new", args.new_tree))[: 1 if args.old_only else 2]:
        results = args.work_dir / tag / case
        reuse = tag == "old" and args.reuse_old and isinstance(metrics_rows(results), dict)
        error = None if reuse else run_case(tree, overrides, results, args.python, args.timeout)
        if error:
            print(f"{case}: DIFFERENT ({tag} tree failed: {error})", flush=True)
            return False
        out[tag] = metrics_rows(results)
        if isinstance(out[tag], str):
            print(f"{case}: DIFFERENT ({tag} tree: {out[tag]})", flush=True)
            return False
    rows = sum(len(body) for _, body in out["old"].values())
    if args.old_only:
        print(f"{case}: old tree run ({rows} rows)", flush=True)
        return True
    diff = first_difference(out["old"], out["new"], args.added_columns)
    print(f"{case}: {'IDENTICAL' if diff is None else 'DIFFERENT'}"
          f"{'' if diff is None else f' ({diff})'} [{rows} rows]", flush=True)
    return diff is None


def main(argv=None) -> int:
    parser = tree_pair_parser(__doc__, CASES, Path("/tmp/identical_metrics"))
    parser.add_argument("--reuse-old", action="store_true", help="keep the old tree's results of an earlier call")
    parser.add_argument("--old-only", action="store_true", help="only run the old tree (for a later --reuse-old)")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--added-columns", nargs="+", default=[], metavar="COLUMN",
                        help="metrics.csv columns the new tree adds: required there, absent from the old, "
                             "then left out")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    args = parser.parse_args(argv)
    args.new_tree = args.new_tree.resolve()
    start = time.time()
    with old_checkout(args.old_tree, args.new_tree, args.work_dir) as args.old_tree:
        print(f"old: {args.old_tree}, new: {args.new_tree}", flush=True)
        ok = [compare(case, args) for case in args.cases]
    print(f"{sum(ok)}/{len(ok)} identical ({time.time() - start:.0f} s)")
    return 0 if all(ok) else 1


def tree_pair_parser(doc: str, cases, work_dir: Path) -> argparse.ArgumentParser:
    """The options of a script that compares an old tree with a new one, case by case."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--old-tree", required=True, help="a checkout, or a git commit/ref to check out")
    parser.add_argument("--new-tree", type=Path, required=True)
    parser.add_argument("--cases", nargs="+", default=list(cases), choices=list(cases), metavar="CASE",
                        help=f"default: all of {', '.join(cases)}")
    parser.add_argument("--work-dir", type=Path, default=work_dir)
    return parser


@contextlib.contextmanager
def old_checkout(old: str, repo: Path, work_dir: Path):
    """``old`` itself when it is a folder, else a clean detached checkout of that git ref."""
    if Path(old).is_dir():
        yield Path(old).resolve()
        return
    checkout = (work_dir / f"checkout-{old.replace('/', '_')}").resolve()
    shutil.rmtree(checkout, ignore_errors=True)
    subprocess.run(["git", "-C", str(repo), "worktree", "prune"], check=True)
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", "--quiet", str(checkout), old], check=True)
    try:
        yield checkout
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(checkout)], check=False)


if __name__ == "__main__":
    sys.exit(main())

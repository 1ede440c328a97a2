"""Check that two checkouts compile the same program for the training loop's window.

Where ``identical_metrics.py`` shows that two trees compute the same numbers, this shows that they
run the same machine program, so their speed is the same by construction rather than within a
noisy paired timing. For each case, each tree's own ``benchmarks/bench_throughput.build`` compiles
one window of the real training loop (2 vmapped seeds, the paper's defaults) and the optimised HLO
that XLA runs is compared after its debug information (source paths, line numbers, op metadata) is
dropped. One line per case:

- ``IDENTICAL``: the same optimised program, instruction for instruction;
- ``SAME UP TO ARGUMENT ORDER``: the same instructions, with the compiled function's scalar arguments
  numbered in another order (a NamedTuple of hyperparameters whose fields were reordered);
- ``SAME UP TO ARGUMENT NAMES``: the same instructions on the same arguments in the same order,
  which JAX named otherwise (their pytree paths: ``hparams.lr`` become ``hparams.agent.lr``);
- ``SAME UP TO INSTRUCTION NAMES``: the same instructions in the same order, some named otherwise.
  XLA names an instruction after the Python function that traced it, and JAX lowers a jitted helper
  (``jax.random.split``'s) once per process and reuses it, so the window's copy is named after
  whichever function called it first (the trainer's ``init`` or a helper it calls): debug
  information too;
- ``DIFFERENT``: anything else, with the first differing line.

    python benchmarks/same_program.py --old-tree 5be1a3a --new-tree .
    python benchmarks/same_program.py --old-tree ../base --new-tree . --cases mountaincar-rfig

Exit status 1 if any case is DIFFERENT.
"""

from __future__ import annotations

import difflib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from identical_metrics import old_checkout, tree_pair_parser  # noqa: E402

CASES = {"mountaincar-none": ("mountaincar", "none"), "mountaincar-rfig": ("mountaincar", "rfig"),
         "mountaincar-vime": ("mountaincar", "vime"), "mountaincar-hashexplo": ("mountaincar", "hashexplo"),
         "minatar_breakout-rnd": ("minatar_breakout", "rnd"), "deepsea-rfig": ("deepsea", "rfig")}

# Run inside a tree: its own benchmark helper builds and compiles the window as its run loop does.
DUMP = """
import sys
sys.path[:0] = ['benchmarks']
import bench_throughput
run_window = bench_throughput.build(sys.argv[1], sys.argv[2], 2, [])[0]
sys.stdout.write(run_window.as_text())
"""


def optimised_hlo(tree: Path, env: str, bonus: str, python: str, timeout: float) -> str:
    """The optimised HLO text of one window compiled by ``tree``'s code."""
    environ = dict(os.environ, PYTHONPATH=f"{tree}/src:{tree}", OPENBLAS_NUM_THREADS="1")
    environ.pop("RFIG_COMPILE_CACHE", None)
    proc = subprocess.run([python, "-c", DUMP, env, bonus], cwd=tree, env=environ, capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode:
        raise RuntimeError(f"{tree}: exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
    return proc.stdout


def program_lines(hlo: str) -> list[str]:
    """The HLO's instructions without debug information: op metadata, the module's name and the
    stack-frame table (file names, function names, file locations and the frames that chain them)
    go."""
    text = re.sub(r", metadata=\{[^}]*\}", "", hlo)
    text = re.sub(r"^HloModule \S+", "HloModule", text, flags=re.M)
    return [line for line in text.splitlines() if not re.match(r'\d+ ("|\{file_name_id|\{file_location_id)', line)]


def argument_names_free(lines: list[str]) -> list[str]:
    """``lines`` with the entry computation's parameters named by their numbers (``arg.3``) and
    listed first in it. JAX names each parameter after its argument's pytree path
    (``hparams_agent_lr``), and where the printer puts a parameter line follows that name; a
    parameter computes nothing, so two programs differing only there run the same instructions."""
    text = "\n".join(lines)
    start = text.find("\nENTRY ")
    entry = text[start:text.find("\n}", start)]
    for name, number in re.findall(r"^\s*%(\S+) = .*? parameter\((\d+)\)", entry, re.M):
        text = re.sub(rf"(%?)(?<![\w.]){re.escape(name)}(?![\w.])", rf"\g<1>arg.{number}", text)
    out = text.splitlines()
    head = next(i for i, line in enumerate(out) if line.startswith("ENTRY "))
    end = out.index("}", head)
    body = out[head + 1:end]
    params = sorted((line for line in body if " parameter(" in line),
                    key=lambda line: int(line.rsplit("parameter(", 1)[1].split(")")[0]))
    return [*out[:head + 1], *params, *(line for line in body if " parameter(" not in line), *out[end:]]


def argument_order_free(lines: list[str]) -> list[str]:
    """``lines`` with each parameter's number dropped and the entry computation's signature sorted,
    so that two programs differing only in the order of their arguments compare equal."""
    out = []
    for line in lines:
        line = re.sub(r"parameter\(\d+\)", "parameter(_)", line)
        entry = re.match(r"(ENTRY \S+ \()(.*)(\) -> .*)$", line)
        if entry:
            line = entry.group(1) + ", ".join(sorted(entry.group(2).split(", "))) + entry.group(3)
        out.append(line)
    return out


def instruction_names_free(lines: list[str]) -> list[str]:
    """``lines`` with every name (``%...``: instructions, computations, parameters) replaced by its
    rank of first appearance: a renaming that keeps which instruction uses which, so only the
    names go."""
    names: dict[str, str] = {}
    return [re.sub(r"%[\w.\-]+", lambda m: names.setdefault(m.group(0), f"%n{len(names)}"), line) for line in lines]


def verdict(old: list[str], new: list[str]) -> str:
    if old == new:
        return "IDENTICAL"
    if argument_order_free(old) == argument_order_free(new):
        return "SAME UP TO ARGUMENT ORDER"
    if argument_names_free(old) == argument_names_free(new):
        return "SAME UP TO ARGUMENT NAMES"
    if instruction_names_free(old) == instruction_names_free(new):
        return "SAME UP TO INSTRUCTION NAMES"
    diff = [d for d in difflib.unified_diff(old, new, lineterm="", n=0)
            if d[:1] in "+-" and d[:3] not in ("---", "+++")]
    return f"DIFFERENT ({len(diff)} lines; first: {diff[0][:160]!r})"


def main(argv=None) -> int:
    parser = tree_pair_parser(__doc__, CASES, Path("/tmp/same_program"))
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per compile")
    args = parser.parse_args(argv)
    new_tree, start, verdicts = args.new_tree.resolve(), time.time(), []
    with old_checkout(args.old_tree, new_tree, args.work_dir) as old_tree:
        print(f"old: {old_tree}, new: {new_tree}", flush=True)
        for case in args.cases:
            old, new = (program_lines(optimised_hlo(tree, *CASES[case], args.python, args.timeout))
                        for tree in (old_tree, new_tree))
            verdicts.append(verdict(old, new))
            print(f"{case}: {verdicts[-1]} [{len(new)} lines]", flush=True)
    same = sum(not v.startswith("DIFFERENT") for v in verdicts)
    print(f"{same}/{len(verdicts)} the same program ({time.time() - start:.0f} s)")
    return 0 if same == len(verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())

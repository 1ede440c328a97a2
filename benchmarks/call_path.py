"""The way from ``python launch.py`` to the trainer, as a checkout's code takes it: how many of
the project's modules and how many hops between them.

``launch.py`` runs in this process with the given overrides, its own tree first on ``sys.path``,
until ``make_trainer`` (``rfig_exp/agents/ppo/train.py``) is called; then the script prints and
ends the process, so nothing is trained or written but Hydra's own folder. It prints:

- the call stack at that moment, one line per frame of the project's code (``launch.py``,
  ``src/``), outermost first, with the frames of other packages (Hydra, submitit) in between
  counted on one line (a job trained on a thread of its own: the main thread's stack, then
  the job thread's);
- *modules on the way*: the project's modules on that stack; *hops*: the calls on it from one of
  the project's modules into another, through other packages or straight;
- *modules run before training*: every module of the project with a function that ran before
  ``make_trainer`` (the checks, the plan, the env, the bonus), and how many were imported.

    python benchmarks/call_path.py                        # this tree: python launch.py
    python benchmarks/call_path.py --tree ../old -- -m 'seed=0,1'   # another checkout, a sweep
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import tempfile
import threading
from pathlib import Path

TARGET = ("make_trainer", str(Path("rfig_exp") / "agents" / "ppo" / "train.py"))


def _module(filename: str, tree: Path) -> str | None:
    """The project's name of a frame's file (``launch.py``, ``rfig_exp/launch/preflight.py``), None
    for any other package's."""
    path = Path(filename).resolve()
    for root in (tree / "src", tree):
        if path.is_relative_to(root) and not path.is_relative_to(tree / ".venv"):
            name = str(path.relative_to(root))
            return name if root != tree or name == "launch.py" else None
    return None


def _frames(frame) -> list:
    """A thread's frames, innermost first."""
    stack = []
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    return stack


def report(frame, tree: Path, ran: set[str]) -> list[str]:
    stack = _frames(frame)
    if threading.current_thread() is not threading.main_thread():  # a job trained on a thread of its own:
        stack += _frames(sys._current_frames()[threading.main_thread().ident])  # the way to it comes first
    lines, on_way, hops, outside, previous = [], [], 0, 0, None
    for f in reversed(stack):
        module = _module(f.f_code.co_filename, tree)
        if module is None:
            outside += 1
            continue
        if outside:
            lines.append(f"      ... {outside} frame(s) of other packages")
            outside = 0
        lines.append(f"  {module}:{f.f_lineno} {f.f_code.co_name}")
        if module != previous and previous is not None:
            hops += 1
        if module not in on_way:
            on_way.append(module)
        previous = module
    return [*lines, "",
            f"modules on the way: {len(on_way)} ({', '.join(on_way)})",
            f"hops between them: {hops}",
            f"modules run before training: {len(ran)} ({', '.join(sorted(ran))})"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("overrides", nargs="*", help="launch.py's arguments (after --)")
    args = parser.parse_args()
    tree = args.tree.resolve()
    results = tempfile.mkdtemp(prefix="call_path_")
    argv = [*args.overrides, f"results_dir={results}", "wandb.mode=disabled", "compile_cache=null"]
    ran: set[str] = set()
    imported: set[str] = set()

    def profile(frame, event, arg):
        if event != "call":
            return
        module = _module(frame.f_code.co_filename, tree)
        if module is None:
            return
        # a module's or a class's body runs as it is imported: only a function's call counts as run
        (ran if frame.f_code.co_flags & inspect.CO_NEWLOCALS else imported).add(module)
        if frame.f_code.co_name == TARGET[0] and module == TARGET[1]:
            sys.setprofile(None)
            threading.setprofile(None)
            print("\n".join(["", f"the way from python launch.py {' '.join(args.overrides)} to make_trainer:",
                             *report(frame, tree, ran - {TARGET[1]}),
                             f"modules imported before training: {len(imported | ran)}"]), flush=True)
            os._exit(0)

    os.chdir(tree)
    sys.path[:0] = [str(tree / "src"), str(tree)]
    sys.argv = [str(tree / "launch.py"), *argv]
    script = tree / "launch.py"
    sys.setprofile(profile)
    threading.setprofile(profile)
    exec(compile(script.read_text(), str(script), "exec"), {"__name__": "__main__", "__file__": str(script)})
    sys.setprofile(None)
    print("launch.py ended without calling make_trainer", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    main()

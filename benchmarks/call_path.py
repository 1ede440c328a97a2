"""The way from ``python launch.py`` to the trainer, as a checkout's code takes it: how many of
the project's modules and how many hops between them.

``launch.py`` runs in this process with the given overrides, its own tree first on ``sys.path``,
until ``make_trainer`` (``rfig_exp/agents/ppo/train.py``) is called; then the script prints and
ends the process, so nothing is trained or written but Hydra's own folder. It prints:

- the call stack at that moment, one line per frame of the project's code (``launch.py``,
  ``src/``), outermost first, with the frames of other packages (Hydra, submitit) in between
  counted on one line (a job trained on a thread of its own: the main thread's stack, then
  the job thread's; a job trained in a spawned process of its own: the stack that started it, then
  the process's own, followed there through a ``sitecustomize`` of this script's on its
  ``PYTHONPATH``);
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
import json
import os
import signal
import sys
import tempfile
import threading
import time
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


def way(frame, tree: Path) -> list:
    """The stack at ``frame``, outermost first: ``[module, line, function]`` for the project's frames,
    a count for each run of other packages' frames."""
    stack = _frames(frame)
    if threading.current_thread() is not threading.main_thread():  # a job trained on a thread of its own:
        stack += _frames(sys._current_frames()[threading.main_thread().ident])  # the way to it comes first
    out: list = []
    for f in reversed(stack):
        module = _module(f.f_code.co_filename, tree)
        if module is None:
            out.append(out.pop() + 1 if out and isinstance(out[-1], int) else 1)
        else:
            out.append([module, f.f_lineno, f.f_code.co_name])
    return out


def report(steps: list, ran: set[str]) -> list[str]:
    """``steps`` (:func:`way`'s, a spawned process's after the way that started it) as lines, the
    modules on the way and the hops between them."""
    lines, on_way, hops, previous = [], [], 0, None
    for step in steps:
        if isinstance(step, int):
            lines.append(f"      ... {step} frame(s) of other packages")
            continue
        if isinstance(step, str):
            lines.append(f"      --- {step}")
            continue
        module, line, name = step
        lines.append(f"  {module}:{line} {name}")
        if module != previous and previous is not None:
            hops += 1
        if module not in on_way:
            on_way.append(module)
        previous = module
    return [*lines, "",
            f"modules on the way: {len(on_way)} ({', '.join(on_way)})",
            f"hops between them: {hops}",
            f"modules run before training: {len(ran)} ({', '.join(sorted(ran))})"]


SPAWNED = "CALL_PATH_SPAWNED"  # the file where the way to a spawned process is kept for it


def _target_reached(frame, tree: Path) -> bool:
    return frame.f_code.co_name == TARGET[0] and _module(frame.f_code.co_filename, tree) == TARGET[1]


def follow_spawned() -> None:
    """In a process spawned by the measured one (this script's ``sitecustomize``): profile it
    too, and at ``make_trainer`` report the whole way, then end the measured process."""
    record = json.loads(Path(os.environ[SPAWNED]).read_text())
    tree, ran, imported = Path(record["tree"]), set(record["ran"]), set(record["imported"])

    def profile(frame, event, arg):
        if event != "call":
            return
        module = _module(frame.f_code.co_filename, tree)
        if module is None:
            return
        (ran if frame.f_code.co_flags & inspect.CO_NEWLOCALS else imported).add(module)
        if _target_reached(frame, tree):
            sys.setprofile(None)
            steps = [*record["way"], "the job's process, spawned", *way(frame, tree)]
            Path(record["out"]).write_text("\n".join([*report(steps, ran - {TARGET[1]}),
                                                      f"modules imported before training: {len(imported | ran)}"]))
            os.kill(os.getppid(), signal.SIGUSR1)  # the measured process prints it and ends
            time.sleep(30)
            os._exit(0)

    sys.setprofile(profile)


def _spawn_hook(record: dict) -> None:
    """A ``sitecustomize`` that makes every Python process the measured one starts call
    :func:`follow_spawned`, with ``record`` (the way so far) for it to read."""
    hook = Path(tempfile.mkdtemp(prefix="call_path_hook_"))
    (hook / "record.json").write_text(json.dumps(record))
    (hook / "sitecustomize.py").write_text(f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                                           "import call_path\ncall_path.follow_spawned()\n")
    os.environ[SPAWNED] = str(hook / "record.json")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))


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
            if frame.f_code.co_name == "start" and frame.f_code.co_filename.endswith(
                    os.path.join("multiprocessing", "process.py")):  # a process spawned: follow it there
                _spawn_hook({"tree": str(tree), "way": way(frame, tree), "ran": sorted(ran),
                             "imported": sorted(imported | ran), "out": str(out)})
            return
        # a module's or a class's body runs as it is imported: only a function's call counts as run
        (ran if frame.f_code.co_flags & inspect.CO_NEWLOCALS else imported).add(module)
        if frame.f_code.co_name == TARGET[0] and module == TARGET[1]:
            sys.setprofile(None)
            threading.setprofile(None)
            print("\n".join([heading, *report(way(frame, tree), ran - {TARGET[1]}),
                             f"modules imported before training: {len(imported | ran)}"]), flush=True)
            os._exit(0)

    def spawned_done(signum, frame):
        print("\n".join([heading, out.read_text()]), flush=True)
        os._exit(0)

    heading = f"\nthe way from python launch.py {' '.join(args.overrides)} to make_trainer:"
    out = Path(tempfile.mkdtemp(prefix="call_path_out_")) / "report.txt"
    signal.signal(signal.SIGUSR1, spawned_done)

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

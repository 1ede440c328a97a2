"""The code stays readable in pieces: no module over 500 lines, no function over 80.

A function may be longer where a ``# length: <why>`` comment right above it, or first in its body,
says why, e.g. a factory of closures that share one scope. The limits are the architecture's
(docs/architecture.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.joinpath("src").rglob("*.py"), *ROOT.joinpath("analysis").rglob("*.py"),
                  *ROOT.joinpath("campaign").rglob("*.py"),
                  *ROOT.joinpath("benchmarks").rglob("*.py"), ROOT / "launch.py"])
MAX_FILE_LINES, MAX_FUNCTION_LINES = 500, 80


def _long_functions(path: Path, root: Path = ROOT) -> list[str]:
    text = path.read_text()
    lines = text.splitlines()
    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        length = node.end_lineno - node.lineno + 1
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        above = lines[first - 2].strip() if first >= 2 else ""
        body = node.body[1:] if ast.get_docstring(node) is not None and len(node.body) > 1 else node.body
        start = node.body[0].end_lineno if body is not node.body else node.lineno
        opening = [line.strip() for line in lines[start:body[0].lineno - 1]] if body else []
        said = above.startswith("# length:") or any(line.startswith("# length:") for line in opening)
        if length > MAX_FUNCTION_LINES and not said:
            found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}() is {length} lines")
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_and_function_sizes(path):
    length = len(path.read_text().splitlines())
    assert length <= MAX_FILE_LINES, f"{path.relative_to(ROOT)} is {length} lines; split it by concern"
    too_long = _long_functions(path)
    assert not too_long, "; ".join(too_long) + " (split it, or say why: '# length: ...')"


def test_the_size_check_can_fail(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(90))
    (tmp_path / "long.py").write_text(f"def f():\n{body}\n")
    (tmp_path / "ok.py").write_text(f"# length: a table of constants\ndef f():\n{body}\n")
    (tmp_path / "inside.py").write_text(f'def f():\n    """Doc."""\n    # length: a table\n{body}\n')
    assert _long_functions(tmp_path / "long.py", tmp_path)
    assert not _long_functions(tmp_path / "ok.py", tmp_path) and not _long_functions(tmp_path / "inside.py", tmp_path)

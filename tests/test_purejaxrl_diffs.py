"""The PureJaxRL diffs of docs/library.md and docs/library-dqn.md, as scripts/check_purejaxrl_diff.py
finds them (it applies them to a PureJaxRL checkout and trains: not here, where no PureJaxRL is):
unified diffs of the files it copies, in the order it applies them, and the line counts the pages and
the README state are the diffs' own."""

from __future__ import annotations

import importlib.util
import re

from conftest import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("check_purejaxrl_diff", ROOT / "scripts" / "check_purejaxrl_diff.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _counts(diff: str) -> tuple[int, int, int]:
    """(lines added, of which blank, lines changed) of a zero-context unified diff."""
    body = [line for line in diff.splitlines()[2:] if not line.startswith("@@")]
    plus, minus = [x for x in body if x.startswith("+")], [x for x in body if x.startswith("-")]
    return len(plus) - len(minus), sum(x == "+" for x in plus), len(minus)


def test_the_pages_diffs_are_the_files_the_script_copies_in_its_order():
    script = _script()
    for kind, names in (("ppo", ["wrappers.py", "ppo.py"]), ("dqn", ["dqn.py", "dqn.py"])):
        blocks = script.diffs(script.PAGES[kind])
        assert [re.match(r"--- a/purejaxrl/(\S+)\n\+\+\+ b/purejaxrl/\1\n@@ ", b).group(1) for b in blocks] == names
        assert set(names) <= set(script.FILES[kind])


def test_the_line_counts_the_docs_state_are_the_diffs():
    script = _script()
    _, ppo = script.diffs(script.PAGES["ppo"])
    compat, dqn = script.diffs(script.PAGES["dqn"])
    library, library_dqn = script.PAGES["ppo"].read_text(), script.PAGES["dqn"].read_text()
    readme = (ROOT / "README.md").read_text()
    added, blank, changed = _counts(ppo)
    assert f"{added} lines added ({blank} of them blank) and {changed} changed" in library
    assert f"`ppo.py`, {added} lines added and {changed} changed" in readme
    added, blank, changed = _counts(dqn)
    assert f"{added} lines added ({blank} of them blank) and {changed} changed" in library_dqn
    assert f"{added} lines added and {changed} changed in PureJaxRL's `dqn.py`" in readme
    added, _, changed = _counts(compat)
    assert f"({changed} lines changed, {added} added)" in library_dqn
    assert script.COMMIT[:7] in library and script.COMMIT[:7] in library_dqn

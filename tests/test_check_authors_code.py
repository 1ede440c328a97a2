"""scripts/check_authors_code.py's statistics against independent computations (rliable's IQM, a
pairwise loop, scipy's Mann-Whitney), and its reading of our as-run budget and seeds."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("check_authors_code", ROOT / "scripts" / "check_authors_code.py")
check = importlib.util.module_from_spec(spec)
sys.modules["check_authors_code"] = check
spec.loader.exec_module(check)


def test_iqm_is_rliables():
    from rliable import metrics

    x = np.random.default_rng(0).normal(size=32)
    assert check.iqm(x) == pytest.approx(float(metrics.aggregate_iqm(x[:, None])), rel=1e-12)


def test_probability_of_improvement_counts_every_pair_ties_half():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 0.0, 5.0])
    want = sum((a > b) + 0.5 * (a == b) for a in x for b in y) / 12
    assert check.prob_greater(x, y) == pytest.approx(want)


def test_compare_on_known_answers():
    rng = np.random.default_rng(1)
    same = rng.normal(size=8)
    stats = check.compare(same, same.copy(), reps=500)
    assert stats["p_ours_greater"][0] == 0.5 and stats["mann_whitney_p"] == 1.0
    assert stats["iqm_ours"][1] <= stats["iqm_ours"][0] <= stats["iqm_ours"][2]
    apart = check.compare(same + 10, same, reps=500)
    assert apart["p_ours_greater"][0] == 1.0 and apart["mann_whitney_p"] < 0.001


def test_seeds_are_one_consecutive_block():
    assert check.parse_seeds("100-107") == list(range(100, 108))
    assert check.parse_seeds("3,4,5") == [3, 4, 5]
    with pytest.raises(SystemExit, match="consecutive"):
        check.parse_seeds("1,3")


def test_the_budget_is_the_as_run_protocols():
    assert check.as_run_budget("mountaincar") == 1_000_000
    assert check.as_run_budget("minatar_breakout") == check.as_run_budget("sparse_hopper") == 2_500_000
    assert set(check.THEIR_ENV) == {p.stem.removeprefix("as_run_") for p in (ROOT / "conf/protocol/env").glob("*")} \
        | {"mountaincar", "acrobot", "pointmaze_umaze", "pointmaze_medium"}


def test_their_result_is_read_after_the_progress_bar_they_draw_on_the_same_line():
    bar = "\U0001f680 [\u2591\u2591]   0.0% | 0/50,000 timesteps\r\U0001f680 [\u2588\u2591]  81.9% | 40,960/50,000    "
    line = '{"returns": [[-498.3, -476.2]], "eval_episodes": 128, "eval_freq": 24576}'
    assert check.driver_result(f"{bar}{line}\n") == {"returns": [[-498.3, -476.2]], "eval_episodes": 128,
                                                     "eval_freq": 24576}
    assert check.driver_result(f"warning\n{line}\n")["eval_freq"] == 24576
    assert check.driver_result(bar) is None



def _quoted(x: float, text: str, decimals: range) -> bool:
    """``x`` appears in ``text`` as a number rounded to one of ``decimals`` (its trailing zeros may be
    dropped), not as part of a longer digit run."""
    import re

    forms = {f"{x:.{d}f}" for d in decimals}
    forms |= {f.rstrip("0").rstrip(".") for f in forms if "." in f}
    return any(re.search(rf"(?<![\d.]){re.escape(f)}(?![\d])", text) for f in forms)


def _named_files(doc: str) -> set[str]:
    """The fidelity JSON files the text names, ``{a,b}_rnd.json`` expanded."""
    import re

    names = set()
    for head, body, tail in re.findall(r"fidelity/([\w]*)(?:\{([\w,]+)\})?([\w]*)\.json", doc):
        names |= {f"{head}{part}{tail}.json" for part in (body.split(",") if body else [""])}
    return names


def test_quoting_tells_a_number_from_its_neighbours():
    text = "IQM -109.50 [-112.0, -108.1], p = 0.372 and p = 1"
    assert _quoted(-109.502, text, range(1, 4)) and _quoted(0.3716, text, range(2, 4))
    assert _quoted(1.0, text, range(2, 4))
    assert not _quoted(-109.6, text, range(1, 4)) and not _quoted(0.37, text, range(2, 3))
    assert not _quoted(0.4, text, range(1, 2))  # not the tail of 0.372
    assert _named_files("`docs/results/fidelity/{acrobot,mountaincar}_rnd.json`, fidelity/acrobot.json") == {
        "acrobot_rnd.json", "mountaincar_rnd.json", "acrobot.json"}


@pytest.mark.parametrize("path", sorted((ROOT / "docs/results/fidelity").glob("*.json")), ids=lambda p: p.stem)
def test_docs_quote_every_committed_comparison_as_recomputed_from_its_curves(path):
    """docs/fidelity.md names each committed comparison and quotes its final-score IQMs and
    Mann-Whitney p as scipy recomputes them from the seeds' curves in the JSON (not the JSON's own
    statistics), so a rerun that lands without its text, or a text that is not its data, fails."""
    import json

    from scipy.stats import mannwhitneyu, trim_mean

    doc = (ROOT / "docs/fidelity.md").read_text()
    assert path.name in _named_files(doc), f"docs/fidelity.md does not name {path.name}"
    report = json.loads(path.read_text())
    for bonus, side in report["bonuses"].items():
        ours, theirs = (np.asarray(side[k]["returns"])[:, -1] for k in ("ours", "theirs"))
        p = mannwhitneyu(ours, theirs, alternative="two-sided").pvalue
        assert side["final"]["mann_whitney_p"] == pytest.approx(p, abs=1e-12)
        for name, value, places in (("IQM ours", trim_mean(ours, 0.25), range(1, 4)),
                                    ("IQM theirs", trim_mean(theirs, 0.25), range(1, 4)), ("p", p, range(2, 4))):
            assert _quoted(float(value), doc, places), \
                f"{path.name} {bonus}: {name} {value:.4f} is not in docs/fidelity.md"

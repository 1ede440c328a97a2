"""The report treats a method by its bonus's declared role, never by its name: a user's bonus of role
method gets RFIG's probability of improvement, the reference normalisation divides by the bonus of
role reference (``ppo`` is its other name), and the method-role bonus is drawn on top."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import scipy.stats
from analysis_fixtures import SEEDS, STEPS, truth_returns, write_run

from analysis import collect
from analysis.__main__ import build_parser
from analysis.aggregate import compute_aggregates, fit_normalisation
from analysis.collect import final_scores
from analysis.plots import curve_zorder

REPS = 40
ENVS = ("mountaincar", "acrobot")
OTHERS = ("none", "noise", "rnd")
# A user's bonus module as docs/extending.md has one: a declaration (its role included) and make().
MODULE = '''
    from dataclasses import dataclass
    from typing import ClassVar

    from rfig_exp.bonuses.settings import BonusSettings


    @dataclass(frozen=True)
    class MineSettings(BonusSettings):
        name: ClassVar[str] = "{name}"
        label: ClassVar[str] = "{label}"
        colour: ClassVar[str] = "#123456"
        role: ClassVar[str] = "{role}"


    def make(settings, obs_shape, action_space):
        raise NotImplementedError("a report reads the declaration only")
'''


def _tree(root, experiment: str, bonuses: dict[str, str | None], returns_of: dict[str, str] | None = None):
    """Runs of ``bonuses`` (name -> its user module, None for a built-in) in every env, each bonus
    with the returns that analysis_fixtures gives the bonus ``returns_of[name]`` (default: its own)."""
    for env in ENVS:
        for bonus, module in bonuses.items():
            r = truth_returns(env, (returns_of or {}).get(bonus, bonus))
            for s in SEEDS:
                write_run(root, experiment, env, bonus, s, STEPS, r[s],
                          defaults={"bonus.module": module} if module else None)


def _user_module(path, module: str, name: str, label: str, role: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / f"{module}.py").write_text(textwrap.dedent(MODULE.format(name=name, label=label, role=role)))


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    """Four experiments of one tree: PPO, the control, RND and RFIG; the same runs with a user's bonus
    "mybonus" of role method in RFIG's place (RFIG's returns); the same without either; and a user's
    bonus "myref" of role reference (PPO's returns) with RND and RFIG."""
    root = tmp_path_factory.mktemp("roles")
    _user_module(root / "modules", "roles_mine_method", "mybonus", "Mine", "method")
    _user_module(root / "modules", "roles_mine_reference", "myref", "My reference", "reference")
    _tree(root, "paper", {b: None for b in (*OTHERS, "rfig")})
    _tree(root, "mine", {**{b: None for b in OTHERS}, "mybonus": "roles_mine_method"}, {"mybonus": "rfig"})
    _tree(root, "neither", {b: None for b in OTHERS})
    _tree(root, "myref", {"myref": "roles_mine_reference", "rnd": None, "rfig": None}, {"myref": "none"})
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(root / "modules"))
        return {e: collect(root, e) for e in ("paper", "mine", "neither", "myref")}


def test_a_users_method_role_bonus_gets_rfigs_probability_of_improvement(trees):
    paper, mine = trees["paper"], trees["mine"]
    assert mine.names.role("mybonus") == "method" and mine.label("mybonus") == "Mine"
    want = compute_aggregates(paper, reps=REPS).poi
    got = compute_aggregates(mine, reps=REPS).poi
    assert [(x, y, n) for x, y, _, n in want] == [("rfig", b, len(ENVS)) for b in OTHERS]
    assert [(x, y, n) for x, y, _, n in got] == [("mybonus", b, len(ENVS)) for b in OTHERS]
    assert [(iv.point, iv.lo, iv.hi) for *_, iv, _ in got] == [(iv.point, iv.lo, iv.hi) for *_, iv, _ in want]


def test_without_a_method_role_bonus_the_report_says_there_is_no_probability_of_improvement(trees):
    agg = compute_aggregates(trees["neither"], reps=REPS)
    assert agg.poi == []
    assert ("No RFIG runs in this report: no probability of improvement (of RFIG over each other method)."
            in agg.notes)


def test_reference_normalisation_divides_by_the_reference_role_and_ppo_is_its_other_name(trees):
    coll = trees["paper"]
    ref = compute_aggregates(coll, reps=REPS, normalisation="reference")
    ppo = compute_aggregates(coll, reps=REPS, normalisation="ppo")
    assert ref.normalisation.kind == ppo.normalisation.kind == "reference"
    for e in ENVS:  # the reference's final IQM maps to 1
        assert ref.normalisation.hi[e] == scipy.stats.trim_mean(ref.scores[e]["none"][1], 0.25)
    assert (ref.normalisation.lo, ref.normalisation.hi) == (ppo.normalisation.lo, ppo.normalisation.hi)
    assert ref.overall == ppo.overall and ref.normalisation.description == ppo.normalisation.description
    assert ref.normalisation.description.startswith("PPO-normalised per env")


def test_a_users_reference_role_bonus_is_what_the_reference_normalisation_divides_by(trees):
    coll = trees["myref"]
    norm = fit_normalisation(coll, final_scores(coll), "reference")
    assert norm.excluded == {} and norm.reference == "My reference"
    for e in ENVS:
        assert np.isclose(norm.apply(e, scipy.stats.trim_mean(final_scores(coll)[e]["myref"][1], 0.25)), 1.0)
    without = fit_normalisation(trees["neither"], final_scores(trees["neither"]), "ppo")
    assert without.excluded == {}  # PPO, the built-in bonus of role reference, is there


def test_an_unknown_normalisation_fails_with_one_line_naming_the_valid_ones(trees):
    with pytest.raises(ValueError) as err:
        compute_aggregates(trees["paper"], reps=REPS, normalisation="zscore")
    assert str(err.value) == "normalisation must be one of minmax, reference, ppo (ppo = reference), got 'zscore'"
    text = " ".join(build_parser().format_help().split())
    assert "{minmax,reference,ppo}" in text and "ppo: the reference normalisation, by its older name" in text


def test_the_method_role_bonus_is_drawn_on_top(trees):
    for coll, top in ((trees["paper"], "rfig"), (trees["mine"], "mybonus")):
        assert curve_zorder(coll, top) > max(curve_zorder(coll, m) for m in coll.methods if m != top)
    assert {curve_zorder(trees["neither"], m) for m in trees["neither"].methods} == {2}

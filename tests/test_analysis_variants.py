"""Methods = (bonus, variant): layouts, labels, selection, sensitivity, honest reporting."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import scipy.stats
import yaml
from analysis_fixtures import (
    SENS_DEFAULT,
    STEPS,
    T,
    make_clean_tree,
    make_lr_sweep_tree,
    make_sensitivity_tree,
    run_path,
    truth_returns,
    write_run,
)

from analysis import AnalysisError, collect, final_scores, find_experiments
from analysis.aggregate import Interval, compute_aggregates
from analysis.methods import VARIANT_MIN_DISTANCE, build_methods, colour_distance, format_value, swept_key
from analysis.names import OTHER_COLOURS, PALETTE

REPS = 60
LR_A = "agent.lr=0.0001,agent.total_timesteps=20480"
LR_B = "agent.lr=0.001,agent.total_timesteps=20480"


@pytest.fixture(scope="module")
def lr_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("lr")
    return root, make_lr_sweep_tree(root)


@pytest.fixture(scope="module")
def sens_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("sens")
    return root, make_sensitivity_tree(root)


# --------------------------------------------------------------------------- method rules


def test_build_methods_keys_labels_common_and_colours():
    groups = {("none", "base"): {}, ("rfig", "base"): {},
              ("rfig", "bonus.lengthscale=2.0"): {"bonus.lengthscale": 2.0},
              ("rfig", "bonus.lengthscale=0.5"): {"bonus.lengthscale": 0.5}}
    methods, common = build_methods(groups)
    assert common == {}
    assert [m.key for m in methods] == ["none", "rfig", "rfig/bonus.lengthscale=0.5", "rfig/bonus.lengthscale=2.0"]
    assert [m.label for m in methods] == ["PPO", "RFIG", "RFIG (lengthscale=0.5)", "RFIG (lengthscale=2)"]
    assert [m.primary for m in methods] == [True, True, False, False]
    # Base keeps its bonus colour; variants get distinct colours that are none of the bonus colours.
    assert methods[0].colour == PALETTE["none"] and methods[1].colour == PALETTE["rfig"]
    variant_colours = [m.colour for m in methods[2:]]
    assert len(set(variant_colours)) == 2 and all(c in OTHER_COLOURS for c in variant_colours)
    # Stable: the same methods get the same colours whatever order they are found in.
    again, _ = build_methods(dict(reversed(list(groups.items()))))
    assert [m.colour for m in again] == [m.colour for m in methods]
    # A sweep's variants are told apart: colours far apart (two near-identical blues
    # cannot be told apart), and a line style of their own within their bonus.
    sweep = {("none", "base"): {}, ("rnd", "base"): {}, ("rfig", "base"): {},
             **{("rfig", f"bonus.lengthscale={v}"): {"bonus.lengthscale": v} for v in (0.5, 1, 2)}}
    ms, _ = build_methods(sweep)
    assert min(colour_distance(a.colour, b.colour) for a, b in itertools.combinations(ms, 2)) >= VARIANT_MIN_DISTANCE
    assert len({str(m.linestyle) for m in ms if m.bonus == "rfig"}) == 4
    assert all(m.linestyle == "-" for m in ms if m.primary)
    # Distinct while the palette lasts, however the hashes fall.
    many = {("rfig", f"bonus.lengthscale={v}"): {"bonus.lengthscale": float(v)} for v in range(len(OTHER_COLOURS))}
    ms, _ = build_methods(many)
    assert len({m.colour for m in ms}) == len(OTHER_COLOURS)
    assert [m.label for m in ms][:3] == ["RFIG (lengthscale=0)", "RFIG (lengthscale=1)", "RFIG (lengthscale=2)"]

    # Overrides shared by all are common (stated once), never in labels; a bonus's only variant is primary.
    groups = {("none", "a"): {"agent.total_timesteps": 50000, "agent.lr": 1e-4},
              ("none", "b"): {"agent.total_timesteps": 50000, "agent.lr": 1e-3},
              ("rfig", "c"): {"agent.total_timesteps": 50000}}
    methods, common = build_methods(groups)
    assert common == {"agent.total_timesteps": 50000}
    assert {m.key: m.label for m in methods} == {"none/a": "PPO (lr=0.0001)", "none/b": "PPO (lr=0.001)",
                                                 "rfig": "RFIG"}
    assert methods[-1].colour == PALETTE["rfig"]
    # Keys with the same last part keep their full dotted name.
    methods, _ = build_methods({("rfig", "x"): {"agent.lr": 1e-3}, ("rfig", "y"): {"bonus.lr": 1e-3}})
    assert sorted(m.label for m in methods) == ["RFIG (agent.lr=0.001)", "RFIG (bonus.lr=0.001)"]
    assert format_value(1e-5) == "1e-05" and format_value(0.1 + 0.2) == repr(0.1 + 0.2) and format_value(True) == "true"


def test_swept_key_needs_exactly_one_numeric_key():
    def ms(groups):
        return build_methods(groups)[0]

    three = ms({("rfig", "base"): {}, ("rfig", "a"): {"bonus.lengthscale": 0.5},
                ("rfig", "b"): {"bonus.lengthscale": 2}})
    key, vals = swept_key(three, {"rfig": {"bonus.lengthscale": 1.0}})
    assert key == "bonus.lengthscale" and vals == {"rfig": 1.0, "rfig/a": 0.5, "rfig/b": 2.0}
    # The base value unknown (not in config) or not a number: the base point is left out.
    key, vals = swept_key(three, {"rfig": {"bonus.lengthscale": "auto"}})
    assert vals == {"rfig/a": 0.5, "rfig/b": 2.0}
    assert swept_key(ms({("rfig", "a"): {"bonus.lengthscale": 0.5}})) is None  # one value: no sweep
    two_keys = ms({("rfig", "a"): {"bonus.lengthscale": 0.5, "agent.lr": 1e-3},
                   ("rfig", "b"): {"bonus.lengthscale": 2.0, "agent.lr": 1e-4}})
    assert swept_key(two_keys) is None
    text = ms({("rfig", "a"): {"bonus.inverse": "cholesky"}, ("rfig", "b"): {"bonus.inverse": "woodbury"}})
    assert swept_key(text) is None
    # A key shared by every method (a common budget) does not count as swept.
    shared = ms({("rfig", "a"): {"bonus.lengthscale": 0.5, "agent.total_timesteps": 5},
                 ("rfig", "b"): {"bonus.lengthscale": 2.0, "agent.total_timesteps": 5}})
    assert swept_key(shared)[0] == "bonus.lengthscale"


# --------------------------------------------------------------------------- collection


def test_lr_sweep_gives_two_methods_with_labels_and_header(lr_tree, tmp_path):
    root, truth = lr_tree
    coll = collect(root, "lrsweep")
    assert coll.envs == ["acrobot", "cartpole"]
    assert coll.methods == [f"none/{LR_A}", f"none/{LR_B}"]
    assert [coll.label(m) for m in coll.methods] == ["PPO (lr=0.0001)", "PPO (lr=0.001)"]
    assert coll.common_overrides == {"agent.total_timesteps": 20480}
    assert [i for i in coll.issues if i.severity != "info"] == []
    for env in coll.envs:
        for lr, m in ((1e-4, coll.methods[0]), (1e-3, coll.methods[1])):
            seeds, v = coll.env_data[env].returns(m)
            np.testing.assert_allclose(v, truth[(env, lr)])
            assert all(r.config["agent"]["lr"] == lr for r in coll.runs_of(m))
    from analysis.maker import ReportOptions
    from analysis.report import build_report

    res = build_report(coll, tmp_path, ReportOptions(reps=REPS), strict=True, only=["data", "final_scores", "exports"])
    index = (tmp_path / "index.md").read_text()
    assert res.errors == []
    assert "Overrides common to every method (not repeated in labels): `agent.total_timesteps=20480`" in index
    assert "PPO (lr=0.0001)" in index and "PPO (lr=0.001)" in index
    table = (tmp_path / "final_scores.md").read_text()
    assert "| Env | PPO (lr=0.0001) | PPO (lr=0.001) |" in table
    assert "total_timesteps" not in table  # the common override is stated once, in the header
    scores = (tmp_path / "final_scores.csv").read_text()
    assert LR_A in scores and LR_B in scores
    blob = json.loads((tmp_path / "aggregates.json").read_text())
    assert blob["methods"][f"none/{LR_B}"]["overrides"] == {"agent.lr": 0.001, "agent.total_timesteps": 20480}
    assert blob["common_overrides"] == {"agent.total_timesteps": 20480}


def test_variant_and_method_selection(lr_tree, sens_tree):
    root, _ = lr_tree
    coll = collect(root, "lrsweep", variants=LR_B)  # a variant name holds a comma: matched whole
    assert coll.methods == ["none"] and coll.label("none") == "PPO"  # the bonus's only variant: primary
    assert coll.common_overrides == {"agent.lr": 0.001, "agent.total_timesteps": 20480}
    coll = collect(root, "lrsweep", methods="PPO (lr=0.0001)")
    assert [r.variant for r in coll.runs] == [LR_A] * len(coll.runs)
    coll = collect(root, "lrsweep", methods="none")  # a bonus name: all its variants
    assert len(coll.methods) == 2
    coll = collect(root, "lrsweep", bonuses="none", variants=[LR_A, LR_B])
    assert len(coll.methods) == 2
    coll = collect(root, "lrsweep", methods="PPO (lr=0.001),nothing_like_it")
    assert {r.variant for r in coll.runs} == {LR_B}
    assert any(i.kind == "missing_method" and "nothing_like_it" in i.detail for i in coll.issues)
    with pytest.raises(AnalysisError, match="variants"):
        collect(root, "lrsweep", variants="agent.lr=5")

    sroot, _ = sens_tree
    coll = collect(sroot, "sens", methods="RFIG,RFIG (lengthscale=2)")  # exact labels: base and one variant
    assert coll.methods == ["rfig", "rfig/bonus.lengthscale=2"]
    coll = collect(sroot, "sens", methods="rfig/bonus.lengthscale=0.5,PPO")  # a method key, a label
    # rfig's only variant here is its primary method (key rfig), labelled by what PPO base lacks.
    assert coll.methods == ["none", "rfig"] and coll.label("rfig") == "RFIG (lengthscale=0.5)"
    assert coll.common_overrides == {}  # PPO base has none
    assert coll.method_info["rfig"].variant == "bonus.lengthscale=0.5"
    coll = collect(sroot, "sens", variants="base")
    assert coll.methods == ["none", "rfig"]


def test_folders_outside_the_layout_are_not_runs(tmp_path):
    """Only <env>/<bonus>/<variant>/seed_<k> is a run (rfig_exp.results.contract.iter_runs): the old layout
    without a variant folder, and hidden folders, are not read."""
    r = truth_returns("acrobot", "rfig", 2)
    for s in range(2):
        write_run(tmp_path, "exp", "acrobot", "rfig", s, STEPS, r[s])
    old = write_run(tmp_path, "old", "acrobot", "rfig", 0, STEPS, r[0])
    old.rename(old.parent.parent / "seed_0")                          # old/acrobot/rfig/seed_0
    hidden = write_run(tmp_path, "exp", "acrobot", "rfig", 5, STEPS, r[0], variant="_trash")
    assert hidden.is_dir() and (tmp_path / "old" / "acrobot" / "rfig" / "seed_0" / "metrics.csv").is_file()
    assert find_experiments(tmp_path) == ["exp"]
    with pytest.raises(AnalysisError, match="no runs for experiment 'old'"):
        collect(tmp_path, "old")
    coll = collect(tmp_path, "exp")
    assert sorted(r.seed for r in coll.runs) == [0, 1]


def test_variant_overrides_fallbacks_and_mismatch(tmp_path):
    r = truth_returns("acrobot", "rfig", 2)
    ov = {"bonus.lengthscale": 2.0}
    for s in range(2):
        write_run(tmp_path, "e", "acrobot", "rfig", s, STEPS, r[s], overrides=ov, write_variant_yaml=False)
    coll = collect(tmp_path, "e")
    assert coll.method_info["rfig"].overrides_dict == ov  # from summary.json
    assert any(i.kind == "variant" and "no variant.yaml" in i.detail and "summary.json" in i.handling
               for i in coll.issues)
    # variant.yaml and summary.json disagree: reported, variant.yaml trusted.
    vdir = run_path(tmp_path, "e", "acrobot", "rfig", 0, "bonus.lengthscale=2").parent
    (vdir / "variant.yaml").write_text(yaml.safe_dump({"bonus.lengthscale": 3.0}))
    coll = collect(tmp_path, "e")
    assert coll.method_info["rfig"].overrides_dict == {"bonus.lengthscale": 3.0}
    assert any(i.kind == "variant" and "differ" in i.detail for i in coll.issues)
    # A summary.json whose variant is not its folder's: a mismatch warning.
    p = run_path(tmp_path, "e", "acrobot", "rfig", 1, "bonus.lengthscale=2") / "summary.json"
    s = json.loads(p.read_text())
    s["variant"] = "somewhere_else"
    p.write_text(json.dumps(s))
    coll = collect(tmp_path, "e")
    assert any(i.kind == "mismatch" and "somewhere_else" in i.detail for i in coll.issues)


# --------------------------------------------------------------------------- sensitivity


def test_sensitivity_figure_for_a_three_value_sweep(sens_tree, tmp_path):
    from analysis.maker import ReportOptions
    from analysis.makers.sensitivity import find_sweeps, sensitivity_points, use_log_x
    from analysis.report import build_report

    root, truth = sens_tree
    coll = collect(root, "sens")
    sweeps = find_sweeps(coll)
    assert list(sweeps) == ["bonus.lengthscale"]
    assert sweeps["bonus.lengthscale"] == {"rfig": {"rfig": SENS_DEFAULT, "rfig/bonus.lengthscale=0.5": 0.5,
                                                    "rfig/bonus.lengthscale=2": 2.0}}
    agg = compute_aggregates(coll, reps=REPS)
    x, y, lo, hi, n = sensitivity_points(agg, "mountaincar", sweeps["bonus.lengthscale"]["rfig"])
    np.testing.assert_array_equal(x, [0.5, 1.0, 2.0])
    for _xi, yi, li, hii, key in zip(x, y, lo, hi, ["rfig/bonus.lengthscale=0.5", "rfig", "rfig/bonus.lengthscale=2"],
                                    strict=True):
        assert np.isclose(yi, scipy.stats.trim_mean(truth[("mountaincar", key)][:, -1], 0.25))
        assert li <= yi <= hii
    assert list(n) == [5, 5, 5]
    assert not use_log_x([0.5, 1.0, 2.0]) and use_log_x([0.1, 1.0]) and not use_log_x([-1.0, 10.0])

    build_report(coll, tmp_path, ReportOptions(reps=REPS), strict=True, only=["sensitivity"])
    png = tmp_path / "sensitivity_bonus_lengthscale.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    index = (tmp_path / "index.md").read_text()
    assert "## Sensitivity to bonus.lengthscale" in index and "(sensitivity_bonus_lengthscale.png)" in index
    table = (tmp_path / "sensitivity_bonus_lengthscale.md").read_text()
    assert "lengthscale=0.5" in table and "lengthscale=2" in table and "MountainCar" in table


def test_no_sensitivity_figure_for_a_single_value(sens_tree, tmp_path):
    from analysis.maker import ReportOptions
    from analysis.makers.sensitivity import find_sweeps
    from analysis.report import build_report

    root, _ = sens_tree
    coll = collect(root, "sens", variants="bonus.lengthscale=2")  # one value only
    assert find_sweeps(coll) == {}
    coll = collect(root, "sens", variants="base,bonus.lengthscale=2")  # two values: a sweep
    assert find_sweeps(coll) == {"bonus.lengthscale": {"rfig": {"rfig": 1.0, "rfig/bonus.lengthscale=2": 2.0}}}
    coll = collect(root, "sens", methods="PPO,RFIG")  # bases only
    build_report(coll, tmp_path, ReportOptions(reps=REPS), strict=True, only=["sensitivity", "final_scores"])
    assert not list(tmp_path.glob("sensitivity*"))
    assert "## Sensitivity" not in (tmp_path / "index.md").read_text()


# --------------------------------------------------------------------------- honest reporting


def test_exit_code_with_and_without_allow_incomplete(tmp_path, capsys):
    from analysis.__main__ import main

    make_clean_tree(tmp_path, "ok")

    def run(out, *extra):
        code = main(["--results", str(tmp_path), "--experiment", "ok", "--out", str(tmp_path / out), "--reps", "20",
                     "--only", "data,final_scores", *extra])
        return code, capsys.readouterr().err

    assert run("r0")[0] == 0
    # A crashed seed (no summary.json): the report is still written, the exit status says so.
    (run_path(tmp_path, "ok", "acrobot", "rfig", 2) / "summary.json").unlink()
    code, err = run("r1")
    assert code == 4 and "--allow-incomplete" in err and "1 error" in err
    assert "incomplete" in (tmp_path / "r1" / "index.md").read_text()
    code, err = run("r2", "--allow-incomplete")
    assert code == 0, err
    assert (tmp_path / "r2" / "index.md").is_file()
    # --methods / --variants on the command line.
    code, err = run("r3", "--methods", "PPO,RND", "--variants", "base", "--allow-incomplete")
    assert code == 0, err
    assert "2 method(s): PPO, RND" in (tmp_path / "r3" / "index.md").read_text()
    code, err = run("r4", "--methods", "PPO,VIME")  # VIME has no runs: listed as an error
    assert code == 4 and "missing_method" in (tmp_path / "r4" / "index.md").read_text()
    code, err = run("r5", "--methods", "VIME")
    assert code == 1 and "present envs" in err


def test_separated_best_rule():
    from analysis.tables import separated_best

    iv = Interval
    assert separated_best({"a": iv(5, 4, 6), "b": iv(2, 1, 3)}) == "a"
    assert separated_best({"a": iv(5, 2.5, 6), "b": iv(2, 1, 3)}) is None  # overlap
    assert separated_best({"a": iv(5, 3, 6), "b": iv(2, 1, 3)}) is None  # touching counts as overlap
    assert separated_best({"a": iv(5, 4, 6)}) is None  # nothing to compare with
    assert separated_best({"a": iv(5, 4, 6), "b": iv(2, 1, 3), "c": iv(4.5, 3.5, 5)}) is None
    assert separated_best({"a": iv(0.1, 0.0, 0.2), "b": iv(0.5, 0.4, 0.6)}, higher_is_better=False) == "a"
    assert separated_best({"a": iv(5, 4, 6), "b": iv(2, 1, 3)}, counts={"a": 2, "b": 5}) is None  # n < 3


def _write_scores(root, exp, env, finals: dict[str, list[float]]):
    for bonus, vals in finals.items():
        for s, v in enumerate(vals):
            write_run(root, exp, env, bonus, s, STEPS, np.linspace(0, v, T))


def test_bold_only_when_cis_do_not_overlap(tmp_path):
    from analysis.maker import ReportOptions
    from analysis.report import build_report

    # acrobot: rfig far above everyone (bold); mountaincar: rfig and rnd overlap (no bold).
    _write_scores(tmp_path, "b", "acrobot", {"none": [1, 2, 3, 2, 1], "rnd": [3, 4, 5, 4, 3],
                                            "rfig": [50, 51, 52, 51, 50]})
    _write_scores(tmp_path, "b", "mountaincar", {"none": [1, 2, 3, 2, 1], "rnd": [10, 20, 30, 25, 15],
                                                "rfig": [12, 22, 33, 26, 14]})
    coll = collect(tmp_path, "b")
    build_report(coll, tmp_path / "r", ReportOptions(reps=200), strict=True, only=["final_scores"])
    for name in ("final_scores", "final_scores_iqm"):
        lines = (tmp_path / "r" / f"{name}.md").read_text().splitlines()
        acro = next(ln for ln in lines if ln.startswith("| Acrobot"))
        mc = next(ln for ln in lines if ln.startswith("| MountainCar"))
        cells = [c.strip() for c in acro.strip("|").split("|")]
        assert cells[0] == "Acrobot" and cells[3].startswith("**") and "**" not in "".join(cells[1:3]), acro
        assert "**" not in mc, mc
    index = (tmp_path / "r" / "index.md").read_text()
    assert "overlaps no other method's CI" in index and "not meaningful" not in index


def test_few_seeds_say_intervals_are_not_meaningful(tmp_path):
    from analysis.maker import ReportOptions
    from analysis.report import build_report

    _write_scores(tmp_path, "few", "acrobot", {"none": [1, 2], "rfig": [50, 52]})
    coll = collect(tmp_path, "few")
    build_report(coll, tmp_path / "r", ReportOptions(reps=100), strict=True, only=["final_scores"])
    index = (tmp_path / "r" / "index.md").read_text()
    assert "Few seeds" in index and "not meaningful" in index and "as few as 2" in index
    assert "**" not in (tmp_path / "r" / "final_scores.md").read_text()  # never bold with n < 3


def test_final_scores_per_method(lr_tree):
    root, truth = lr_tree
    coll = collect(root, "lrsweep")
    fs = final_scores(coll)
    for env in coll.envs:
        np.testing.assert_allclose(fs[env][f"none/{LR_A}"][1], truth[(env, 1e-4)][:, -1])
        np.testing.assert_allclose(fs[env][f"none/{LR_B}"][1], truth[(env, 1e-3)][:, -1])


def test_env_options_make_tasks_and_leave_the_methods_alone(tmp_path):
    """DeepSea at two sizes and a Brax env on another backend: env options name a task
    (``deepsea[size=30]``), the methods stay PPO and RFIG, each with its fixed colour."""
    rng = np.random.default_rng(0)
    for seed in range(3):
        for bonus, level in (("none", 0.0), ("rfig", 1.0)):
            write_run(tmp_path, "exp", "deepsea", bonus, seed, STEPS, level + rng.normal(size=T) * 0.01)
            write_run(tmp_path, "exp", "deepsea", bonus, seed, STEPS, 2 * level + rng.normal(size=T) * 0.01,
                      overrides={"env.size": 30})
            write_run(tmp_path, "exp", "deepsea", bonus, seed, STEPS, 3 * level + rng.normal(size=T) * 0.01,
                      overrides={"env.size": 9})
            write_run(tmp_path, "exp", "sparse_halfcheetah", bonus, seed, STEPS, level + rng.normal(size=T) * 0.01,
                      overrides={"env.backend": "spring"})
        write_run(tmp_path, "exp", "deepsea", "rfig", seed, STEPS, rng.normal(size=T),
                  overrides={"env.size": 30, "bonus.reg": 10.0})
    coll = collect(tmp_path, "exp")
    assert coll.envs == ["sparse_halfcheetah[backend=spring]", "deepsea", "deepsea[size=9]", "deepsea[size=30]"]
    assert coll.methods == ["none", "rfig", "rfig/bonus.reg=10"]
    assert coll.method_info["rfig"].colour == PALETTE["rfig"]
    assert not [i for i in coll.issues if i.kind in ("mismatch", "variant")], coll.issues
    scores = final_scores(coll)
    assert scores["deepsea[size=30]"]["rfig"][1] == pytest.approx([2.0] * 3, abs=0.1)
    assert set(scores["deepsea[size=30]"]) == {"none", "rfig", "rfig/bonus.reg=10"}
    assert set(scores["sparse_halfcheetah[backend=spring]"]) == {"none", "rfig"}
    # The folders are where the launcher put them.
    r = next(r for r in coll.runs if r.env == "deepsea[size=30]" and r.method == "rfig/bonus.reg=10")
    assert (r.env_folder, r.variant_folder) == ("deepsea", "bonus.reg=10,env.size=30")
    from analysis.names import env_label
    assert env_label("deepsea[size=30]") == "DeepSea (size=30)"
    assert env_label("sparse_halfcheetah[backend=spring]") == "Sparse-HalfCheetah (backend=spring)"

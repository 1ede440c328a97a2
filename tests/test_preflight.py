"""launch.py's refusals and exit codes are what docs/running.md and --help say (rfig_exp.launch.preflight, errors)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rfig_exp.config.errors import ExitCode, exit_codes_help, exit_codes_markdown
from rfig_exp.config.folders import group_options
from rfig_exp.launch.preflight import PreflightError, help_text, preflight, preset_summary

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "running.md").read_text()  # its preflight errors and exit codes, held to the code here


def _between(begin: str, end: str) -> str:
    start = PAGE.index(begin)
    return PAGE[PAGE.index("\n", start) + 1:PAGE.index(end, start)]


def _readme_error_examples() -> list[tuple[str, list[str]]]:
    block = _between("<!-- preflight errors:", "<!-- end of preflight errors -->").strip().strip("`").strip()
    examples: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ python launch.py "):
            examples.append((line.removeprefix("$ python launch.py "), []))
        else:
            examples[-1][1].append(line)
    return examples


def _refusal(argv: list[str]) -> list[str]:
    with pytest.raises(PreflightError) as refused:
        preflight(argv)
    return [f"error: {line}" for line in refused.value.lines]


def _matches(expected: str, actual: str) -> bool:
    return actual == expected or (expected.endswith("...") and actual.startswith(expected[:-3]))


@pytest.mark.parametrize("command,expected", _readme_error_examples(), ids=lambda x: str(x)[:40])
def test_each_error_example_prints_exactly_what_the_page_shows(command, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # results_dir=results (the default) is read relative to here: an empty tree
    actual = _refusal(shlex.split(command))
    assert len(actual) == len(expected) and all(map(_matches, expected, actual)), (expected, actual)


def test_the_page_shows_both_ways_of_mistyping_a_key_and_a_whole_bad_sweep():
    commands = [command for command, _ in _readme_error_examples()]
    assert {"agent.gama=0.9", "+agent.gama=0.9", "-m 'agent.lr=-1,1e-3' 'bonus=rfig,foo'"} <= set(commands)


@pytest.mark.parametrize("override,hint", [("agent.gama=0.9", "agent.gamma"),
                                           ("bonus.lenghtscale=2", "bonus.lengthscale"),
                                           ("env=deepsea env.sise=30", "env.size")])
def test_a_mistyped_key_gets_a_suggestion_with_or_without_plus(override, hint):
    *choice, key = override.split()
    for form in (key, "+" + key):
        (line,) = _refusal([*choice, form])
        assert f"(did you mean {hint}?)" in line, line


def test_a_bonus_value_is_refused_before_any_simulator_is_imported():
    """The brax suite's imports took 10-20 s before a bad bonus value was refused."""
    code = ("import sys\nfrom rfig_exp.launch.preflight import PreflightError, preflight\n"
            "try:\n    preflight(['env=sparse_ant', 'bonus.lengthscale=-2'])\nexcept PreflightError as e:\n"
            "    print(e.lines)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('brax', 'mujoco', 'gymnax')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    errors, imported = out.stdout.strip().splitlines()
    assert "bonus.lengthscale=-2.0 must be > 0" in errors and imported == "[]", out.stdout


def test_every_bad_job_is_counted_once_and_a_bad_choice_is_said_once():
    lines = _refusal(["-m", "env=cartpole,pong", "bonus=rfig,foo,none", "agent.lr=-1,1e-3"])
    assert sum("env=pong is not a known environment" in line for line in lines) == 1
    assert sum("bonus=foo is not a known bonus" in line for line in lines) == 1
    assert sum("agent.lr=-1.0 must be > 0" in line for line in lines) == 2  # cartpole x {rfig, none}
    assert lines[-1] == "error: 10 of 12 jobs are invalid; nothing was started"


def test_a_misspelt_choice_gets_the_closest_name_and_a_far_one_none():
    lines = [line.removeprefix("error: ") for line in _refusal(["-m", "env=cartpol,mountaincar", "bonus=rfgi"])]
    assert any(line.startswith("env=cartpol is not a known environment (did you mean cartpole?); valid: acrobot, ")
               for line in lines), lines
    assert any(line.startswith("bonus=rfgi is not a known bonus (did you mean rfig?); valid: ") for line in lines)
    far = _refusal(["sweep=qqqq"])
    assert far[0].removeprefix("error: ").startswith("sweep=qqqq is not a known sweep preset; valid: "), far


def test_the_pages_exit_code_table_is_the_codes_table():
    table = _between("<!-- exit codes:", "<!-- end of exit codes -->").strip()
    assert table == exit_codes_markdown(), f"docs/running.md's exit codes should read:\n{exit_codes_markdown()}"
    assert set(ExitCode) == {0, 1, 2, 75, 130, 143}


def test_help_lists_every_exit_code_and_every_preset_in_full():
    text = help_text()
    assert "\n".join(exit_codes_help()) in text
    assert all(re.search(rf"^  {code} +\S", text, re.M) for code in map(int, ExitCode))
    flat = " ".join(text.split())
    for name in group_options("sweep"):
        summary = preset_summary(name)
        assert summary.endswith(".") and " ".join(summary.split()) in flat, name
    assert "(agent.ext_coef=0; bonus=none is the entropy-only policy)." in flat  # coverage's, once cut mid-sentence
    assert max(map(len, text.splitlines())) <= 110


def test_a_sweep_that_hydra_could_not_compose_is_refused_with_the_way_out(tmp_path):
    """Hydra composes a sweep with the default choices first (bonus=rfig, which has no lr): the
    jobs alone would all pass, and Hydra would then stop at that first config."""
    (line,) = _refusal(["-m", "bonus=rnd,vime", "bonus.lr=1e-3", f"results_dir={tmp_path}"])
    assert line == ("error: bonus.lr is not a key of bonus=rfig, the config Hydra composes a -m sweep with before "
                    "its jobs: write ++bonus.lr=1e-3 to set it in the jobs")
    preflight(["-m", "bonus=rnd,vime", "++bonus.lr=1e-3", f"results_dir={tmp_path}"])  # passes
    first, last = _refusal(["-m", "bonus=rnd,rfig", "++bonus.lr=1e-3", f"results_dir={tmp_path}"])
    assert "[bonus=rfig] unknown config key: bonus.lr" in first
    assert last == "error: 1 of 2 jobs are invalid; nothing was started"


# A preset of a config folder of one's own: DeepSea at four sizes x every bonus (as the reproduction's
# deepsea_scaling, in campaign/conf/sweep/, runs them).
SIZES_PRESET = ("# @package _global_\n# DeepSea at four sizes. Of a folder of one's own.\nnum_seeds: 8\nhydra:\n"
                "  sweeper:\n    params:\n      env: deepsea\n      env.size: 10,20,30,40\n"
                "      bonus: none,rfig,rnd,vime,hashexplo\n")


def _own_preset(folder: Path) -> str:
    """``folder`` as a config folder with one sweep preset, ``sizes``; its search path override."""
    (folder / "sweep").mkdir(parents=True)
    (folder / "sweep" / "sizes.yaml").write_text(SIZES_PRESET)
    return f"hydra.searchpath=[file://{folder}]"


def test_a_preset_of_a_config_folder_of_ones_own_is_listed_where_its_search_path_is_given(tmp_path):
    search = _own_preset(tmp_path / "mine")
    assert "sizes" not in group_options("sweep")
    assert re.search(r"^  sizes +DeepSea at four sizes\.$", help_text([search]), re.M)
    assert "  sizes " not in help_text() and "  sizes " not in help_text(["bad=["])  # no folder: conf/'s presets
    with pytest.raises(PreflightError) as refused:
        preflight(["-m", "sweep=sizes", f"results_dir={tmp_path}"])
    valid = ", ".join(group_options("sweep"))
    assert refused.value.lines == [f"sweep=sizes is not a known sweep preset; valid: {valid} "
                                   "(a preset of another config folder: add 'hydra.searchpath=[file://DIR]')"]
    with pytest.raises(PreflightError) as refused:
        preflight(["-m", search, "sweep=nosuch", f"results_dir={tmp_path}"])
    assert "valid: coverage, paper, sizes, smoke " in refused.value.lines[0]


def test_a_command_line_value_replaces_the_presets_sweep_of_that_env_option(tmp_path):
    """``-m sweep=sizes env.size=40`` runs DeepSea 40 only: the command line's single value replaces
    the preset's ``env.size: 10,20,30,40`` (Hydra's rule for one key given twice), in the plan that
    preflight makes for the sweeper, though Hydra composes the sweep with the option as ``++env.size``."""
    from rfig_exp.launch.env_options import for_primary_compose
    from rfig_exp.launch.preflight import expand_jobs
    from rfig_exp.launch.sweep_plan import compose_primary, plan_sweep

    line = [_own_preset(tmp_path), "sweep=sizes", "env=deepsea", "env.size=40"]
    jobs = expand_jobs(line, multirun=True)
    assert len(jobs) == 5
    for job in jobs:
        assert [o for o in job if o.lstrip("+").startswith("env.size")] == ["env.size=40"]
    assert sorted(o.split("=")[1] for job in jobs for o in job if o.startswith("bonus=")) == \
        sorted(["none", "rfig", "rnd", "vime", "hashexplo"])
    handed = for_primary_compose(line)
    assert "env.size" not in plan_sweep(compose_primary(handed), handed).varying
    # without the single value the preset's four sizes stay
    assert len(expand_jobs(line[:3], multirun=True)) == 20


def test_planning_writes_and_prints_nothing_and_preflight_adds_the_manifest(tmp_path, capsys):
    """plan_launch (what launch.py and make estimate share) is a value: no file under the results
    folder, no console line unless one asks for them; preflight says the same lines and appends the
    sweep's runs to its experiment's manifest."""
    from rfig_exp.launch.preflight import plan_launch

    line = ["env=cartpole", "bonus=none,rnd", "seed=range(4)", "seeds_per_job=2", f"results_dir={tmp_path}"]
    plan = plan_launch(line, multirun=True)
    assert plan.runs == 8 and list(tmp_path.iterdir()) == [] and capsys.readouterr().out == ""
    said: list[str] = []
    assert plan_launch(line, multirun=True, say=said.append).runs == 8
    assert said[-1].startswith("[sweep] 8 runs as ")
    assert preflight(["-m", *line]).runs == 8
    assert capsys.readouterr().out.splitlines()[-1].startswith("[sweep] 8 runs as ")
    manifest = (tmp_path / "default" / "manifest.jsonl").read_text().splitlines()
    assert len(manifest) == 4 and all('"cartpole"' in entry for entry in manifest)

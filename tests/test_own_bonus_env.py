"""A bonus and an env of the user's own (docs/extending.md): the worked example of
``examples/own_bonus_env/`` (two modules and their YAML files in a config folder of the user's),
copied into a folder outside the package, runs through ``launch.py -m`` with Hydra's search path
and ``python -m analysis`` there, and each way of getting it wrong is one error line naming its key,
before anything is created or compiled."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "own_bonus_env"
SEARCH = "hydra.searchpath=[file://my_conf]"
# CartPole-sized batches: long enough for the chain's episodes to end in every window
SMALL = ["agent.total_timesteps=8192", "agent.num_envs=8", "agent.num_steps=64", "agent.num_minibatches=4",
         "eval_frequency=2048", "wandb.mode=disabled"]


def _user_folder(tmp_path: Path) -> Path:
    user = tmp_path / "user"
    shutil.copytree(EXAMPLE, user, ignore=shutil.ignore_patterns("__pycache__"))
    return user


def _run(cwd: Path, *args: str, timeout: float = 480) -> subprocess.CompletedProcess:
    """A command as a user runs it from their own folder: their modules on PYTHONPATH (``.``), the
    project's checkout (for ``python -m analysis``) after them."""
    env = dict(os.environ, PYTHONPATH=f".{os.pathsep}{REPO}", WANDB_MODE="disabled")
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.extended
@pytest.mark.timeout(900)
def test_a_users_bonus_and_env_run_through_a_sweep_and_the_report(tmp_path):
    user = _user_folder(tmp_path)
    train = _run(user, str(REPO / "launch.py"), "-m", SEARCH, "env=chain", "bonus=count", "seed=0,1",
                 "env.length=6", *SMALL, "results_dir=results", "experiment=own")
    assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]
    (variant,) = (user / "results" / "own" / "chain" / "count").iterdir()
    assert variant.name.startswith("agent.num_envs=8") and "env.length: 6" in (variant / "variant.yaml").read_text()
    for seed in (0, 1):
        run = variant / f"seed_{seed}"
        assert json.loads((run / "summary.json").read_text())["status"] == "complete"
        assert "bonus/cells_visited" in (run / "metrics.csv").read_text().splitlines()[0].split(",")
        assert "module: my_bonus" in (run / "config.yaml").read_text()

    status = _run(user, "-m", "rfig_exp.results.status", "--results", "results", "--experiment", "own")
    assert status.returncode == 0 and "chain" in status.stdout and "count" in status.stdout, status.stderr

    analysis = _run(user, "-m", "analysis", "--results", "results", "--experiment", "own", "--out", "report",
                    "--reps", "100")
    assert analysis.returncode == 0, analysis.stdout[-3000:] + analysis.stderr[-3000:]
    index = (user / "report" / "index.md").read_text()
    assert "SimHash count" in index and "Chain" in index and "| warning | bonus" not in index

    # without the user's module the report still draws the bonus, under its name
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.move(user / "results", elsewhere / "results")
    analysis = _run(elsewhere, "-m", "analysis", "--results", "results", "--experiment", "own", "--out", "report",
                    "--reps", "100")
    assert analysis.returncode == 0, analysis.stdout[-3000:] + analysis.stderr[-3000:]
    index = (elsewhere / "report" / "index.md").read_text()
    assert "SimHash count" not in index and "| count |" in index and "no module my_bonus can be imported" in index


def _write(folder: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(textwrap.dedent(text).lstrip())


@pytest.mark.timeout(300)
def test_each_wrong_module_or_name_is_one_error_line_naming_its_key(tmp_path):
    user = _user_folder(tmp_path)
    _write(user, {
        "my_conf/bonus/ghost.yaml": "name: ghost\nmodule: no_such_module\nbeta: 0.5\n",
        "my_conf/bonus/bare.yaml": "name: bare\nmodule: my_env\nbeta: 0.5\n",       # declares no bonus
        "my_conf/bonus/mine.yaml": "name: rnd\nmodule: my_bonus\nbeta: 0.5\n",      # a built-in's name
        "my_conf/env/lost.yaml": "name: lost\nmodule: lost_env\n",
    })
    bad = _run(user, str(REPO / "launch.py"), "-m", SEARCH, "env=chain,lost", "bonus=ghost,bare,mine,count",
               "env.length=1", "results_dir=results")
    out = bad.stdout + bad.stderr
    assert bad.returncode == 2, out
    for line in ("bonus.module=no_such_module: no module no_such_module can be imported",
                 "bonus.module=my_env: must declare one BonusSettings subclass with name = 'bare'",
                 "bonus.name=rnd is a built-in bonus: the bonus of bonus.module=my_bonus needs a name of its own",
                 "env.module=lost_env: no module lost_env can be imported",
                 "env.length=1 must be an integer >= 2",
                 "8 of 8 jobs are invalid; nothing was started"):
        assert line in out, out
    assert not (user / "results").exists()

    _write(user, {"my_conf/env/cartpole.yaml": "name: cartpole\nmodule: my_env\nlength: 4\n"})
    shadowed = _run(user, str(REPO / "launch.py"), SEARCH, "env=chain", "bonus=count", "results_dir=results")
    assert shadowed.returncode == 2, shadowed.stdout + shadowed.stderr
    assert "error: hydra.searchpath: my_conf/env/cartpole.yaml has the name of the built-in env cartpole" in \
        shadowed.stderr, shadowed.stderr
    assert not (user / "results").exists()


def test_a_users_settings_are_read_by_their_declaration(monkeypatch):
    """In one process, as preflight reads them: the YAML's keys are the declared settings, each
    checked by its rule; a key that the module does not declare is refused by name."""
    from rfig_exp.bonuses import parse_bonus
    from rfig_exp.config.errors import ConfigError
    from rfig_exp.envs import parse_env

    monkeypatch.syspath_prepend(str(EXAMPLE))
    node = {"name": "count", "module": "my_bonus", "beta": 0.5, "bits": 4, "scale": 2.0}
    settings = parse_bonus(node, batch_size=64)
    assert (settings.bits, settings.scale, type(settings).label) == (4, 2.0, "SimHash count")
    with pytest.raises(ConfigError, match=r"^bonus\.sclae is not a setting of count; my_bonus declares beta, bits, "):
        parse_bonus({**node, "sclae": 2.0}, batch_size=64)
    with pytest.raises(ConfigError, match=r"^bonus\.bits=0 must be an integer >= 1$"):
        parse_bonus({**node, "bits": 0}, batch_size=64)
    env = parse_env({"name": "chain", "module": "my_env", "length": 5})
    assert (env.name, env.suite_id, env.length) == ("chain", "my_env", 5)
    with pytest.raises(ConfigError, match=r"^env\.size is not an option of chain \(my_env\); valid: length$"):
        parse_env({"name": "chain", "module": "my_env", "length": 5, "size": 3})


def test_the_docs_commands_give_each_tool_what_it_requires():
    """docs/extending.md's status and analysis commands, as written, are accepted by those tools'
    own argument parsers (the analysis one names the results folder it requires)."""
    import shlex

    from analysis.__main__ import build_parser

    text = (REPO / "docs" / "extending.md").read_text()
    analysis = next(line for line in text.splitlines() if " -m analysis " in line)
    args = shlex.split(analysis.split(" -m analysis ", 1)[1])
    parsed = build_parser().parse_args(args)
    assert (str(parsed.results), parsed.experiment) == ("results", "mine")


def test_the_example_bonus_is_made_by_create_from_its_module(monkeypatch):
    """The worked example's bonus, made for a training loop of one's own by its module's name."""
    import jax

    from rfig_exp.bonuses import DiscreteSpace, create

    monkeypatch.syspath_prepend(str(EXAMPLE))
    bonus, hp = create("count", 3, DiscreteSpace(2), 64, module="my_bonus", bits=4)
    projection, counts = bonus.init(jax.random.PRNGKey(0), None, hp)
    assert projection.shape == (3, 4) and counts.shape == (16,)

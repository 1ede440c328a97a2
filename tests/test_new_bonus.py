"""A new bonus is one module, one YAML and its doc page (docs/architecture.md): a toy bonus written
into a copy of the project, with nothing else of it edited, is listed by launch.py, refused by its
own declared rule, trained, drawn by ``python -m analysis`` with its declared label and colour, and
taken through the tests that run every bonus (they read the declared bonuses, so the copy's tests
pass with it unedited)."""

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
# long enough for CartPole episodes to end in every window the report reads
SMALL = ["agent.total_timesteps=8192", "agent.num_envs=8", "agent.num_steps=64", "agent.num_minibatches=4",
         "eval_frequency=2048", "wandb.mode=disabled"]

TOY_MODULE = '''
    """Toy: the distance of s' from a running mean of the states seen (docs/bonuses/toy.md)."""

    from __future__ import annotations

    from dataclasses import dataclass
    from typing import ClassVar

    from rfig_exp.bonuses.settings import BonusSettings
    from rfig_exp.config.settings import static, traced
    from rfig_exp.config.validation import Count, Number


    @dataclass(frozen=True)
    class ToySettings(BonusSettings):
        name: ClassVar[str] = "toy"
        label: ClassVar[str] = "Toy"
        colour: ClassVar[str] = "#123456"
        role: ClassVar[str] = "baseline"

        momentum: float = traced(0.9, Number(0.0, 1.0), doc="of the running mean")
        power: int = static(2, Count(1), doc="r = sum_i |s'_i - mean_i| ** power")


    def make(settings: ToySettings, obs_shape, action_space):
        import jax.numpy as jnp

        from rfig_exp.bonuses.base import Bonus, flat_states

        def init(key, warmup_obs, hp):
            return jnp.mean(flat_states(warmup_obs, len(obs_shape)), axis=0)

        def reward(mean, batch, hp):
            x = flat_states(batch.next_obs, len(obs_shape))
            return jnp.sum(jnp.abs(x - mean) ** settings.power, axis=-1).reshape(batch.terminated.shape), {}

        def update(mean, batch, key, hp):
            x = flat_states(batch.next_obs, len(obs_shape))
            mean = hp.momentum * mean + (1.0 - hp.momentum) * jnp.mean(x, axis=0)
            return mean, {"mean_norm": jnp.sqrt(jnp.sum(jnp.square(mean)))}

        return Bonus(settings.name, init, reward, update)
'''
# its header by hand; python -m rfig_exp.spec.reference writes the rest from the declarations
TOY_YAML = """
    # Toy: the distance of s' from a running mean of the states seen (docs/bonuses/toy.md).
    name: toy
"""
TOY_DOC = """
    # Toy

    The distance of a state from a running mean of the states seen: an example of a new bonus.
"""


def project_copy(root: Path, added: dict[str, str]) -> Path:
    """A copy of the project's code and configs under ``root`` with the files ``added`` (path -> text)."""
    tree = root / "tree"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for part in ("src", "conf", "analysis", "campaign", "tests"):
        shutil.copytree(REPO / part, tree / part, ignore=skip)
    for part in ("launch.py", "pyproject.toml", "docs/configuration.md"):
        (tree / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / part, tree / part)
    for path, text in added.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(textwrap.dedent(text).lstrip())
    return tree


def _toy_tree(root: Path) -> Path:
    """A copy of the project with the toy bonus's three files added."""
    return project_copy(root, {"src/rfig_exp/bonuses/toy.py": TOY_MODULE, "conf/bonus/toy.yaml": TOY_YAML,
                               "docs/bonuses/toy.md": TOY_DOC})


def _run(tree: Path, *args: str, timeout: float = 480) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=f"{tree / 'src'}{os.pathsep}{tree}", WANDB_MODE="disabled")
    return subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.extended
@pytest.mark.timeout(900)
def test_a_toy_bonus_needs_only_its_module_yaml_and_doc_page(tmp_path):
    tree, results = _toy_tree(tmp_path), tmp_path / "results"
    written = _run(tree, "-m", "rfig_exp.spec.reference")
    assert written.returncode == 0 and "wrote conf/bonus/toy.yaml" in written.stdout, written.stdout + written.stderr
    assert "power: 2" in (tree / "conf/bonus/toy.yaml").read_text() and "### `bonus=toy`" in \
        (tree / "docs/configuration.md").read_text()
    assert "toy" in _run(tree, "launch.py", "--help").stdout

    bad = _run(tree, "launch.py", "bonus=toy", "bonus.power=0", f"results_dir={results}")
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "error: bonus.power=0 must be an integer >= 1" in bad.stdout + bad.stderr
    assert not results.exists()

    train = _run(tree, "launch.py", "env=cartpole", "bonus=toy", "num_seeds=2", *SMALL, f"results_dir={results}",
                 "experiment=toy")
    assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]
    for seed in (0, 1):
        (run,) = (results / "toy" / "cartpole" / "toy").glob(f"*/seed_{seed}")
        assert json.loads((run / "summary.json").read_text())["status"] == "complete"
        assert "bonus/mean_norm" in (run / "metrics.csv").read_text().splitlines()[0].split(",")

    report = tmp_path / "report"
    analysis = _run(tree, "-m", "analysis", "--results", str(results), "--experiment", "toy", "--out", str(report),
                    "--reps", "100")
    assert analysis.returncode == 0, analysis.stdout[-3000:] + analysis.stderr[-3000:]
    assert "Toy" in (report / "index.md").read_text()
    assert "| Toy " in (report / "method_comparison.md").read_text()
    names = _run(tree, "-c", "from analysis import names; print(names.method_colour('toy'), *names.METHOD_ORDER)")
    assert names.stdout.split() == ["#123456", "none", "noise", "rnd", "vime", "hashexplo", "toy", "rfig"], names.stderr

    # the tests that run every bonus: its cells of the bonus x env matrix, the library's create,
    # and the lists of bonus names that the settings, the YAML files and the modules must agree on
    every_bonus = _run(tree, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
                       "tests/test_bonus_env_matrix.py", "tests/test_library.py", "tests/test_settings.py",
                       "-k", "toy or bonus_names or every_bonus or unknown_bonus or written_from or documented")
    assert every_bonus.returncode == 0, every_bonus.stdout[-3000:] + every_bonus.stderr[-3000:]
    assert " passed" in every_bonus.stdout and "deselected" in every_bonus.stdout
    ran = _run(tree, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider", "-m", "not slow",
               "tests/test_bonus_env_matrix.py", "tests/test_library.py", "-k", "toy").stdout
    assert "test_one_update_of_every_bonus_on_every_observation_kind[toy-obs2d]" in ran, ran[-2000:]
    assert "test_create_gives_the_trainers_bonus_state_and_rewards[toy]" in ran, ran[-2000:]

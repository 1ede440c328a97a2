"""A new env suite is one module, a YAML per env and its doc page (docs/extending.md): a toy suite
written into a copy of the project, with nothing else of it edited, is listed by launch.py, refused
by its own declared rule, written into conf/ and docs/configuration.md, trained, split one seed per
process on a CPU as it declares, drawn by ``python -m analysis`` with its declared label and order,
and taken through the tests that run every env (they read the declared envs, so the copy's tests
pass with it unedited)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_new_bonus import SMALL, _run, project_copy

REPO = Path(__file__).resolve().parents[1]

TOY_SUITE = '''
    """Toy chains: ``length`` states, start at the left end, the right end pays 1 (docs/chains.md)."""

    from __future__ import annotations

    from dataclasses import dataclass
    from typing import Any, ClassVar, Mapping

    from rfig_exp.config.settings import setting
    from rfig_exp.config.validation import Count
    from rfig_exp.envs.settings import DeclaredEnv, EnvSettings


    @dataclass(frozen=True)
    class ChainSettings(EnvSettings):
        suite: ClassVar[str] = "chains"
        section: ClassVar[str | None] = "Chains: `env=chain_*`"

        length: int = setting(10, Count(2), doc="states of the chain")

        @classmethod
        def seeds_vmap_on_cpu(cls, options: Mapping[str, Any]) -> bool:
            return False  # as a suite that wedges XLA's CPU runtime would declare


    ENVS = (DeclaredEnv("chain_short", "short", ChainSettings, "Chain-Short", 0),
            DeclaredEnv("chain_long", "long", ChainSettings, "Chain-Long", 100))


    def make(settings: ChainSettings):
        import jax
        import jax.numpy as jnp

        from rfig_exp.envs.base import DiscreteSpace, Env, EnvStep

        n, limit = settings.length, 2 * settings.length
        start = (jnp.int32(0), jnp.int32(0))

        def observe(position):
            return jax.nn.one_hot(position, n, dtype=jnp.float32)

        def reset(key):
            return observe(0), start

        def step(key, state, action):
            position, steps = state
            position = jnp.clip(position + 2 * action.astype(jnp.int32) - 1, 0, n - 1)
            steps = steps + 1
            terminated = position == n - 1
            truncated = (steps >= limit) & ~terminated
            done = terminated | truncated
            after = jax.tree.map(lambda a, b: jnp.where(done, a, b), start, (position, steps))
            return EnvStep(obs=observe(after[0]), state=after, reward=terminated.astype(jnp.float32),
                           terminated=terminated, truncated=truncated, final_obs=observe(position))

        return Env(name=settings.name, obs_shape=(n,), action_space=DiscreteSpace(2), max_episode_steps=limit,
                   reset=reset, step=step)
'''
TOY_DOC = """
    # Chains

    A chain of states with a reward at the far end: an example of a new suite.
"""
# the files a new suite is (docs/extending.md): its module, a YAML per env (its header by hand;
# python -m rfig_exp.spec.reference writes the rest) and its doc page
TOY_FILES = {"src/rfig_exp/envs/suites/chains.py": TOY_SUITE, "docs/chains.md": TOY_DOC,
             **{f"conf/env/chain_{n}.yaml": f"# a {n} chain (docs/chains.md)\nname: chain_{n}\n"
                for n in ("short", "long")}}


def _toy_tree(root: Path) -> Path:
    """A copy of the project with the toy suite's files added."""
    return project_copy(root, TOY_FILES)


@pytest.mark.extended
@pytest.mark.timeout(900)
def test_a_toy_suite_needs_only_its_module_yamls_and_doc_page(tmp_path):
    tree, results = _toy_tree(tmp_path), tmp_path / "results"
    written = _run(tree, "-m", "rfig_exp.spec.reference")
    assert written.returncode == 0, written.stdout + written.stderr
    assert "wrote conf/env/chain_short.yaml" in written.stdout, written.stdout
    assert "length: 10" in (tree / "conf/env/chain_long.yaml").read_text()
    assert "### Chains: `env=chain_*`" in (tree / "docs/configuration.md").read_text()
    assert "chain_short" in _run(tree, "launch.py", "--help").stdout

    bad = _run(tree, "launch.py", "env=chain_short", "env.length=1", f"results_dir={results}")
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "error: env.length=1 must be an integer >= 2" in bad.stdout + bad.stderr
    assert not results.exists()

    split = _run(tree, "-c", "from rfig_exp.launch.grouping import plan\n"
                 "jobs, lines = plan([['env=chain_short', 'seed=0', 'num_seeds=2']], 'auto', False, 'mountaincar')\n"
                 "print(jobs, lines)")
    assert "'seed=0', 'num_seeds=1'], ['env=chain_short', 'seed=1', 'num_seeds=1']]" in split.stdout, split.stderr

    for env in ("chain_short", "chain_long"):
        train = _run(tree, "launch.py", f"env={env}", "bonus=none", "num_seeds=2", *SMALL, f"results_dir={results}",
                     "experiment=toy")
        assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]
        (run,) = (results / "toy" / env / "none").glob("*/seed_0")
        assert json.loads((run / "summary.json").read_text())["status"] == "complete"

    report = tmp_path / "report"
    analysis = _run(tree, "-m", "analysis", "--results", str(results), "--experiment", "toy", "--out", str(report),
                    "--reps", "100")
    assert analysis.returncode == 0, analysis.stdout[-3000:] + analysis.stderr[-3000:]
    index = (report / "index.md").read_text()
    assert "Chain-Short" in index and "Chain-Long" in index
    names = _run(tree, "-c", "from analysis import names\n"
                 "print(*names.sort_envs(['chain_long', 'acrobot', 'chain_short']))")
    assert names.stdout.split() == ["chain_short", "acrobot", "chain_long"], names.stderr

    # the tests that run every env: each steps, and the config files and the declarations agree
    every_env = _run(tree, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
                     "tests/test_envs.py", "tests/test_grid.py", "tests/test_settings.py",
                     "-k", "chain or registries_agree or written_from")
    assert every_env.returncode == 0, every_env.stdout[-3000:] + every_env.stderr[-3000:]
    ran = _run(tree, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider", "tests/test_envs.py",
               "-k", "chain").stdout
    assert "test_every_registered_env_steps[chain_short]" in ran, ran[-2000:]

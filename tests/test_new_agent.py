"""An agent is a component like a bonus and an env suite: found by name, known to the run loop and the
run spec only through ``rfig_exp.agents.contract``. The run layer, the spec layer and the agent-agnostic
glue import no agent's package, and a new agent is its package, its YAML and its doc page: a toy agent
(a random policy that still feeds the bonus) written into a copy of the project, with nothing else of
it edited, is listed by ``launch.py --help``, refused by its own declared rule and trained through
``launch.py`` into a complete result of its own folder."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from test_new_bonus import _run, project_copy

from rfig_exp.agents import agent_names

SRC = Path(__file__).resolve().parents[1] / "src" / "rfig_exp"
AGENT_PACKAGES = tuple(f"rfig_exp.agents.{name}" for name in agent_names())  # every agent, found by name
# what must know no agent: the run loop, the run spec, and the agent's side of a bonus
AGNOSTIC = [*sorted((SRC / "run").glob("*.py")), *sorted((SRC / "spec").glob("*.py")),
            *(SRC / "agents" / name for name in ("__init__.py", "contract.py", "intrinsic.py", "replay.py",
                                                 "normalization.py", "returns.py", "metrics.py", "seeds.py"))]


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, at its top, inside a function or for the type checker only:
    ``from a.b import c`` counts as ``a.b`` and ``a.b.c`` (``c`` may be a module)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out += [(node.lineno, node.module), *((node.lineno, f"{node.module}.{a.name}") for a in node.names)]
    return out


@pytest.mark.parametrize("path", AGNOSTIC, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_loop_the_spec_and_the_glue_import_no_agent(path):
    named = [f"line {line}: {module}" for line, module in _imported_modules(path)
             if any(module == p or module.startswith(p + ".") for p in AGENT_PACKAGES)]
    assert not named, f"{path.relative_to(SRC)} imports an agent's package: {named}"


def test_the_import_check_sees_an_agent_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from rfig_exp.agents import ppo\n"
                      "    from rfig_exp.agents.dqn.train import as_arrays\n")
    assert [m for _, m in _imported_modules(module) if m.startswith("rfig_exp.agents.")] == [
        "rfig_exp.agents.ppo", "rfig_exp.agents.dqn.train", "rfig_exp.agents.dqn.train.as_arrays"]


def test_agents_are_found_by_name():
    from rfig_exp.agents import agent_names, settings_class
    from rfig_exp.agents.contract import AgentSettingsBase

    assert {"ppo", "dqn"} <= set(agent_names())
    for name in agent_names():
        cls = settings_class(name)
        assert issubclass(cls, AgentSettingsBase) and cls.name == name and cls.label
        assert {"total_timesteps", "obs_clip"} <= set(cls.defaults())


TOY_CONFIG = '''
    """Toy: a uniformly random policy that feeds the bonus (docs/agents/toy.md)."""

    from __future__ import annotations

    import dataclasses
    from dataclasses import dataclass
    from typing import ClassVar, NamedTuple

    from rfig_exp.agents.contract import AgentSettingsBase, LoopSpec, obs_clip_setting
    from rfig_exp.config.settings import Settings, setting, static
    from rfig_exp.config.validation import Count, Integer


    @dataclass(frozen=True)
    class ToySpec(Settings):
        num_envs: int = dataclasses.field(kw_only=True)
        updates_per_window: int = dataclasses.field(kw_only=True)


    @dataclass(frozen=True)
    class ToySettings(AgentSettingsBase):
        name: ClassVar[str] = "toy"
        label: ClassVar[str] = "Toy"
        UPDATE_KEYS: ClassVar[str] = "agent.num_envs"

        num_envs: int = static(4, Count(1), doc="random-policy envs per seed")
        total_timesteps: int = setting(4096, Integer(1), doc="env steps per seed")
        obs_clip: float = obs_clip_setting()

        steps_per_update = bonus_batch_size = parallel_envs = property(lambda self: self.num_envs)
        warmup_env_steps = property(lambda self: self.num_envs)

        def train_spec(self, loop: LoopSpec) -> ToySpec:
            return ToySpec(num_envs=self.num_envs, updates_per_window=loop.updates_per_window)

        def hparams(self, beta, bonus):
            return ToyHparams(self, float(beta), bonus)


    class ToyHparams(NamedTuple):
        agent: ToySettings
        beta: float
        bonus: object

        obs_clip = property(lambda self: self.agent.obs_clip)
'''
TOY_TRAIN = '''
    """Toy's trainer: each update steps every env once at random, and the bonus learns the states."""

    from typing import NamedTuple

    import jax
    import jax.numpy as jnp

    from rfig_exp.agents import intrinsic, warmup
    from rfig_exp.agents.contract import Readout, Trainer
    from rfig_exp.agents.metrics import EPISODES_FINISHED, UpdateMetrics, reduce_window
    from rfig_exp.agents.seeds import map_seeds
    from rfig_exp.bonuses.base import BonusBatch, float32_hparams


    def as_arrays(hp):
        return type(hp)(float32_hparams(hp.agent), jnp.asarray(hp.beta, jnp.float32), float32_hparams(hp.bonus))


    class State(NamedTuple):
        explored: intrinsic.IntrinsicState
        env_state: object
        obs: jax.Array
        ret: jax.Array
        update: jax.Array
        key: jax.Array


    def make_trainer(spec, env, bonus):
        n, actions = spec.num_envs, env.action_space.num_actions

        def init(key, hp):
            k_warm, k_bonus, k_reset, key = jax.random.split(key, 4)
            obs, nxt = warmup.env_rollout(k_warm, env, n, 1, advance=True)
            explored = intrinsic.init(bonus, k_bonus, warmup.warmup_states(obs, nxt), n, hp)
            obs, env_state = jax.vmap(env.reset)(jax.random.split(k_reset, n))
            return State(explored, env_state, obs, jnp.zeros(n), jnp.zeros((), jnp.int32), key)

        def update(state, hp):
            key, k_act, k_env, k_bonus = jax.random.split(state.key, 4)
            action = jax.random.randint(k_act, (n,), 0, actions)
            out = jax.vmap(env.step)(jax.random.split(k_env, n), state.env_state, action)
            batch = BonusBatch(state.obs[None], action[None], out.final_obs[None], out.terminated[None],
                               out.truncated[None])
            explored, r_int, _ = intrinsic.observe(bonus, state.explored, batch, k_bonus, hp)
            ret, done = state.ret + out.reward, out.terminated | out.truncated
            metrics = UpdateMetrics({"intrinsic_reward": r_int.mean()}, {EPISODES_FINISHED: done.sum() * 1.0},
                                    {"episode_return": jnp.where(done, ret, 0.0).sum()}, {})
            return State(explored, out.state, out.obs, jnp.where(done, 0.0, ret), state.update + 1, key), metrics

        def run_window(states, hp):
            states, metrics = jax.lax.scan(lambda s, _: map_seeds(update, s, hp), states, None,
                                           length=spec.updates_per_window)
            return states, reduce_window(metrics)

        return Trainer(init, run_window, lambda s: Readout(s.explored.bonus, None))
'''
TOY_YAML = """
    # Toy: a uniformly random policy that feeds the bonus (docs/agents/toy.md).
    name: toy
"""
TOY_DOC = """
    # Toy

    A uniformly random policy whose states the bonus learns: an example of a new agent.
"""


def test_a_toy_agent_needs_only_its_package_yaml_and_doc_page(tmp_path):
    tree = project_copy(tmp_path, {"src/rfig_exp/agents/toy/__init__.py": '"""Toy."""\n',
                                   "src/rfig_exp/agents/toy/config.py": TOY_CONFIG,
                                   "src/rfig_exp/agents/toy/train.py": TOY_TRAIN,
                                   "conf/agent/toy.yaml": TOY_YAML, "docs/agents/toy.md": TOY_DOC})
    results = tmp_path / "results"
    written = _run(tree, "-m", "rfig_exp.spec.reference")
    assert written.returncode == 0 and "wrote conf/agent/toy.yaml" in written.stdout, written.stdout + written.stderr
    assert "num_envs: 4" in (tree / "conf/agent/toy.yaml").read_text()
    assert "`agent=toy` (Toy)" in (tree / "docs/configuration.md").read_text()
    assert "agent=toy" in _run(tree, "launch.py", "--help").stdout

    bad = _run(tree, "launch.py", "agent=toy", "agent.num_envs=0", f"results_dir={results}")
    assert bad.returncode == 2 and "agent.num_envs=0 must be an integer >= 1" in bad.stdout + bad.stderr, bad.stderr
    assert not results.exists()

    train = _run(tree, "launch.py", "agent=toy", "env=cartpole", "bonus=rnd", "eval_frequency=1024",
                 "wandb.mode=disabled", "compile_cache=null", f"results_dir={results}", timeout=300)
    assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]
    (run,) = (results / "default" / "cartpole" / "rnd").glob("*/seed_0")
    assert run.parent.name == "agent=toy,eval_frequency=1024"  # the agent names the variant: never PPO's folder
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["env_steps"] == 4096 and summary["num_windows"] == 4
    assert "intrinsic_reward" in (run / "metrics.csv").read_text().splitlines()[0].split(",")

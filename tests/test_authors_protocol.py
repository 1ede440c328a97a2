"""The RFIG authors' protocol as declared agent settings (docs/fidelity.md), each against an
independent computation: plain float64 loops for the GAEs, numpy for the standardisations and the
running std, and the trainer's own wiring on tiny runs."""

import csv

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_gae import loop_extrinsic_gae

from rfig_exp.agents import intrinsic
from rfig_exp.agents.normalization import rms_init
from rfig_exp.agents.ppo import losses
from rfig_exp.agents.ppo.train import as_arrays, make_trainer
from rfig_exp.bonuses import make_bonus
from rfig_exp.config.errors import ConfigError
from rfig_exp.envs import make_env
from rfig_exp.run.experiment import run_experiment
from rfig_exp.spec.run_spec import build_run_spec


def loop_done_masked_gae(r, v, v_next, done, gamma, lam):
    """The authors' episodic GAE as a plain loop: one ``done`` flag (time limits included) masks
    both the bootstrap and the trace; ``v_next[t]`` is the value of the next observation."""
    T, B = r.shape
    adv = np.zeros((T, B))
    for b in range(B):
        running = 0.0
        for t in reversed(range(T)):
            keep = 0.0 if done[t, b] else 1.0
            running = r[t, b] + gamma * keep * v_next[t, b] - v[t, b] + gamma * lam * keep * running
            adv[t, b] = running
    return adv


@pytest.fixture
def rollout():
    rng = np.random.default_rng(3)
    T, B = 16, 4
    term = np.zeros((T, B), bool)
    trunc = np.zeros((T, B), bool)
    term[4, 0] = trunc[9, 0] = trunc[2, 1] = term[15, 2] = trunc[15, 3] = term[7, 3] = True
    return dict(r=rng.exponential(size=(T, B)), v=rng.normal(size=(T, B)), v_final=rng.normal(size=(T, B)),
                term=term, trunc=trunc)


def test_time_limit_as_terminal_is_the_authors_done_masked_gae(rollout):
    b = rollout
    term, trunc = losses.time_limit_as_terminal(jnp.asarray(b["term"]), jnp.asarray(b["trunc"]))
    got = losses.extrinsic_gae(b["r"], b["v"], b["v_final"], np.asarray(term, float), np.asarray(trunc, float),
                               0.99, 0.95)
    want = loop_done_masked_gae(b["r"], b["v"], b["v_final"], b["term"] | b["trunc"], 0.99, 0.95)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    # and it is not the truncation-aware GAE: the truncated step at (2, 1) loses its bootstrap
    aware = loop_extrinsic_gae(b["r"], b["v"], b["v_final"], b["term"], b["trunc"], 0.99, 0.95)
    assert abs(aware[2, 1] - want[2, 1]) > 1e-3


def test_episodic_intrinsic_gae_is_cut_at_episode_ends_unlike_the_stream(rollout):
    # the episodic intrinsic GAE is the extrinsic stream's GAE of the intrinsic reward: an end's
    # reward is not followed by the next episode's values
    b = rollout
    got = np.asarray(losses.extrinsic_gae(b["r"], b["v"], b["v_final"], b["term"].astype(float),
                                          b["trunc"].astype(float), 0.99, 0.95))
    want = loop_extrinsic_gae(b["r"], b["v"], b["v_final"], b["term"], b["trunc"], 0.99, 0.95)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    stream = np.asarray(losses.intrinsic_gae(b["r"], b["v"], b["v"][-1], 0.99, 0.95))
    assert abs(stream[4, 0] - got[4, 0]) > 1e-3


def test_separate_standardisation_matches_numpy():
    rng = np.random.default_rng(0)
    a_ext, a_int = rng.normal(3.0, 5.0, 256), rng.exponential(0.01, 256)
    z = lambda x: (x - x.mean()) / (x.std() + 1e-8)  # noqa: E731
    got = np.asarray(losses.separately_standardized(jnp.asarray(a_ext, jnp.float32), jnp.asarray(a_int, jnp.float32),
                                                    2.0, 1.0))
    np.testing.assert_allclose(got, 2.0 * z(a_ext) + 1.0 * z(a_int), rtol=1e-4, atol=1e-5)
    assert got.std() == pytest.approx(np.sqrt(5 + 4 * np.corrcoef(a_ext, a_int)[0, 1]), rel=1e-3)
    alone = np.asarray(losses.separately_standardized(jnp.asarray(a_ext, jnp.float32), None, 2.0, 1.0))
    np.testing.assert_allclose(alone, z(a_ext), rtol=1e-4, atol=1e-5)  # no ext_coef without a bonus


def test_reward_std_scaling_is_the_running_std_of_every_raw_reward():
    rng = np.random.default_rng(1)
    batches = [rng.exponential(s, size=(8, 4)) for s in (1.0, 0.1, 3.0)]
    state = intrinsic.IntrinsicState(rms_init((2,)), jnp.zeros(4), rms_init(()), None)
    seen = []
    for r in batches:
        state, scaled = intrinsic.scale(state, jnp.asarray(r, jnp.float32), None, by="reward_std")
        seen.extend(r.ravel())
        np.testing.assert_allclose(np.asarray(scaled), r / np.sqrt(np.var(seen) + 1e-8), rtol=1e-4)
    assert float(state.return_filter.sum()) == 0.0  # the return filter is not used
    assert np.asarray(scaled).mean() > 0.5          # a positive bonus stays positive: no mean subtracted
    with pytest.raises(ValueError, match="by='returns' must be one of return_std, reward_std"):
        intrinsic.scale(state, jnp.asarray(batches[0], jnp.float32), None, by="returns")


def _metrics(path):
    with open(next(path.glob("**/metrics.csv"))) as f:
        return [{k: v for k, v in row.items() if k != "wall_time_s"} for row in csv.DictReader(f)]


@pytest.mark.extended
def test_separate_mix_without_a_bonus_is_ppo_on_the_extrinsic_stream_alone(tiny_config, tmp_path):
    # PPO's advantage is std(A_ext) whatever ext_coef: joint at ext_coef 1 and separate at 2 train the same
    runs = {"joint": ("agent.advantage_mix=joint",), "separate": ("agent.advantage_mix=separate", "agent.ext_coef=2")}
    for name, overrides in runs.items():
        run_experiment(tiny_config("env=cartpole", "bonus=none", *overrides, f"results_dir={tmp_path / name}"))
    assert _metrics(tmp_path / "joint") == _metrics(tmp_path / "separate")


AUTHORS_AGENT = ("agent.intrinsic_return=episodic", "agent.intrinsic_scale=reward_std", "agent.advantage_mix=separate",
                 "agent.warmup=reset_steps", "agent.obs_clip=inf", "agent.networks=separate", "agent.weight_init=lecun")
# with the mix's weights; time_limit too, though CartPole's 500 steps are not reached in a tiny run
AUTHORS_ALL = (*AUTHORS_AGENT, "agent.ext_coef=2", "bonus.beta=1", "agent.time_limit=terminal")


@pytest.mark.extended
@pytest.mark.parametrize("bonus", ["rfig", "rnd"])
def test_the_authors_plumbing_trains(tiny_config, tmp_path, bonus):
    base = ("env=cartpole", f"bonus={bonus}")
    run_experiment(tiny_config(*base, f"results_dir={tmp_path / 'paper'}"))
    run_experiment(tiny_config(*base, *AUTHORS_ALL, f"results_dir={tmp_path / 'authors'}"))
    paper, theirs = _metrics(tmp_path / "paper"), _metrics(tmp_path / "authors")
    assert all(np.isfinite(float(r["policy_loss"])) and np.isfinite(float(r["intrinsic_reward_normalized"]))
               for r in theirs)
    # the positive per-step bonus over its own std: mean/std of the raw bonus, far above the
    # return-scaled reward of the paper's normalisation
    assert float(theirs[-1]["intrinsic_reward_normalized"]) > 3 * float(paper[-1]["intrinsic_reward_normalized"])


@pytest.mark.slow  # seven more compiles
def test_each_of_the_authors_agent_settings_changes_a_run_alone(tiny_config, tmp_path):
    base = ("env=cartpole", "bonus=rnd")
    run_experiment(tiny_config(*base, f"results_dir={tmp_path / 'paper'}"))
    paper = _metrics(tmp_path / "paper")
    for i, one in enumerate(AUTHORS_AGENT):
        run_experiment(tiny_config(*base, one, f"results_dir={tmp_path / f'alone{i}'}"))
        assert _metrics(tmp_path / f"alone{i}") != paper, f"{one} changed nothing"


@pytest.mark.extended
def test_time_limit_as_terminal_changes_a_run_that_reaches_it(tiny_config, tmp_path):
    # 4 envs x 256 steps: every MountainCar episode of a random policy is cut at its 200-step limit
    for limit in ("truncation", "terminal"):
        run_experiment(tiny_config("env=mountaincar", "bonus=none", "agent.total_timesteps=1024",
                                   f"agent.time_limit={limit}", f"results_dir={tmp_path / limit}"))
    cut, ended = _metrics(tmp_path / "truncation"), _metrics(tmp_path / "terminal")
    assert [r["episodes_finished"] for r in cut] == [r["episodes_finished"] for r in ended]
    assert sum(float(r["episodes_finished"]) for r in cut) == 4  # each env once, at step 200
    assert [r["value_loss_ext"] for r in cut] != [r["value_loss_ext"] for r in ended]


def _warmup_statistics(tiny_config, *overrides):
    cfg = tiny_config("env=mountaincar", "bonus=none", *overrides)
    spec = build_run_spec(cfg)
    env = make_env(cfg.env)
    bonus, bonus_hp = make_bonus(spec.bonus, env.obs_shape, env.action_space)
    state = make_trainer(spec.train, env, bonus).init(jax.random.PRNGKey(0),
                                                      as_arrays(spec.agent.hparams(spec.bonus.beta, bonus_hp)))
    return spec, state.obs_rms


def test_reset_steps_warmup_sees_only_states_one_step_from_the_resets(tiny_config):
    spec, carried = _warmup_statistics(tiny_config, "agent.obs_norm_init_steps=128")
    _, reset = _warmup_statistics(tiny_config, "agent.obs_norm_init_steps=128", "agent.warmup=reset_steps")
    n = spec.train.num_envs
    assert float(carried.count) == n * 129 and float(reset.count) == n * 128
    # MountainCar's velocity after one step from rest is at most 0.0015 (force 0.001, gravity
    # 0.0025 * cos(3x) <= 0.0025): std about 1e-3 (the spec: 9.5e-4), where 128 carried steps reach
    # several times that (7e-3)
    v_reset, v_carried = float(np.sqrt(reset.var[1])), float(np.sqrt(carried.var[1]))
    assert v_reset < 2e-3 < v_carried


def test_obs_clip_accepts_inf_and_names_the_key_otherwise(tiny_config):
    assert build_run_spec(tiny_config("agent.obs_clip=inf")).agent.obs_clip == float("inf")
    with pytest.raises(ConfigError, match=r"agent.obs_clip=0.0 must be > 0 \(inf: no clipping\)"):
        build_run_spec(tiny_config("agent.obs_clip=0"))
    with pytest.raises(ConfigError, match="agent.advantage_mix='sum' is not known; valid: joint, separate"):
        build_run_spec(tiny_config("agent.advantage_mix=sum"))


def test_each_parameter_group_is_clipped_by_its_own_norm():
    from rfig_exp.agents.ppo.optimizer import clip_grad_norm, parameter_groups

    params = {"params": {"actor": {"w": jnp.zeros((3, 2))}, "critic_ext": {"w": jnp.zeros(4)},
                         "critic_int": {"w": jnp.zeros(2)}}}
    names = ("actor", "critic_ext", "critic_int")
    groups = parameter_groups(jax.eval_shape(lambda: params), lambda path: names.index(path[1].key))
    assert groups.tolist() == [0] * 6 + [1] * 4 + [2] * 2
    g = np.random.default_rng(0).normal(size=12).astype(np.float32) * np.repeat([3.0, 0.01, 1.0], [6, 4, 2])
    got, _ = clip_grad_norm(groups).update(jnp.asarray(g), None, max_grad_norm=0.5)
    want = np.concatenate([part * min(1.0, 0.5 / (np.linalg.norm(part) + 1e-6)) for part in (g[:6], g[6:10], g[10:])])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
    joint, _ = clip_grad_norm().update(jnp.asarray(g), None, max_grad_norm=0.5)
    assert not np.allclose(np.asarray(joint), want)  # one global norm would shrink the small group too


def test_lecun_init_is_flax_default_and_separate_networks_are_three():
    from rfig_exp.agents.ppo.networks import ActorCritic

    env = make_env("mountaincar")
    lecun = ActorCritic(env.action_space, 1, (64, 64), "tanh", "separate", "lecun")
    p = lecun.init(jax.random.PRNGKey(0), jnp.zeros(env.obs_shape))["params"]
    assert sorted(p) == ["actor", "critic_ext", "critic_int"]
    kernels = [leaf for path, leaf in jax.tree_util.tree_flatten_with_path(p)[0] if path[-1].key == "kernel"]
    biases = [leaf for path, leaf in jax.tree_util.tree_flatten_with_path(p)[0] if path[-1].key == "bias"]
    assert all(float(jnp.abs(b).max()) == 0.0 for b in biases)
    big = [k for k in kernels if k.shape == (64, 64)]
    for k in big:  # LeCun normal: std 1/sqrt(fan_in), truncated at 2 std (flax's variance_scaling)
        assert float(k.std()) == pytest.approx(1 / 8, rel=0.1)
    heads = [k for k in kernels if k.shape[1] in (1, 3)]
    assert all(float(k.std()) > 0.05 for k in heads)  # not the orthogonal 0.01 policy head
    joint = ActorCritic(env.action_space, 1, (64, 64), "tanh")
    q = joint.init(jax.random.PRNGKey(0), jnp.zeros(env.obs_shape))["params"]
    assert float(jnp.abs(q["Dense_2"]["kernel"]).max()) < 0.05  # the default's 0.01 orthogonal policy head
    _, values = lecun.apply({"params": p}, jnp.ones((5,) + env.obs_shape))
    assert values.shape == (5, 2)


PANELS = ("mountaincar", "acrobot", "pointmaze_umaze", "pointmaze_medium", "minatar_breakout", "minatar_asterix",
          "minatar_freeway", "minatar_space_invaders", "sparse_ant", "sparse_halfcheetah", "sparse_hopper",
          "sparse_walker2d")
# the authors' per-env values (shared/specs/authors-code.md 2.1 and 2.9): budget, milestone distance
AUTHORS_BUDGET = {e: 2_500_000 if e.startswith(("minatar_", "sparse_")) else 1_000_000 for e in PANELS}
def _authors_variant(module: str) -> dict:
    """A bonus module's own declaration of the authors' variant, as a composed config writes it."""
    import importlib

    variant = importlib.import_module(f"rfig_exp.bonuses.{module}").AUTHORS_VARIANT
    return {k: list(v) if isinstance(v, tuple) else v for k, v in variant.items()}


AUTHORS_VARIANTS = {
    "rfig": {"prior_scale": 1024.0, "initial_precision": "zero", "lengthscale_method": "linear_valko"},
    "vime": _authors_variant("vime"), "hashexplo": _authors_variant("hashexplo"),
}
AUTHORS_MILESTONE = {"sparse_ant": 5.0, "sparse_halfcheetah": 10.0, "sparse_hopper": 1.0, "sparse_walker2d": 1.0}


@pytest.mark.parametrize("env", PANELS)
def test_protocol_as_run_composes_the_authors_settings_on_every_panel(tiny_config, env):
    from conftest import compose_config

    for bonus in ("none", "rfig", "rnd", "vime", "hashexplo", "noise"):
        spec = build_run_spec(compose_config(f"env={env}", f"bonus={bonus}", "protocol=as_run"))
        a = spec.agent
        assert (a.warmup, a.intrinsic_return, a.intrinsic_scale, a.advantage_mix, a.time_limit, a.networks,
                a.weight_init) == ("reset_steps", "episodic", "reward_std", "separate", "terminal", "separate",
                                   "lecun")
        assert (a.ext_coef, spec.bonus.beta, a.obs_clip, a.eval_episodes) == (2.0, 1.0, float("inf"), 128)
        assert a.total_timesteps == AUTHORS_BUDGET[env]
        if env in AUTHORS_MILESTONE:
            assert (spec.env.milestone_distance, spec.env.backend) == (AUTHORS_MILESTONE[env], "generalized")
        if bonus in AUTHORS_VARIANTS:  # the per-bonus part: the bonus module's own declaration of their variant
            got = {k: getattr(spec.bonus, k) for k in AUTHORS_VARIANTS[bonus]}
            assert got == {k: tuple(v) if isinstance(v, list) else v for k, v in AUTHORS_VARIANTS[bonus].items()}
    paper = build_run_spec(compose_config(f"env={env}", "bonus=rfig"))
    assert paper.variant_overrides == {} and paper.agent.total_timesteps == 1_000_000
    # a command-line value still wins over the protocol's
    assert build_run_spec(compose_config(f"env={env}", "protocol=as_run", "agent.ext_coef=1")).agent.ext_coef == 1.0

"""The RND bonus against a float64 numpy reference (forward, backward and Adam by hand)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from bonus_fixtures import assert_init_needs_no_lapack, batch_of, end_to_end, in_agent_order, make_test_bonus
from nets_reference import Adam, flatten, mlp_backward, mlp_forward, to_numpy, unflatten

from rfig_exp.bonuses.shuffle import subsample as draw_indices
from rfig_exp.config.errors import ConfigError
from rfig_exp.envs import DiscreteSpace

T, B, OBS = 8, 16, (3,)
TINY_NET = dict(hidden=[16, 16], embedding_dim=8)


def make(**overrides):
    return make_test_bonus("rnd", OBS, DiscreteSpace(2), (T, B), **overrides)


def random_states(seed, shift=0.0):
    return jnp.asarray(np.random.default_rng(seed).normal(size=(T, B) + OBS) + shift, jnp.float32)


def numpy_errors(target, predictor, x):
    x = np.asarray(x, np.float64).reshape(-1, int(np.prod(OBS)))
    return np.mean((mlp_forward(predictor, x)[0] - mlp_forward(target, x)[0]) ** 2, axis=-1)


def test_shapes_finiteness_and_reward_matches_float64():
    bonus, hp = make()  # the paper's sizes: (256, 256), embedding 256
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp)
    assert [layer["w"].shape for layer in state.predictor] == [(3, 256), (256, 256), (256, 256)]
    x = random_states(0)
    r, _ = jax.jit(bonus.reward)(state, batch_of(x), hp)
    assert r.shape == (T, B) and r.dtype == jnp.float32
    assert bool(jnp.all(jnp.isfinite(r))) and bool(jnp.all(r >= 0))
    want = numpy_errors(to_numpy(state.target), to_numpy(state.predictor), x).reshape(T, B)
    np.testing.assert_allclose(np.asarray(r), want, rtol=2e-4, atol=1e-7)
    new_state, metrics = jax.jit(bonus.update)(state, batch_of(x), jax.random.PRNGKey(1), hp)
    assert np.isfinite(float(metrics["predictor_loss"]))
    # With the whole batch the loss is the mean bonus.
    np.testing.assert_allclose(float(metrics["predictor_loss"]), want.mean(), rtol=2e-4)
    assert int(new_state.updates) == 1


@pytest.mark.parametrize("proportion", [1.0, 0.25])
def test_predictor_steps_match_numpy_backprop_and_adam(proportion):
    # Large eps makes the step depend on the gradient's scale, not only its sign.
    bonus, hp = make(**TINY_NET, update_proportion=proportion)
    hp = dataclasses.replace(hp, lr=jnp.float32(0.05), adam_eps=jnp.float32(1.0))
    state = bonus.init(jax.random.PRNGKey(3), jnp.zeros((4,) + OBS), hp)
    target, predictor = to_numpy(state.target), to_numpy(state.predictor)
    adam = Adam(flatten(predictor), lr=0.05, eps=1.0)
    update = jax.jit(bonus.update)
    n_train = int(T * B * proportion)
    for step in range(3):
        x = random_states(10 + step)
        key = jax.random.PRNGKey(20 + step)
        state, metrics = update(state, batch_of(x), key, hp)
        flat = np.asarray(x, np.float64).reshape(T * B, -1)
        if n_train < T * B:
            flat = flat[np.asarray(draw_indices(key, T * B, n_train))]  # the draw itself: test_shuffle.py
        t_out = mlp_forward(target, flat)[0]
        p_out, cache = mlp_forward(predictor, flat)
        diff = p_out - t_out
        np.testing.assert_allclose(float(metrics["predictor_loss"]), np.mean(diff**2), rtol=1e-4)
        grads, _ = mlp_backward(predictor, cache, 2.0 * diff / diff.size)
        predictor = unflatten(adam.step(flatten(predictor), flatten(grads)))
    for got, want in zip(flatten(to_numpy(state.predictor)), flatten(predictor)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert int(state.opt_state.count) == 3


def test_target_is_bit_identical_after_many_updates_and_not_in_optimiser():
    bonus, hp = make(**TINY_NET)
    hp = dataclasses.replace(hp, lr=jnp.float32(1e-2))
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp)
    before_target = jax.tree.map(np.asarray, state.target)
    before_predictor = jax.tree.map(np.asarray, state.predictor)
    update = jax.jit(bonus.update)
    for i in range(50):
        state, _ = update(state, batch_of(random_states(i)), jax.random.PRNGKey(i), hp)
    for got, want in zip(jax.tree.leaves(state.target), jax.tree.leaves(before_target)):
        assert np.array_equal(np.asarray(got), want)
    moved = [not np.array_equal(np.asarray(a), b)
             for a, b in zip(jax.tree.leaves(state.predictor), jax.tree.leaves(before_predictor))]
    assert all(moved)
    # Adam's moments mirror the predictor only.
    assert jax.tree.structure(state.opt_state.mu) == jax.tree.structure(state.predictor)


def test_reward_uses_the_pre_update_predictor_and_agent_order():
    bonus, hp = make(**TINY_NET)
    hp = dataclasses.replace(hp, lr=jnp.float32(1e-2))
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp)
    batch = batch_of(random_states(1))
    alone, _ = jax.jit(bonus.reward)(state, batch, hp)
    r, new_state = in_agent_order(bonus, state, batch, jax.random.PRNGKey(2), hp)
    np.testing.assert_allclose(np.asarray(r), np.asarray(alone), rtol=1e-5)
    after, _ = jax.jit(bonus.reward)(new_state, batch, hp)
    assert not np.allclose(np.asarray(after), np.asarray(alone))


def test_bonus_of_a_trained_batch_falls_well_below_novel_states():
    bonus, hp = make(**TINY_NET)
    hp = dataclasses.replace(hp, lr=jnp.float32(3e-3))
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp)
    seen, novel = batch_of(random_states(0)), batch_of(random_states(1, shift=3.0))
    reward, update = jax.jit(bonus.reward), jax.jit(bonus.update)
    r_seen0 = float(reward(state, seen, hp)[0].mean())
    for i in range(300):
        state, _ = update(state, seen, jax.random.PRNGKey(i), hp)
    r_seen, r_novel = float(reward(state, seen, hp)[0].mean()), float(reward(state, novel, hp)[0].mean())
    assert r_seen < 0.1 * r_seen0
    assert r_seen < 0.1 * r_novel, (r_seen, r_novel)


def test_jit_and_vmap_over_seeds_match_each_seed_alone():
    bonus, hp = make(**TINY_NET)
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    states = jax.jit(jax.vmap(bonus.init, in_axes=(0, None, None)))(keys, jnp.zeros((4,) + OBS), hp)
    xs = jnp.stack([random_states(s) for s in range(3)])
    stacked = jax.vmap(batch_of)(xs)
    r, _ = jax.jit(jax.vmap(bonus.reward, in_axes=(0, 0, None)))(states, stacked, hp)
    new, metrics = jax.jit(jax.vmap(bonus.update, in_axes=(0, 0, 0, None)))(
        states, stacked, jax.random.split(jax.random.PRNGKey(1), 3), hp)
    assert r.shape == (3, T, B) and metrics["predictor_loss"].shape == (3,)
    reward, update = jax.jit(bonus.reward), jax.jit(bonus.update)
    for s in range(3):
        one = jax.tree.map(lambda a: a[s], states)
        r1, _ = reward(one, batch_of(xs[s]), hp)
        np.testing.assert_allclose(np.asarray(r[s]), np.asarray(r1), rtol=1e-5, atol=1e-8)
        n1, _ = update(one, batch_of(xs[s]), jax.random.split(jax.random.PRNGKey(1), 3)[s], hp)
        for a, b in zip(jax.tree.leaves(jax.tree.map(lambda a: a[s], new)), jax.tree.leaves(n1)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)
    assert not np.allclose(np.asarray(r[0]), np.asarray(r[1]))  # seeds draw different networks


def test_vmapped_init_needs_no_lapack():
    assert_init_needs_no_lapack(*make(), OBS)


@pytest.mark.parametrize("key,value,match", [
    ("lr", -1.0, "bonus.lr=-1.0 must be > 0"),
    ("lr", "fast", "bonus.lr='fast' must be a number"),
    ("adam_eps", 0.0, "bonus.adam_eps=0.0 must be > 0"),
    ("hidden", [], r"bonus.hidden=\[\] must be"),
    ("hidden", [256, 0], r"bonus.hidden=\[256, 0\] must be"),
    ("embedding_dim", 0, "bonus.embedding_dim=0 must be a positive integer"),
    ("activation", "gelu", "bonus.activation='gelu' is not known"),
    ("update_proportion", 0.0, r"bonus.update_proportion=0.0 must be in \(0, 1\]"),
    ("update_proportion", 1.5, r"bonus.update_proportion=1.5 must be in \(0, 1\]"),
    ("update_proportion", 0.001, r"keeps floor\(128 \* update_proportion\) = 0"),
])
def test_bad_config_names_the_key(key, value, match):
    with pytest.raises(ConfigError, match=match):
        make(**{key: value})


@pytest.mark.extended
def test_end_to_end_run_writes_a_complete_result(tiny_config, tmp_path):
    _, rows = end_to_end(tiny_config, tmp_path, "rnd")
    for row in rows:
        assert float(row["intrinsic_reward"]) > 0 and np.isfinite(float(row["bonus/predictor_loss"]))

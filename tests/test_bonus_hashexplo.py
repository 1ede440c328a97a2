"""The #Exploration (AE-SimHash) bonus: hashing and counting against a Python dict of hash
codes, count-min bounds, and the autoencoder step against a float64 numpy backprop."""

import dataclasses
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from bonus_fixtures import (
    assert_init_needs_no_lapack,
    batch_of,
    bonus_config,
    end_to_end,
    in_agent_order,
    make_test_bonus,
)
from nets_reference import Adam, flatten, mlp_backward, mlp_forward, to_numpy, unflatten

from rfig_exp.bonuses.simhash import simhash_bits
from rfig_exp.config.errors import ConfigError
from rfig_exp.envs import DiscreteSpace

T, B, OBS = 8, 16, (3,)
N = T * B
SMALL = dict(hidden=[16, 16], code_dim=12, hash_bits=10)


def make(**overrides):
    return make_test_bonus("hashexplo", OBS, DiscreteSpace(2), (T, B), **overrides)


def as_batch(states):
    return batch_of(jnp.asarray(np.asarray(states, np.float32).reshape((T, B) + OBS)))


def numpy_codes(state, x):
    """Each state's SimHash code as a Python int ``sum_i bit_i 2^i``, in float64."""
    logits = mlp_forward(to_numpy(state.encoder), np.asarray(x, np.float64).reshape(len(x), -1))[0]
    bits = (logits > 0).astype(np.float64) @ np.asarray(state.projection, np.float64).T > 0
    return [sum(1 << i for i in np.flatnonzero(row)) for row in bits]


def hand_made_states(rng, num_distinct, shift=0.0):
    """N states drawn from ``num_distinct`` distinct ones with uneven multiplicities."""
    distinct = rng.normal(size=(num_distinct,) + OBS) * 2.0 + shift
    weights = np.arange(1, num_distinct + 1, dtype=float)
    return distinct[rng.choice(num_distinct, size=N, p=weights / weights.sum())]


def test_shapes_and_finiteness():
    bonus, hp = make()  # the default config: (256, 256), D = 64, k = 32, three ~1e6 tables
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp)
    assert state.tables.shape == (3, 1000033) and state.tables.dtype == jnp.int32
    assert state.projection.shape == (32, 64)
    x = jnp.asarray(np.random.default_rng(0).normal(size=(T, B) + OBS), jnp.float32)
    r, _ = jax.jit(bonus.reward)(state, batch_of(x), hp)
    assert r.shape == (T, B) and bool(jnp.all(jnp.isfinite(r)))
    assert bool(jnp.all((r > 0) & (r <= 1)))
    new_state, metrics = jax.jit(bonus.update)(state, batch_of(x), jax.random.PRNGKey(1), hp)
    assert all(np.isfinite(float(v)) for v in metrics.values())
    assert int(new_state.tables.sum()) == 3 * N  # every state counted once per table


def test_exact_counts_on_a_hand_made_batch_match_a_dict_of_hash_codes():
    bonus, hp = make(hidden=[32, 32])
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp)
    primes = tuple(bonus_config("hashexplo").table_sizes)
    reward, update = jax.jit(bonus.reward), jax.jit(bonus.update)
    rng = np.random.default_rng(0)
    counts = Counter()
    for step, shift in enumerate((0.0, 0.0, 5.0)):  # the third batch brings unseen states
        states = hand_made_states(rng, 9, shift)
        codes = numpy_codes(state, states)          # with the encoder before this update
        assert len(set(codes)) > 3
        counts.update(codes)                         # the authors' order: count, then reward
        r, _ = reward(state, as_batch(states), hp)
        want = np.array([1.0 / np.sqrt(counts[c]) for c in codes]).reshape(T, B)
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
        state, _ = update(state, as_batch(states), jax.random.PRNGKey(step), hp)
        tables = np.asarray(state.tables)
        for t, p in enumerate(primes):
            by_row = Counter()
            for code, n in counts.items():
                by_row[code % p] += n
            assert {i: int(tables[t, i]) for i in np.flatnonzero(tables[t])} == dict(by_row)


def test_a_state_hashes_the_same_way_twice():
    bonus, hp = make(hidden=[32, 32])
    state = bonus.init(jax.random.PRNGKey(1), jnp.zeros((4,) + OBS), hp)
    rng = np.random.default_rng(1)
    s = rng.normal(size=(1,) + OBS)
    others = rng.normal(size=(20,) + OBS)
    x = jnp.asarray(np.concatenate([s, others[:10], s, others[10:], s]), jnp.float32)
    bits = simhash_bits(state.encoder, state.projection, x)
    assert bits.shape == (23, 32) and set(np.unique(np.asarray(bits))) <= {0, 1}
    np.testing.assert_array_equal(bits[0], bits[11])
    np.testing.assert_array_equal(bits[0], bits[22])
    np.testing.assert_array_equal(np.asarray(jax.jit(simhash_bits)(state.encoder, state.projection, x)), bits)
    assert [sum(int(b) << i for i, b in enumerate(row)) for row in np.asarray(bits)] == numpy_codes(state, x)
    # Same state three times in one batch: three counts under one code.
    states = np.concatenate([np.repeat(s, 3, axis=0), rng.normal(size=(N - 3,) + OBS) * 3])
    r, _ = bonus.reward(state, as_batch(states), hp)
    assert np.asarray(r).reshape(-1)[:3] == pytest.approx([3**-0.5] * 3)


def test_count_min_never_under_counts_with_tiny_colliding_tables():
    primes = (7, 11, 13)
    bonus, hp = make(**SMALL, table_sizes=list(primes))
    state = bonus.init(jax.random.PRNGKey(2), jnp.zeros((4,) + OBS), hp)
    reward, update = jax.jit(bonus.reward), jax.jit(bonus.update)
    rng = np.random.default_rng(2)
    counts = Counter()
    over = 0
    for step in range(3):
        states = rng.normal(size=(N,) + OBS) * 3.0
        codes = numpy_codes(state, states)
        counts.update(codes)
        # Count-min in Python: each table's row sums the counts of every code mapped to it.
        rows = [Counter() for _ in primes]
        for code, n in counts.items():
            for t, p in enumerate(primes):
                rows[t][code % p] += n
        estimate = np.array([min(rows[t][c % p] for t, p in enumerate(primes)) for c in codes])
        exact = np.array([counts[c] for c in codes])
        r, _ = reward(state, as_batch(states), hp)
        np.testing.assert_allclose(np.asarray(r).reshape(-1), 1.0 / np.sqrt(estimate), rtol=1e-6)
        assert np.all(estimate >= exact)
        over += int(np.sum(estimate > exact))
        state, _ = update(state, as_batch(states), jax.random.PRNGKey(step), hp)
    assert over > 0  # the tables are small enough that collisions really happened
    assert len(counts) > max(primes)  # more distinct codes than any table has rows


@pytest.mark.parametrize("noise_at,penalty_on", [("code", "code"), ("logits", "code"), ("code", "noisy_code"),
                                                 ("logits", "noisy_code")])
def test_autoencoder_steps_match_numpy_backprop_and_adam(noise_at, penalty_on):
    lam, a = 10.0, 0.3  # a penalty weight well above the default 0.1, so its gradient is not lost in the sum
    bonus, hp = make(**SMALL, noise_at=noise_at, penalty_on=penalty_on, table_sizes=[101], bin_penalty=lam,
                     noise_scale=a)
    hp = dataclasses.replace(hp, lr=jnp.float32(0.05), adam_eps=jnp.float32(1.0))  # scale-sensitive steps
    state = bonus.init(jax.random.PRNGKey(3), jnp.zeros((4,) + OBS), hp)
    enc, dec = to_numpy(state.encoder), to_numpy(state.decoder)
    adam = Adam(flatten(enc) + flatten(dec), lr=0.05, eps=1.0)
    rng = np.random.default_rng(3)
    update = jax.jit(bonus.update)
    for step in range(2):
        x = rng.normal(size=(N,) + OBS)
        key = jax.random.PRNGKey(10 + step)
        state, metrics = update(state, as_batch(x), key, hp)
        u = np.asarray(jax.random.uniform(key, (N, 12), jnp.float32, -1.0, 1.0), np.float64) * a  # the draw
        x = x.reshape(N, -1)
        logits, enc_cache = mlp_forward(enc, x)
        b = 1.0 / (1.0 + np.exp(-logits))
        code = b + u if noise_at == "code" else 1.0 / (1.0 + np.exp(-(logits + u)))
        recon, dec_cache = mlp_forward(dec, code)
        reconstruction = np.mean((recon - x) ** 2)
        p = code if penalty_on == "noisy_code" else b   # the RFIG authors penalise the noisy code
        binarisation = np.mean(np.minimum(p**2, (1 - p) ** 2))
        np.testing.assert_allclose(float(metrics["reconstruction_loss"]), reconstruction, rtol=1e-4)
        np.testing.assert_allclose(float(metrics["binarisation_loss"]), binarisation, rtol=1e-4)
        np.testing.assert_allclose(float(metrics["ae_loss"]), reconstruction + lam * binarisation, rtol=1e-4)
        dec_grads, d_code = mlp_backward(dec, dec_cache, 2.0 * (recon - x) / recon.size)
        d_penalty = lam * np.where(p < 0.5, 2.0 * p, -2.0 * (1.0 - p)) / p.size   # d/dp
        d_code_total = d_code + d_penalty if penalty_on == "noisy_code" else d_code
        d_b = 0.0 if penalty_on == "noisy_code" else d_penalty
        if noise_at == "code":
            d_logits = (d_code_total + d_b) * b * (1 - b)
        else:
            d_logits = d_code_total * code * (1 - code) + d_b * b * (1 - b)
        enc_grads, _ = mlp_backward(enc, enc_cache, d_logits)
        flat = adam.step(flatten(enc) + flatten(dec), flatten(enc_grads) + flatten(dec_grads))
        enc, dec = unflatten(flat[:2 * len(enc)]), unflatten(flat[2 * len(enc):])
    for got, want in zip(flatten(to_numpy(state.encoder)) + flatten(to_numpy(state.decoder)),
                         flatten(enc) + flatten(dec)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_reward_uses_the_pre_update_model_and_agent_order():
    bonus, hp = make(**SMALL)
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp)
    batch = as_batch(np.random.default_rng(4).normal(size=(N,) + OBS))
    alone, _ = jax.jit(bonus.reward)(state, batch, hp)
    r, new_state = in_agent_order(bonus, state, batch, jax.random.PRNGKey(1), hp)
    np.testing.assert_array_equal(np.asarray(r), np.asarray(alone))
    after, _ = jax.jit(bonus.reward)(new_state, batch, hp)
    assert float(after.mean()) < float(alone.mean())   # the batch is now counted twice


def test_bonus_of_a_repeated_batch_falls_well_below_novel_states():
    bonus, hp = make(hidden=[32, 32])
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp)
    rng = np.random.default_rng(5)
    seen = rng.normal(size=(N,) + OBS) * 0.5 + 2.0
    # Eight novel states in the opposite orthant: a ReLU encoder with zero biases is positively
    # homogeneous, so its code depends on a state's direction more than on its norm. They are
    # scored inside a batch of seen states, so that the batch's own counts do not pile onto them.
    novel = rng.normal(size=(8,) + OBS)
    novel = -3.0 * np.abs(novel) / np.linalg.norm(novel, axis=1, keepdims=True)
    mixed = seen.copy()
    mixed[:8] = novel
    update = jax.jit(bonus.update)
    for i in range(30):
        state, _ = update(state, as_batch(seen), jax.random.PRNGKey(i), hp)
    r = np.asarray(bonus.reward(state, as_batch(mixed), hp)[0]).reshape(-1)
    r_novel, r_seen = r[:8].mean(), r[8:].mean()
    assert r_seen < 0.3 * r_novel, (r_seen, r_novel)


@pytest.mark.extended
def test_jit_and_vmap_over_seeds_match_each_seed_alone():
    bonus, hp = make(**SMALL, table_sizes=[10007, 10009])
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    states = jax.jit(jax.vmap(bonus.init, in_axes=(0, None, None)))(keys, jnp.zeros((4,) + OBS), hp)
    xs = jnp.asarray(np.random.default_rng(6).normal(size=(3, T, B) + OBS), jnp.float32)
    update_keys = jax.random.split(jax.random.PRNGKey(1), 3)
    new, metrics = jax.jit(jax.vmap(bonus.update, in_axes=(0, 0, 0, None)))(
        states, jax.vmap(batch_of)(xs), update_keys, hp)
    r, _ = jax.jit(jax.vmap(bonus.reward, in_axes=(0, 0, None)))(new, jax.vmap(batch_of)(xs), hp)
    assert r.shape == (3, T, B) and metrics["ae_loss"].shape == (3,)
    reward, update = jax.jit(bonus.reward), jax.jit(bonus.update)
    for s in range(3):
        one, _ = update(jax.tree.map(lambda a: a[s], states), batch_of(xs[s]), update_keys[s], hp)
        for a, b in zip(jax.tree.leaves(jax.tree.map(lambda a: a[s], new)), jax.tree.leaves(one)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)
        np.testing.assert_array_equal(np.asarray(r[s]), np.asarray(reward(one, batch_of(xs[s]), hp)[0]))
    assert not np.array_equal(np.asarray(new.projection[0]), np.asarray(new.projection[1]))


def test_vmapped_init_needs_no_lapack():
    assert_init_needs_no_lapack(*make(), OBS)


@pytest.mark.parametrize("key,value,match", [
    ("lr", -1.0, "bonus.lr=-1.0 must be >= 0"),
    ("adam_eps", 0.0, "bonus.adam_eps=0.0 must be > 0"),
    ("noise_scale", -0.1, "bonus.noise_scale=-0.1 must be >= 0"),
    ("bin_penalty", -1.0, "bonus.bin_penalty=-1.0 must be >= 0"),
    ("bin_penalty", "high", "bonus.bin_penalty='high' must be a number"),
    ("code_dim", 0, "bonus.code_dim=0 must be a positive integer"),
    ("hash_bits", 2.5, "bonus.hash_bits=2.5 must be a positive integer"),
    ("hash_bits", 4000, "bonus.hash_bits=4000 times max"),
    ("hidden", [], r"bonus.hidden=\[\] must be"),
    ("table_sizes", [1000], r"bonus.table_sizes=\[1000\] must be a non-empty list of odd primes"),
    ("table_sizes", [2], r"bonus.table_sizes=\[2\] must be"),
    ("table_sizes", [], r"bonus.table_sizes=\[\] must be"),
    ("noise_at", "input", "bonus.noise_at='input' is not known"),
    ("activation", "gelu", "bonus.activation='gelu' is not known"),
])
def test_bad_config_names_the_key(key, value, match):
    with pytest.raises(ConfigError, match=match):
        make(**{key: value})


@pytest.mark.parametrize("overrides,match", [
    (dict(cell_width=0.0), "bonus.cell_width=0.0 must be > 0"),
    (dict(table_sizes=[2100001]), r"bonus.table_sizes=\[2100001\]: hash=grid needs every prime below"),
])
def test_bad_grid_config_names_the_key(overrides, match):
    with pytest.raises(ConfigError, match=match):
        make(hash="grid", **overrides)


@pytest.mark.extended
def test_end_to_end_run_writes_a_complete_result(tiny_config, tmp_path):
    summary, rows = end_to_end(tiny_config, tmp_path, "hashexplo")
    assert summary["bonus_counted_states"] == 256  # every s' of both batches counted once
    assert 1 <= summary["bonus_occupied_buckets"] <= 256
    for row in rows:
        assert 0 < float(row["intrinsic_reward"]) <= 1 and np.isfinite(float(row["bonus/ae_loss"]))


def test_static_simhash_counts_sgn_of_a_fixed_projection_of_the_state_itself():
    """hash=static: phi(s) = sgn(A s) in float64 numpy, counted in a Python dict over three batches;
    nothing is trained, so the same state keeps its code and its count only grows."""
    bonus, hp = make(hash="static", hash_bits=12)
    state = bonus.init(jax.random.PRNGKey(3), jnp.zeros((4,) + OBS), hp)
    projection = np.asarray(state.projection, np.float64)
    assert projection.shape == (12, OBS[0])
    reward, update = jax.jit(bonus.reward), jax.jit(bonus.update)
    rng = np.random.default_rng(1)
    counts = Counter()
    first = None
    for step, shift in enumerate((0.0, 0.0, 5.0)):
        states = hand_made_states(rng, 9, shift)
        bits = np.asarray(states, np.float64).reshape(N, -1) @ projection.T > 0
        codes = [sum(1 << i for i in np.flatnonzero(row)) for row in bits]
        counts.update(codes)
        r, _ = reward(state, as_batch(states), hp)
        want = np.array([1.0 / np.sqrt(counts[c]) for c in codes]).reshape(T, B)
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
        state, metrics = update(state, as_batch(states), jax.random.PRNGKey(step), hp)
        assert set(metrics) == {"occupied_buckets"}
        first = state if first is None else first
    # no autoencoder step: its parameters are those of init
    for a, b in zip(jax.tree_util.tree_leaves(first.encoder), jax.tree_util.tree_leaves(state.encoder)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(np.asarray(state.tables)[0].sum()) == 3 * N


def test_grid_count_counts_the_cell_of_the_state_itself():
    """hash=grid: each state's cell floor(s / w) in float64 numpy, counted in a Python dict over three
    batches (continuous states, so that many share a cell, on both sides of 0); nothing is trained."""
    width = 0.5
    bonus, hp = make(hash="grid", cell_width=width)
    state = bonus.init(jax.random.PRNGKey(3), jnp.zeros((4,) + OBS), hp)
    reward, update = jax.jit(bonus.reward), jax.jit(bonus.update)
    rng = np.random.default_rng(4)
    counts = Counter()
    for step, shift in enumerate((0.0, 0.0, 1.0)):
        states = rng.normal(size=(N,) + OBS) * 0.8 + shift
        cells = [tuple(c) for c in np.floor(states.astype(np.float32).astype(np.float64) / width).astype(int)]
        counts.update(cells)
        r, _ = reward(state, as_batch(states), hp)
        want = np.array([1.0 / np.sqrt(counts[c]) for c in cells]).reshape(T, B)
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
        state, metrics = update(state, as_batch(states), jax.random.PRNGKey(step), hp)
        assert set(metrics) == {"occupied_buckets"}
        assert float(metrics["occupied_buckets"]) == len(counts)  # distinct cells, no two folded together
    assert max(counts.values()) >= 5 and min(c[0] for c in counts) < 0   # shared cells, negative coordinates
    assert int(np.asarray(state.tables)[0].sum()) == 3 * N


def test_grid_cells_are_as_fine_as_their_width():
    """Two states in one cell share a count; a state just across a cell's edge does not."""
    bonus, hp = make(hash="grid", cell_width=0.25)
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp)
    inside = np.tile([[0.01, -0.01, 0.3]], (N, 1))
    inside[1::2] = [0.24, -0.24, 0.49]        # the same cell: [0, 0.25) x [-0.25, 0) x [0.25, 0.5)
    r, _ = bonus.reward(state, as_batch(inside), hp)
    np.testing.assert_allclose(np.asarray(r), 1.0 / np.sqrt(N), rtol=1e-6)
    across = inside.copy()
    across[1::2] = [0.26, -0.24, 0.49]        # the next cell along the first axis
    r, _ = bonus.reward(state, as_batch(across), hp)
    np.testing.assert_allclose(np.asarray(r), 1.0 / np.sqrt(N // 2), rtol=1e-6)


@pytest.mark.extended
def test_static_simhash_runs_end_to_end(tiny_config, tmp_path):
    summary, rows = end_to_end(tiny_config, tmp_path, "hashexplo", "bonus.hash=static", "bonus.hash_bits=16")
    assert summary["bonus_counted_states"] == 256 and 1 <= summary["bonus_occupied_buckets"] <= 256
    for row in rows:
        assert 0 < float(row["intrinsic_reward"]) <= 1 and "bonus/ae_loss" not in row


def test_a_zero_learning_rate_freezes_the_random_encoder_and_keeps_counting():
    bonus, hp = make(**SMALL, lr=0.0)
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp)
    states = hand_made_states(np.random.default_rng(2), 9)
    before = numpy_codes(state, states)
    for step in range(3):
        r, state = in_agent_order(bonus, state, as_batch(states), jax.random.PRNGKey(step), hp)
    assert numpy_codes(state, states) == before  # the same codes: the encoder did not move
    counts = Counter(before)
    want = np.array([1.0 / np.sqrt(3 * counts[c]) for c in before]).reshape(T, B)
    np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)  # the third batch's counts

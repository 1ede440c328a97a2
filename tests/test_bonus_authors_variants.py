"""The RFIG authors' VIME and #Explo (github.com/riiswa/rejax at b16e24a) as variants of our bonuses
(``AUTHORS_VARIANT`` of ``rfig_exp.bonuses.vime`` and ``.hashexplo``; docs/bonuses/vime.md and
hashexplo.md), each against an independent computation:

- VIME: the rolled "next observation" (bug B2) against numpy's roll of the time-major flattened batch;
  the one-per-rollout bonus (B3) against a float64 hypothetical Adam step and the textbook KL of two
  factorised Gaussians (itself checked on known numbers); the MSE-only training step (B4) against a
  float64 gradient and Adam, ``rho`` moving only through the sampled weights;
- #Explo: the code index against a plain Python sum of bits of a float64 encoder, and the bonus and
  counts (before the batch; the batch counted with the updated encoder) against a dict counter;
- both: a tiny training run through the real config path, and the doc's command line.
"""

import dataclasses
import math
from collections import Counter
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from bonus_fixtures import end_to_end, make_test_bonus
from conftest import command_line_value
from nets_reference import mlp_forward, to_numpy

from rfig_exp.bonuses import BonusBatch, bnn
from rfig_exp.bonuses.hashexplo import AUTHORS_VARIANT as HASH_AUTHORS
from rfig_exp.bonuses.vime import AUTHORS_VARIANT as VIME_AUTHORS
from rfig_exp.config.errors import ConfigError
from rfig_exp.envs.base import BoxSpace, DiscreteSpace

ROOT = Path(__file__).resolve().parents[1]
T, B, OBS, ACTIONS = 4, 6, (3,), 3
N = T * B


def as_config(overrides):
    return {k: list(v) if isinstance(v, tuple) else v for k, v in overrides.items()}


def command_line(overrides) -> str:
    return " ".join(f"bonus.{k}={command_line_value(v)}" for k, v in overrides.items())


def to64(tree):
    return jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), tree)


# ---------------------------------------------------------------------------------------------- VIME


def make_vime(space=DiscreteSpace(ACTIONS), **overrides):
    return make_test_bonus("vime", OBS, space, (T, B), **as_config({**VIME_AUTHORS, **overrides}))


def hand_made_batch(seed=0):
    """obs[t, e] = (t, e, noise): each row says where it came from; next_obs far from anything the
    rolled target could be (the authors never read it)."""
    rng = np.random.default_rng(seed)
    t, e = np.meshgrid(np.arange(T), np.arange(B), indexing="ij")
    obs = np.stack([t - 1.5, (e - 2.5) / 2.0, rng.normal(size=(T, B))], axis=-1).astype(np.float32)
    actions = rng.integers(0, ACTIONS, size=(T, B))
    zeros = jnp.zeros((T, B), bool)
    return BonusBatch(obs=jnp.asarray(obs), actions=jnp.asarray(actions, jnp.int32), next_obs=jnp.asarray(obs + 50.0),
                      terminated=zeros, truncated=zeros)


def authors_io(batch):
    """Their inputs and targets in float64 numpy: ``[obs, raw action index]`` and
    ``np.roll(flatten_batch(obs), -1, axis=0)`` of the time-major ``[T * B, d]`` batch."""
    obs = np.asarray(batch.obs, np.float64).reshape(N, -1)
    x = np.concatenate([obs, np.asarray(batch.actions, np.float64).reshape(N, 1)], axis=1)
    return x, np.roll(obs, -1, axis=0)


def reference_mse(params, eps_list, x, y):
    """The MSE of the mean of the sampled predictions, a tanh MLP with ``sigma = log(1 + e^rho)``."""
    def predict(eps):
        h = x
        for layer, (m, r, e) in enumerate(zip(params["mu"], params["rho"], eps)):
            h = h @ (m["w"] + jnp.log1p(jnp.exp(r["w"])) * e["w"]) + m["b"] + jnp.log1p(jnp.exp(r["b"])) * e["b"]
            h = jnp.tanh(h) if layer < len(params["mu"]) - 1 else h
        return h

    return jnp.mean((sum(predict(e) for e in eps_list) / len(eps_list) - y) ** 2)


def numpy_adam(params, grads, opt_state, lr, eps=1e-8, b1=0.9, b2=0.999):
    """One Adam step from the bonus's moments (optax's ``ScaleByAdamState``), in float64 numpy."""
    count = int(opt_state.count) + 1
    flat_p, tree = jax.tree.flatten(params)
    flat_g = jax.tree.leaves(grads)
    flat_m, flat_v = jax.tree.leaves(opt_state.mu), jax.tree.leaves(opt_state.nu)
    out = []
    for p, g, m, v in zip(flat_p, flat_g, flat_m, flat_v):
        p, g = np.asarray(p, np.float64), np.asarray(g, np.float64)
        m = b1 * np.asarray(m, np.float64) + (1 - b1) * g
        v = b2 * np.asarray(v, np.float64) + (1 - b2) * g * g
        out.append(p - lr * (m / (1 - b1**count)) / (np.sqrt(v / (1 - b2**count)) + eps))
    return jax.tree.unflatten(tree, out)


def numpy_kl(new, old):
    """KL(q_new || q_old) of factorised Gaussians, the textbook formula, float64."""
    total = 0.0
    for m1, r1, m0, r0 in zip(*(jax.tree.leaves(t) for t in (new["mu"], new["rho"], old["mu"], old["rho"]))):
        s1, s0 = np.log1p(np.exp(np.asarray(r1, np.float64))), np.log1p(np.exp(np.asarray(r0, np.float64)))
        dm = np.asarray(m1, np.float64) - np.asarray(m0, np.float64)
        total += np.sum(np.log(s0 / s1) + (s1**2 + dm**2) / (2 * s0**2) - 0.5)
    return total


def trained(bonus, hp, steps):
    state = bonus.init(jax.random.PRNGKey(0), None, hp)
    for i in range(steps):
        state, _ = jax.jit(bonus.update)(state, hand_made_batch(10 + i), jax.random.PRNGKey(100 + i), hp)
    return state


def test_the_authors_model_tanh_index_input_and_init():
    bonus, hp = make_vime()
    state = bonus.init(jax.random.PRNGKey(0), None, hp)
    mu, rho = state.params["mu"], state.params["rho"]
    assert [m["w"].shape for m in mu] == [(3 + 1, 64), (64, 64), (64, 3)]   # one raw action column
    assert all(not np.any(np.asarray(m["b"])) for m in mu)                  # zero bias means
    assert np.std(np.asarray(mu[1]["w"])) == pytest.approx(0.1, rel=0.05)  # N(0, 0.1^2), flax normal(0.1)
    for r in jax.tree.leaves(rho):
        np.testing.assert_allclose(np.asarray(r), -3.0, atol=1e-6)          # rho = -3: sigma = softplus(-3)
    # a Box action enters as it is either way
    box, _ = make_vime(BoxSpace(2))
    assert box.init(jax.random.PRNGKey(0), None, hp).params["mu"][0]["w"].shape == (3 + 2, 64)


def test_the_rolled_target_is_numpys_roll_of_the_time_major_batch(x64):
    """Bug B2: the training step's MSE equals the float64 MSE against ``np.roll(obs, -1)`` of the
    time-major flattened batch (row t * B + e), whose row is env e + 1's obs at the same t."""
    bonus, hp = make_vime()
    state = bonus.init(jax.random.PRNGKey(0), None, hp)
    batch = hand_made_batch()
    x, y = authors_io(batch)
    obs = np.asarray(batch.obs, np.float64)
    for t in range(T):
        for e in range(B):
            nxt = obs[t, e + 1] if e < B - 1 else obs[(t + 1) % T, 0]    # env 0 at t + 1 for the last env
            np.testing.assert_array_equal(y[t * B + e], nxt)
    _, metrics = jax.jit(bonus.update)(state, batch, jax.random.PRNGKey(1), hp)
    eps = bnn.weight_noise(state.key, state.params["mu"], 3)                  # the training step's 3 samples
    want = float(reference_mse(to64(state.params), to64(eps), x, y))
    assert float(metrics["dynamics_mse"]) == pytest.approx(want, rel=1e-5)
    true_next = np.asarray(batch.next_obs, np.float64).reshape(N, -1)
    assert float(metrics["dynamics_mse"]) != pytest.approx(float(reference_mse(to64(state.params), to64(eps), x,
                                                                               true_next)), rel=0.1)
    assert "kl_to_prior" not in metrics


def test_kl_between_factorised_gaussians_on_known_numbers():
    def gaussians(means, sigmas):
        m = jnp.asarray(means, jnp.float32).reshape(1, -1)
        r = bnn.softplus_inverse(jnp.asarray(sigmas, jnp.float32)).reshape(1, -1)
        return {"mu": ({"w": m, "b": jnp.zeros(1)},), "rho": ({"w": r, "b": jnp.zeros(1)},)}

    # KL(N(1, 2^2) || N(0, 1)) = log(1/2) + (4 + 1) / 2 - 1/2; the biases are equal, so add 0
    assert float(bnn.kl_between(gaussians([1.0], [2.0]), gaussians([0.0], [1.0]))) == pytest.approx(
        math.log(0.5) + 2.0, rel=1e-6)
    # KL(N(0, 1) || N(1, 2^2)) = log 2 + (1 + 1) / 8 - 1/2, summed with the first over two weights
    both = bnn.kl_between(gaussians([1.0, 0.0], [2.0, 1.0]), gaussians([0.0, 1.0], [1.0, 2.0]))
    assert float(both) == pytest.approx(math.log(0.5) + 2.0 + math.log(2.0) + 0.25 - 0.5, rel=1e-6)
    assert float(bnn.kl_between(gaussians([0.3], [0.05]), gaussians([0.3], [0.05]))) == 0.0
    # a one-Adam-step-sized change (1e-3 on mu, 1e-6 on sigma): float32 keeps its size, against a numerical
    # integral of q_new log(q_new / q_old)
    new, old = gaussians([0.301], [0.048588]), gaussians([0.3], [0.048587])
    s_new = float(jax.nn.softplus(new["rho"][0]["w"][0, 0]))
    s_old = float(jax.nn.softplus(old["rho"][0]["w"][0, 0]))
    m_new, m_old = float(new["mu"][0]["w"][0, 0]), float(old["mu"][0]["w"][0, 0])
    w = np.linspace(0.0, 0.6, 400001)
    log_q = -(w - m_new) ** 2 / (2 * s_new**2) - np.log(s_new)
    log_p = -(w - m_old) ** 2 / (2 * s_old**2) - np.log(s_old)
    integral = np.trapezoid(np.exp(log_q) / math.sqrt(2 * math.pi) * (log_q - log_p), w)
    assert float(bnn.kl_between(new, old)) == pytest.approx(integral, rel=1e-4)
    assert float(bnn.kl_between(new, old)) == pytest.approx(numpy_kl(new, old), rel=1e-4)


def test_the_bonus_is_one_kl_per_rollout_after_a_hypothetical_adam_step(x64):
    """Bug B3: every transition gets the same number, the KL(q' || q) of one Adam step (the training
    optimiser's moments) on the MSE of the 5-sample mean prediction over the whole batch."""
    bonus, hp = make_vime()
    state = trained(bonus, hp, 2)                                          # Adam moments not zero
    assert int(state.opt_state.count) == 2
    batch = hand_made_batch(3)
    r, metrics = jax.jit(bonus.reward)(state, batch, hp)
    r = np.asarray(r)
    assert r.shape == (T, B) and np.all(r == r[0, 0]) and r[0, 0] > 0
    x, y = authors_io(batch)
    eps = bnn.weight_noise(jax.random.fold_in(state.key, 1), state.params["mu"], 5)
    grads = jax.grad(reference_mse)(to64(state.params), to64(eps), x, y)
    stepped = numpy_adam(state.params, grads, state.opt_state, lr=1e-3)
    want = numpy_kl(stepped, state.params)
    assert float(r[0, 0]) == pytest.approx(want, rel=1e-3)
    assert float(metrics["info_gain_max"]) == float(metrics["info_gain_mean"]) == float(r[0, 0])
    # The reward is not a step: the state after reward + update is the training step's alone.
    new, _ = jax.jit(bonus.update)(state, batch, jax.random.PRNGKey(5), hp)
    assert int(new.opt_state.count) == 3


def test_the_training_step_is_mse_only_rho_moves_through_the_samples(x64):
    """Bug B4: no KL term. With one weight sample ``W = mu + sigma eps``, ``dL/drho = dL/dmu * eps *
    sigmoid(rho)`` exactly, so zero noise gives ``rho`` no gradient at all; the update is one Adam step on
    the float64 gradient of the 3-sample MSE."""
    bonus, hp = make_vime()
    state = trained(bonus, hp, 1)
    batch = hand_made_batch(4)
    x, y = authors_io(batch)
    params = to64(state.params)
    (eps,) = to64(bnn.weight_noise(state.key, state.params["mu"], 1))
    grads = jax.grad(bnn.mse_loss)(params, [eps], jnp.asarray(x), jnp.asarray(y), "tanh")
    for g_mu, g_rho, e, rho in zip(*(jax.tree.leaves(t) for t in (grads["mu"], grads["rho"], eps, params["rho"]))):
        np.testing.assert_allclose(np.asarray(g_rho), np.asarray(g_mu * e * jax.nn.sigmoid(rho)), rtol=1e-10,
                                   atol=1e-300)
    zero = jax.tree.map(jnp.zeros_like, eps)
    grads0 = jax.grad(bnn.mse_loss)(params, [zero], jnp.asarray(x), jnp.asarray(y), "tanh")
    assert not any(np.any(np.asarray(g)) for g in jax.tree.leaves(grads0["rho"]))
    assert all(np.any(np.asarray(g)) for g in jax.tree.leaves(grads0["mu"]))
    # the variational loss would move rho even without noise: its KL to the prior
    prior_grad = jax.grad(lambda p: bnn.kl_to_prior(p, 0.5))(params)
    assert all(np.all(np.asarray(g) != 0) for g in jax.tree.leaves(prior_grad["rho"]))
    # the bonus's update: one Adam step (lr 1e-3) on the 3-sample MSE, nothing else
    new, metrics = jax.jit(bonus.update)(state, batch, jax.random.PRNGKey(7), hp)
    eps3 = bnn.weight_noise(state.key, state.params["mu"], 3)
    grads3 = jax.grad(reference_mse)(params, to64(eps3), x, y)
    want = numpy_adam(state.params, grads3, state.opt_state, lr=1e-3)
    for got, expected in zip(jax.tree.leaves(new.params), jax.tree.leaves(want)):
        np.testing.assert_allclose(np.asarray(got, np.float64), expected, rtol=1e-5, atol=1e-6)
    assert set(metrics) == {"dynamics_mse", "posterior_sigma_mean"}


@pytest.mark.extended
def test_the_settings_combine_with_the_faithful_ones():
    """``bonus_per=batch`` with the variational loss, and the per-transition gain with the MSE loss, tanh
    and the rolled target: each runs, finite and non-negative."""
    batch = hand_made_batch()
    for overrides in (dict(loss="variational", kl_ratio_len=3), dict(bonus_per="transition", num_samples=1)):
        bonus, hp = make_vime(**overrides)
        state = bonus.init(jax.random.PRNGKey(0), None, hp)
        r, _ = jax.jit(bonus.reward)(state, batch, hp)
        new, metrics = jax.jit(bonus.update)(state, batch, jax.random.PRNGKey(1), hp)
        assert np.all(np.isfinite(np.asarray(r))) and np.all(np.asarray(r) >= 0)
        assert all(np.isfinite(float(v)) for v in metrics.values()) and int(new.updates) == 1
        constant = bool(np.all(np.asarray(r) == np.asarray(r)[0, 0]))
        assert constant == (overrides.get("bonus_per", "batch") == "batch")


@pytest.mark.parametrize("key,value,match", [
    ("target", "successor", "bonus.target='successor' is not known"),
    ("loss", "nll", "bonus.loss='nll' is not known"),
    ("bonus_per", "state", "bonus.bonus_per='state' is not known"),
    ("action_input", "embedding", "bonus.action_input='embedding' is not known"),
    ("activation", "gelu", "bonus.activation='gelu' is not known"),
    ("weight_init", "orthogonal", "bonus.weight_init='orthogonal' is not known"),
    ("init_mu_std", 0.0, "bonus.init_mu_std=0.0 must be > 0"),
    ("batch_gain_samples", 0, "bonus.batch_gain_samples=0 must be a positive integer"),
])
def test_bad_vime_variant_settings_name_the_key(key, value, match):
    with pytest.raises(ConfigError, match=match):
        make_vime(**{key: value})


# ------------------------------------------------------------------------------------------- #Explo

HASH_T, HASH_B = 8, 16
HASH_N = HASH_T * HASH_B


def make_hash(**overrides):
    return make_test_bonus("hashexplo", OBS, DiscreteSpace(2), (HASH_T, HASH_B),
                           **as_config({**HASH_AUTHORS, **overrides}))


def hash_batch(states):
    """``obs = states``; ``next_obs`` far away (the authors hash and train on s)."""
    obs = jnp.asarray(np.asarray(states, np.float32).reshape((HASH_T, HASH_B) + OBS))
    zeros = jnp.zeros((HASH_T, HASH_B), bool)
    return BonusBatch(obs=obs, actions=jnp.zeros((HASH_T, HASH_B), jnp.int32), next_obs=obs + 100.0,
                      terminated=zeros, truncated=zeros)


def python_codes(encoder, states):
    """Each state's index: the float64 encoder's code rounded, ``binary = (p > 0.5)``, as
    ``sum_i b_i 2^i`` in plain Python integers."""
    logits = mlp_forward(to_numpy(encoder), np.asarray(states, np.float64).reshape(len(states), -1))[0]
    probs = 1.0 / (1.0 + np.exp(-logits))
    return [sum(2**i for i, p in enumerate(row) if p > 0.5) for row in probs]


def test_the_authors_hash_is_the_code_and_counts_before_the_batch():
    """Bonus ``1 / sqrt(n + 1)`` with ``n`` the count stored before the batch, then the batch counted
    under the codes of the encoder after its Adam step: a dict counter kept by hand over four batches
    (repeated states, a lr that moves the codes), against the bonus's rewards and its direct table."""
    bonus, hp = make_hash(hidden=[32, 32])
    hp = dataclasses.replace(hp, lr=jnp.float32(3e-2))                     # codes change from step to step
    state = bonus.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp)
    assert state.tables.shape == (1, 65536) and state.projection.shape == (0, 16)
    rng = np.random.default_rng(0)
    distinct = rng.normal(size=(12,) + OBS) * 2.0
    counts: Counter = Counter()
    reward, update = jax.jit(bonus.reward), jax.jit(bonus.update)
    moved = 0
    for step in range(4):
        states = distinct[rng.integers(0, len(distinct), size=HASH_N)]
        before = python_codes(state.encoder, states)
        assert len(set(before)) > 3 and max(before) < 2**16
        r, _ = reward(state, hash_batch(states), hp)
        want = np.array([1.0 / math.sqrt(counts[c] + 1) for c in before]).reshape(HASH_T, HASH_B)
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
        if step == 0:
            assert np.all(np.asarray(r) == 1.0)
        state, _ = update(state, hash_batch(states), jax.random.PRNGKey(step), hp)
        after = python_codes(state.encoder, states)                     # the updated encoder's codes
        moved += sum(a != b for a, b in zip(after, before))
        counts.update(after)
        table = np.asarray(state.tables[0])
        assert {int(i): int(table[i]) for i in np.flatnonzero(table)} == dict(counts)
    assert moved > 0   # the test tells the post-step codes from the pre-step ones


def test_the_code_index_of_a_wide_table_and_the_validation():
    """``hash=code`` with a table wider than the code (2^10 rows for 8 bits) indexes by the code
    itself; every other table is refused, naming the key."""
    bonus, hp = make_hash(hidden=[16], code_dim=8, table_sizes=[1024])
    state = bonus.init(jax.random.PRNGKey(1), jnp.zeros((4,) + OBS), hp)
    states = np.random.default_rng(1).normal(size=(HASH_N,) + OBS) * 3.0
    new, _ = jax.jit(bonus.update)(state, hash_batch(states), jax.random.PRNGKey(0), hp)
    counts = Counter(python_codes(new.encoder, states))
    assert max(counts) < 256 and not np.any(np.asarray(new.tables[0, 256:]))
    assert {int(i): int(new.tables[0, i]) for i in np.flatnonzero(np.asarray(new.tables[0]))} == dict(counts)
    for sizes, match in [([65537], r"bonus.table_sizes=\[65537\]: hash=code needs one table of 2\^m"),
                         ([1024], r"code_dim=16 <= m <= 30 \(e.g. \[65536\]\)"),
                         ([65536, 65536], r"bonus.table_sizes=\[65536, 65536\]: hash=code needs one table")]:
        with pytest.raises(ConfigError, match=match):
            make_hash(table_sizes=sizes)
    with pytest.raises(ConfigError, match="hash=code needs code_dim <= 30, got code_dim=31"):
        make_hash(code_dim=31, table_sizes=[2**31])
    with pytest.raises(ConfigError, match="must be a non-empty list of odd primes"):
        make_hash(hash="simhash", table_sizes=[65536])
    with pytest.raises(ConfigError, match="bonus.count='after' is not known"):
        make_hash(count="after")


def test_lecun_init_is_he_without_the_sqrt2_gain():
    he, hp_he = make_hash(weight_init="he")
    lecun, hp_lecun = make_hash()
    a = he.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp_he)
    b = lecun.init(jax.random.PRNGKey(0), jnp.zeros((4,) + OBS), hp_lecun)
    for net_a, net_b in ((a.encoder, b.encoder), (a.decoder, b.decoder)):
        for layer, (la, lb) in enumerate(zip(net_a, net_b)):
            gain = 1.0 if layer == len(net_a) - 1 else math.sqrt(2.0)       # code / reconstruction layers: 1
            np.testing.assert_allclose(np.asarray(la["w"]), gain * np.asarray(lb["w"]), rtol=1e-6)
            assert not np.any(np.asarray(lb["b"]))


# ---------------------------------------------------------------------------------------- both


def test_the_docs_give_each_variant_as_one_command_line():
    vime_doc = (ROOT / "docs" / "bonuses" / "vime.md").read_text()
    hash_doc = (ROOT / "docs" / "bonuses" / "hashexplo.md").read_text()
    assert f"bonus=vime {command_line(VIME_AUTHORS)}" in vime_doc
    assert f"bonus=hashexplo {command_line(HASH_AUTHORS)}" in hash_doc
    for bug in ("B2", "B3", "B4"):
        assert bug in vime_doc
    for where in ("ppo_with_bonus.py:417-419", "vime.py:311", "vime.py:296-298", "vime.py:264-277"):
        assert where in vime_doc
    for where in ("hash.py:90", "hash.py:141-156", "hash.py:159-181", "hash.py:223-236", "hash.py:87, 209-210"):
        assert where in hash_doc


@pytest.mark.extended
def test_vime_authors_variant_trains_through_the_config_path(tiny_config, tmp_path):
    summary, rows = end_to_end(tiny_config, tmp_path, "vime", *command_line(VIME_AUTHORS).split())
    assert summary["bonus_model_updates"] == 256 // (4 * 16)
    for row in rows:
        assert float(row["intrinsic_reward"]) > 0 and np.isfinite(float(row["bonus/dynamics_mse"]))
        # one KL per rollout: the batch's max is its mean
        assert float(row["bonus/info_gain_max"]) == pytest.approx(float(row["bonus/info_gain_mean"]), rel=1e-6)
        assert "bonus/dynamics_nll" not in row


@pytest.mark.extended
def test_hashexplo_authors_variant_trains_through_the_config_path(tiny_config, tmp_path):
    summary, rows = end_to_end(tiny_config, tmp_path, "hashexplo", *command_line(HASH_AUTHORS).split())
    assert summary["bonus_counted_states"] == 256   # every s of the four batches counted once
    assert 1 <= summary["bonus_occupied_buckets"] <= 256
    for row in rows:
        assert 0 < float(row["intrinsic_reward"]) and np.isfinite(float(row["bonus/ae_loss"]))

"""The signal statistics of a bonus's raw reward (rfig_exp.agents.signal) against independent
computations (scipy's ranks and correlations, numpy), on bonuses whose answer is known."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from rfig_exp.agents import signal
from rfig_exp.agents.signal import average_ranks, batch_signal, spearman

T, B = 16, 32


def test_average_ranks_equal_scipys_with_ties():
    x = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 0.5, 1.0], np.float32)
    np.testing.assert_allclose(np.asarray(average_ranks(jnp.asarray(x))), stats.rankdata(x) - 1)


@pytest.mark.parametrize("seed", range(3))
def test_spearman_equals_scipys_on_tied_counts(seed):
    rng = np.random.default_rng(seed)
    visits = rng.integers(0, 6, 400).astype(np.float32)          # many ties, as visit counts have
    bonus = (1.0 / np.sqrt(1.0 + visits) + 0.3 * rng.random(400)).astype(np.float32)
    expected = stats.spearmanr(bonus, visits).statistic
    assert float(spearman(jnp.asarray(bonus), jnp.asarray(visits))) == pytest.approx(expected, abs=1e-5)
    assert expected < -0.3


def test_a_constant_bonus_sits_at_its_maximum_with_no_spread():
    out = batch_signal(jnp.full((T, B), 1000.0), jnp.arange(T * B).reshape(T, B))
    assert float(out["at_max_fraction"]) == 1.0 and float(out["cv"]) == 0.0
    assert float(out["visit_rank_corr"]) == 0.0   # undefined for a constant: reported as 0


def test_a_clip_that_binds_is_the_fraction_at_the_maximum():
    raw = jax.random.exponential(jax.random.PRNGKey(0), (T, B))
    clip = float(np.quantile(np.asarray(raw), 0.7))
    out = batch_signal(jnp.minimum(raw, clip))
    assert float(out["at_max_fraction"]) == pytest.approx(float(np.mean(np.asarray(raw) >= clip)), abs=1e-6)
    assert 0.25 < float(out["at_max_fraction"]) < 0.35
    assert "visit_rank_corr" not in out   # no coverage grid


def test_an_informative_bonus_is_spread_one_at_the_top_and_falls_with_visits():
    visits = jax.random.randint(jax.random.PRNGKey(1), (T, B), 0, 50)
    raw = 1.0 / jnp.sqrt(1.0 + visits) * jax.random.uniform(jax.random.PRNGKey(2), (T, B), minval=0.9, maxval=1.1)
    out = batch_signal(raw, visits)
    r = np.asarray(raw).ravel()
    assert float(out["at_max_fraction"]) == pytest.approx(1.0 / (T * B))
    assert float(out["cv"]) == pytest.approx(np.std(r) / np.mean(r), rel=1e-4)
    assert float(out["visit_rank_corr"]) < -0.8


def test_noise_is_blind_to_visits():
    visits = jax.random.randint(jax.random.PRNGKey(3), (64, 64), 0, 50)
    out = batch_signal(jax.random.exponential(jax.random.PRNGKey(4), (64, 64)), visits)
    assert abs(float(out["visit_rank_corr"])) < 0.05 and float(out["cv"]) == pytest.approx(1.0, abs=0.05)


def test_jit_and_vmap():
    raw = jax.random.exponential(jax.random.PRNGKey(5), (3, T, B))
    visits = jax.random.randint(jax.random.PRNGKey(6), (3, T, B), 0, 9)
    stacked = jax.jit(jax.vmap(batch_signal))(raw, visits)
    for s in range(3):
        one = batch_signal(raw[s], visits[s])
        for k, v in one.items():
            assert float(stacked[k][s]) == pytest.approx(float(v), abs=1e-6)


# --------------------------------------------------------------------------- novelty in the bonus's input space


def test_the_reservoir_fills_in_order_then_holds_each_offered_state_alike():
    size, batch, batches, reps = 64, 32, 40, 300   # 1,280 offered to 64 slots
    offered = jnp.arange(batch * batches, dtype=jnp.float32).reshape(batches, batch, 1)

    def fill(key):
        res = signal.reservoir_init(size, (1,))
        for b in range(batches):
            res = signal.reservoir_offer(res, offered[b], jax.random.fold_in(key, b))
        return res

    first = signal.reservoir_offer(signal.reservoir_init(size, (1,)), offered[0], jax.random.PRNGKey(0))
    np.testing.assert_array_equal(first.states[:batch, 0], np.arange(batch))
    np.testing.assert_array_equal(first.states[batch:, 0], 0.0)
    held = jax.jit(jax.vmap(fill))(jax.random.split(jax.random.PRNGKey(1), reps))
    assert int(held.offered[0]) == batch * batches
    counts = np.bincount(np.asarray(held.states[..., 0], np.int64).ravel(), minlength=batch * batches)
    # each of the 1,280 held with probability 64 / 1,280 = 0.05: 15 of 300 reps; the early, middle
    # and late thirds alike (an algorithm that favoured the first or the last would fail here)
    thirds = [c.mean() / reps for c in np.array_split(counts, 3)]
    np.testing.assert_allclose(thirds, size / (batch * batches), rtol=0.06)
    assert counts.sum() == reps * size


def test_knn_and_standardised_distances_equal_float64_numpy():
    rng = np.random.default_rng(0)
    points = rng.normal(size=(50, 7)) * rng.uniform(0.1, 3.0, size=7)
    queries = np.concatenate([rng.normal(size=(20, 7)), points[:5]])  # five equal to a held state
    valid = np.arange(50) < 37
    d = np.sqrt(((queries[:, None, :] - points[None, valid, :]) ** 2).sum(-1))
    expected = np.sort(d, axis=1)[:, 3]
    got = signal.knn_distance(jnp.asarray(queries, jnp.float32), jnp.asarray(points, jnp.float32),
                              jnp.asarray(valid), k=4)
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    mu, sigma = points[valid].mean(0), points[valid].std(0)
    np.testing.assert_allclose(
        signal.standardised_distance(jnp.asarray(queries, jnp.float32), jnp.asarray(points, jnp.float32),
                                     jnp.asarray(valid)),
        np.sqrt((((queries - mu) / sigma) ** 2).sum(1)), rtol=1e-4)
    # an equal state is at distance 0, not at cancellation noise: five copies -> its 5th neighbour is 0
    copies = np.repeat(points[:1], 5, axis=0) + 100.0
    zero = signal.knn_distance(jnp.asarray(copies[:1], jnp.float32), jnp.asarray(copies, jnp.float32),
                               jnp.ones(5, bool), k=5)
    assert float(zero[0]) == 0.0
    # fewer valid states than k: infinite novelty, and both statistics 0
    assert np.isinf(signal.knn_distance(jnp.asarray(queries, jnp.float32), jnp.asarray(points, jnp.float32),
                                        jnp.arange(50) < 3, k=4)).all()
    out = signal.novelty_signal(jnp.arange(25.0), jnp.asarray(queries, jnp.float32), jnp.asarray(points, jnp.float32),
                                jnp.arange(50) < 3)
    assert float(out["novelty_rank_corr"]) == 0.0 and float(out["distance_novelty_rank_corr"]) == 0.0


def _two_rooms_stream(batches: int, batch: int, seed: int = 0) -> np.ndarray:
    """``[batches, batch, 2]`` states of an agent that lives in two rooms (x = -3 and x = +3) and
    sometimes strays anywhere in the box: the corridor between them lies at the mean, where a
    distance from the mean calls it familiar, although it is rarely visited."""
    rng = np.random.default_rng(seed)
    room = rng.choice([-3.0, 3.0], size=(batches, batch))
    states = np.stack([room, np.zeros_like(room)], axis=-1) + rng.normal(scale=0.5, size=(batches, batch, 2))
    stray = rng.random((batches, batch)) < 0.15
    return np.where(stray[..., None], rng.uniform(-5, 5, size=(batches, batch, 2)), states)


def _known_bonuses(stream: np.ndarray, seed: int = 1) -> dict[str, np.ndarray]:
    """Each batch's raw bonuses of the known answers: a count of the next state's cell (0.5 units)
    over every earlier state, 1 / sqrt(n + 1) (a working count bonus); the state's standardised
    distance from the mean of every earlier state (a score that learns nothing); a constant; noise."""
    rng = np.random.default_rng(seed)
    cells = np.floor(stream / 0.5).astype(np.int64)
    keys = (cells[..., 0] + 100) * 1000 + (cells[..., 1] + 100)
    counts: dict[int, int] = {}
    out: dict[str, list[np.ndarray]] = {"count": [], "distance": [], "constant": [], "noise": []}
    for b in range(len(stream)):
        seen = stream[:b].reshape(-1, 2)
        out["count"].append(1.0 / np.sqrt(np.array([counts.get(int(k), 0) for k in keys[b]]) + 1.0))
        if b:
            mu, sd = seen.mean(0), seen.std(0)
            out["distance"].append(np.sqrt((((stream[b] - mu) / sd) ** 2).sum(-1)))
        else:
            out["distance"].append(np.zeros(stream.shape[1]))
        out["constant"].append(np.full(stream.shape[1], 0.7))
        out["noise"].append(rng.exponential(size=stream.shape[1]))
        for k in keys[b]:
            counts[int(k)] = counts.get(int(k), 0) + 1
    return {name: np.stack(v) for name, v in out.items()}


def _in_run_novelty(seed: int, batches: int = 30, batch: int = 512) -> dict[str, tuple[float, float]]:
    """Each known answer's run: its mean over batches (from the 6th, once the reservoir holds a few)
    of ``(novelty_rank_corr, distance_novelty_rank_corr)``, through the trainer's own function."""
    stream = _two_rooms_stream(batches, batch, seed)
    step = jax.jit(lambda res, raw, states, key: signal.novelty_step(res, raw[None], states[None], lambda x: x, key))
    found = {}
    for name, raw in _known_bonuses(stream, seed + 100).items():
        res, rows = signal.reservoir_init(1024, (2,)), []
        for b in range(batches):
            res, m = step(res, jnp.asarray(raw[b], jnp.float32), jnp.asarray(stream[b], jnp.float32),
                          jax.random.PRNGKey(1000 * seed + b))
            rows.append([float(m["novelty_rank_corr"]), float(m["distance_novelty_rank_corr"])])
        found[name] = tuple(np.mean(rows[5:], axis=0))
    return found


def test_novelty_tells_a_working_count_from_a_distance_score_a_constant_and_noise():
    """Known answers, batch after batch, three runs each: a count of the state's cell tracks novelty
    better than a distance from the mean does (the corridor between the rooms); the distance score
    matches the reference (it is that score, up to the mean's sample); a constant and noise carry
    none. The signal check's rule, given these runs, passes the count and rejects the other three."""
    from campaign.claims.signal import RULE, judge

    runs = [_in_run_novelty(seed) for seed in range(3)]
    for found in runs:
        count, distance, constant, noise = (found[k] for k in ("count", "distance", "constant", "noise"))
        assert count[0] > count[1] + 0.2, found
        assert abs(distance[0] - distance[1]) < 0.05, found
        assert constant[0] == 0.0 and abs(noise[0]) < 0.05, found
    spread = np.ones(3)  # at_max 0 and CV 1: the other parts of the rule pass every answer
    verdicts = {}
    for name in ("count", "distance", "constant", "noise"):
        novelty = np.array([r[name][0] for r in runs])
        reference = np.array([r[name][1] for r in runs])
        verdicts[name] = judge(spread * 0, spread, None, RULE, novelty=novelty, novelty_reference=reference)
    assert verdicts["count"][0] == "ok", verdicts
    assert verdicts["distance"][0] == "degenerate"
    assert "no better than a distance score in its input space" in verdicts["distance"][1][0]
    for k in ("constant", "noise"):
        assert verdicts[k][0] == "degenerate" and "blind to novelty" in verdicts[k][1][0], verdicts[k]


def _trainer(tiny_config, *overrides):
    from conftest import trainer_of

    return trainer_of(tiny_config("env=mountaincar", "bonus=rnd", *overrides))


def test_the_novelty_statistics_change_no_other_number_of_a_window(tiny_config):
    """A window trained with the reservoir and without it: the same states (the reservoir aside) and
    the same metrics (its two columns aside); the reservoir then holds every state offered (64 < 1024)."""
    with_it, hp = _trainer(tiny_config, "agent.novelty_reservoir=1024")
    without, _ = _trainer(tiny_config, "agent.novelty_reservoir=0")
    keys = jnp.stack([jax.random.PRNGKey(s) for s in (0, 1)])
    states = jax.jit(jax.vmap(with_it.init, in_axes=(0, None)))(keys, hp)
    plain = jax.jit(jax.vmap(without.init, in_axes=(0, None)))(keys, hp)
    assert plain.novelty is None and states.novelty.states.shape == (2, 1024, 2)
    after, metrics = jax.jit(with_it.run_window)(states, hp)
    after_plain, metrics_plain = jax.jit(without.run_window)(plain, hp)
    for a, b in zip(jax.tree.leaves(after._replace(novelty=None)), jax.tree.leaves(after_plain)):
        np.testing.assert_array_equal(a, b)
    added = {"signal/novelty_rank_corr", "signal/distance_novelty_rank_corr"}
    assert set(metrics) - set(metrics_plain) == added
    for k in metrics_plain:
        np.testing.assert_array_equal(metrics[k], metrics_plain[k], err_msg=k)
    batches = int(after.update[0])
    np.testing.assert_array_equal(after.novelty.offered, batches * 64)   # 4 envs x 16 steps a batch
    assert np.isfinite(np.asarray(metrics["signal/novelty_rank_corr"])).all()


def test_a_reservoir_smaller_than_the_neighbour_is_refused_naming_its_key(tiny_config):
    from rfig_exp.config.errors import ConfigError
    from rfig_exp.spec.run_spec import build_run_spec

    with pytest.raises(ConfigError, match="agent.novelty_reservoir=5 must be 0 .* or at least 10"):
        build_run_spec(tiny_config("env=mountaincar", "bonus=rnd", "agent.novelty_reservoir=5"))

import numpy as np

from rfig_exp.agents.normalization import (
    discounted_return_filter,
    normalize,
    rms_init,
    rms_update,
    scale_by_return_std,
)


def test_running_stats_match_numpy_over_batches():
    rng = np.random.default_rng(1)
    batches = [rng.normal(3.0, 2.0, size=(n, 5)) for n in (7, 100, 33)]
    rms = rms_init((5,))
    for b in batches:
        rms = rms_update(rms, b)
    data = np.concatenate(batches)
    np.testing.assert_allclose(rms.mean, data.mean(0), rtol=1e-5)
    np.testing.assert_allclose(rms.var, data.var(0), rtol=1e-4)
    assert float(rms.count) == len(data)
    z = np.asarray(normalize(rms, data, 5.0))
    np.testing.assert_allclose(z.mean(0), 0.0, atol=1e-4)
    assert np.abs(normalize(rms, np.full((1, 5), 1e6), 5.0)).max() == 5.0


def test_forward_filter_scans_time_and_carries_across_batches():
    rng = np.random.default_rng(2)
    r = rng.random((6, 3))
    gamma = 0.9
    carry, out = discounted_return_filter(np.zeros(3), r[:4], gamma)
    carry, out2 = discounted_return_filter(carry, r[4:], gamma)
    want = np.zeros((6, 3))
    running = np.zeros(3)
    for t in range(6):  # per environment, along time
        running = gamma * running + r[t]
        want[t] = running
    np.testing.assert_allclose(np.concatenate([out, out2]), want, rtol=1e-5)


def test_intrinsic_rewards_divided_by_return_std_without_mean_shift():
    rng = np.random.default_rng(3)
    r = rng.random((8, 4)) + 1.0
    _, rms, scaled = scale_by_return_std(np.zeros(4), rms_init(()), r, 0.99)
    _, returns = discounted_return_filter(np.zeros(4), r, 0.99)
    np.testing.assert_allclose(scaled, r / np.sqrt(np.var(np.asarray(returns)) + 1e-8), rtol=1e-4)
    assert (np.asarray(scaled) > 0).all()

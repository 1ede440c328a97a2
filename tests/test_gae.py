"""GAE against plain Python loops, with termination and truncation in the same batch."""

import numpy as np
import pytest

from rfig_exp.agents.ppo import losses


def loop_extrinsic_gae(r, v, v_final, term, trunc, gamma, lam):
    """Reference: per environment, walk backwards; bootstrap from V(s') unless terminated,
    cut the trace at any episode end."""
    T, B = r.shape
    adv = np.zeros((T, B))
    for b in range(B):
        running = 0.0
        for t in reversed(range(T)):
            boot = 0.0 if term[t, b] else v_final[t, b]
            delta = r[t, b] + gamma * boot - v[t, b]
            if term[t, b] or trunc[t, b]:
                running = delta
            else:
                running = delta + gamma * lam * running
            adv[t, b] = running
    return adv


def loop_intrinsic_gae(r, v, v_last, gamma, lam):
    T, B = r.shape
    adv = np.zeros((T, B))
    for b in range(B):
        running = 0.0
        for t in reversed(range(T)):
            v_next = v_last[b] if t == T - 1 else v[t + 1, b]
            running = r[t, b] + gamma * v_next - v[t, b] + gamma * lam * running
            adv[t, b] = running
    return adv


@pytest.fixture
def batch():
    rng = np.random.default_rng(0)
    T, B = 12, 3
    term = np.zeros((T, B), bool)
    trunc = np.zeros((T, B), bool)
    term[3, 0] = True
    trunc[7, 0] = True
    trunc[5, 1] = True
    term[5, 2] = trunc[5, 2] = False
    term[T - 1, 2] = True  # ends exactly at the rollout boundary
    return dict(r=rng.normal(size=(T, B)), v=rng.normal(size=(T, B)), v_final=rng.normal(size=(T, B)),
                term=term, trunc=trunc, v_last=rng.normal(size=B))


def test_extrinsic_gae_matches_loop(batch):
    b = batch
    got = losses.extrinsic_gae(b["r"], b["v"], b["v_final"], b["term"].astype(float), b["trunc"].astype(float),
                               0.99, 0.95)
    want = loop_extrinsic_gae(b["r"], b["v"], b["v_final"], b["term"], b["trunc"], 0.99, 0.95)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_truncation_bootstraps_but_termination_does_not(batch):
    b = batch
    t, env = 5, 1  # truncated step: the advantage there is r + gamma V(s') - V(s)
    got = np.asarray(losses.extrinsic_gae(b["r"], b["v"], b["v_final"], b["term"].astype(float),
                                          b["trunc"].astype(float), 0.99, 0.95))
    assert got[t, env] == pytest.approx(b["r"][t, env] + 0.99 * b["v_final"][t, env] - b["v"][t, env], abs=1e-5)
    t, env = 3, 0  # terminated step: no bootstrap at all
    assert got[t, env] == pytest.approx(b["r"][t, env] - b["v"][t, env], abs=1e-5)
    # Treating the truncation as a termination would change the estimate.
    as_term = np.asarray(losses.extrinsic_gae(b["r"], b["v"], b["v_final"], (b["term"] | b["trunc"]).astype(float),
                                              b["trunc"].astype(float), 0.99, 0.95))
    assert abs(as_term[5, 1] - got[5, 1]) > 1e-3


def test_intrinsic_gae_ignores_episode_ends(batch):
    b = batch
    got = losses.intrinsic_gae(b["r"], b["v"], b["v_last"], 0.99, 0.95)
    want = loop_intrinsic_gae(b["r"], b["v"], b["v_last"], 0.99, 0.95)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_policy_loss_clips_ratio():
    old = np.log(np.array([0.5, 0.5]))
    new = np.log(np.array([0.9, 0.1]))   # ratios 1.8 and 0.2, both outside 1 +- 0.2
    adv = np.array([1.0, -1.0])
    loss, _, clip_frac = losses.policy_loss(new, old, adv, 0.2)
    # min(1.8 * 1, 1.2 * 1) = 1.2 ; min(0.2 * -1, 0.8 * -1) = -0.8 -> mean 0.2, loss -0.2
    assert float(loss) == pytest.approx(-0.2, abs=1e-6)
    assert float(clip_frac) == 1.0

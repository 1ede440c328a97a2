"""Is VIME's bonus an information gain or a prediction error? Measurements on random-policy rollouts
of gymnax MountainCar and Acrobot with the paper-sized BNN at the bonus's defaults (``kl_ratio_len=0``
so the raw gain is compared; the ratio divides a whole batch by one number and changes no ranking).

    python benchmarks/vime_information_gain.py                    # both envs, 246 updates (a 1M-step run)
    python benchmarks/vime_information_gain.py --envs mountaincar --updates 60    # quick

1. **The gain against the exact KL of its step**, per transition: for 256 transitions, the bonus as
   ``reward`` computes it (float32) against ``KL(q_i' || q)`` evaluated in float64 numpy, ``q_i'`` the
   posterior after the step ``(mu, rho) -= lambda H^-1 g_i`` on transition ``i`` alone, ``g_i`` formed
   explicitly by a hand-written backward pass; at init and after the updates.
2. **Ranks**: Spearman correlation over a batch between the per-transition gain and the squared
   error of the mean network (weights ``mu``, no noise), and of the sampled network, at several
   points of training; and a known-answer construction (below), with an exact conjugate Bayesian
   linear regression as the information gain that the construction is meant to separate.
3. **The posterior's movement** per window of 6 updates (24,576 agent steps): the mean, min and max
   of ``sigma`` over every weight, the distance of ``mu`` from its init, and ``softplus(rho0 + t lr)``
   (every ``rho`` moving by the full Adam step ``lr`` towards the prior) for comparison; the same with
   ``kl_weight=0`` (no pull towards the prior) to show what the data alone do to ``sigma``.

Known-answer construction (``known_answer``): a state region A seen in every training batch with
noisy targets ``y = s + tau * N(0, 1)``, ``tau = 1``, and a region B (``-c`` where A is ``c``: equal
input norms; or A's states with an action never taken in A) never seen, whose targets are the model's
own mean prediction plus ``tau / 2`` per output (a moderate error, a quarter of A's squared error by
construction). An information gain should rank B above A (the posterior is certain about A); a
prediction-error bonus ranks A above B. Printed: the fraction of (A, B) pairs where a ranker scores B
higher, for the squared error, the bonus, the exact gain of a conjugate linear model (full and
diagonal posterior) and VIME's formula given a diagonal Laplace posterior fitted to A.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import rfig_exp  # noqa: E402

rfig_exp.set_cpu_flags()  # before jax is imported

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from rfig_exp.bonuses import BonusBatch, bnn, make_bonus, parse_bonus  # noqa: E402
from rfig_exp.bonuses.base import action_features  # noqa: E402
from rfig_exp.envs import make_env  # noqa: E402
from rfig_exp.envs.base import random_actions  # noqa: E402

T, B = 128, 32            # the agent's rollout: 128 steps x 32 envs
WINDOW = 6                # updates per 24,576-step metrics window


def make_vime(obs_shape, action_space, batch_size=T * B, **overrides):
    node = OmegaConf.load(ROOT / "conf" / "bonus" / "vime.yaml")
    node = OmegaConf.merge(node, {"kl_ratio_len": 0, **overrides})
    return make_bonus(parse_bonus(node, batch_size), obs_shape, action_space)


def rollout_stream(env, key):
    """``next_batch()`` -> a ``BonusBatch [T, B]`` of random-policy transitions continuing the same envs,
    observations normalised by the first batch's mean and std and clipped to [-5, 5] like the agent's."""
    k_reset, key = jax.random.split(key)
    obs, state = jax.vmap(env.reset)(jax.random.split(k_reset, B))

    @jax.jit
    def run(carry, key):
        def step(carry, k):
            state, obs = carry
            k_act, k_env = jax.random.split(k)
            action = random_actions(k_act, env.action_space, B)
            out = jax.vmap(env.step)(jax.random.split(k_env, B), state, action)
            return (out.state, out.obs), (obs, action, out.final_obs, out.terminated, out.truncated)
        return jax.lax.scan(step, carry, jax.random.split(key, T))

    carry, stats = (state, obs), {}

    def next_batch():
        nonlocal carry, key
        key, k = jax.random.split(key)
        carry, (o, a, f, term, trunc) = run(carry, k)
        if not stats:
            flat = o.reshape((-1,) + env.obs_shape)
            stats.update(mean=flat.mean(0), std=flat.std(0) + 1e-8)
        norm = lambda x: jnp.clip((x - stats["mean"]) / stats["std"], -5.0, 5.0)  # noqa: E731
        return BonusBatch(obs=norm(o), actions=a, next_obs=norm(f), terminated=term, truncated=trunc)

    return next_batch


def model_io(batch, action_space):
    n = batch.terminated.size
    x = jnp.concatenate([batch.obs.reshape(n, -1), action_features(batch.actions, action_space).reshape(n, -1)], -1)
    return np.asarray(x, np.float64), np.asarray(batch.next_obs.reshape(n, -1), np.float64)


def as_lists(params, eps):
    """numpy float64 ``[(w, b)]`` of ``mu``, ``rho`` and ``eps``."""
    f = lambda layers: [(np.asarray(d["w"], np.float64), np.asarray(d["b"], np.float64)) for d in layers]  # noqa: E731
    return f(params["mu"]), f(params["rho"]), f(eps)


def exact_step_kl(params, eps, x, y, likelihood_sigma, step, chunk=16):
    """``[N]`` float64: ``KL(q_i' || q)`` for every transition, ``q_i'`` the posterior after
    ``(mu, rho) -= step * H^-1 g_i``, ``g_i`` transition i's NLL gradient with the weight sample
    ``mu + softplus(rho) eps``, formed explicitly (ReLU MLP, backward pass written out)."""
    mu, rho, eps = as_lists(params, eps)
    sig = [tuple(np.logaddexp(0.0, r) for r in pair) for pair in rho]
    sgm = [tuple(1.0 / (1.0 + np.exp(-r)) for r in pair) for pair in rho]
    weights = [(m[0] + s[0] * e[0], m[1] + s[1] * e[1]) for m, s, e in zip(mu, sig, eps)]
    out = np.empty(len(x))
    for lo in range(0, len(x), chunk):
        a, inputs, zs = x[lo:lo + chunk], [], []
        for layer, (w, b) in enumerate(weights):
            inputs.append(a)
            z = a @ w + b
            zs.append(z)
            a = np.maximum(z, 0.0) if layer < len(weights) - 1 else z
        d = (a - y[lo:lo + chunk]) / likelihood_sigma ** 2
        kl = np.zeros(len(d))
        for layer in reversed(range(len(weights))):
            # dNLL_i/dmu of the weights [n, in, out] and of the biases [n, out]
            for part, g in ((0, inputs[layer][:, :, None] * d[:, None, :]), (1, d)):
                s, sg, e = sig[layer][part], sgm[layer][part], eps[layer][part]
                dm = -step * g * s ** 2                        # H_mu^-1 = sigma^2
                drho = -step * (g * e * sg) * s ** 2 / (2.0 * sg ** 2)   # H_rho^-1 = sigma^2 / (2 sigmoid^2)
                u = np.log1p(sg * np.expm1(drho)) / s          # (softplus(rho + drho) - sigma) / sigma, exactly
                term = u - np.log1p(u) + 0.5 * u ** 2 + dm ** 2 / (2.0 * s ** 2)
                kl += term.reshape(len(d), -1).sum(1)
            if layer:
                d = (d @ weights[layer][0].T) * (zs[layer - 1] > 0)
        out[lo:lo + chunk] = kl
    return out


def spearman(a, b):
    rank = lambda v: np.argsort(np.argsort(v)).astype(np.float64)  # noqa: E731
    return float(np.corrcoef(rank(np.asarray(a)), rank(np.asarray(b)))[0, 1])


def auc(high, low):
    """Fraction of pairs (h, l) with h > l."""
    return float(np.mean(np.asarray(high)[:, None] > np.asarray(low)[None, :]))


def errors(params, eps, x, y):
    """Per-transition squared error of the mean network and of the sampled network."""
    mean = bnn.forward(params["mu"], jnp.asarray(x, jnp.float32))[0]
    sampled = bnn.forward(bnn.sample_weights(params, eps), jnp.asarray(x, jnp.float32))[0]
    return (np.sum((np.asarray(mean, np.float64) - y) ** 2, 1), np.sum((np.asarray(sampled, np.float64) - y) ** 2, 1))


def sigma_stats(params, mu0):
    sig = np.concatenate([np.ravel(jax.nn.softplus(r)) for r in jax.tree.leaves(params["rho"])])
    mu = np.concatenate([np.ravel(m) for m in jax.tree.leaves(params["mu"])])
    return sig.mean(), sig.min(), sig.max(), np.linalg.norm(mu - mu0) / np.linalg.norm(mu0), \
        np.linalg.norm(mu) / np.linalg.norm(mu0)


def train_and_measure(env_name, updates, seed):
    env = make_env(env_name)
    bonus, hp = make_vime(env.obs_shape, env.action_space)
    stream = rollout_stream(env, jax.random.PRNGKey(seed))
    state = bonus.init(jax.random.PRNGKey(seed + 1), None, hp)
    reward, update = jax.jit(bonus.reward), jax.jit(bonus.update)
    rho0 = float(bnn.softplus_inverse(jnp.float32(hp.init_sigma)))
    mu0 = np.concatenate([np.ravel(m) for m in jax.tree.leaves(state.params["mu"])])
    checkpoints = sorted({0, 6, 30, updates // 2, updates})
    print(f"\n== {env_name}: {updates} updates of one [{T}, {B}] random-policy batch each, defaults, kl_ratio_len=0")
    print("updates | gain vs exact KL: max rel err (median) | Spearman(gain, sq err of mean net) "
          "| Spearman(gain, sq err of sampled net) | gain median")
    trajectory = []
    for t in range(updates + 1):
        batch = stream()
        if t % WINDOW == 0 or t == updates:
            trajectory.append((t, *sigma_stats(state.params, mu0)))
        if t in checkpoints:
            gain = np.asarray(reward(state, batch, hp)[0], np.float64).reshape(-1)
            x, y = model_io(batch, env.action_space)
            eps = bnn.sample_noise(state.key, state.params["mu"])
            pick = np.random.default_rng(t).choice(len(x), 256, replace=False)
            exact = exact_step_kl(state.params, eps, x[pick], y[pick], float(hp.likelihood_sigma), float(hp.step_size))
            rel = np.abs(gain[pick] / exact - 1.0)
            mean_err, sampled_err = errors(state.params, eps, x, y)
            print(f"{t:7d} | {rel.max():.1e} ({np.median(rel):.1e}) | {spearman(gain, mean_err):.3f} "
                  f"| {spearman(gain, sampled_err):.3f} | {np.median(gain):.2e}")
        if t < updates:
            state, _ = update(state, batch, jax.random.PRNGKey(10_000 + t), hp)
    return trajectory, rho0, float(hp.lr)


def sigma_only(env_name, updates, seed, **overrides):
    """The posterior std after ``updates`` updates with ``overrides`` (mean, min, max)."""
    env = make_env(env_name)
    bonus, hp = make_vime(env.obs_shape, env.action_space, **overrides)
    stream = rollout_stream(env, jax.random.PRNGKey(seed))
    state = bonus.init(jax.random.PRNGKey(seed + 1), None, hp)
    update = jax.jit(bonus.update)
    mu0 = np.concatenate([np.ravel(m) for m in jax.tree.leaves(state.params["mu"])])
    for t in range(updates):
        state, _ = update(state, stream(), jax.random.PRNGKey(10_000 + t), hp)
    return sigma_stats(state.params, mu0)


def print_trajectory(trajectory, rho0, lr, updates, no_kl):
    print("posterior per window: updates | mean sigma | min sigma | max sigma | softplus(rho0 + t lr) "
          "| ||mu - mu0|| / ||mu0|| | ||mu|| / ||mu0||")
    for t, mean, low, high, moved, size in trajectory:
        pred = float(jax.nn.softplus(rho0 + t * lr))
        print(f"  {t:4d} | {mean:.6f} | {low:.6f} | {high:.6f} | {pred:.6f} | {moved:.2e} | {size:.4f}")
    mean, low, high, moved, size = no_kl
    print(f"kl_weight=0, after {updates}: mean sigma {mean:.6f}, min {low:.6f}, max {high:.6f}, "
          f"||mu - mu0|| / ||mu0|| {moved:.2e}, ||mu|| / ||mu0|| {size:.4f}")


def linear_information_gain(cov, phi, r, noise):
    """Exact ``KL(posterior after (phi, y) || posterior)`` of Bayesian linear regression ``y = W phi +
    N(0, noise^2)`` whose posterior has covariance ``cov`` (shared by the outputs); ``r [N, d]`` the
    residuals of the posterior mean."""
    v = np.einsum("ni,ij,nj->n", phi, cov, phi)
    per_output = np.log1p(v / noise ** 2) - v / (noise ** 2 + v)
    return 0.5 * (r.shape[1] * per_output + v * np.sum(r ** 2, 1) / (noise ** 2 + v) ** 2)


def laplace_posterior(params, data, space, hp):
    """``{"mu", "rho"}``: the means of ``params``, ``sigma^-2 = prior^-2 + sum_i (dNLL_i/dmu)^2`` over
    ``data`` (a list of ``(s, a, y)``), per-transition gradients squared and summed as ``(a^2)^T (d^2)``."""
    zero = jax.tree.map(jnp.zeros_like, params["mu"])
    fisher = jax.tree.map(jnp.zeros_like, params["mu"])
    for s, a, y in data:
        x = jnp.concatenate([s, action_features(a, space)], 1)
        inputs, errors = bnn.backprop_errors(params, zero, x, y, hp.likelihood_sigma, hp.activation)
        fisher = tuple({"w": f["w"] + jnp.square(i).T @ jnp.square(e), "b": f["b"] + jnp.sum(jnp.square(e), 0)}
                       for f, i, e in zip(fisher, inputs, errors))
    sigma = jax.tree.map(lambda f: 1.0 / jnp.sqrt(1.0 / hp.prior_sigma ** 2 + f), fisher)
    return {"mu": params["mu"], "rho": jax.tree.map(bnn.softplus_inverse, sigma)}


def region(key, centre, n, obs_dim, actions):
    """States ``centre + 0.3 N(0, 1)``, actions uniform over the list ``actions``."""
    k_s, k_a = jax.random.split(key)
    s = centre + 0.3 * jax.random.normal(k_s, (n, obs_dim))
    return s, jnp.asarray(actions)[jax.random.randint(k_a, (n,), 0, len(actions))]


def known_answer(novel="mirror", updates=300, lr=1e-4, n=256, tau=1.0, obs_dim=2, seed=0, hidden=(256, 256)):
    """``(AUCs, mean squared errors, mean sigma)`` of the construction in the module docstring, AUC =
    P(B above A); A takes actions 0 and 1 of 3. ``novel``: mirror (B's states at ``-c``, actions 0 and 1)
    | action (B's states from A's region, action 2, never taken in A)."""
    from rfig_exp.envs.base import DiscreteSpace
    space, centre = DiscreteSpace(3), jnp.ones(obs_dim)
    bonus, hp = make_vime((obs_dim,), space, batch_size=n, lr=lr, hidden=list(hidden))
    state = bonus.init(jax.random.PRNGKey(seed), None, hp)
    update, reward = jax.jit(bonus.update), jax.jit(bonus.reward)
    zeros = jnp.zeros((1, n), bool)

    def batch(s, a, y):
        return BonusBatch(obs=s[None], actions=a[None], next_obs=y[None], terminated=zeros, truncated=zeros)

    def noisy_a(key):
        k, k_y = jax.random.split(key)
        s, a = region(k, centre, n, obs_dim, [0, 1])
        return s, a, s + tau * jax.random.normal(k_y, s.shape)

    seen = []
    for t in range(updates):
        s, a, y = noisy_a(jax.random.PRNGKey(100 + t))
        seen.append(np.concatenate([np.asarray(s), np.asarray(action_features(a, space)), np.ones((n, 1))], 1))
        state, _ = update(state, batch(s, a, y), jax.random.PRNGKey(5000 + t), hp)
    s_a, a_a, y_a = noisy_a(jax.random.PRNGKey(1))
    s_b, a_b = region(jax.random.PRNGKey(2), -centre if novel == "mirror" else centre, n, obs_dim,
                      [0, 1] if novel == "mirror" else [2])
    x_b = jnp.concatenate([s_b, action_features(a_b, space)], 1)
    shift = 0.5 * tau * jnp.where(jax.random.bernoulli(jax.random.PRNGKey(3), shape=s_b.shape), 1.0, -1.0)
    y_b = bnn.forward(state.params["mu"], x_b)[0] + shift            # moderate error for the mean network
    out, errs = {}, {}
    gains = {name: [] for name in "AB"}
    for k in range(8):   # the bonus for 8 weight-noise draws: the agent gets one, the mean shows the trend
        st = state._replace(key=jax.random.PRNGKey(900 + k))
        gains["A"].append(np.asarray(reward(st, batch(s_a, a_a, y_a), hp)[0]).reshape(-1))
        gains["B"].append(np.asarray(reward(st, batch(s_b, a_b, y_b), hp)[0]).reshape(-1))
    out["VIME, one draw"] = float(np.mean([auc(b, a) for a, b in zip(gains["A"], gains["B"])]))
    out["VIME, mean of 8 draws"] = auc(np.mean(gains["B"], 0), np.mean(gains["A"], 0))
    for name, (s, a, y) in {"A": (s_a, a_a, y_a), "B": (s_b, a_b, y_b)}.items():
        x = jnp.concatenate([s, action_features(a, space)], 1)
        errs[name] = np.sum((np.asarray(bnn.forward(state.params["mu"], x)[0]) - np.asarray(y)) ** 2, 1)
    out["squared error of the mean net"] = auc(errs["B"], errs["A"])
    # The exact information gain of a conjugate linear model given every A point the BNN was trained on,
    # B's targets again its own posterior mean plus the same shift: the construction separates a gain.
    phi_seen = np.concatenate(seen)
    noise, prior = float(hp.likelihood_sigma), float(hp.prior_sigma)
    precision = np.eye(phi_seen.shape[1]) / prior ** 2 + phi_seen.T @ phi_seen / noise ** 2
    cov = np.linalg.inv(precision)
    targets = np.concatenate([np.asarray(noisy_a(jax.random.PRNGKey(100 + t))[2]) for t in range(updates)])
    w = cov @ phi_seen.T @ targets / noise ** 2
    phi = {name: np.concatenate([np.asarray(s), np.asarray(action_features(a, space)), np.ones((n, 1))], 1)
           for name, (s, a) in {"A": (s_a, a_a), "B": (s_b, a_b)}.items()}
    r = {"A": np.asarray(y_a) - phi["A"] @ w, "B": np.asarray(shift, np.float64)}
    for label, c in (("", cov), (", diagonal posterior", np.diag(1.0 / np.diag(precision)))):
        lin = {name: linear_information_gain(c, phi[name], r[name], noise) for name in "AB"}
        out[f"exact IG, Bayesian linear model{label}"] = auc(lin["B"], lin["A"])
    # VIME's own formula with a posterior that has absorbed A: a diagonal Laplace posterior at the trained
    # means, 1/sigma^2 = 1/prior^2 + sum over A of g^2 (the NLL's per-transition gradient at mu), and the
    # gain at the mean weights (eps = 0). Separates the formula from the posterior it is given.
    laplace = laplace_posterior(state.params, [noisy_a(jax.random.PRNGKey(100 + t)) for t in range(updates)],
                                space, hp)
    zero = jax.tree.map(jnp.zeros_like, state.params["mu"])
    ig = {name: np.asarray(bnn.information_gain(laplace, [zero], jnp.concatenate([s, action_features(a, space)], 1),
                                                jnp.asarray(y, jnp.float32), hp))
          for name, (s, a, y) in {"A": (s_a, a_a, y_a), "B": (s_b, a_b, y_b)}.items()}
    out["VIME's formula, diagonal Laplace posterior from A"] = auc(ig["B"], ig["A"])
    sigma = bnn.mean_sigma(state.params)
    return out, {name: float(e.mean()) for name, e in errs.items()}, float(sigma)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default="mountaincar,acrobot")
    parser.add_argument("--updates", type=int, default=246)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for env_name in args.envs.split(","):
        trajectory, rho0, lr = train_and_measure(env_name, args.updates, args.seed)
        no_kl = sigma_only(env_name, args.updates, args.seed, kl_weight=0.0)
        print_trajectory(trajectory, rho0, lr, args.updates, no_kl)
    for label, kw in (("B mirrored, defaults (lr 1e-4)", dict()), ("B mirrored, lr 3e-3", dict(lr=3e-3)),
                      ("B an action unseen in A, defaults", dict(novel="action"))):
        aucs, errs, sigma = known_answer(**kw)
        print(f"\n== known answer, {label}, 300 updates on A: mean squared error A {errs['A']:.3f}, "
              f"B {errs['B']:.3f}; mean sigma {sigma:.4f}")
        for name, value in aucs.items():
            print(f"  P(B ranked above A), {name}: {value:.3f}")


if __name__ == "__main__":
    main()

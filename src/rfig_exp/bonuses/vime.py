"""VIME: variational information maximising exploration (Houthooft et al. 2016).

A Bayesian neural network dynamics model ``p(s' | s, a; theta)`` with fully factorised
Gaussian weights ``q(theta) = prod N(mu, softplus(rho)^2)``, trained by variational
inference with one Adam step per batch on the loss

    L(mu, rho) = mean_i E_q[-log N(y_i; f(x_i; theta), likelihood_sigma^2)]
                 + kl_weight * KL(q || N(0, prior_sigma^2))

(``x = [s, onehot(a)]``, ``y = s'`` or ``s' - s``; observations normalised by the agent).

Bonus per transition ``i``: the information gain of the posterior after one second-order
step on that transition alone, ``IG_i ~ KL(q_i' || q) ~ 0.5 * step^2 * g_i^T H^-1 g_i``,
with ``g_i`` the gradient of transition ``i``'s negative log-likelihood with respect to
``(mu, rho)`` and ``H`` the diagonal Hessian of ``KL(q' || q)`` at ``q' = q``:
``H_mu = 1 / sigma^2``, ``H_rho = 2 sigmoid(rho)^2 / sigma^2``. Every transition of a
batch is scored from the same pre-update posterior; the result is clipped to
``[0, clip]`` (non-finite values become 0 or ``clip``).

No per-transition gradient is ever formed. With one weight sample ``W = mu + sigma * eps``
shared by the batch, a dense layer's per-transition gradient is the outer product of the
layer input ``a_i`` and the back-propagated error ``d_i = dNLL_i / dz_i``:
``dNLL_i/dmu = a_i d_i^T`` and ``dNLL_i/drho = a_i d_i^T * eps * sigmoid(rho)``, so

    sum_jk g_mu^2 / H_mu + g_rho^2 / H_rho = ((a_i^2) @ M) . (d_i^2),
    M = sigma^2 * (1 + eps^2 / 2)

(biases alike with ``a = 1``). All ``d_i`` come from one batched backward pass of the
summed NLL (the gradient with respect to zero "probes" added to each pre-activation).
With ``num_samples = S`` weight samples the NLL is averaged over them (as the reference's
10 Monte-Carlo samples), ``g_i = mean_s a_is d_is^T``, and the quadratic form needs one
such product per pair of samples (``S (S + 1) / 2`` per layer).
See docs/bonuses/vime.md for the derivation, the sources and the deviations from the
reference code.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rfig_exp.bonuses.base import Bonus, action_features, flat_states, float32_hparams
from rfig_exp.bonuses.nets import adam_init, adam_step, mlp_init
from rfig_exp.bonuses.settings import VIMESettings
from rfig_exp.envs.base import BoxSpace, DiscreteSpace

Layers = tuple  # ({"w": [in, out], "b": [out]}, ...) one dict per dense layer, as nets.mlp_init


class VIMEState(NamedTuple):
    params: dict        # {"mu": Layers, "rho": Layers}: q(W) = N(mu, softplus(rho)^2)
    opt_state: Any      # Adam moments of ``params``
    key: jax.Array      # weight-noise key shared by this batch's reward and update
    updates: jax.Array  # [] int32, Adam steps taken


def action_dim(action_space) -> int:
    if isinstance(action_space, DiscreteSpace):
        return action_space.num_actions
    if isinstance(action_space, BoxSpace):
        return action_space.dim
    raise TypeError(f"unknown action space {action_space!r}")


def softplus_inverse(sigma: jax.Array) -> jax.Array:
    """``rho`` with ``softplus(rho) = sigma`` (stable for small and large sigma)."""
    return sigma + jnp.log(-jnp.expm1(-sigma))


def init_params(key: jax.Array, sizes: tuple[int, ...], init_sigma: jax.Array) -> dict:
    """Means as ``nets.mlp_init`` (variance 2 / fan_in, zero biases), every ``sigma = init_sigma``."""
    mu = mlp_init(key, sizes)
    rho0 = softplus_inverse(jnp.asarray(init_sigma, jnp.float32))
    return {"mu": mu, "rho": jax.tree.map(lambda m: jnp.full(m.shape, rho0, m.dtype), mu)}


def sample_noise(key: jax.Array, mu: Layers) -> Layers:
    """One standard-normal ``eps`` per weight, shaped like ``mu``.

    Drawn as one flat vector and cut into leaves: one random-bits kernel instead of one per
    leaf (XLA's CPU lowering of each is large, and compile time grew with their number).
    """
    leaves, tree = jax.tree.flatten(mu)
    flat = jax.random.normal(key, (sum(x.size for x in leaves),), leaves[0].dtype)
    offsets = [0]
    for x in leaves:
        offsets.append(offsets[-1] + x.size)
    return jax.tree.unflatten(tree, [flat[a:b].reshape(x.shape) for a, b, x in zip(offsets[:-1], offsets[1:], leaves)])


def sample_weights(params: dict, eps: Layers) -> Layers:
    return jax.tree.map(lambda m, r, e: m + jax.nn.softplus(r) * e, params["mu"], params["rho"], eps)


def forward(weights: Layers, x: jax.Array, probes=None):
    """``x [N, in] -> (out [N, out], layer inputs [(N, in_l)])``; ReLU hidden layers.

    ``probes`` (zeros shaped like each pre-activation ``[N, out_l]``) are added to the
    pre-activations so that the gradient with respect to them is the per-transition
    back-propagated error ``d_i``.
    """
    inputs = []
    a = x
    last = len(weights) - 1
    for layer, wb in enumerate(weights):
        inputs.append(a)
        z = a @ wb["w"] + wb["b"]
        if probes is not None:
            z = z + probes[layer]
        a = jax.nn.relu(z) if layer < last else z
    return a, inputs


def squared_error_nll(out: jax.Array, y: jax.Array, likelihood_sigma) -> jax.Array:
    """``[N, d] -> [N]``: the NLL of ``y`` under ``N(out, likelihood_sigma^2)`` without its constant."""
    return jnp.sum(jnp.square(out - y), axis=-1) / (2.0 * jnp.square(likelihood_sigma))


def backprop_errors(params: dict, eps: Layers, x: jax.Array, y: jax.Array, likelihood_sigma):
    """One batched forward and backward pass with the weight sample ``mu + sigma * eps``:
    the layer inputs ``[(N, in_l)]`` and the per-transition errors ``d_i = dNLL_i/dz_i``
    ``[(N, out_l)]`` of every layer (the gradient of the summed NLL with respect to zero
    probes added to the pre-activations)."""
    weights = sample_weights(params, eps)
    probes = tuple(jnp.zeros((x.shape[0], wb["b"].shape[0]), x.dtype) for wb in weights)

    def total_nll(probes):
        out, inputs = forward(weights, x, probes)
        return jnp.sum(squared_error_nll(out, y, likelihood_sigma)), inputs

    errors, inputs = jax.grad(total_nll, has_aux=True)(probes)
    return inputs, errors


def information_gain(params: dict, eps: list, x: jax.Array, y: jax.Array, hp) -> jax.Array:
    """``[N]``: ``0.5 step^2 g_i^T H^-1 g_i`` for every transition, ``g_i`` the gradient of
    transition ``i``'s NLL averaged over the weight samples ``eps`` (a list of S samples).

    ``x [N, in]``, ``y [N, out]``. S forward and backward passes over the batch, then
    ``S (S + 1) / 2`` products ``[N, in_l] @ [in_l, out_l]`` per layer, one per pair of
    samples ``(s, t)``: ``g = mean_s a_s d_s^T`` (per transition), so
    ``g^T H^-1 g = S^-2 sum_{s,t} ((a_s a_t) @ M_st) . (d_s d_t)`` with
    ``M_st = sigma^2 (1 + eps_s eps_t / 2)``. No ``[N, num_params]`` array is formed.
    """
    passes = [backprop_errors(params, e, x, y, hp.likelihood_sigma) for e in eps]
    quad = jnp.zeros((x.shape[0],), x.dtype)
    for s in range(len(eps)):
        for t in range(s, len(eps)):
            pair = jnp.zeros((x.shape[0],), x.dtype)
            for layer, rho in enumerate(params["rho"]):
                a_s, a_t = passes[s][0][layer], passes[t][0][layer]
                d_s, d_t = passes[s][1][layer], passes[t][1][layer]
                e_s, e_t = eps[s][layer], eps[t][layer]
                # dL/dmu = a d^T and dL/drho = a d^T eps sigmoid(rho); with H_mu^-1 = sigma^2 and
                # H_rho^-1 = sigma^2 / (2 sigmoid(rho)^2) the sigmoid cancels (no 0/0 for very
                # negative rho) and both parameters share one matrix M.
                m_w = jnp.square(jax.nn.softplus(rho["w"])) * (1.0 + 0.5 * e_s["w"] * e_t["w"])
                m_b = jnp.square(jax.nn.softplus(rho["b"])) * (1.0 + 0.5 * e_s["b"] * e_t["b"])
                dd = d_s * d_t
                pair = pair + jnp.sum(((a_s * a_t) @ m_w) * dd, axis=-1) + dd @ m_b
            quad = quad + (pair if s == t else 2.0 * pair)
    return 0.5 * jnp.square(hp.step_size) * quad / len(eps) ** 2


def kl_to_prior(params: dict, prior_sigma) -> jax.Array:
    """``KL(q || N(0, prior_sigma^2 I))`` summed over every weight and bias."""
    def kl(mu, rho):
        sigma = jax.nn.softplus(rho)
        return jnp.sum(jnp.log(prior_sigma / sigma)
                       + (jnp.square(sigma) + jnp.square(mu)) / (2.0 * jnp.square(prior_sigma)) - 0.5)

    return sum(jax.tree.leaves(jax.tree.map(kl, params["mu"], params["rho"])))


def make_vime_bonus(settings: VIMESettings, obs_shape, action_space, batch_shape):
    del batch_shape
    obs_ndim = len(obs_shape)
    obs_dim = math.prod(obs_shape)
    sizes = (obs_dim + action_dim(action_space), *settings.hidden, obs_dim)
    num_samples = settings.num_samples

    def inputs_targets(batch):
        obs = flat_states(batch.obs, obs_ndim)                        # [N, obs_dim]
        next_obs = flat_states(batch.next_obs, obs_ndim)
        actions = action_features(batch.actions, action_space).reshape(obs.shape[0], -1)
        x = jnp.concatenate([obs, actions], axis=-1)                 # [N, obs_dim + A]
        y = next_obs - obs if settings.target == "delta" else next_obs
        return x, y

    def noise(state) -> list:
        """``num_samples`` weight-noise samples from ``state.key`` (a Python list: the
        passes stay plain 2-D matmuls instead of batched ones)."""
        keys = [state.key] if num_samples == 1 else list(jax.random.split(state.key, num_samples))
        return [sample_noise(k, state.params["mu"]) for k in keys]

    def init(key, warmup_obs, hp):
        del warmup_obs
        k_params, k_noise = jax.random.split(key)
        params = init_params(k_params, sizes, hp.init_sigma)
        return VIMEState(params=params, opt_state=adam_init(params), key=k_noise,
                         updates=jnp.zeros((), jnp.int32))

    def reward(state, batch, hp):
        x, y = inputs_targets(batch)
        ig = information_gain(state.params, noise(state), x, y, hp)
        finite = jnp.isfinite(ig)
        bonus = jnp.clip(jnp.nan_to_num(ig, nan=0.0, posinf=hp.clip, neginf=0.0), 0.0, hp.clip)
        metrics = {"info_gain_mean": jnp.mean(bonus), "info_gain_max": jnp.max(bonus),
                   "clipped_fraction": jnp.mean((ig > hp.clip).astype(jnp.float32)),
                   "nonfinite_fraction": jnp.mean((~finite).astype(jnp.float32))}
        return bonus.reshape(batch.terminated.shape), metrics

    def loss_fn(params, eps, x, y, hp):
        def nll(eps):
            out, _ = forward(sample_weights(params, eps), x)
            return jnp.mean(squared_error_nll(out, y, hp.likelihood_sigma))

        data = sum(nll(e) for e in eps) / num_samples
        # the Gaussian's normalising constant, so that ``nll`` is the true negative log-likelihood
        data = data + y.shape[-1] * (jnp.log(hp.likelihood_sigma) + 0.5 * math.log(2.0 * math.pi))
        kl = kl_to_prior(params, hp.prior_sigma)
        return data + hp.kl_weight * kl, (data, kl)

    def update(state, batch, key, hp):
        x, y = inputs_targets(batch)
        # The same weight noise as this batch's reward: XLA may then share the forward pass.
        grads, (nll, kl) = jax.grad(loss_fn, has_aux=True)(state.params, noise(state), x, y, hp)
        # Adam b1 0.9, b2 0.999 as Lasagne's adam in the reference
        params, opt_state = adam_step(state.params, grads, state.opt_state, hp.lr, hp.adam_eps)
        new_state = VIMEState(params=params, opt_state=opt_state, key=key, updates=state.updates + 1)
        return new_state, {"dynamics_nll": nll, "kl_to_prior": kl, "posterior_sigma_mean": mean_sigma(params)}

    def mean_sigma(params):
        leaves = jax.tree.leaves(params["rho"])
        return sum(jnp.sum(jax.nn.softplus(r)) for r in leaves) / sum(r.size for r in leaves)

    def describe(state):
        return {"posterior_sigma_mean": mean_sigma(state.params), "model_updates": state.updates}

    return Bonus("vime", init, reward, update, describe=describe), float32_hparams(settings.hparams)

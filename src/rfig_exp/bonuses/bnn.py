"""VIME's model: a Bayesian neural network with fully factorised Gaussian weights
``q(theta) = prod N(mu, softplus(rho)^2)``, and the information gain of one transition.

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
See docs/bonuses/vime.md for the derivation and the sources; the bonus is ``rfig_exp.bonuses.vime``.

The RFIG authors' VIME (``bonus_per: batch``, ``loss: mse``; docs/bonuses/vime.md) uses the same
model and these pieces instead: :func:`mse_loss` (the MSE of the S-sample mean prediction, no KL),
and :func:`kl_between`, the KL divergence of the posterior after one hypothetical Adam step on the
whole batch from the current one, one number per batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp

from rfig_exp.bonuses.nets import ACTIVATIONS, mlp_init
from rfig_exp.envs.base import BoxSpace, DiscreteSpace

if TYPE_CHECKING:
    from rfig_exp.bonuses.vime import VIMESettings

Layers = tuple  # ({"w": [in, out], "b": [out]}, ...) one dict per dense layer, as nets.mlp_init


class VIMEState(NamedTuple):
    params: dict        # {"mu": Layers, "rho": Layers}: q(W) = N(mu, softplus(rho)^2)
    opt_state: Any      # Adam moments of ``params``
    key: jax.Array      # weight-noise key shared by this batch's reward and update
    updates: jax.Array  # [] int32, Adam steps taken
    medians: jax.Array  # [kl_ratio_len] the last batches' median information gains, a ring (slot: updates % len)


def action_dim(action_space) -> int:
    if isinstance(action_space, DiscreteSpace):
        return action_space.num_actions
    if isinstance(action_space, BoxSpace):
        return action_space.dim
    raise TypeError(f"unknown action space {action_space!r}")


def softplus_inverse(sigma: jax.Array) -> jax.Array:
    """``rho`` with ``softplus(rho) = sigma`` (stable for small and large sigma)."""
    return sigma + jnp.log(-jnp.expm1(-sigma))


def init_params(key: jax.Array, sizes: tuple[int, ...], init_sigma: float | jax.Array,
                mu_std: float | jax.Array | None = None) -> dict:
    """Means as ``nets.mlp_init`` (variance 2 / fan_in, zero biases), or with ``mu_std`` every weight
    mean drawn from ``N(0, mu_std^2)`` (not truncated) and zero bias means (the RFIG authors' VIME:
    flax's ``normal(0.1)``); every ``sigma = init_sigma``."""
    mu = mlp_init(key, sizes)
    if mu_std is not None:
        keys = jax.random.split(key, len(mu))
        mu = tuple({"w": mu_std * jax.random.normal(k, m["w"].shape, m["w"].dtype), "b": jnp.zeros_like(m["b"])}
                   for k, m in zip(keys, mu))
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


def weight_noise(key: jax.Array, mu: Layers, num_samples: int) -> list:
    """``num_samples`` weight-noise samples from ``key`` (a Python list: the passes stay plain 2-D
    matmuls instead of batched ones); one sample uses ``key`` itself."""
    keys = [key] if num_samples == 1 else list(jax.random.split(key, num_samples))
    return [sample_noise(k, mu) for k in keys]


def mean_sigma(params: dict) -> jax.Array:
    """The posterior std averaged over every weight and bias."""
    leaves = jax.tree.leaves(params["rho"])
    return sum(jnp.sum(jax.nn.softplus(r)) for r in leaves) / sum(r.size for r in leaves)


def sample_weights(params: dict, eps: Layers) -> Layers:
    return jax.tree.map(lambda m, r, e: m + jax.nn.softplus(r) * e, params["mu"], params["rho"], eps)


def forward(weights: Layers, x: jax.Array, probes=None, activation: str = "relu"):
    """``x [N, in] -> (out [N, out], layer inputs [(N, in_l)])``; ``activation`` (relu | tanh)
    after every hidden layer, a linear output.

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
        a = ACTIVATIONS[activation](z) if layer < last else z
    return a, inputs


def squared_error_nll(out: jax.Array, y: jax.Array, likelihood_sigma) -> jax.Array:
    """``[N, d] -> [N]``: the NLL of ``y`` under ``N(out, likelihood_sigma^2)`` without its constant."""
    return jnp.sum(jnp.square(out - y), axis=-1) / (2.0 * jnp.square(likelihood_sigma))


def backprop_errors(params: dict, eps: Layers, x: jax.Array, y: jax.Array, likelihood_sigma,
                    activation: str = "relu"):
    """One batched forward and backward pass with the weight sample ``mu + sigma * eps``:
    the layer inputs ``[(N, in_l)]`` and the per-transition errors ``d_i = dNLL_i/dz_i``
    ``[(N, out_l)]`` of every layer (the gradient of the summed NLL with respect to zero
    probes added to the pre-activations)."""
    weights = sample_weights(params, eps)
    probes = tuple(jnp.zeros((x.shape[0], wb["b"].shape[0]), x.dtype) for wb in weights)

    def total_nll(probes):
        out, inputs = forward(weights, x, probes, activation)
        return jnp.sum(squared_error_nll(out, y, likelihood_sigma)), inputs

    errors, inputs = jax.grad(total_nll, has_aux=True)(probes)
    return inputs, errors


def information_gain(params: dict, eps: list, x: jax.Array, y: jax.Array, hp: VIMESettings) -> jax.Array:
    """``[N]``: ``0.5 step^2 g_i^T H^-1 g_i`` for every transition, ``g_i`` the gradient of
    transition ``i``'s NLL averaged over the weight samples ``eps`` (a list of S samples).

    ``x [N, in]``, ``y [N, out]``. S forward and backward passes over the batch, then
    ``S (S + 1) / 2`` products ``[N, in_l] @ [in_l, out_l]`` per layer, one per pair of
    samples ``(s, t)``: ``g = mean_s a_s d_s^T`` (per transition), so
    ``g^T H^-1 g = S^-2 sum_{s,t} ((a_s a_t) @ M_st) . (d_s d_t)`` with
    ``M_st = sigma^2 (1 + eps_s eps_t / 2)``. No ``[N, num_params]`` array is formed.
    """
    passes = [backprop_errors(params, e, x, y, hp.likelihood_sigma, hp.activation) for e in eps]
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


def mean_prediction(params: dict, eps: list, x: jax.Array, activation: str = "relu") -> jax.Array:
    """``[N, out]``: the prediction averaged over the weight samples ``mu + sigma * eps`` of ``eps``."""
    return sum(forward(sample_weights(params, e), x, activation=activation)[0] for e in eps) / len(eps)


def mse_loss(params: dict, eps: list, x: jax.Array, y: jax.Array, activation: str = "relu") -> jax.Array:
    """The RFIG authors' BNN loss (``A:exploration/vime.py:326-344``; ``:241-261`` for the hypothetical
    step, whose ``0.01 * kl_loss`` is 0): the mean over transitions and outputs of the squared error of
    the S-sample mean prediction. No KL term: ``rho`` gets a gradient only through the sampled
    weights, ``dL/drho = dL/dW * eps * sigmoid(rho)``."""
    return jnp.mean(jnp.square(mean_prediction(params, eps, x, activation) - y))


def kl_between(new: dict, old: dict) -> jax.Array:
    """``KL(q_new || q_old)`` of two fully factorised Gaussian posteriors ``{"mu", "rho"}``, summed
    over every weight and bias: ``log(s_old / s_new) + (s_new^2 + (m_new - m_old)^2) / (2 s_old^2) - 1/2``
    per weight (the RFIG authors' ``compute_kl_divergence``, ``A:exploration/vime.py:99-141``).

    Computed as ``u (u + 2) / 2 - log1p(u) + (m_new - m_old)^2 / (2 s_old^2)``, ``u = s_new / s_old - 1``:
    the same number, without the float32 cancellation of ``-1/2`` against ``s_new^2 / (2 s_old^2)`` in
    every term (one step moves each weight by about lr, so each term is of order ``lr^2 / (2 sigma^2)``)."""
    def kl(m_new, r_new, m_old, r_old):
        s_new, s_old = jax.nn.softplus(r_new), jax.nn.softplus(r_old)
        u = (s_new - s_old) / s_old
        return jnp.sum(0.5 * u * (u + 2.0) - jnp.log1p(u) + jnp.square(m_new - m_old) / (2.0 * jnp.square(s_old)))

    return sum(jax.tree.leaves(jax.tree.map(kl, new["mu"], new["rho"], old["mu"], old["rho"])))


def recent_medians(medians: jax.Array, updates: jax.Array, gain: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The reference's KL ratio queue (``use_kl_ratio_q``): ``medians [Q]``, a ring of the last
    batches' median gains whose next slot is ``updates % Q``, with this batch's median of ``gain``
    put there, and the mean of the slots filled so far (the reference appends, then averages)."""
    length = medians.shape[0]
    medians = medians.at[updates % length].set(jnp.median(gain))
    filled = jnp.minimum(updates + 1, length)
    return medians, jnp.sum(jnp.where(jnp.arange(length) < filled, medians, 0.0)) / filled

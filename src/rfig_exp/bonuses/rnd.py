"""RND: random network distillation (Burda et al. 2018), at the RFIG paper's settings.

A fixed, randomly initialised target MLP ``f`` and a trained predictor MLP ``f_hat``, both
``in -> 256 -> 256 -> 256`` with ReLU (the paper's appendix: hidden (256, 256), embedding
256). Per batch of ``N = T * B`` normalised next states ``s'``:

1. ``reward``: ``r = mean_j (f_hat(s')_j - f(s')_j)^2`` over the embedding dimensions, with the
   predictor *before* this batch's update;
2. ``update``: one Adam step (lr 1e-4) on the same loss, averaged over a random
   ``floor(N * update_proportion)`` of the batch (without replacement; all of it by default).

The target's parameters live in the state next to the predictor's, but only the predictor
is differentiated and only its moments are in the optimiser state, so the target is never
changed. Details, sources and deviations from the reference code: ``docs/bonuses/rnd.md``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from rfig_exp.bonuses import nets
from rfig_exp.bonuses.base import Bonus, flat_states, float32_hparams
from rfig_exp.bonuses.settings import RNDSettings
from rfig_exp.shuffle import subsample


class RNDState(NamedTuple):
    target: nets.MLPParams        # fixed: never differentiated, never in ``opt_state``
    predictor: nets.MLPParams
    opt_state: optax.ScaleByAdamState  # Adam moments of the predictor only
    updates: jax.Array            # [] int32, predictor steps taken


def make_rnd_bonus(settings: RNDSettings, obs_shape, action_space, batch_shape):
    """``(Bonus, hparams)``; ``batch_shape = (T, B)`` of one rollout (``settings.num_train`` is
    already counted from it)."""
    del action_space, batch_shape
    obs_ndim = len(obs_shape)
    sizes = (math.prod(obs_shape),) + settings.hidden + (settings.embedding_dim,)
    activation = settings.activation
    num_train = settings.num_train

    def embed(params, x):
        return nets.mlp_apply(params, x, activation)

    def errors(target, predictor, x):
        """Per-state squared prediction error ``[N]``, mean over the embedding dimensions."""
        return jnp.mean(jnp.square(embed(predictor, x) - embed(target, x)), axis=-1)

    def init(key, warmup_obs, hp):
        del warmup_obs, hp
        k_target, k_predictor = jax.random.split(key)
        # Two independent draws: a predictor that starts equal to the target would give
        # zero bonus everywhere before any training.
        target = nets.mlp_init(k_target, sizes)
        predictor = nets.mlp_init(k_predictor, sizes)
        return RNDState(target=target, predictor=predictor, opt_state=nets.adam_init(predictor),
                        updates=jnp.zeros((), jnp.int32))

    def reward(state, batch, hp):
        x = flat_states(batch.next_obs, obs_ndim)                        # [N, d]
        r = errors(state.target, state.predictor, x)
        return r.reshape(batch.terminated.shape), {}

    def update(state, batch, key, hp):
        x = flat_states(batch.next_obs, obs_ndim)
        if num_train < x.shape[0]:
            x = x[subsample(key, x.shape[0], num_train)]
        # The target enters as a constant: gradients flow to the predictor only. With the
        # full batch this forward pass is the one ``reward`` computed on the same inputs,
        # and XLA merges the two when the agent traces them together.
        target_out = jax.lax.stop_gradient(embed(state.target, x))

        def loss_fn(predictor):
            return jnp.mean(jnp.square(embed(predictor, x) - target_out))

        loss, grads = jax.value_and_grad(loss_fn)(state.predictor)
        predictor, opt_state = nets.adam_step(state.predictor, grads, state.opt_state, hp.lr, hp.adam_eps)
        new_state = state._replace(predictor=predictor, opt_state=opt_state, updates=state.updates + 1)
        return new_state, {"predictor_loss": loss}

    return Bonus("rnd", init, reward, update), float32_hparams(settings.hparams)

"""Small pure-function building blocks shared by the neural bonuses (RND, #Exploration, ...).

An MLP's parameters are a tuple of layers, each ``{"w": [in, out], "b": [out]}`` (plain
arrays, so a bonus state holding them vmaps over seeds and checkpoints as it is):

    params = mlp_init(key, (in_dim, 256, 256, out_dim))        # variance gain^2 / fan_in, gain sqrt(2)
    y = mlp_apply(params, x)                                    # x [N, in_dim] -> y [N, out_dim]
    opt = adam_init(params)
    params, opt = adam_step(params, grads, opt, lr, eps)        # lr, eps may be traced scalars

Adam is optax's ``scale_by_adam`` followed by ``-lr``; the learning rate and epsilon are
arguments of the step (hyperparameters of the compiled function), not fixed at build time.
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import jax
import jax.numpy as jnp
import optax

from rfig_exp.bonuses import settings

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {"relu": jax.nn.relu, "tanh": jnp.tanh}
assert tuple(ACTIVATIONS) == settings.ACTIVATIONS  # the names the settings accept

Layer = dict  # {"w": [in, out], "b": [out]}
MLPParams = tuple  # tuple[Layer, ...]


def mlp_init(key: jax.Array, sizes: Sequence[int], gain: float = math.sqrt(2.0),
             out_gain: Optional[float] = None, dtype=jnp.float32) -> MLPParams:
    """Truncated-normal weights with per-entry variance ``gain^2 / fan_in`` (``out_gain`` for the
    last layer, default ``gain``), zero biases. ``sizes = (in_dim, h_1, ..., h_k, out_dim)``.

    He et al. (2015) for gain sqrt(2); flax's default ``lecun_normal`` for gain 1. Burda et al.'s
    RND code and CleanRL use orthogonal matrices of the same scale, but those need a LAPACK QR:
    vmapped over 8 seeds inside the agent's jitted init it wedged XLA's CPU runtime (jaxlib 0.10,
    every thread idle; reproduced 3 times out of 3 with ``bonus=hashexplo``).
    """
    sizes = tuple(int(s) for s in sizes)
    if len(sizes) < 2:
        raise ValueError(f"an MLP needs at least input and output sizes, got {sizes}")
    keys = jax.random.split(key, len(sizes) - 1)
    layers = []
    for i, (k, n_in, n_out) in enumerate(zip(keys, sizes[:-1], sizes[1:])):
        g = out_gain if (out_gain is not None and i == len(sizes) - 2) else gain
        w = jax.nn.initializers.variance_scaling(g * g, "fan_in", "truncated_normal")(k, (n_in, n_out), dtype)
        layers.append({"w": w, "b": jnp.zeros((n_out,), dtype)})
    return tuple(layers)


def mlp_apply(params: MLPParams, x: jax.Array, activation: str = "relu",
              final_activation: Optional[str] = None) -> jax.Array:
    """``x [N, in] -> [N, out]``: ``activation`` after every hidden layer, the last layer linear
    unless ``final_activation`` is given. One plain matmul per layer (no per-example loops)."""
    act = ACTIVATIONS[activation]
    last = len(params) - 1
    for i, layer in enumerate(params):
        x = x @ layer["w"] + layer["b"]
        if i < last:
            x = act(x)
        elif final_activation is not None:
            x = ACTIVATIONS[final_activation](x)
    return x


def adam_init(params) -> optax.ScaleByAdamState:
    """Adam moments (zeros) and step count for any parameter pytree."""
    return optax.scale_by_adam().init(params)


def adam_step(params, grads, opt_state: optax.ScaleByAdamState, lr, eps=1e-8, b1: float = 0.9,
              b2: float = 0.999):
    """One Adam step ``params - lr * adam(grads)``; returns ``(params, opt_state)``.

    ``lr`` and ``eps`` may be traced scalars (sweepable hyperparameters); ``b1``/``b2`` are
    the usual constants. The update is optax's ``scale_by_adam`` (bias-corrected moments,
    ``eps`` outside the square root, as in Kingma & Ba and PyTorch/TF).
    """
    updates, opt_state = optax.scale_by_adam(b1=b1, b2=b2, eps=eps).update(grads, opt_state, params)
    params = jax.tree.map(lambda p, u: p - lr * u, params, updates)
    return params, opt_state


__all__ = ["ACTIVATIONS", "MLPParams", "adam_init", "adam_step", "mlp_apply", "mlp_init"]

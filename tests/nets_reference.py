"""Independent float64 numpy references for the neural bonuses' tests: a ReLU MLP forward and
backward pass written out by hand, and Adam (Kingma & Ba 2015, Algorithm 1)."""

from __future__ import annotations

import numpy as np


def to_numpy(params):
    """``({"w", "b"}, ...)`` jax MLP params -> list of float64 ``(w, b)``."""
    return [(np.asarray(layer["w"], np.float64), np.asarray(layer["b"], np.float64)) for layer in params]


def mlp_forward(layers, x):
    """Returns the output and the per-layer inputs/pre-activations needed by :func:`mlp_backward`."""
    cache = []
    h = np.asarray(x, np.float64)
    for i, (w, b) in enumerate(layers):
        z = h @ w + b
        cache.append((h, z))
        h = np.maximum(z, 0.0) if i < len(layers) - 1 else z
    return h, cache


def mlp_backward(layers, cache, dy):
    """Gradients ``[(dw, db), ...]`` and ``dx`` for a ReLU MLP with a linear last layer."""
    grads = [None] * len(layers)
    d = dy
    for i in reversed(range(len(layers))):
        h, z = cache[i]
        if i < len(layers) - 1:
            d = d * (z > 0)
        w, _ = layers[i]
        grads[i] = (h.T @ d, d.sum(0))
        d = d @ w.T
    return grads, d


class Adam:
    """Adam on a list of arrays: bias-corrected moments, ``eps`` outside the square root."""

    def __init__(self, params, lr, eps, b1=0.9, b2=0.999):
        self.lr, self.eps, self.b1, self.b2 = lr, eps, b1, b2
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, params, grads):
        self.t += 1
        out = []
        for i, (p, g) in enumerate(zip(params, grads)):
            self.m[i] = self.b1 * self.m[i] + (1 - self.b1) * g
            self.v[i] = self.b2 * self.v[i] + (1 - self.b2) * g * g
            m_hat = self.m[i] / (1 - self.b1**self.t)
            v_hat = self.v[i] / (1 - self.b2**self.t)
            out.append(p - self.lr * m_hat / (np.sqrt(v_hat) + self.eps))
        return out


def flatten(layers):
    return [a for wb in layers for a in wb]


def unflatten(arrays):
    return [(arrays[i], arrays[i + 1]) for i in range(0, len(arrays), 2)]

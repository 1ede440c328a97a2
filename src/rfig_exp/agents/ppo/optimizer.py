"""PPO's optimiser as a named optax transformation, and its flat-vector view.

``ppo_optimizer()`` is ``clip_grad_norm -> Adam (eps 1e-5) -> descend``: the gradient is scaled
by ``min(1, max_grad_norm / (||g|| + 1e-6))``, Adam's moments rescale it, and the step is
``-learning_rate`` times that. ``max_grad_norm`` and ``learning_rate`` are extra arguments of
``update`` (traced hyperparameters: the learning rate is annealed per PPO update, not per
optimiser step, so no optax schedule on Adam's step count fits it).

The SGD loop runs on one flat parameter vector (the same element-wise math, a handful of XLA
kernels per step instead of a few per leaf); ``ravel_like`` / ``unravel_like`` turn every
parameter-shaped part of an optimiser state (Adam's moments) into such vectors and back,
without naming the state's fields.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

ADAM_EPS = 1e-5


def clip_grad_norm(groups: np.ndarray | None = None) -> optax.GradientTransformationExtraArgs:
    """``g * min(1, max_grad_norm / (||g|| + 1e-6))`` (``max_grad_norm``: an extra argument).

    Not ``optax.clip_by_global_norm``, which divides by ``||g||`` without the ``1e-6``: the
    results would differ in the last bits from the runs this project has made. ``groups``: for a
    flat gradient vector, each entry's parameter group (an int per entry); each group is then
    clipped by its own norm, as separate optimisers of separate networks clip."""
    def update(updates, state, params=None, *, max_grad_norm, **extra):
        del params, extra
        if groups is not None:
            norms = jnp.sqrt(jax.ops.segment_sum(updates ** 2, groups, num_segments=int(groups.max()) + 1))
            return updates * jnp.minimum(1.0, max_grad_norm / (norms + 1e-6))[groups], state
        grad_norm = optax.tree.norm(updates)
        return jax.tree.map(lambda g: g * jnp.minimum(1.0, max_grad_norm / (grad_norm + 1e-6)), updates), state

    return optax.GradientTransformationExtraArgs(lambda params: optax.EmptyState(), update)


def descend() -> optax.GradientTransformationExtraArgs:
    """``-learning_rate * u`` (``learning_rate``: an extra argument)."""
    def update(updates, state, params=None, *, learning_rate, **extra):
        del params, extra
        return jax.tree.map(lambda u: -learning_rate * u, updates), state

    return optax.GradientTransformationExtraArgs(lambda params: optax.EmptyState(), update)


def ppo_optimizer(groups: np.ndarray | None = None) -> optax.GradientTransformationExtraArgs:
    """``groups``: :func:`clip_grad_norm`'s (Adam is element-wise, so one Adam over every group's
    parameters is the separate optimisers' Adams)."""
    return optax.chain(clip_grad_norm(groups), optax.scale_by_adam(eps=ADAM_EPS), descend())


def parameter_groups(params: Any, group_of: Callable[[tuple], int]) -> np.ndarray:
    """``[P]`` the group of each entry of ``ravel_pytree(params)``: ``group_of(path)`` of its leaf
    (``params`` may be shapes, ``jax.eval_shape``'s)."""
    return np.concatenate([np.full(int(np.prod(leaf.shape)), group_of(path), np.int32)
                           for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]])


def _is_params(params_def) -> Callable[[Any], bool]:
    return lambda x: jax.tree.structure(x) == params_def


def ravel_like(state, params_def, ravel: Callable):
    """``state`` with every subtree of the parameters' structure ``params_def`` as ``ravel(subtree)``."""
    is_params = _is_params(params_def)
    return jax.tree.map(lambda x: ravel(x) if is_params(x) else x, state, is_leaf=is_params)


def unravel_like(flat_state, template, params_def, unravel: Callable):
    """The inverse of :func:`ravel_like`, guided by a state of the original shape (``template``)."""
    is_params = _is_params(params_def)
    return jax.tree.map(lambda t, x: unravel(x) if is_params(t) else x, template, flat_state, is_leaf=is_params)

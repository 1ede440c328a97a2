"""A function of one seed's run state over a stack of seeds ``[S]``, as the trainer's window and its
evaluation both map theirs."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp


def hparams_axis(hparams: Any) -> int | None:
    """``None``: hyperparameters shared by the seeds (scalars); ``0``: a row per seed (every leaf
    ``[S]``: a sweep job whose members differ in traced settings, rfig_exp.spec.stack)."""
    return 0 if jnp.ndim(hparams.beta) else None


def map_seeds(fn: Callable[[Any, Any], Any], states: Any, hparams: Any) -> Any:
    """``fn(state, hp)`` for each seed of the stacked ``states`` (each leaf ``[S, ...]``), its outputs
    stacked ``[S, ...]``. One seed runs ``fn`` unbatched (vmap over a size-1 axis costs ~10%: batched
    gathers and extra kernels), then the seed axis is restored."""
    hp_axis = hparams_axis(hparams)
    if states.update.shape[0] == 1:
        hp = hparams if hp_axis is None else jax.tree.map(lambda x: x[0], hparams)
        return jax.tree.map(lambda x: x[None], fn(jax.tree.map(lambda x: x[0], states), hp))
    return jax.vmap(fn, in_axes=(0, hp_axis))(states, hparams)

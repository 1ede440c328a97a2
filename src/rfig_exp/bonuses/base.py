"""The one interface every exploration bonus implements.

A bonus is a bundle of pure functions over its own pytree state. The agent owns
observation normalisation, intrinsic-reward normalisation and both GAEs
(``rfig_exp.agents.intrinsic``, which this project's trainer and a loop of one's own both run);
a bonus owns only its model. ``reward`` always sees the state *before* this batch's ``update``.

Numeric hyperparameters are arguments of the compiled function, so a sweep can vmap over them:
``hparams`` is the bonus's settings object (:data:`Hparams`) as a JAX pytree whose leaves are its
traced settings, float32 scalars (:func:`float32_hparams`); anything that sets a shape is a static
setting, fixed when the bonus is made (each bonus declares its settings in its own module:
``rfig_exp.bonuses``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, NamedTuple, Optional, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from rfig_exp.bonuses.settings import BonusSettings
from rfig_exp.config.settings import Settings
from rfig_exp.envs.base import BoxSpace, DiscreteSpace

BonusState = Any
# A bonus's settings as the compiled function's argument, its traced settings float32 scalars:
# each bonus's functions take its own subclass (``Bonus[RFIGSettings]``: ``hp.reg``)
Hparams = TypeVar("Hparams", bound=BonusSettings)
Metrics = dict[str, jax.Array]


class BonusBatch(NamedTuple):
    """One rollout as a bonus sees it; leading axes ``[T, B]``.

    Observations are normalised by the agent's running statistics and clipped to
    [-clip, clip]. ``next_obs`` is the true ``s'`` (the final observation at episode ends).
    """

    obs: jax.Array
    actions: jax.Array
    next_obs: jax.Array
    terminated: jax.Array
    truncated: jax.Array


@dataclass(frozen=True)
class Bonus(Generic[Hparams]):
    """``init(key, warmup_obs [N, *obs], hparams) -> state``;
    ``reward(state, batch, hparams) -> (r_int [T, B], metrics)``;
    ``update(state, batch, key, hparams) -> (state, metrics)``.

    Optional ``needs_refresh(state) -> bool`` / ``refresh(state, hparams) -> state`` let a
    bonus ask for expensive repair work (e.g. an exact matrix inverse). The agent calls
    them outside the per-seed vmap, so the costly branch runs only when some seed asks
    for it instead of being turned into an always-executed ``select`` by vmap.

    Optional ``progress_note(metrics, seed_updates) -> (note, warning)`` is the bonus's part of
    the console's progress line: from a window's host metrics (``bonus/<name>``, ``[S]`` each) and
    its updates times seeds, a short note and a warning or None (said once per run). Host side,
    no JAX.

    ``intrinsic=False`` declares the reward identically zero (the ``none`` bonus). The
    agent then leaves the intrinsic stream out of the advantage and the value loss, so
    the run is plain PPO: an all-zero stream would still add ``beta * A_int`` noise from
    an untrained intrinsic value head to every advantage.
    """

    name: str
    init: Callable[[jax.Array, jax.Array, Hparams], BonusState]
    reward: Callable[[BonusState, BonusBatch, Hparams], tuple[jax.Array, Metrics]]
    update: Callable[[BonusState, BonusBatch, jax.Array, Hparams], tuple[BonusState, Metrics]]
    needs_refresh: Optional[Callable[[BonusState], jax.Array]] = None
    refresh: Optional[Callable[[BonusState, Hparams], BonusState]] = None
    describe: Optional[Callable[[BonusState], Metrics]] = None  # scalars for summary.json
    intrinsic: bool = True
    counted_metrics: tuple[str, ...] = ()  # metrics that count events: summed over a window, not averaged
    progress_note: Optional[Callable[[Mapping[str, Any], int], tuple[str, Optional[str]]]] = None


def flat_states(x: jax.Array, obs_ndim: int) -> jax.Array:
    """``[*lead, *obs_shape] -> [prod(lead), prod(obs_shape)]``.

    Raises ValueError for an array with fewer axes than an observation: flattening states that
    are flat already (``[N, d]`` of a 2-D or 3-D observation) would otherwise silently merge
    rows or keep them by accident, depending on the observation's rank."""
    if x.ndim < obs_ndim:
        raise ValueError(f"flat_states: an array of shape {x.shape} has fewer axes than one "
                         f"{obs_ndim}-D observation (already flat?)")
    lead = x.shape[: x.ndim - obs_ndim]
    n = 1
    for s in lead:
        n *= s
    return x.reshape(n, -1)


def concrete(x: Any) -> Optional[np.ndarray]:
    """``x``'s value as a numpy array when it is known now (an array or number passed outside ``jit``,
    ``vmap`` or ``grad``), else None (a traced value, known only as the program runs)."""
    if isinstance(x, jax.core.Tracer):
        return None
    try:
        return np.asarray(x)
    except Exception:  # not an array at all: the dtype and shape checks name it
        return None


def check_actions(actions: Any, action_space: Any, where: str = "action_features") -> None:
    """TypeError unless ``actions`` have the dtype of ``action_space``'s actions: integers for a
    ``DiscreteSpace``, floats for a ``BoxSpace`` (from the dtype alone, as the function is traced);
    ValueError for a discrete action outside ``[0, num_actions)`` when the array is concrete. A traced
    array's values are unknown while it is traced, and checking them as the program runs would cost a
    host callback per step: under ``jit`` an out-of-range action goes through (one-hot, a row of zeros)."""
    dtype = getattr(actions, "dtype", None)
    if dtype is None:
        dtype = np.asarray(actions).dtype
    if isinstance(action_space, DiscreteSpace):
        n = action_space.num_actions
        if not jnp.issubdtype(dtype, jnp.integer):
            raise TypeError(f"{where}: actions have dtype {dtype}, expected integers in [0, {n}) for "
                            f"DiscreteSpace({n}) (an action index: .astype(jnp.int32) if it is one)")
        values = concrete(actions)
        if values is not None and values.size and (values.min() < 0 or values.max() >= n):
            raise ValueError(f"{where}: actions hold values in [{values.min()}, {values.max()}], expected integers "
                             f"in [0, {n}) for DiscreteSpace({n})")
    elif isinstance(action_space, BoxSpace) and not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"{where}: actions have dtype {dtype}, expected floats for BoxSpace(dim={action_space.dim})")


def action_features(actions: jax.Array, action_space, where: str = "action_features") -> jax.Array:
    """Actions as float32 model inputs: ``[...] int -> [..., A]`` one-hot for a
    ``DiscreteSpace`` (A = num_actions), ``[..., A] -> [..., A]`` unchanged for a ``BoxSpace``.

    For bonuses whose model takes the action (e.g. a dynamics model ``p(s' | s, a)``), so
    they work for both kinds of action space. The actions are checked against the space
    (:func:`check_actions`; ``where`` starts its error).
    """
    check_actions(actions, action_space, where)
    if isinstance(action_space, DiscreteSpace):
        return jax.nn.one_hot(actions, action_space.num_actions, dtype=jnp.float32)
    if isinstance(action_space, BoxSpace):
        actions = jnp.asarray(actions, jnp.float32)
        if actions.shape[-1:] != (action_space.dim,):
            raise ValueError(f"BoxSpace(dim={action_space.dim}) actions need a trailing axis of {action_space.dim}, "
                             f"got shape {actions.shape}")
        return actions
    raise TypeError(f"unknown action space {action_space!r}")


P = TypeVar("P")


def _as_pytree(cls: type[Settings]) -> None:
    """``cls`` registered as a JAX pytree, once (JAX's registry is the process's): its traced
    settings the leaves, every other field static (``Settings.pytree_fields``)."""
    if cls not in _PYTREES:
        leaves, static = cls.pytree_fields()
        jax.tree_util.register_dataclass(cls, data_fields=leaves, meta_fields=static)
        _PYTREES.add(cls)


_PYTREES: set[type] = set()


def float32_hparams(hparams: P) -> P:
    """``hparams`` as the compiled function's argument: a settings object with its traced settings
    as float32 scalars, the rest as it was (``rfig_exp.bonuses.make_bonus`` returns it with the
    bonus), or any pytree of numbers with each a float32 scalar."""
    if isinstance(hparams, Settings):
        _as_pytree(type(hparams))
    return jax.tree.map(lambda v: jnp.asarray(v, jnp.float32), hparams)

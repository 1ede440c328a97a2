"""What a training loop of one's own hands the agent's side of a bonus, and what a bonus hands back,
checked as it is traced.

``IntrinsicReward`` (and ``ReplayIntrinsic``) know at ``create`` what they will be given: ``num_steps``
(``T``), ``num_envs`` (``B``), one observation's shape and the action space. A rollout of other shapes
broadcasts, or fails deep inside JAX with shapes that name no argument: a flattened ``[T*B, *obs]``
rollout runs the per-env return filter over the wrong axis without an error. These checks read only
static shapes, so under ``jit`` they run once, while tracing, and cost nothing per step. Each error is
one line: the method, the argument, the shape given, the shape expected, and a hint where the shape
given is a known mistake (a flattened rollout, ``T`` and ``B`` swapped).

The same holds for the other arguments (the state, ``key``, ``hp``, ``gae_lambda``: structure, shapes,
dtypes, and values where they are concrete) and for a bonus's outputs (:func:`bonus_reward`,
:func:`bonus_update`, :func:`checked_refresh`): an error names the bonus, its function, what it returned
and what was expected. Every bonus computes in float32 (:data:`BONUS_DTYPE`): float64 inputs, which
gymnax gives under ``JAX_ENABLE_X64``, are cast to it at the bonus's boundary (:func:`bonus_input`),
and float32 ones pass as they are.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rfig_exp.bonuses.base import concrete
from rfig_exp.config.settings import Settings
from rfig_exp.envs.base import BoxSpace, DiscreteSpace

# The dtype every bonus computes in and is given its inputs in (its state's floats, the reward)
BONUS_DTYPE = jnp.float32
AGENT_HPARAMS = ("obs_clip", "gamma_int", "beta", "ext_coef")  # IntrinsicHparams' own scalars, beside ``bonus``


@dataclass(frozen=True)
class RolloutShape:
    """What a rollout must be: ``[num_steps, num_envs, ...]``, observations of ``obs_shape``, actions of
    ``action_space`` (``[T, B]`` integers, or ``[T, B, dim]`` for a ``BoxSpace``)."""

    num_steps: int
    num_envs: int
    obs_shape: tuple[int, ...]
    action_space: DiscreteSpace | BoxSpace

    @property
    def lead(self) -> tuple[int, int]:
        return (self.num_steps, self.num_envs)

    def check_rollout(self, where: str, obs: Any, actions: Any, next_obs: Any, terminated: Any,
                      truncated: Any) -> None:
        """A rollout's arrays, as ``IntrinsicReward.step`` takes them: ValueError naming the first that
        does not fit."""
        expect(where, "obs", obs, self.lead + self.obs_shape, "[num_steps, num_envs, *obs_shape]")
        action_dims = (self.action_space.dim,) if isinstance(self.action_space, BoxSpace) else ()
        expect(where, "actions", actions, self.lead + action_dims,
               "[num_steps, num_envs, dim]" if action_dims else "[num_steps, num_envs]", "actions")
        self.check_next_obs(where, next_obs)
        expect(where, "terminated", terminated, self.lead, "[num_steps, num_envs]")
        expect(where, "truncated", truncated, self.lead, "[num_steps, num_envs]")

    def check_next_obs(self, where: str, next_obs: Any) -> None:
        """``next_obs``: ``[T, B, ...]`` with each observation of ``obs_shape``'s size, in any shape (gymnax's
        ``info["final_observation"]`` is the unflattened observation where a wrapper flattens ``obs``:
        ``[T, B, 10, 10, 4]`` beside ``obs [T, B, 400]``)."""
        shape = tuple(_shape(next_obs))
        size = math.prod(self.obs_shape)
        if shape[:2] != self.lead or len(shape) < 3 or math.prod(shape[2:]) != size:
            t, b = self.lead
            raise ValueError(f"{where}: next_obs has shape {shape}, expected [num_steps, num_envs, ...] = ({t}, {b}, "
                             f"...) with {size} numbers per observation (obs_shape {self.obs_shape}, in any shape)"
                             f"{_hint(shape, self.lead + self.obs_shape)}")

    def check_obs(self, where: str, name: str, obs: Any, leading: int | None = None) -> None:
        """``obs [*lead, *obs_shape]``: ``leading`` axes before one observation's shape (``None``: any
        number of them, none included)."""
        shape, n = tuple(_shape(obs)), len(self.obs_shape)
        lead = shape[: max(len(shape) - n, 0)]
        if shape[len(lead):] != self.obs_shape or (leading is not None and len(lead) != leading):
            layout = "[..., *obs_shape]" if leading is None else f"[{', '.join('N' * leading)}, *obs_shape]"
            raise ValueError(f"{where}: {name} has shape {shape}, expected {layout} with obs_shape {self.obs_shape}")

    def check_advantage(self, where: str, adv_ext: Any, r_int: Any, v_int: Any, v_int_last: Any) -> None:
        """``IntrinsicReward.advantage``'s arrays: ``[T, B]`` each, ``v_int_last [B]``."""
        for name, array in (("adv_ext", adv_ext), ("r_int", r_int), ("v_int", v_int)):
            expect(where, name, array, self.lead, "[num_steps, num_envs]")
        expect(where, "v_int_last", v_int_last, (self.num_envs,), "[num_envs]")


def expect(where: str, name: str, array: Any, expected: tuple[int, ...], layout: str,
           item: str = "observations") -> None:
    """ValueError ``<where>: <name> has shape (...), expected <layout> = (...)`` unless ``array`` has the
    shape ``expected``, with a hint when the shape given is a known mistake (``item``: what the axes after
    ``[T, B]`` hold)."""
    shape = tuple(_shape(array))
    if shape != tuple(expected):
        raise ValueError(f"{where}: {name} has shape {shape}, expected {layout} = {tuple(expected)}"
                         f"{_hint(shape, tuple(expected), item)}")


def _hint(shape: tuple[int, ...], expected: tuple[int, ...], item: str = "observations") -> str:
    """The known mistake ``shape`` looks like, for ``expected = (T, B, *rest)``; empty when none."""
    if len(expected) < 2:
        return ""
    (t, b), rest = expected[:2], expected[2:]
    if len(shape) == len(expected) - 1 and shape[:1] == (t * b,):
        return "; a flattened [T*B, ...] rollout? pass it with its [T, B] axes"
    if t != b and shape[:2] == (b, t):
        return f"; T and B swapped? T = num_steps = {t}, B = num_envs = {b}"
    if shape[:2] == (t, b) and rest and len(shape) == len(expected):
        return f"; {item} of shape {shape[2:]} where the bonus was made for {rest}"
    return ""


def _shape(array: Any) -> tuple[int, ...]:
    """An array's shape, a Python scalar's ``()``."""
    return tuple(getattr(array, "shape", ()))


def _aval(x: Any) -> tuple[tuple[int, ...], Any]:
    """``(shape, dtype)`` of an array or a number; dtype None for anything else."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        try:
            dtype = jnp.result_type(x)
        except Exception:  # not a number: the caller names it
            return (), None
    return _shape(x), dtype


def _kind(tree: Any) -> str:
    """What ``tree`` is, in a few words: ``None``, ``an RNDState``, ``a dict with keys [...]``, ``an array of
    shape (4,)``."""
    if tree is None:
        return "None"
    name = type(tree).__name__
    if hasattr(tree, "shape") and hasattr(tree, "dtype"):
        return f"an array of shape {tuple(tree.shape)} and dtype {tree.dtype}"
    if isinstance(tree, Mapping):
        return f"a dict with keys {sorted(map(str, tree))}"
    if isinstance(tree, (tuple, list)) and not hasattr(tree, "_fields"):
        return f"a {name} of {len(tree)} items"
    vowels = "AEFHILMNORSX" if name[1:2].isupper() else "AEIOU"  # an acronym's first letter, as it is said
    return f"{'an' if name[:1] in vowels else 'a'} {name}"


class TreeSpec(NamedTuple):
    """A pytree as expected: its structure, each leaf's ``(shape, dtype)``, a few words for it, and the
    leaves whose shape is free (it differs with the number of warm-up states)."""

    treedef: Any
    leaves: tuple[tuple[tuple[int, ...], Any], ...]
    kind: str
    free: frozenset[int] = frozenset()


def tree_spec(tree: Any, free: frozenset[int] = frozenset()) -> TreeSpec:
    """The :class:`TreeSpec` of ``tree`` (arrays, tracers, ``jax.ShapeDtypeStruct`` or numbers)."""
    leaves, treedef = jax.tree.flatten(tree)
    return TreeSpec(treedef, tuple(_aval(x) for x in leaves), _kind(tree), free)


def check_tree(prefix: str, given: Any, spec: TreeSpec, expected: str) -> None:
    """TypeError ``<prefix> is <kind>, expected <spec's kind>, <expected>`` unless ``given`` has ``spec``'s
    structure; ValueError ``<prefix><path> has shape ... and dtype ..., expected ...`` for the first leaf of
    another shape or dtype."""
    flat, treedef = jax.tree_util.tree_flatten_with_path(given)
    if treedef != spec.treedef:
        kind, want = _kind(given), spec.kind
        if kind == want:
            kind, want = f"{kind} of structure {str(treedef)[:200]}", f"{want} of structure {str(spec.treedef)[:200]}"
        raise TypeError(f"{prefix} is {kind}, expected {want}, {expected}")
    for i, ((path, leaf), (shape, dtype)) in enumerate(zip(flat, spec.leaves)):
        got_shape, got_dtype = _aval(leaf)
        free = i in spec.free
        if str(got_dtype) != str(dtype) or (not free and got_shape != shape):
            want = f"dtype {dtype}" if free else f"shape {shape} and dtype {dtype}"
            raise ValueError(f"{prefix}{jax.tree_util.keystr(path)} has shape {got_shape} and dtype {got_dtype}, "
                             f"expected {want}, {expected}")


def bonus_input(x: Any) -> Any:
    """``x`` in :data:`BONUS_DTYPE` if it holds floats of another precision (float64 under
    ``JAX_ENABLE_X64``); anything else (float32, integers, bools) as it is."""
    dtype = getattr(x, "dtype", None)
    if dtype is not None and jnp.issubdtype(dtype, jnp.floating) and dtype != BONUS_DTYPE:
        return x.astype(BONUS_DTYPE)
    return x


def _pair(where: str, out: Any, expected: str) -> tuple[Any, Any]:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{where} returned {_kind(out)}, expected a pair {expected}")
    return out[0], out[1]


def bonus_metrics(where: str, metrics: Any) -> dict[str, Any]:
    """A bonus's metrics: a dict of scalars (one value per update)."""
    if not isinstance(metrics, Mapping):
        raise TypeError(f"{where} returned metrics that are {_kind(metrics)}, expected a dict of scalars "
                        "({} for none)")
    for name, value in metrics.items():
        if _shape(value) != ():
            raise ValueError(f"{where} returned metrics[{name!r}] of shape {_shape(value)}, expected a scalar "
                             "(one value per update: its mean, its max, ...)")
    return dict(metrics)


def bonus_reward(name: str, out: Any, lead: tuple[int, ...]) -> tuple[jax.Array, dict[str, Any]]:
    """``bonus.reward``'s ``(r_int, metrics)``, checked: ``r_int`` of the batch's leading shape ``lead``
    (``[T, B]``) and of floats, returned in :data:`BONUS_DTYPE`; ``metrics`` a dict of scalars."""
    where = f"bonus {name}: reward"
    r_int, metrics = _pair(where, out, "(r_int [T, B], metrics)")
    shape, dtype = _aval(r_int)
    if shape != tuple(lead):
        hint = "; reshape it to batch.terminated.shape" if shape == (math.prod(lead),) else ""
        raise ValueError(f"{where} returned r_int of shape {shape}, expected [T, B] = {tuple(lead)}, the batch's "
                         f"leading axes{hint}")
    if dtype is None or not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(f"{where} returned r_int of dtype {dtype}, expected floats ({np.dtype(BONUS_DTYPE)})")
    return bonus_input(jnp.asarray(r_int)), bonus_metrics(where, metrics)


def bonus_update(name: str, out: Any, state: Any) -> tuple[Any, dict[str, Any]]:
    """``bonus.update``'s ``(state, metrics)``, checked: the state of the structure, shapes and dtypes of
    the one it was given (a ``lax.scan`` over updates carries it); ``metrics`` a dict of scalars."""
    where = f"bonus {name}: update"
    new_state, metrics = _pair(where, out, "(state, metrics)")
    check_tree(f"{where}'s state", new_state, tree_spec(state), "as the state it was given (its structure, shapes "
               "and dtypes stay from update to update)")
    return new_state, bonus_metrics(where, metrics)


def checked_refresh(name: str, refresh: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``refresh(state, hp)`` whose state is checked against the one it was given (a ``lax.cond``'s branches)."""
    def checked(state: Any, hp: Any) -> Any:
        out = refresh(state, hp)
        check_tree(f"bonus {name}: refresh's state", out, tree_spec(state), "as the state it was given")
        return out

    return checked


def checked_need(name: str, needs_refresh: Callable[[Any], Any], state: Any) -> Any:
    """``needs_refresh(state)``, checked to be a scalar (a ``lax.cond``'s predicate)."""
    need = needs_refresh(state)
    shape, dtype = _aval(need)
    if shape != () or dtype is None or not (jnp.issubdtype(dtype, jnp.bool_) or jnp.issubdtype(dtype, jnp.integer)):
        raise ValueError(f"bonus {name}: needs_refresh returned shape {shape} and dtype {dtype}, expected a scalar "
                         "bool")
    return need


@functools.cache
def _raw_key_shape() -> tuple[int, ...]:
    return tuple(jax.eval_shape(lambda: jax.random.PRNGKey(0)).shape)


def check_key(where: str, key: Any) -> None:
    """TypeError unless ``key`` is one PRNG key: ``jax.random.PRNGKey``'s uint32 array or a ``jax.random.key``."""
    shape, dtype = _aval(key)
    typed = dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)
    if not (shape == () if typed else (str(dtype) == "uint32" and shape == _raw_key_shape())):
        raise TypeError(f"{where}: key is {_kind(key)}, expected one PRNG key (jax.random.PRNGKey(seed): shape "
                        f"{_raw_key_shape()}, uint32; or jax.random.key(seed)); split one per call")


def check_scalar(where: str, name: str, value: Any) -> None:
    """ValueError unless ``value`` is a scalar (per seed: vmap over a stack of them)."""
    shape, dtype = _aval(value)
    if dtype is None or not jnp.issubdtype(dtype, jnp.number) or jnp.issubdtype(dtype, jnp.complexfloating):
        raise TypeError(f"{where}: {name} is {_kind(value)}, expected a real number")
    if shape != ():
        raise ValueError(f"{where}: {name} has shape {shape}, expected a scalar (a sweep over stacked values: "
                         "jax.vmap over them)")


def check_fraction(where: str, name: str, value: Any) -> None:
    """A scalar in ``[0, 1]`` (``gae_lambda``): the value checked when it is concrete (a traced one, in a
    vmapped sweep, only for its shape)."""
    check_scalar(where, name, value)
    known = concrete(value)
    if known is not None and not 0.0 <= float(known) <= 1.0:
        raise ValueError(f"{where}: {name}={float(known)} must be in [0, 1]")


def check_hparams(where: str, hp: Any, default: Any, bonus_name: str) -> None:
    """``hp`` as the methods take it: :data:`AGENT_HPARAMS` scalars and ``bonus``, the settings object of the
    bonus ``default.bonus`` is (its type, its static settings, scalars for its traced ones)."""
    missing = [f for f in (*AGENT_HPARAMS, "bonus") if not hasattr(hp, f)]
    if missing:
        raise TypeError(f"{where}: hp is {_kind(hp)}, without {', '.join(missing)}; expected IntrinsicHparams (the "
                        "default, explore.hparams, or one made from it with ._replace; the bonus's own settings "
                        "are hp.bonus)")
    for name in AGENT_HPARAMS:
        check_scalar(where, f"hp.{name}", getattr(hp, name))
    given, want = hp.bonus, default.bonus
    if type(given) is not type(want):
        raise TypeError(f"{where}: hp.bonus is {_kind(given)}, expected the {type(want).__name__} of bonus "
                        f"{bonus_name} (explore.hparams.bonus)")
    if isinstance(want, Settings):
        traced, static = type(want).pytree_fields()
        for name in static:
            a, b = getattr(given, name), getattr(want, name)
            if a != b and not (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
                raise ValueError(f"{where}: hp.bonus.{name}={a!r} where bonus {bonus_name} was made with {b!r} (a "
                                 "static setting, fixed when the bonus is made: create another for another value)")
        for name in traced:
            check_scalar(where, f"hp.bonus.{name}", getattr(given, name))

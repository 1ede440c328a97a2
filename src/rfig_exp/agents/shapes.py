"""The shapes a training loop of one's own hands the agent's side of a bonus, checked as it is traced.

``IntrinsicReward`` (and ``ReplayIntrinsic``) know at ``create`` what they will be given: ``num_steps``
(``T``), ``num_envs`` (``B``), one observation's shape and the action space. A rollout of other shapes
broadcasts, or fails deep inside JAX with shapes that name no argument: a flattened ``[T*B, *obs]``
rollout runs the per-env return filter over the wrong axis without an error. These checks read only
static shapes, so under ``jit`` they run once, while tracing, and cost nothing per step. Each error is
one line: the method, the argument, the shape given, the shape expected, and a hint where the shape
given is a known mistake (a flattened rollout, ``T`` and ``B`` swapped).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rfig_exp.envs.base import BoxSpace, DiscreteSpace


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

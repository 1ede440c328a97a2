"""benchmarks/same_program.py's verdicts, on programs XLA really compiled."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from same_program import program_lines, verdict  # noqa: E402


class AB(NamedTuple):
    a: jax.Array
    b: jax.Array


class BA(NamedTuple):
    b: jax.Array
    a: jax.Array


def _compiled(fn, hp) -> list[str]:
    return program_lines(jax.jit(fn).lower(jnp.ones((3, 4)), hp).compile().as_text())


def _step(x, hp):
    return jnp.tanh(x * hp.a) + hp.b


def _same_step_elsewhere(x, hp):  # the same program from other source lines
    return jnp.tanh(x * hp.a) + hp.b


def _other_step(x, hp):
    return jnp.sin(x * hp.a) + hp.b


def test_the_same_function_written_twice_is_identical():
    hp = AB(jnp.float32(2.0), jnp.float32(1.0))
    assert verdict(_compiled(_step, hp), _compiled(_same_step_elsewhere, hp)) == "IDENTICAL"


def test_reordered_hyperparameter_fields_are_the_same_program_up_to_argument_order():
    old = _compiled(_step, AB(jnp.float32(2.0), jnp.float32(1.0)))
    new = _compiled(_step, BA(jnp.float32(1.0), jnp.float32(2.0)))
    assert old != new
    assert verdict(old, new) == "SAME UP TO ARGUMENT ORDER"


class Nested(NamedTuple):
    inner: AB


def _nested_step(x, hp):
    return jnp.tanh(x * hp.inner.a) + hp.inner.b


def test_the_same_arguments_at_other_pytree_paths_are_the_same_program_up_to_their_names():
    old = _compiled(_step, AB(jnp.float32(2.0), jnp.float32(1.0)))
    new = _compiled(_nested_step, Nested(AB(jnp.float32(2.0), jnp.float32(1.0))))
    assert old != new
    assert verdict(old, new) == "SAME UP TO ARGUMENT NAMES"


def test_another_op_is_different():
    hp = AB(jnp.float32(2.0), jnp.float32(1.0))
    assert verdict(_compiled(_step, hp), _compiled(_other_step, hp)).startswith("DIFFERENT")


def _split_in_init(key):
    return jax.random.split(key)


def _split_in_a_helper(key):
    return jax.random.split(key)


def _window(key):
    return jax.random.split(key)[0] + 1


def _window_after(first) -> list[str]:
    """The window's program once ``first`` has split a key in this process: JAX lowers the split once
    and reuses it, named after the function that called it first."""
    jax.clear_caches()
    jax.jit(first).lower(jax.random.PRNGKey(0)).compile()
    return program_lines(jax.jit(_window).lower(jax.random.PRNGKey(0)).compile().as_text())


def test_a_helper_named_after_its_first_caller_is_the_same_program_up_to_instruction_names():
    old, new = _window_after(_split_in_init), _window_after(_split_in_a_helper)
    assert old != new
    assert verdict(old, new) == "SAME UP TO INSTRUCTION NAMES"
    assert verdict(old, [line.replace(" add(", " multiply(") for line in new]).startswith("DIFFERENT")  # an op

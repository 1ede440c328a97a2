"""Run a JAX function as a GPU's TF32 tensor cores would: every matmul's operands rounded to
TF32's 10-bit mantissa (round to nearest even), products accumulated in float32.

CPU matmuls ignore ``jax.default_matmul_precision``, so a test cannot get TF32 from XLA here.
:func:`tf32` re-evaluates the function's jaxpr equation by equation and rounds the float32
operands of each ``dot_general`` that runs at the process default (no explicit precision)
first; nested ``jit`` / custom-derivative calls are
evaluated inline, and ``scan``, ``while`` and ``cond`` step by step in Python (slow, but
exact: the emulation runs outside ``jit`` on concrete values). Any other primitive that holds
a jaxpr would run at float32 unnoticed, so the tests check that the emulation changes what
they expect it to change.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core as jcore

_INLINE = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr", "custom_jvp_call": "call_jaxpr",
           "custom_vjp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr", "custom_vmap_call": "call"}


def round_tf32(x):
    """float32 -> the nearest TF32 value (10 mantissa bits), as a float32 array."""
    if x.dtype != jnp.float32:
        return x
    bits = jax.lax.bitcast_convert_type(x, jnp.uint32)
    bits = (bits + jnp.uint32(0xFFF) + ((bits >> 13) & jnp.uint32(1))) & jnp.uint32(0xFFFFE000)
    return jax.lax.bitcast_convert_type(bits, jnp.float32)


def round_tf32_np(x) -> np.ndarray:
    """The same rounding in numpy."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    bits = (bits + np.uint32(0xFFF) + ((bits >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000)
    return bits.view(np.float32)


def _at_process_default(precision) -> bool:
    """A dot without an explicit precision runs at the process default, TF32 on a GPU; one that
    asks for HIGH or HIGHEST gets (near) float32 there too and is left alone."""
    names = {str(p).rsplit(".", 1)[-1] for p in (precision if isinstance(precision, tuple) else (precision,))}
    return precision is None or names <= {"DEFAULT"}


def _eval(jaxpr, consts, args):
    env = {}

    def read(v):
        return v.val if isinstance(v, jcore.Literal) else env[v]

    for var, value in zip(jaxpr.constvars, consts):
        env[var] = value
    for var, value in zip(jaxpr.invars, args):
        env[var] = value
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        if name == "dot_general" and _at_process_default(eqn.params.get("precision")):
            outs = [eqn.primitive.bind(*[round_tf32(x) for x in ins], **eqn.params)]
        elif name in _INLINE:
            outs = _eval(*_closed(eqn.params[_INLINE[name]]), ins)
        elif name in _CONTROL:
            outs = _CONTROL[name](eqn.params, ins)
        else:
            outs = eqn.primitive.bind(*ins, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        for var, value in zip(eqn.outvars, outs):
            if not isinstance(var, jcore.DropVar):
                env[var] = value
    return [read(v) for v in jaxpr.outvars]


def _closed(sub):
    return (sub.jaxpr, sub.consts) if hasattr(sub, "consts") else (sub, ())


def _scan(params, ins):
    nc, nk = params["num_consts"], params["num_carry"]
    consts, carry, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    steps = range(params["length"])
    ys = [None] * params["length"]
    for i in (reversed(steps) if params["reverse"] else steps):
        outs = _eval(*_closed(params["jaxpr"]), [*consts, *carry, *(x[i] for x in xs)])
        carry, ys[i] = outs[:nk], outs[nk:]
    stacked = [jnp.stack([y[j] for y in ys]) for j in range(len(ys[0]))] if ys and ys[0] else []
    return [*carry, *stacked]


def _while(params, ins):
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    cond_consts, body_consts, carry = ins[:cn], ins[cn:cn + bn], ins[cn + bn:]
    while bool(_eval(*_closed(params["cond_jaxpr"]), [*cond_consts, *carry])[0]):
        carry = _eval(*_closed(params["body_jaxpr"]), [*body_consts, *carry])
    return carry


def _cond(params, ins):
    return _eval(*_closed(params["branches"][int(ins[0])]), ins[1:])


# Evaluated eagerly, step by step (the emulation runs outside jit, on concrete values).
_CONTROL = {"scan": _scan, "while": _while, "cond": _cond}


def tf32(fn):
    """``fn`` with every matmul at emulated TF32 (see the module docstring)."""
    def wrapped(*args):
        closed = jax.make_jaxpr(fn)(*args)
        flat = jax.tree.leaves(args)
        out = _eval(closed.jaxpr, closed.consts, flat)
        return jax.tree.unflatten(jax.tree.structure(jax.eval_shape(fn, *args)), out)
    return wrapped

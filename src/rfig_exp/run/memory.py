"""How much memory one run of a stacked job needs, and how much this process has: a job of more
members than fit trains them in turns (``rfig_exp.run.experiment.run_job``).

A stacked sweep job (``rfig_exp.launch.stacking``) vmaps its members, so its peak memory grows with
them: each member's run state (parameters, optimiser, the bonus's matrices or networks, the envs)
and the window's temporaries, dominated by the rollout's transitions and what is computed from
them (normalised observations, minibatches, the bonus's features). :func:`bytes_per_member` takes
the state's exact size from the traced ``init`` (``jax.eval_shape``: traced, not compiled) and the
rollout's from the batch and the observation size, times :data:`WINDOW_FACTOR`, measured against
XLA's own account of compiled windows. :func:`budget` is what this process may fill: half its
accelerator's memory pool, or half the memory this machine has free.
"""

from __future__ import annotations

import math
import os

import jax
import numpy as np

# peak bytes of a compiled window per member over (state + rollout) bytes, measured on this CPU with
# ``Compiled.memory_analysis()`` (arguments + outputs + temporaries, 2 and 8 vmapped seeds,
# 2026-11-28): MountainCar 4.8 (none), 2.1-3.1 (RFIG); Breakout-MinAtar 0.8 (none), 1.2-1.4 (RFIG)
WINDOW_FACTOR = 5.0
# floats a rollout keeps per env step beyond the two observations (action, log-prob, values, reward,
# flags, advantages, targets, intrinsic rewards), and the copies of the observations the update makes
PER_STEP_FLOATS = 16
OBS_COPIES = 4
# the share of what the process has that a job's members may fill (XLA's buffers, the compiler's
# working memory and everything else need the rest)
SHARE = 0.5


def tree_bytes(tree) -> int:
    """Bytes of the arrays (or shape-dtype structs) of ``tree``."""
    return int(sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree)))


def bytes_per_member(init, hparams, batch_size: int, obs_shape) -> int:
    """The estimated peak bytes one member adds to a job: ``init(key, hparams)`` is the trainer's
    (one member's state, traced only), ``batch_size`` its rollout's env steps."""
    state = jax.eval_shape(init, jax.random.PRNGKey(0), hparams)
    rollout = batch_size * (OBS_COPIES * math.prod(obs_shape) + PER_STEP_FLOATS) * 4
    return int(WINDOW_FACTOR * (tree_bytes(state) + rollout))


def budget(device=None) -> int | None:
    """The bytes a job's members may fill on ``device`` (default: JAX's first): :data:`SHARE` of its
    memory pool's limit on an accelerator, of this machine's free memory on a CPU (None: unknown)."""
    device = device or jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    if stats and stats.get("bytes_limit"):
        return int(SHARE * stats["bytes_limit"])
    try:
        return int(SHARE * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    except (ValueError, OSError):
        return None


def members_that_fit(per_member: int, available: int | None) -> int | None:
    """How many members fit in ``available`` bytes (None: no limit known; at least 1)."""
    if available is None or per_member <= 0:
        return None
    return max(1, available // per_member)

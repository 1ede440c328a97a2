"""rfig-exp: PPO with exploration bonuses (RFIG and baselines) in JAX.

Importing the package changes nothing in the process. The settings this project runs JAX on a
CPU with are process-wide and must come before jax is imported, so each entry point sets them
first with :func:`set_cpu_flags` (``launch.py``, the scripts, benchmarks and example, and the
test suite's ``conftest.py``); a program of one's own that uses the bonuses on a CPU does the
same (docs/library.md).
"""

from __future__ import annotations

import os
import sys
import warnings

__version__ = "0.1.0"

# Two XLA CPU runtime wedges seen with jaxlib 0.10 on this project's vmapped training
# functions: the computation never finishes and every thread sits idle.
# - the multi-threaded Eigen pool inside batched LAPACK kernels (vmapped linalg);
# - the concurrency-optimised scheduler on vmapped graphs with nested loops (our
#   2-seed init wedged about half the time without this flag, never with it).
# Both flags only affect the CPU backend.
XLA_CPU_FLAGS = ("--xla_cpu_multi_thread_eigen=false", "--xla_cpu_enable_concurrency_optimized_scheduler=false")

# JAX runs its CPU Cholesky and triangular solves through scipy's OpenBLAS, which starts one
# thread per core when it loads. When the cores are shared (a sweep's concurrent runs, other
# jobs) those threads spin-wait for each other: on the 2-core machine a rank-256 Woodbury update
# took 140-190 ms instead of 24-31 ms, a 1024 x 1024 exact inverse 410-430 ms instead of 120-130 ms
# (docs/rfig_speed.md); on a quiet machine one thread was no slower. Its rounding also depends on
# the thread count: set in one entry point and not in another, RFIG's metrics differed in the last
# bits between them.
OPENBLAS_THREADS = "1"


def _missing_cpu_flags() -> list[str]:
    """The flags of :data:`XLA_CPU_FLAGS` that ``XLA_FLAGS`` does not set (by name, any value)."""
    return [flag for flag in XLA_CPU_FLAGS if flag.split("=")[0] not in os.environ.get("XLA_FLAGS", "")]


_WARNED: list[bool] = []  # warn_without_cpu_flags has warned in this process


def warn_without_cpu_flags() -> None:
    """Warn once per process when JAX runs on a CPU without :data:`XLA_CPU_FLAGS`: a program of one's
    own that never called :func:`set_cpu_flags`, or called it after jax had started, where jaxlib
    0.10's CPU runtime can wedge for ever on vmapped linear algebra. The library's entry points
    (``rfig_exp.bonuses.create``, ``IntrinsicReward.create``) call it; it imports nothing and asks
    an already-imported jax for its backend only when a flag is missing."""
    jax = sys.modules.get("jax")
    missing = _missing_cpu_flags()
    if jax is None or not missing or _WARNED:
        return
    try:
        on_cpu = jax.default_backend() == "cpu"
    except Exception:  # no backend could start: nothing to warn about here
        return
    if on_cpu:
        _WARNED.append(True)
        warnings.warn(f"JAX runs on a CPU without {' '.join(missing)} in XLA_FLAGS: vmapped linear algebra can "
                      "wedge for ever; call rfig_exp.set_cpu_flags() before importing jax (docs/library.md)",
                      RuntimeWarning, stacklevel=3)


def set_cpu_flags() -> None:
    """Add :data:`XLA_CPU_FLAGS` to ``XLA_FLAGS`` and set ``OPENBLAS_NUM_THREADS=1`` (a setting
    already in the environment is kept), before jax, numpy or scipy is imported: XLA reads its
    flags and OpenBLAS its thread count once, as they start. One that has to be added after jax
    was imported is added with a warning that it may come too late."""
    missing = _missing_cpu_flags()
    if missing and "jax" in sys.modules:
        warnings.warn(f"rfig_exp.set_cpu_flags() after jax was imported: XLA may have read XLA_FLAGS already, "
                      f"without {' '.join(missing)}; call it before importing jax (docs/library.md)",
                      RuntimeWarning, stacklevel=2)
    if missing:
        os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *missing]).strip()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", OPENBLAS_THREADS)

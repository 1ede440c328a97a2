"""rfig-exp: PPO with exploration bonuses (RFIG and baselines) in JAX."""

import os as _os

__version__ = "0.1.0"

# Two XLA CPU runtime wedges seen with jaxlib 0.10 on this project's vmapped training
# functions: the computation never finishes and every thread sits idle.
# - the multi-threaded Eigen pool inside batched LAPACK kernels (vmapped linalg);
# - the concurrency-optimised scheduler on vmapped graphs with nested loops (our
#   2-seed init wedged about half the time without this flag, never with it).
# Both flags only affect the CPU backend and must be set before jax is imported.
_FLAGS = ("--xla_cpu_multi_thread_eigen=false", "--xla_cpu_enable_concurrency_optimized_scheduler=false")
for _flag in _FLAGS:
    if _flag.split("=")[0] not in _os.environ.get("XLA_FLAGS", ""):
        _os.environ["XLA_FLAGS"] = (_os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

# JAX runs its CPU Cholesky and triangular solves through scipy's OpenBLAS, which starts one
# thread per core when it loads. When the cores are shared (a sweep's concurrent runs, other
# jobs) those threads spin-wait for each other: on the 2-core machine a rank-256 Woodbury update
# took 140-190 ms instead of 24-31 ms, a 1024 x 1024 exact inverse 410-430 ms instead of 120-130 ms
# (docs/rfig_speed.md); on a quiet machine one thread was no slower. It must be set before
# OpenBLAS loads, so here with the XLA flags: set later (it was in linalg.py), it held or not
# depending on what the process had imported first, and RFIG's metrics differed in the last bits
# between entry points. An explicit setting is respected.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

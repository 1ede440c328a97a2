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

"""rfig-exp: PPO with exploration bonuses (RFIG and baselines) in JAX."""

import os as _os

__version__ = "0.1.0"

# XLA's multi-threaded Eigen pool can wedge for ever inside batched LAPACK kernels of a
# vmapped training function on CPU (jaxlib 0.10; see the README). The flag only affects
# the CPU backend and must be set before jax is imported.
_FLAG = "--xla_cpu_multi_thread_eigen=false"
if _FLAG not in _os.environ.get("XLA_FLAGS", ""):
    _os.environ["XLA_FLAGS"] = (_os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()

"""RFIG: random-feature information gain (the paper's Algorithm 1).

Per batch of N normalised next states ``s'``:

1. bonus ``r+ = 0.5 log(1 + phi(s')^T Lambda_{t-1} phi(s'))`` with the precision
   *before* this batch (``reward``);
2. subsample ``floor(N rho)`` states uniformly, ``Sigma_t = Sigma_{t-1} + Phi^T Phi`` and
   ``Lambda_t = Sigma_t^{-1}`` (``update``), with ``Sigma_0 = lambda I``.

``phi(x) = sqrt(2/D) cos(W^T x + b)``, ``W ~ N(0, l^-2 I)``, ``b ~ U[0, 2 pi]``.

The inverse is a config choice (``bonus.inverse``):
- ``exact``: Cholesky inverse of Sigma every update (the paper's final experiments);
- ``newton_schulz``: K iterations of ``X <- X (2I - Sigma X)`` warm-started from the
  previous inverse (the paper's appendix, K = 20), scaled by ``2 / (2 + tr(Phi Lambda Phi^T))``
  so that the iteration provably converges (see ``linalg.newton_schulz_warm_start``);
- ``woodbury``: rank-k update of Lambda (k = floor(N rho)); float32 rounding accumulates,
  so an exact refresh (Cholesky inverse of Sigma) runs whenever the residual check below
  exceeds ``refresh_tol`` and has at least doubled since the last exact inverse, and every
  ``refresh_every`` updates if that is > 0. ``exact`` and ``newton_schulz`` compute their
  inverse from Sigma every update and are only refreshed on divergence (below): for
  Newton-Schulz a ``refresh_tol`` refresh would replace the paper's method by an exact
  inverse on most updates (its K = 20 residual sits above 1e-3 on MountainCar).
Every method checks ``||Sigma Lambda v - v|| / ||v||`` on fixed probe vectors each update;
a non-finite residual or one above ``divergence_tol`` triggers an exact inverse, counted in
``recoveries``. ``describe`` reports ``refreshes`` (all exact refreshes, recoveries
included) and ``max_inverse_residual`` (the largest residual any update produced, i.e.
before any refresh it triggered), so a run's summary.json records both.

The bonus's quadratic form ``phi^T Lambda phi`` over the whole batch is its dominant cost;
it reads only the upper block triangle of Lambda (``linalg.quadratic_form``,
``quad_blocks`` blocks: 5/8 of the dense matmul's work at 4 blocks). See docs/rfig_speed.md.

The length-scale is ``bonus.lengthscale`` or, with ``auto``, ``sqrt(d_eff)`` estimated
from the random-policy warm-up states (``bonus.lengthscale_method``; see linalg.py).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from rfig_exp import linalg, theory
from rfig_exp.bonuses.base import Bonus, as_scalar, flat_states, require
from rfig_exp.shuffle import subsample

INVERSE_METHODS = ("exact", "newton_schulz", "woodbury")
# jax.default_matmul_precision values RFIG's matmuls may run at. On CPU all of them are float32.
# On Ampere/Hopper GPUs "default" is TF32 (10-bit mantissa inputs), under which the Woodbury
# update loses Lambda (measured: a recovery nearly every update); "highest" is true float32;
# "TF32_TF32_F32_X3" is three TF32 passes, close to float32 and faster on tensor cores.
MATMUL_PRECISIONS = ("highest", "TF32_TF32_F32_X3", "F32_F32_F32", "high", "default")
LENGTHSCALE_METHODS = ("valko", "valko_fixed_point", "participation_ratio")
NUM_PROBES = 4


class RFIGState(NamedTuple):
    omega_unit: jax.Array          # [d, D] standard normal; W = omega_unit / lengthscale
    bias: jax.Array                # [D]
    lengthscale: jax.Array         # []
    effective_dim: jax.Array       # [] (NaN when the length-scale was given)
    sigma: jax.Array               # [D, D] = lambda I + sum Phi^T Phi
    precision: jax.Array           # [D, D] ~ Sigma^-1
    probes: jax.Array              # [D, NUM_PROBES] fixed residual probes
    updates_since_refresh: jax.Array  # [] int32
    diverged: jax.Array            # [] bool, set by update, cleared by refresh
    stale: jax.Array               # [] bool, residual above refresh_tol: set by update, cleared by refresh
    recoveries: jax.Array          # [] int32, exact inverses forced by divergence
    residual: jax.Array            # [] float32, residual of the current precision
    refreshed_residual: jax.Array  # [] float32, residual of the last exact inverse (0 for Lambda_0)
    max_residual: jax.Array        # [] float32, largest residual an update produced
    refreshes: jax.Array           # [] int32, exact refreshes run (recoveries included)


def validate(cfg, batch_size: int) -> dict:
    """Check ``cfg`` (the ``bonus`` config node); return the static settings."""
    num_features = cfg.get("num_features")
    require(isinstance(num_features, int) and num_features >= 1,
            f"bonus.num_features={num_features!r} must be a positive integer")
    rho = float(as_scalar(cfg.get("rho"), "bonus.rho"))
    require(0.0 < rho <= 1.0, f"bonus.rho={rho} must be in (0, 1]")
    subsample = math.floor(batch_size * rho)
    require(subsample >= 1,
            f"bonus.rho={rho} keeps floor({batch_size} * rho) = 0 states of a batch of {batch_size}")
    reg = float(as_scalar(cfg.get("reg"), "bonus.reg"))
    require(reg > 0.0, f"bonus.reg={reg} must be > 0 (Sigma_0 = reg * I must be invertible)")
    inverse = cfg.get("inverse")
    require(inverse in INVERSE_METHODS,
            f"bonus.inverse={inverse!r} is not known; valid: {', '.join(INVERSE_METHODS)}")
    iters = cfg.get("newton_schulz_iters")
    require(isinstance(iters, int) and iters >= 1, f"bonus.newton_schulz_iters={iters!r} must be an integer >= 1")
    refresh_every = cfg.get("refresh_every")
    require(isinstance(refresh_every, int) and not isinstance(refresh_every, bool) and refresh_every >= 0,
            f"bonus.refresh_every={refresh_every!r} must be an integer >= 0 (0: refresh only when the residual asks)")
    tol = float(as_scalar(cfg.get("divergence_tol"), "bonus.divergence_tol"))
    require(tol > 0.0, f"bonus.divergence_tol={tol} must be > 0")
    refresh_tol = float(as_scalar(cfg.get("refresh_tol"), "bonus.refresh_tol"))
    require(0.0 < refresh_tol <= tol,
            f"bonus.refresh_tol={refresh_tol} must be > 0 and <= bonus.divergence_tol={tol}")
    quad_blocks = cfg.get("quad_blocks")
    require(isinstance(quad_blocks, int) and not isinstance(quad_blocks, bool) and quad_blocks >= 1
            and isinstance(num_features, int) and num_features % quad_blocks == 0,
            f"bonus.quad_blocks={quad_blocks!r} must be a positive integer dividing bonus.num_features={num_features}")
    lengthscale = cfg.get("lengthscale")
    auto = lengthscale == "auto"
    if not auto:
        value = float(as_scalar(lengthscale, "bonus.lengthscale"))
        require(value > 0.0, f"bonus.lengthscale={value} must be > 0 or 'auto'")
    scale = float(as_scalar(cfg.get("lengthscale_scale"), "bonus.lengthscale_scale"))
    require(scale > 0.0, f"bonus.lengthscale_scale={scale} must be > 0")
    method = cfg.get("lengthscale_method")
    require(method in LENGTHSCALE_METHODS,
            f"bonus.lengthscale_method={method!r} is not known; valid: {', '.join(LENGTHSCALE_METHODS)}")
    gamma = float(as_scalar(cfg.get("lengthscale_gamma"), "bonus.lengthscale_gamma"))
    require(gamma > 0.0, f"bonus.lengthscale_gamma={gamma} must be > 0")
    matmul_precision = cfg.get("matmul_precision")
    require(matmul_precision in MATMUL_PRECISIONS,
            f"bonus.matmul_precision={matmul_precision!r} is not known; valid: {', '.join(MATMUL_PRECISIONS)}")
    samples = cfg.get("lengthscale_samples")
    require(isinstance(samples, int) and samples >= 2, f"bonus.lengthscale_samples={samples!r} must be an integer >= 2")
    return dict(num_features=num_features, subsample=subsample, inverse=inverse, newton_schulz_iters=iters,
                refresh_every=refresh_every, quad_blocks=quad_blocks, auto_lengthscale=auto,
                lengthscale_method=method, lengthscale_samples=samples, matmul_precision=matmul_precision)


def make_rfig_bonus(cfg, obs_shape, action_space, batch_shape):
    del action_space
    static = validate(cfg, batch_shape[0] * batch_shape[1])
    hparams = {
        "reg": as_scalar(cfg.get("reg"), "bonus.reg"),
        "lengthscale": jnp.asarray(jnp.nan if static["auto_lengthscale"] else float(cfg.get("lengthscale")), jnp.float32),
        "lengthscale_gamma": as_scalar(cfg.get("lengthscale_gamma"), "bonus.lengthscale_gamma"),
        "lengthscale_scale": as_scalar(cfg.get("lengthscale_scale"), "bonus.lengthscale_scale"),
        "divergence_tol": as_scalar(cfg.get("divergence_tol"), "bonus.divergence_tol"),
        "refresh_tol": as_scalar(cfg.get("refresh_tol"), "bonus.refresh_tol"),
    }
    obs_ndim = len(obs_shape)
    num_features = static["num_features"]
    in_dim = math.prod(obs_shape)

    def rff(state, flat):
        """``[n, in_dim]`` already-flat states -> ``[n, D]`` features."""
        return theory.rff_features(flat, state.omega_unit, state.bias, state.lengthscale)

    def features(state, x):
        """``[*lead, *obs_shape]`` -> ``[prod(lead), D]``."""
        return rff(state, flat_states(x, obs_ndim))

    def init(key, warmup_obs, hp):
        k_rff, k_sub, k_probe = jax.random.split(key, 3)
        omega_unit, bias = theory.rff_params(k_rff, in_dim, num_features, jnp.float32)
        if static["auto_lengthscale"]:
            states = flat_states(warmup_obs, obs_ndim)
            n = min(static["lengthscale_samples"], states.shape[0])
            states = states[subsample(k_sub, states.shape[0], n)]
            lengthscale, d_eff = linalg.auto_lengthscale(states, static["lengthscale_method"], hp["lengthscale_gamma"])
            lengthscale = jnp.asarray(lengthscale, jnp.float32)
            d_eff = jnp.asarray(d_eff, jnp.float32)
        else:
            lengthscale, d_eff = hp["lengthscale"], jnp.asarray(jnp.nan, jnp.float32)
        # A sensitivity study scales the automatic value per env (x0.25 .. x4) in one sweep.
        lengthscale = lengthscale * hp["lengthscale_scale"]
        eye = jnp.eye(num_features, dtype=jnp.float32)
        return RFIGState(
            omega_unit=omega_unit, bias=bias, lengthscale=lengthscale, effective_dim=d_eff,
            sigma=hp["reg"] * eye, precision=eye / hp["reg"],
            probes=jax.random.normal(k_probe, (num_features, NUM_PROBES), jnp.float32),
            updates_since_refresh=jnp.zeros((), jnp.int32), diverged=jnp.zeros((), bool),
            stale=jnp.zeros((), bool), recoveries=jnp.zeros((), jnp.int32), residual=jnp.zeros((), jnp.float32),
            refreshed_residual=jnp.zeros((), jnp.float32), max_residual=jnp.zeros((), jnp.float32),
            refreshes=jnp.zeros((), jnp.int32),
        )

    def reward(state, batch, hp):
        phi = features(state, batch.next_obs)                       # [T*B, D]
        quad = linalg.quadratic_form(phi, state.precision, static["quad_blocks"])
        r = 0.5 * jnp.log1p(jnp.maximum(quad, 0.0))
        return r.reshape(batch.terminated.shape), {}

    def update(state, batch, key, hp):
        states = flat_states(batch.next_obs, obs_ndim)
        idx = subsample(key, states.shape[0], static["subsample"])
        # ``states`` is flat already: flattening it again as observations would, for a
        # 2-D observation (DeepSea), merge the k states into one long row.
        phi = rff(state, states[idx])                               # [k, D]
        sigma = state.sigma + phi.T @ phi
        if static["inverse"] == "exact":
            precision = linalg.exact_inverse(sigma)
        elif static["inverse"] == "newton_schulz":
            # The plain warm start X0 = Lambda_{t-1} diverges once ||Phi Lambda Phi^T|| >= 1
            # (early updates at rho N = 256 states do); the trace-scaled one always converges.
            x0 = linalg.newton_schulz_warm_start(state.precision, phi)
            precision = linalg.newton_schulz(sigma, x0, static["newton_schulz_iters"])
        else:
            precision = linalg.woodbury_update(state.precision, phi)
        residual = linalg.inverse_residual(sigma, precision, state.probes)
        diverged = jnp.logical_or(~jnp.isfinite(residual), residual > hp["divergence_tol"])
        # Stale: above refresh_tol, and at least twice the residual of the last exact inverse.
        # The second condition keeps a refresh from repeating every update once float32's own
        # floor (about eps * cond(Sigma), growing with the data) nears refresh_tol: a refresh
        # cannot go below that floor. Only Woodbury's error accumulates from update to update.
        if static["inverse"] == "woodbury":
            stale = (residual > hp["refresh_tol"]) & (residual > 2.0 * state.refreshed_residual)
        else:
            stale = jnp.zeros((), bool)
        new_state = state._replace(
            sigma=sigma, precision=precision, diverged=diverged, stale=stale,
            updates_since_refresh=state.updates_since_refresh + 1, residual=residual,
            # NaN-propagating max: a diverged update stays visible in the run's summary.
            max_residual=jnp.maximum(state.max_residual, residual),
        )
        # The agent refreshes exactly when needs_refresh says so (right after this update),
        # so counting it here gives the per-window number of refreshes in metrics.csv.
        return new_state, {"inverse_residual": residual, "divergence_count": diverged.astype(jnp.float32),
                           "refresh_count": needs_refresh(new_state).astype(jnp.float32)}

    def needs_refresh(state):
        """An exact refresh is due: divergence, or (woodbury) a stale residual (above
        ``refresh_tol`` and doubled since the last exact inverse) or ``refresh_every`` updates
        since the last one."""
        need = jnp.logical_or(state.diverged, state.stale)
        if static["inverse"] == "woodbury" and static["refresh_every"] > 0:
            need = jnp.logical_or(need, state.updates_since_refresh >= static["refresh_every"])
        return need

    def refresh(state, hp):
        precision = linalg.exact_inverse(state.sigma)
        residual = linalg.inverse_residual(state.sigma, precision, state.probes)
        return state._replace(
            precision=precision, residual=residual, refreshed_residual=residual,
            recoveries=state.recoveries + state.diverged.astype(jnp.int32),
            refreshes=state.refreshes + 1,
            diverged=jnp.zeros((), bool), stale=jnp.zeros((), bool),
            updates_since_refresh=jnp.zeros((), jnp.int32),
        )

    def describe(state):
        return {"lengthscale": state.lengthscale, "effective_dim": state.effective_dim,
                "recoveries": state.recoveries, "refreshes": state.refreshes,
                "max_inverse_residual": state.max_residual}

    # Under the agent's vmap over seeds, one seed after another on CPU: batched matmuls are
    # far slower there than a loop of plain ones (linalg.sequential_vmap).
    reward = linalg.sequential_vmap(reward)
    update = linalg.sequential_vmap(update)
    refresh = linalg.sequential_vmap(refresh)
    # Every matmul of the bonus at its own precision, whatever the process default (the PPO
    # networks keep theirs): the context is read when the agent's jit traces these functions.
    at = functools.partial(at_matmul_precision, precision=static["matmul_precision"])
    return Bonus("rfig", at(init), at(reward), at(update), needs_refresh, at(refresh), describe), hparams


def at_matmul_precision(fn, precision: str):
    """``fn`` traced under ``jax.default_matmul_precision(precision)`` (``default``: unchanged)."""
    if precision == "default":
        return fn

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with jax.default_matmul_precision(precision):
            return fn(*args, **kwargs)

    return wrapped

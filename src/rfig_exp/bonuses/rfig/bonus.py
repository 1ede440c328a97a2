"""RFIG: random-feature information gain (the paper's Algorithm 1).

Per batch of N normalised next states ``s'``:

1. bonus ``r+ = 0.5 log(1 + phi(s')^T Lambda_{t-1} phi(s'))`` with the precision
   *before* this batch (``reward``);
2. subsample ``floor(N rho)`` states uniformly, ``Sigma_t = Sigma_{t-1} + Phi^T Phi`` and
   ``Lambda_t = Sigma_t^{-1}`` (``update``), with ``Sigma_0 = lambda I``.

Two settings give the RFIG authors' code instead of the paper's text (docs/bonuses/rfig.md):
``prior_scale`` (``Sigma_0 = (lambda + prior_scale) I``; theirs: D) and
``initial_precision: zero`` (``Lambda_0 = 0``, so the first rollout's bonus is exactly 0). The
zero Lambda_0 is no inverse of Sigma_0: the first update starts each method from
``Sigma_0^-1 = I / (lambda + prior_scale)`` instead, so ``Lambda_1 ~ Sigma_1^-1`` as the
authors' code (which inverts Sigma at every update) has it.

``phi(x) = sqrt(2/D) cos(W^T x + b)``, ``W ~ N(0, l^-2 I)``, ``b ~ U[0, 2 pi]``.

The inverse is a config choice (``bonus.inverse``):
- ``exact``: Cholesky inverse of Sigma every update (the paper's final experiments);
- ``newton_schulz``: K iterations of ``X <- X (2I - Sigma X)`` warm-started from the
  previous inverse (the paper's appendix, K = 20), scaled by ``2 / (2 + tr(Phi Lambda Phi^T))``
  so that the iteration provably converges (see ``precision.newton_schulz_warm_start``);
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
it reads only the upper block triangle of Lambda (``precision.quadratic_form``,
``quad_blocks`` blocks: 5/8 of the dense matmul's work at 4 blocks). See docs/rfig_speed.md.

The length-scale is ``bonus.lengthscale`` or, with ``auto``, ``sqrt(d_eff)`` estimated
from the random-policy warm-up states (``bonus.lengthscale_method``; see lengthscale.py):
``lengthscale_samples`` of them, or all of them for ``linear_valko`` (the authors' rule, on
their 4096).

The package: this module is the bonus; ``features`` the random Fourier features,
``precision`` the inverse upkeep, ``lengthscale`` the length-scale heuristics, ``progress`` its
note on the console's progress line; the settings are declared in the package's ``__init__``
(``RFIGSettings``).
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, NamedTuple

import jax
import jax.numpy as jnp

from rfig_exp.bonuses.base import Bonus, flat_states
from rfig_exp.bonuses.rfig.features import rff_features, rff_params
from rfig_exp.bonuses.rfig.lengthscale import auto_lengthscale
from rfig_exp.bonuses.rfig.linalg import sequential_vmap
from rfig_exp.bonuses.rfig.precision import (
    exact_inverse,
    inverse_residual,
    newton_schulz,
    newton_schulz_warm_start,
    quadratic_form,
    woodbury_update,
)
from rfig_exp.bonuses.rfig.progress import progress_note
from rfig_exp.bonuses.shuffle import subsample

if TYPE_CHECKING:  # the declaration makes this module (make), so it is only named here, for the types
    from rfig_exp.bonuses.rfig import RFIGSettings

NUM_PROBES = 4


class RFIGState(NamedTuple):
    omega_unit: jax.Array          # [d, D] standard normal; W = omega_unit / lengthscale
    bias: jax.Array                # [D]
    lengthscale: jax.Array         # []
    effective_dim: jax.Array       # [] (NaN when the length-scale was given)
    sigma: jax.Array               # [D, D] = (lambda + prior_scale) I + sum Phi^T Phi
    precision: jax.Array           # [D, D] ~ Sigma^-1 (0 before the first update with initial_precision=zero)
    probes: jax.Array              # [D, NUM_PROBES] fixed residual probes
    updates_since_refresh: jax.Array  # [] int32
    diverged: jax.Array            # [] bool, set by update, cleared by refresh
    stale: jax.Array               # [] bool, residual above refresh_tol: set by update, cleared by refresh
    recoveries: jax.Array          # [] int32, exact inverses forced by divergence
    residual: jax.Array            # [] float32, residual of the current precision
    refreshed_residual: jax.Array  # [] float32, residual of the last exact inverse (0 for Lambda_0)
    max_residual: jax.Array        # [] float32, largest residual an update produced
    refreshes: jax.Array           # [] int32, exact refreshes run (recoveries included)


def make_rfig_bonus(settings: RFIGSettings, obs_shape, action_space) -> Bonus:
    # length: a factory of the bonus's closures (init, reward, update, needs_refresh, refresh, describe),
    # each short; together they read the static settings by closure, as jit needs.
    del action_space
    obs_ndim = len(obs_shape)
    num_features = settings.num_features
    in_dim = math.prod(obs_shape)

    def rff(state, flat):
        """``[n, in_dim]`` already-flat states -> ``[n, D]`` features."""
        return rff_features(flat, state.omega_unit, state.bias, state.lengthscale)

    def features(state, x):
        """``[*lead, *obs_shape]`` -> ``[prod(lead), D]``."""
        return rff(state, flat_states(x, obs_ndim))

    def init(key, warmup_obs, hp: RFIGSettings):
        k_rff, k_sub, k_probe = jax.random.split(key, 3)
        omega_unit, bias = rff_params(k_rff, in_dim, num_features, jnp.float32)
        if settings.auto_lengthscale:
            states = flat_states(warmup_obs, obs_ndim)
            if settings.lengthscale_method != "linear_valko":  # linear_valko: all of them, as the authors
                n = min(settings.lengthscale_samples, states.shape[0])
                states = states[subsample(k_sub, states.shape[0], n)]
            lengthscale, d_eff = auto_lengthscale(states, settings.lengthscale_method, hp.lengthscale_gamma)
            lengthscale = jnp.asarray(lengthscale, jnp.float32)
            d_eff = jnp.asarray(d_eff, jnp.float32)
        else:
            lengthscale, d_eff = hp.lengthscale, jnp.asarray(jnp.nan, jnp.float32)
        # A sensitivity study scales the automatic value per env (x0.25 .. x4) in one sweep.
        lengthscale = lengthscale * hp.lengthscale_scale
        eye = jnp.eye(num_features, dtype=jnp.float32)
        prior = hp.reg + hp.prior_scale
        precision = jnp.zeros_like(eye) if settings.initial_precision == "zero" else eye / prior
        return RFIGState(
            omega_unit=omega_unit, bias=bias, lengthscale=lengthscale, effective_dim=d_eff,
            sigma=prior * eye, precision=precision,
            probes=jax.random.normal(k_probe, (num_features, NUM_PROBES), jnp.float32),
            updates_since_refresh=jnp.zeros((), jnp.int32), diverged=jnp.zeros((), bool),
            stale=jnp.zeros((), bool), recoveries=jnp.zeros((), jnp.int32), residual=jnp.zeros((), jnp.float32),
            refreshed_residual=jnp.zeros((), jnp.float32), max_residual=jnp.zeros((), jnp.float32),
            refreshes=jnp.zeros((), jnp.int32),
        )

    def reward(state, batch, hp: RFIGSettings):
        phi = features(state, batch.next_obs)                       # [T*B, D]
        quad = quadratic_form(phi, state.precision, settings.quad_blocks)
        r = 0.5 * jnp.log1p(jnp.maximum(quad, 0.0))
        return r.reshape(batch.terminated.shape), {}

    def update(state, batch, key, hp: RFIGSettings):
        states = flat_states(batch.next_obs, obs_ndim)
        idx = subsample(key, states.shape[0], settings.subsample)
        # ``states`` is flat already: flattening it again as observations would, for a
        # 2-D observation (DeepSea), merge the k states into one long row.
        phi = rff(state, states[idx])                               # [k, D]
        sigma = state.sigma + phi.T @ phi
        previous = state.precision
        if settings.initial_precision == "zero" and settings.inverse != "exact":
            # Lambda_0 = 0 is no inverse of Sigma_0: start from Sigma_0^-1 = I / (reg + prior_scale).
            # An inverse of a positive definite Sigma has a positive diagonal, so a zero Lambda[0, 0]
            # is the Lambda_0 of init (a NaN one stays NaN, and diverges as usual).
            eye = jnp.eye(num_features, dtype=previous.dtype)
            previous = jnp.where(previous[0, 0] == 0, eye / (hp.reg + hp.prior_scale), previous)
        if settings.inverse == "exact":
            precision = exact_inverse(sigma)
        elif settings.inverse == "newton_schulz":
            # The plain warm start X0 = Lambda_{t-1} diverges once ||Phi Lambda Phi^T|| >= 1
            # (early updates at rho N = 256 states do); the trace-scaled one always converges.
            x0 = newton_schulz_warm_start(previous, phi)
            precision = newton_schulz(sigma, x0, settings.newton_schulz_iters)
        else:
            precision = woodbury_update(previous, phi)
        residual = inverse_residual(sigma, precision, state.probes)
        diverged = jnp.logical_or(~jnp.isfinite(residual), residual > hp.divergence_tol)
        # Stale: above refresh_tol, and at least twice the residual of the last exact inverse.
        # The second condition keeps a refresh from repeating every update once float32's own
        # floor (about eps * cond(Sigma), growing with the data) nears refresh_tol: a refresh
        # cannot go below that floor. Only Woodbury's error accumulates from update to update.
        if settings.inverse == "woodbury":
            stale = (residual > hp.refresh_tol) & (residual > 2.0 * state.refreshed_residual)
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
        if settings.inverse == "woodbury" and settings.refresh_every > 0:
            need = jnp.logical_or(need, state.updates_since_refresh >= settings.refresh_every)
        return need

    def refresh(state, hp: RFIGSettings):
        precision = exact_inverse(state.sigma)
        residual = inverse_residual(state.sigma, precision, state.probes)
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
    # far slower there than a loop of plain ones (rfig_exp.bonuses.rfig.linalg.sequential_vmap).
    reward = sequential_vmap(reward)
    update = sequential_vmap(update)
    refresh = sequential_vmap(refresh)
    # Every matmul of the bonus at its own precision, whatever the process default (the PPO
    # networks keep theirs): the context is read when the agent's jit traces these functions.
    at = functools.partial(at_matmul_precision, precision=settings.matmul_precision)
    return Bonus(settings.name, at(init), at(reward), at(update), needs_refresh, at(refresh), describe,
                 counted_metrics=("divergence_count", "refresh_count"),
                 progress_note=progress_note(settings.matmul_precision))


def at_matmul_precision(fn, precision: str):
    """``fn`` traced under ``jax.default_matmul_precision(precision)`` (``default``: unchanged)."""
    if precision == "default":
        return fn

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with jax.default_matmul_precision(precision):
            return fn(*args, **kwargs)

    return wrapped

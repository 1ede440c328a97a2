"""VIME: variational information maximising exploration (Houthooft et al. 2016).

A Bayesian neural network dynamics model ``p(s' | s, a; theta)`` with fully factorised
Gaussian weights ``q(theta) = prod N(mu, softplus(rho)^2)``, trained by variational
inference with one Adam step per batch on the loss

    L(mu, rho) = mean_i E_q[-log N(y_i; f(x_i; theta), likelihood_sigma^2)]
                 + kl_weight * KL(q || N(0, prior_sigma^2))

(``x = [s, onehot(a)]``, ``y = s'`` or ``s' - s``; observations normalised by the agent).

Bonus per transition ``i``: the information gain of the posterior after one second-order
step on that transition alone, ``IG_i ~ 0.5 * step^2 * g_i^T H^-1 g_i``, clipped to ``[0, clip]``
(the model and its information gain: ``rfig_exp.bonuses.bnn``). See docs/bonuses/vime.md for
the derivation, the sources and the deviations from the reference code.

The VIME that the RFIG authors ran (github.com/riiswa/rejax at b16e24a, ``exploration/vime.py``),
the one the paper's figure plots, is a variant of this bonus: the overrides :data:`AUTHORS_VARIANT`
(``bonus_per: batch``, one KL after a hypothetical Adam step for the whole rollout; ``loss: mse``;
``target: rolled_batch``; a (64, 64) tanh model; docs/bonuses/vime.md, *The RFIG authors' VIME*).
The defaults are this bonus as described above, computed as before these settings existed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Mapping

from rfig_exp.bonuses.settings import ABOVE_ZERO, ACTIVATIONS, BonusSettings
from rfig_exp.config.settings import static, traced
from rfig_exp.config.validation import POSITIVE_INT, Choice, Count, Number, Widths

VIME_TARGETS = ("next_obs", "delta", "rolled_batch")
VIME_ACTION_INPUTS = ("onehot", "index")
VIME_WEIGHT_INITS = ("he", "normal")
VIME_LOSSES = ("variational", "mse")
VIME_BONUS_PER = ("transition", "batch")

# The RFIG authors' VIME (riiswa/rejax at b16e24a; ../shared/specs/authors-code.md, 2.6 and bugs B2-B4)
# as overrides of this bonus's settings: `bonus=vime` plus these (docs/bonuses/vime.md lists them as a
# command line; a test holds the two equal). softplus(-3) is their rho = -3 as a posterior std.
AUTHORS_VARIANT: Mapping[str, Any] = MappingProxyType({
    "hidden": (64, 64), "activation": "tanh", "action_input": "index", "target": "rolled_batch",
    "num_samples": 3, "lr": 1e-3, "init_sigma": 0.04858735157374196, "weight_init": "normal", "init_mu_std": 0.1,
    "kl_ratio_len": 0, "loss": "mse", "bonus_per": "batch", "batch_gain_samples": 5,
})


@dataclass(frozen=True)
class VIMESettings(BonusSettings):
    name: ClassVar[str] = "vime"
    label: ClassVar[str] = "VIME"
    colour: ClassVar[str] = "#009E73"
    role: ClassVar[str] = "baseline"
    order: ClassVar[int] = 2  # the baselines in the paper's order
    small: ClassVar[Mapping[str, Any]] = MappingProxyType({"hidden": (16,)})

    hidden: tuple[int, ...] = static((256, 256), Widths(), doc="BNN hidden layers")
    activation: str = static(
        "relu", Choice(ACTIVATIONS),
        doc="relu | tanh, after every hidden layer (the paper: ReLU; the RFIG authors' VIME: tanh)")
    num_samples: int = static(
        1, POSITIVE_INT,
        doc="weight samples per pass, shared by the batch, of the training loss and the per-transition gain (the "
            "reference: 10; the RFIG authors' training step: 3; see docs/bonuses/vime.md)")
    target: str = static("next_obs", Choice(VIME_TARGETS),
                         doc="next_obs (the reference) | delta (s' - s) | rolled_batch: roll(-1) of the time-major "
                             "flattened batch of s, i.e. env e+1's s at the same step, never the true s' (the RFIG "
                             "authors' bug B2); all normalised by the agent")
    action_input: str = static("onehot", Choice(VIME_ACTION_INPUTS),
                               doc="onehot: a discrete action one-hot | index: one column holding its raw index (the "
                                   "RFIG authors); a Box action as it is either way")
    lr: float = traced(1e-4, Number(0, low_open=True),
                       doc="Adam learning rate of the BNN, one step per batch update (the paper; the RFIG authors: "
                           "1e-3)")
    adam_eps: float = traced(1e-8, Number(0, low_open=True),
                             doc="Adam epsilon (Lasagne's default in the reference, optax's too)")
    step_size: float = traced(0.01, Number(0, low_open=True),
                              doc="lambda of the second-order step: IG = 0.5 lambda^2 g^T H^-1 g (reference)")
    likelihood_sigma: float = traced(5.0, Number(0, low_open=True),
                                     doc="std of the Gaussian likelihood N(s'; f(s, a), sigma^2) (reference)")
    prior_sigma: float = traced(0.5, Number(0, low_open=True), doc="weight prior N(0, prior_sigma^2) (reference)")
    init_sigma: float = traced(
        0.05, Number(0, low_open=True),
        doc="posterior std of every weight at init (the RFIG authors' VIME, rho = -3; the reference's 0.5 "
            "makes a 256-wide BNN's predictions noise: docs/bonuses/vime.md)")
    weight_init: str = static(
        "he", Choice(VIME_WEIGHT_INITS),
        doc="he: weight means truncated normal of variance 2 / fan_in (nets.mlp_init) | normal: N(0, "
            "init_mu_std^2) (the RFIG authors); zero bias means either way")
    init_mu_std: float = traced(0.1, ABOVE_ZERO,
                                doc="weight_init=normal: std of the weight means at init (the RFIG authors: 0.1)")
    clip: float = traced(1000.0, Number(0, low_open=True),
                         doc="the information gain is clipped to [0, clip] before the ratio (reference)")
    kl_ratio_len: int = static(
        10, Count(0),
        doc="the bonus is the information gain over the mean of the last N batch medians (the reference's "
            "use_kl_ratio_q, kl_q_len 10); 0: the information gain itself")
    kl_weight: float = traced(
        0.02, Number(0),
        doc="KL(q || prior) weight against the per-transition mean NLL: the reference's 1/(5 batches * 10)")
    loss: str = static(
        "variational", Choice(VIME_LOSSES),
        doc="variational: mean NLL + kl_weight * KL(q || prior) (the reference) | mse: the MSE of the mean "
            "prediction of the weight samples, no KL, so not variational (the RFIG authors' bug B4)")
    bonus_per: str = static(
        "transition", Choice(VIME_BONUS_PER),
        doc="transition: each transition's information gain (VIME) | batch: one number for the whole rollout, "
            "KL(q' || q) after one hypothetical Adam step on the batch's loss (the RFIG authors' bug B3)")
    batch_gain_samples: int = static(
        5, POSITIVE_INT, doc="bonus_per=batch: weight samples of the hypothetical step's loss (the RFIG authors: 5)")


def make(settings: VIMESettings, obs_shape, action_space):
    # length: a factory of closures (inputs, init, the per-transition or per-batch gain, reward, loss,
    # update), each short, sharing the static sizes and choices by closure so jit sees them as constants.
    import jax
    import jax.numpy as jnp

    from rfig_exp.bonuses import bnn
    from rfig_exp.bonuses.base import Bonus, action_features, check_actions, flat_states
    from rfig_exp.bonuses.nets import adam_init, adam_step
    from rfig_exp.envs.base import DiscreteSpace

    obs_ndim = len(obs_shape)
    obs_dim = math.prod(obs_shape)
    index_actions = settings.action_input == "index" and isinstance(action_space, DiscreteSpace)
    sizes = (obs_dim + (1 if index_actions else bnn.action_dim(action_space)), *settings.hidden, obs_dim)
    num_samples = settings.num_samples
    activation, mse, per_batch = settings.activation, settings.loss == "mse", settings.bonus_per == "batch"

    def inputs_targets(batch):
        obs = flat_states(batch.obs, obs_ndim)                        # [N, obs_dim]
        where = f"bonus {settings.name}"  # the actions checked against the space (dtype; values when concrete)
        if index_actions:   # the RFIG authors: the raw index as one float column
            check_actions(batch.actions, action_space, where)
            actions = jnp.asarray(batch.actions, jnp.float32).reshape(obs.shape[0], 1)
        else:
            actions = action_features(batch.actions, action_space, where).reshape(obs.shape[0], -1)
        x = jnp.concatenate([obs, actions], axis=-1)                 # [N, obs_dim + A]
        if settings.target == "rolled_batch":
            # flat_states keeps the batch's [T, B] order, row t * B + e (time-major, as the authors'
            # flatten_batch): row i's "s'" is row i + 1's s, env e + 1 at the same t (env 0 at t + 1 for
            # the last env; the last row gets the first). A:ppo_with_bonus.py:417-419, A:exploration/vime.py:311.
            return x, jnp.roll(obs, -1, axis=0)
        next_obs = flat_states(batch.next_obs, obs_ndim)
        y = next_obs - obs if settings.target == "delta" else next_obs
        return x, y

    def noise(state) -> list:
        return bnn.weight_noise(state.key, state.params["mu"], num_samples)

    ratio_len = settings.kl_ratio_len

    def init(key, warmup_obs, hp: VIMESettings):
        del warmup_obs
        k_params, k_noise = jax.random.split(key)
        params = bnn.init_params(k_params, sizes, hp.init_sigma,
                                 hp.init_mu_std if settings.weight_init == "normal" else None)
        return bnn.VIMEState(params=params, opt_state=adam_init(params), key=k_noise,
                             updates=jnp.zeros((), jnp.int32),
                             medians=jnp.zeros((max(ratio_len, 1),), jnp.float32))

    def batch_gain(state, batch, hp: VIMESettings):
        """``[]``: ``KL(q' || q)``, ``q'`` the posterior after one hypothetical Adam step (the training
        step's optimiser state, lr and epsilon) on the loss of the whole batch with
        ``batch_gain_samples`` weight samples (the RFIG authors' bonus, ``A:exploration/vime.py:206-298``).
        Its noise is not the training step's (their rollout and update keys differ too)."""
        x, y = inputs_targets(batch)
        eps = bnn.weight_noise(jax.random.fold_in(state.key, 1), state.params["mu"], settings.batch_gain_samples)
        grads, _ = jax.grad(loss_fn, has_aux=True)(state.params, eps, x, y, hp)
        stepped, _ = adam_step(state.params, grads, state.opt_state, hp.lr, hp.adam_eps)
        return bnn.kl_between(stepped, state.params)

    def clipped_gain(state, batch, hp: VIMESettings):
        """``([N] information gain clipped to [0, clip], [N] raw)``; NaN -> 0, +inf -> clip. With
        ``bonus_per=batch`` every transition holds the batch's one KL."""
        if per_batch:
            ig = jnp.broadcast_to(batch_gain(state, batch, hp), (batch.terminated.size,))
        else:
            x, y = inputs_targets(batch)
            ig = bnn.information_gain(state.params, noise(state), x, y, hp)
        return jnp.clip(jnp.nan_to_num(ig, nan=0.0, posinf=hp.clip, neginf=0.0), 0.0, hp.clip), ig

    def reward(state, batch, hp: VIMESettings):
        gain, ig = clipped_gain(state, batch, hp)
        metrics = {"info_gain_mean": jnp.mean(gain), "info_gain_max": jnp.max(gain),
                   "clipped_fraction": jnp.mean((ig > hp.clip).astype(jnp.float32)),
                   "nonfinite_fraction": jnp.mean((~jnp.isfinite(ig)).astype(jnp.float32))}
        bonus = gain
        if ratio_len:
            _, typical = bnn.recent_medians(state.medians, state.updates, gain)
            bonus = gain / jnp.where(typical > 0, typical, 1.0)
            metrics["ratio_denominator"] = typical
        return bonus.reshape(batch.terminated.shape), metrics

    def loss_fn(params, eps, x, y, hp: VIMESettings):
        """``(loss, (data term, KL to the prior or None))`` with the weight samples ``eps``."""
        if mse:
            error = bnn.mse_loss(params, eps, x, y, activation)
            return error, (error, None)

        def nll(eps):
            out, _ = bnn.forward(bnn.sample_weights(params, eps), x, activation=activation)
            return jnp.mean(bnn.squared_error_nll(out, y, hp.likelihood_sigma))

        data = sum(nll(e) for e in eps) / len(eps)
        # the Gaussian's normalising constant, so that ``nll`` is the true negative log-likelihood
        data = data + y.shape[-1] * (jnp.log(hp.likelihood_sigma) + 0.5 * math.log(2.0 * math.pi))
        kl = bnn.kl_to_prior(params, hp.prior_sigma)
        return data + hp.kl_weight * kl, (data, kl)

    def update(state, batch, key, hp: VIMESettings):
        x, y = inputs_targets(batch)
        # The same weight noise as this batch's per-transition reward: XLA may then share the forward pass.
        grads, (nll, kl) = jax.grad(loss_fn, has_aux=True)(state.params, noise(state), x, y, hp)
        # Adam b1 0.9, b2 0.999 as Lasagne's adam in the reference
        params, opt_state = adam_step(state.params, grads, state.opt_state, hp.lr, hp.adam_eps)
        # The same gain as this batch's reward (same posterior, same noise): compiled together, computed once.
        gain = clipped_gain(state, batch, hp)[0]
        medians = bnn.recent_medians(state.medians, state.updates, gain)[0] if ratio_len else state.medians
        new_state = bnn.VIMEState(params=params, opt_state=opt_state, key=key, updates=state.updates + 1,
                                  medians=medians)
        if mse:
            return new_state, {"dynamics_mse": nll, "posterior_sigma_mean": bnn.mean_sigma(params)}
        return new_state, {"dynamics_nll": nll, "kl_to_prior": kl, "posterior_sigma_mean": bnn.mean_sigma(params)}

    def describe(state):
        return {"posterior_sigma_mean": bnn.mean_sigma(state.params), "model_updates": state.updates}

    return Bonus(settings.name, init, reward, update, describe=describe)

"""RND: random network distillation (Burda et al. 2018), at the RFIG paper's settings.

A fixed, randomly initialised target MLP ``f`` and a trained predictor MLP ``f_hat``, both
``in -> 256 -> 256 -> 256`` with ReLU (the paper's appendix: hidden (256, 256), embedding
256). Per batch of ``N = T * B`` normalised next states ``s'``:

1. ``reward``: ``r = mean_j (f_hat(s')_j - f(s')_j)^2`` over the embedding dimensions, with the
   predictor *before* this batch's update;
2. ``update``: one Adam step (lr 1e-4) on the same loss, averaged over a random
   ``floor(N * update_proportion)`` of the batch (without replacement; all of it by default).

The target's parameters live in the state next to the predictor's, but only the predictor
is differentiated and only its moments are in the optimiser state, so the target is never
changed. Details, sources and deviations from the reference code: ``docs/bonuses/rnd.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, NamedTuple

from rfig_exp.bonuses.settings import ABOVE_ZERO, ACTIVATIONS, BonusSettings
from rfig_exp.config.settings import static, traced
from rfig_exp.config.validation import POSITIVE_INT, Choice, Interval, Widths, require

if TYPE_CHECKING:
    import jax
    import optax

    from rfig_exp.bonuses import nets


def _trains_on_a_state(values, prefix: str) -> None:
    proportion, batch_size = values["update_proportion"], values["batch_size"]
    require(math.floor(batch_size * proportion) >= 1,
            f"{prefix}update_proportion={proportion} keeps floor({batch_size} * update_proportion) = 0 states "
            f"of a batch of {batch_size}")


@dataclass(frozen=True)
class RNDSettings(BonusSettings):
    name: ClassVar[str] = "rnd"
    label: ClassVar[str] = "RND"
    colour: ClassVar[str] = "#0072B2"
    role: ClassVar[str] = "baseline"
    order: ClassVar[int] = 1  # the baselines in the paper's order
    small: ClassVar[Mapping[str, Any]] = MappingProxyType({"hidden": (16,), "embedding_dim": 16})

    hidden: tuple[int, ...] = static((256, 256), Widths(),
                                     doc="hidden widths of both the target and the predictor MLPs")
    embedding_dim: int = static(256, POSITIVE_INT, doc="output width of both MLPs")
    activation: str = static("relu", Choice(ACTIVATIONS), doc="relu | tanh, after every hidden layer (the paper: ReLU)")
    lr: float = traced(1e-4, ABOVE_ZERO, doc="predictor Adam learning rate")
    adam_eps: float = traced(1e-8, ABOVE_ZERO, doc="Adam epsilon (optax / PyTorch / TF default)")
    # fraction of each batch the predictor trains on (sets a shape: num_train)
    update_proportion: float = static(
        1.0, Interval(0.0, "must be in (0, 1]", high=1.0, low_open=True), check=_trains_on_a_state,
        doc=("fraction of each batch the predictor trains on (1.0: the paper's one step on the whole batch; Burda et "
             "al.'s code: 0.25)"))

    @property
    def num_train(self) -> int:
        """floor(batch_size * update_proportion) states per predictor step."""
        return math.floor(self.batch_size * self.update_proportion)


class RNDState(NamedTuple):
    target: nets.MLPParams        # fixed: never differentiated, never in ``opt_state``
    predictor: nets.MLPParams
    opt_state: optax.ScaleByAdamState  # Adam moments of the predictor only
    updates: jax.Array            # [] int32, predictor steps taken


def make(settings: RNDSettings, obs_shape, action_space):
    import jax
    import jax.numpy as jnp

    from rfig_exp.bonuses import nets
    from rfig_exp.bonuses.base import Bonus, flat_states
    from rfig_exp.bonuses.shuffle import subsample

    del action_space
    obs_ndim = len(obs_shape)
    sizes = (math.prod(obs_shape),) + settings.hidden + (settings.embedding_dim,)
    activation = settings.activation
    num_train = settings.num_train

    def embed(params, x):
        return nets.mlp_apply(params, x, activation)

    def errors(target, predictor, x):
        """Per-state squared prediction error ``[N]``, mean over the embedding dimensions."""
        return jnp.mean(jnp.square(embed(predictor, x) - embed(target, x)), axis=-1)

    def init(key, warmup_obs, hp: RNDSettings):
        del warmup_obs, hp
        k_target, k_predictor = jax.random.split(key)
        # Two independent draws: a predictor that starts equal to the target would give
        # zero bonus everywhere before any training.
        target = nets.mlp_init(k_target, sizes)
        predictor = nets.mlp_init(k_predictor, sizes)
        return RNDState(target=target, predictor=predictor, opt_state=nets.adam_init(predictor),
                        updates=jnp.zeros((), jnp.int32))

    def reward(state, batch, hp: RNDSettings):
        x = flat_states(batch.next_obs, obs_ndim)                        # [N, d]
        r = errors(state.target, state.predictor, x)
        return r.reshape(batch.terminated.shape), {}

    def update(state, batch, key, hp: RNDSettings):
        x = flat_states(batch.next_obs, obs_ndim)
        if num_train < x.shape[0]:
            x = x[subsample(key, x.shape[0], num_train)]
        # The target enters as a constant: gradients flow to the predictor only. With the
        # full batch this forward pass is the one ``reward`` computed on the same inputs,
        # and XLA merges the two when the agent traces them together.
        target_out = jax.lax.stop_gradient(embed(state.target, x))

        def loss_fn(predictor):
            return jnp.mean(jnp.square(embed(predictor, x) - target_out))

        loss, grads = jax.value_and_grad(loss_fn)(state.predictor)
        predictor, opt_state = nets.adam_step(state.predictor, grads, state.opt_state, hp.lr, hp.adam_eps)
        new_state = state._replace(predictor=predictor, opt_state=opt_state, updates=state.updates + 1)
        return new_state, {"predictor_loss": loss}

    return Bonus(settings.name, init, reward, update)

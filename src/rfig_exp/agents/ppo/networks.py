"""Actor and two-headed critic; the policy head is chosen by the action space.

Actor and critic are separate MLPs (PureJaxRL / CleanRL PPO). The critic has two linear
heads on one torso: the extrinsic (episodic) and intrinsic (non-episodic) values, as in
PPO+RND. Inputs are flattened, so MinAtar's ``[10, 10, C]`` grids go through the same MLP
as classic control (the paper uses a (64, 64) tanh MLP everywhere).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from rfig_exp.envs.base import BoxSpace, DiscreteSpace

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}


class Categorical(NamedTuple):
    logits: jax.Array  # [..., A]

    def sample(self, key):
        return jax.random.categorical(key, self.logits)

    def log_prob(self, action):
        logp = jax.nn.log_softmax(self.logits)
        return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def entropy(self):
        logp = jax.nn.log_softmax(self.logits)
        return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


class DiagGaussian(NamedTuple):
    """Gaussian policy with a state-independent log-std (for continuous action spaces)."""

    mean: jax.Array     # [..., A]
    log_std: jax.Array  # [A]

    def sample(self, key):
        return self.mean + jnp.exp(self.log_std) * jax.random.normal(key, self.mean.shape)

    def log_prob(self, action):
        z = (action - self.mean) * jnp.exp(-self.log_std)
        return jnp.sum(-0.5 * z**2 - self.log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)

    def entropy(self):
        ent = 0.5 + 0.5 * jnp.log(2 * jnp.pi) + self.log_std
        return jnp.broadcast_to(jnp.sum(ent), self.mean.shape[:-1])


def _mlp(x, hidden: Sequence[int], activation: str):
    act = ACTIVATIONS[activation]
    for width in hidden:
        x = act(nn.Dense(width, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x))
    return x


class ActorCritic(nn.Module):
    """``obs [..., *obs_shape] -> (policy distribution, v_ext [...], v_int [...])``."""

    action_space: DiscreteSpace | BoxSpace
    obs_ndim: int
    hidden: Sequence[int] = (64, 64)
    activation: str = "tanh"

    @nn.compact
    def __call__(self, obs):
        x = obs.reshape(obs.shape[: obs.ndim - self.obs_ndim] + (-1,))
        actor = _mlp(x, self.hidden, self.activation)
        if isinstance(self.action_space, DiscreteSpace):
            logits = nn.Dense(self.action_space.num_actions, kernel_init=nn.initializers.orthogonal(0.01))(actor)
            pi = Categorical(logits)
        else:
            mean = nn.Dense(self.action_space.dim, kernel_init=nn.initializers.orthogonal(0.01))(actor)
            log_std = self.param("log_std", nn.initializers.zeros, (self.action_space.dim,))
            pi = DiagGaussian(mean, log_std)
        critic = _mlp(x, self.hidden, self.activation)
        v_ext = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))(critic)[..., 0]
        v_int = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))(critic)[..., 0]
        return pi, v_ext, v_int

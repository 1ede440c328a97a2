"""Actor and two-headed critic; the policy head is chosen by the action space.

Actor and critic are separate MLPs (PureJaxRL / CleanRL PPO). The critic has two linear
heads on one torso (one ``[hidden, 2]`` kernel): the extrinsic (episodic) and intrinsic (non-episodic) values, as in
PPO+RND. Inputs are flattened, so MinAtar's ``[10, 10, C]`` grids go through the same MLP
as classic control (the paper uses a (64, 64) tanh MLP everywhere).

The RFIG authors' code (``agent.networks=separate``) has three networks instead, the actor and
one critic per stream, each its own parameter group (:data:`NETWORK_GROUPS`) whose gradient is
clipped on its own; ``agent.weight_init=lecun`` is flax's default initialisation they use (LeCun-normal
kernels, zero biases, heads included) in place of orthogonal (sqrt(2) hidden, 0.01 policy head,
1.0 value head).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from rfig_exp.envs.base import BoxSpace, DiscreteSpace

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}
EXT, INT = 0, 1  # columns of the critic's ``values [..., 2]``


class Categorical(NamedTuple):
    logits: jax.Array  # [..., A]

    def sample(self, key):
        return self.sample_with_noise(jax.random.gumbel(key, self.logits.shape))

    def sample_with_noise(self, gumbel):
        """Gumbel-max sampling (what ``jax.random.categorical`` does), with the noise drawn
        by the caller so that a rollout can draw it for all steps at once."""
        return jnp.argmax(self.logits + gumbel, axis=-1)

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
        return self.sample_with_noise(jax.random.normal(key, self.mean.shape))

    def sample_with_noise(self, normal):
        return self.mean + jnp.exp(self.log_std) * normal

    def log_prob(self, action):
        z = (action - self.mean) * jnp.exp(-self.log_std)
        return jnp.sum(-0.5 * z**2 - self.log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)

    def entropy(self):
        ent = 0.5 + 0.5 * jnp.log(2 * jnp.pi) + self.log_std
        return jnp.broadcast_to(jnp.sum(ent), self.mean.shape[:-1])


def sampling_noise(action_space: DiscreteSpace | BoxSpace, key: jax.Array, batch_shape: tuple[int, ...]) -> jax.Array:
    """The noise ``sample_with_noise`` turns into actions, ``[*batch_shape, A]``: Gumbel for a
    categorical policy, standard normal for a Gaussian one.

    Drawing it for a whole rollout before the step loop replaces a PRNG call per step (on
    CPU each one is a small loop of kernels) with one vectorised call.
    """
    if isinstance(action_space, DiscreteSpace):
        return jax.random.gumbel(key, batch_shape + (action_space.num_actions,))
    return jax.random.normal(key, batch_shape + (action_space.dim,))


NETWORK_GROUPS = ("actor", "critic_ext", "critic_int")  # agent.networks=separate: the top-level modules


def _kernel_init(init: str, scale: float):
    return nn.initializers.orthogonal(scale) if init == "orthogonal" else nn.initializers.lecun_normal()


def _mlp(x, hidden: Sequence[int], activation: str, init: str = "orthogonal"):
    act = ACTIVATIONS[activation]
    for width in hidden:
        x = act(nn.Dense(width, kernel_init=_kernel_init(init, np.sqrt(2)))(x))
    return x


class _Critic(nn.Module):
    """One value stream's own network: ``[..., D] -> [...]``."""

    hidden: Sequence[int]
    activation: str
    weight_init: str

    @nn.compact
    def __call__(self, x):
        return nn.Dense(1, kernel_init=_kernel_init(self.weight_init, 1.0))(_mlp(x, self.hidden, self.activation,
                                                                          self.weight_init))[..., 0]


class _Actor(nn.Module):
    """The policy network: ``[..., D] -> distribution``."""

    action_space: DiscreteSpace | BoxSpace
    hidden: Sequence[int]
    activation: str
    weight_init: str

    @nn.compact
    def __call__(self, x):
        features = _mlp(x, self.hidden, self.activation, self.weight_init)
        return _policy(self, features, self.action_space, self.weight_init)


def _policy(module: nn.Module, features, action_space: DiscreteSpace | BoxSpace, init: str):
    """The policy head on ``features``, its layers made in ``module`` (called from its compact method)."""
    if isinstance(action_space, DiscreteSpace):
        return Categorical(nn.Dense(action_space.num_actions, kernel_init=_kernel_init(init, 0.01))(features))
    mean = nn.Dense(action_space.dim, kernel_init=_kernel_init(init, 0.01))(features)
    return DiagGaussian(mean, module.param("log_std", nn.initializers.zeros, (action_space.dim,)))


class ActorCritic(nn.Module):
    """``obs [..., *obs_shape] -> (policy distribution, values [..., 2])``.

    ``values[..., EXT]`` is the extrinsic value, ``values[..., INT]`` the intrinsic one.
    """

    action_space: DiscreteSpace | BoxSpace
    obs_ndim: int
    hidden: Sequence[int] = (64, 64)
    activation: str = "tanh"
    networks: str = "joint"     # joint | separate (NETWORK_GROUPS)
    weight_init: str = "orthogonal"    # orthogonal | lecun (agent.weight_init; ``init`` is flax's method)

    @nn.compact
    def __call__(self, obs):
        x = obs.reshape(obs.shape[: obs.ndim - self.obs_ndim] + (-1,))
        if self.networks == "separate":
            pi = _Actor(self.action_space, self.hidden, self.activation, self.weight_init, name="actor")(x)
            values = jnp.stack([_Critic(self.hidden, self.activation, self.weight_init, name=name)(x)
                                for name in NETWORK_GROUPS[1:]], axis=-1)
            return pi, values
        features = _mlp(x, self.hidden, self.activation, self.weight_init)
        pi = _policy(self, features, self.action_space, self.weight_init)
        critic = _mlp(x, self.hidden, self.activation, self.weight_init)
        # Both value heads in one [hidden, 2] kernel: the same two linear heads, one matmul.
        values = nn.Dense(2, kernel_init=_kernel_init(self.weight_init, 1.0), name="values")(critic)
        return pi, values

"""PPO networks: a diagonal Gaussian policy and a state-value function."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxcontrol.agents.common.networks import MLP


class GaussianPolicy(nn.Module):
    """Mean from an MLP, state-independent log standard deviation.

    Attributes:
      action_size: A.
      hidden_sizes: hidden widths.
      init_log_std: initial value of every log std.
    """

    action_size: int
    hidden_sizes: Sequence[int]
    init_log_std: float = -0.5

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Maps [..., D] observations to (mean [..., A], log_std [A])."""
        mean = MLP((*self.hidden_sizes, self.action_size), activation=nn.tanh, final_scale=0.01)(
            obs
        )
        log_std = self.param(
            "log_std", nn.initializers.constant(self.init_log_std), (self.action_size,)
        )
        return mean, log_std


class ValueFunction(nn.Module):
    """V(obs): [..., D] -> [...]."""

    hidden_sizes: Sequence[int]

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return MLP((*self.hidden_sizes, 1), activation=nn.tanh)(obs)[..., 0]


def init_params(
    key: jax.Array, policy: GaussianPolicy, value: ValueFunction, obs_size: int
) -> dict:
    """Parameters ``{"policy": ..., "value": ...}``."""
    key_policy, key_value = jax.random.split(key)
    dummy = jnp.zeros((1, obs_size), jnp.float32)
    return {
        "policy": policy.init(key_policy, dummy)["params"],
        "value": value.init(key_value, dummy)["params"],
    }

"""PPO networks: a diagonal Gaussian policy and a state-value function."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxcontrol.agents.common.networks import MLP

LOG_STD_RANGE = (-5.0, 2.0)  # bounds of a state-dependent log std


class GaussianPolicy(nn.Module):
    """Mean from an MLP; a log standard deviation of its own, or from the same MLP.

    Attributes:
      action_size: A.
      hidden_sizes: hidden widths.
      init_log_std: initial value of every log std.
      state_dependent_std: the MLP also outputs the log std (an offset from
        ``init_log_std``, starting near 0, clipped to ``LOG_STD_RANGE``), so
        the policy can explore in some states and be precise in others;
        otherwise one learned log std per action dimension.
    """

    action_size: int
    hidden_sizes: Sequence[int]
    init_log_std: float = -0.5
    state_dependent_std: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Maps [..., D] observations to (mean [..., A], log_std [A], or [..., A] if state-dependent)."""
        outputs = 2 * self.action_size if self.state_dependent_std else self.action_size
        out = MLP((*self.hidden_sizes, outputs), activation=nn.tanh, final_scale=0.01)(obs)
        if self.state_dependent_std:
            mean, offset = jnp.split(out, 2, axis=-1)
            return mean, jnp.clip(self.init_log_std + offset, *LOG_STD_RANGE)
        log_std = self.param(
            "log_std", nn.initializers.constant(self.init_log_std), (self.action_size,)
        )
        return out, log_std


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

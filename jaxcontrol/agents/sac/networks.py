"""SAC networks: a tanh-squashed Gaussian actor and twin Q critics."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxcontrol.agents.common.networks import MLP

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


class TanhGaussianActor(nn.Module):
    """obs [..., D] -> (mean [..., A], log_std [..., A]) of the pre-tanh Gaussian."""

    action_size: int
    hidden_sizes: Sequence[int]

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        out = MLP((*self.hidden_sizes, 2 * self.action_size), final_scale=0.01)(obs)
        mean, raw_log_std = jnp.split(out, 2, axis=-1)
        # Squash log std smoothly into [LOG_STD_MIN, LOG_STD_MAX].
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (jnp.tanh(raw_log_std) + 1)
        return mean, log_std


class TwinCritic(nn.Module):
    """(obs [..., D], action [..., A]) -> Q values [2, ...] of two independent critics."""

    hidden_sizes: Sequence[int]

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        q1 = MLP((*self.hidden_sizes, 1), layer_norm=True)(x)[..., 0]
        q2 = MLP((*self.hidden_sizes, 1), layer_norm=True)(x)[..., 0]
        return jnp.stack([q1, q2])

"""D4PG networks: a deterministic tanh actor and a categorical critic."""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxcontrol.agents.common.networks import MLP


class Actor(nn.Module):
    """obs [..., D] -> action [..., A] in (-1, 1)."""

    action_size: int
    hidden_sizes: Sequence[int]

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return jnp.tanh(
            MLP((*self.hidden_sizes, self.action_size), final_scale=0.01, layer_norm=True)(obs)
        )


class CategoricalCritic(nn.Module):
    """(obs [..., D], action [..., A]) -> logits [..., K] over the value support."""

    num_atoms: int
    hidden_sizes: Sequence[int]

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        x = jnp.concatenate([obs, action], axis=-1)
        return MLP((*self.hidden_sizes, self.num_atoms), layer_norm=True)(x)

"""Network building blocks shared by the learners (flax.linen)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class MLP(nn.Module):
    """Dense layers with an activation between them (none after the last).

    Attributes:
      sizes: output width of each layer; the last is the output size.
      activation: nonlinearity between layers.
      final_scale: scale of the last layer's initialisation (small values
          start policies near zero).
      layer_norm: apply LayerNorm after the first layer (as Acme's critics).
    """

    sizes: Sequence[int]
    activation: Callable[[jax.Array], jax.Array] = nn.relu
    final_scale: float = 1.0
    layer_norm: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i, size in enumerate(self.sizes):
            last = i == len(self.sizes) - 1
            scale = self.final_scale if last else jnp.sqrt(2.0)
            x = nn.Dense(size, kernel_init=nn.initializers.orthogonal(scale))(x)
            if not last:
                if i == 0 and self.layer_norm:
                    x = nn.LayerNorm()(x)
                    x = jnp.tanh(x)
                else:
                    x = self.activation(x)
        return x

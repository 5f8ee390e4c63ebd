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


class PixelEncoder(nn.Module):
    """The suite paper's encoder of stacked frames, shared by an actor and its critic.

    uint8 pixels [..., H, W, C] are scaled to [0, 1], then: a 3x3 convolution
    with ``channels`` outputs and stride 2, ELU, a 3x3 convolution with stride 1,
    ELU (both unpadded), flattened, a Dense of ``features`` units, LayerNorm and
    tanh. 84x84x9 inputs give 41x41 and 39x39 maps.

    Attributes:
      channels: output channels of both convolutions (paper: 32).
      features: width of the output (paper: 50).
    """

    channels: int = 32
    features: int = 50

    @nn.compact
    def __call__(self, pixels: jax.Array) -> jax.Array:
        batch = pixels.shape[:-3]
        x = pixels.reshape(-1, *pixels.shape[-3:]).astype(jnp.float32) / 255.0
        x = nn.elu(nn.Conv(self.channels, (3, 3), strides=(2, 2), padding="VALID")(x))
        x = nn.elu(nn.Conv(self.channels, (3, 3), strides=(1, 1), padding="VALID")(x))
        x = nn.Dense(self.features)(x.reshape(x.shape[0], -1))
        return jnp.tanh(nn.LayerNorm()(x)).reshape(*batch, self.features)

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


class Conv3x3(nn.Module):
    """An unpadded 3x3 convolution, as ``nn.Conv`` (same parameters, same result).

    On the CPU it is computed as one matrix product over the 3x3 patches: XLA's
    CPU convolution gradient runs about 40x slower inside a rolled loop (a
    learner's ``lax.scan`` over gradient steps) than outside one
    (docs/design/pixels.md), while a matrix product does not. On an
    accelerator it is ``lax.conv_general_dilated`` (cuDNN's kernels).

    Attributes:
      features: output channels.
      stride: the same in both directions.
      patches: compute it as the patch product (True) or as XLA's convolution
        (False); None chooses by the default backend, as above.
    """

    features: int
    stride: int = 1
    patches: bool | None = None

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        channels = x.shape[-1]
        kernel = self.param(
            "kernel", nn.initializers.lecun_normal(), (3, 3, channels, self.features)
        )
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        patches = jax.default_backend() == "cpu" if self.patches is None else self.patches
        if not patches:
            y = jax.lax.conv_general_dilated(
                x, kernel, (self.stride,) * 2, "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
            )
            return y + bias
        s, (height, width) = self.stride, x.shape[-3:-1]
        rows, cols = (height - 3) // s + 1, (width - 3) // s + 1
        # Patches in the kernel's (row, column, channel) order: [..., rows, cols, 9 * channels].
        stacked = jnp.concatenate(
            [
                x[..., i : i + s * (rows - 1) + 1 : s, j : j + s * (cols - 1) + 1 : s, :]
                for i in range(3)
                for j in range(3)
            ],
            axis=-1,
        )
        return stacked @ kernel.reshape(9 * channels, self.features) + bias


class PixelEncoder(nn.Module):
    """The suite paper's encoder of stacked frames, shared by an actor and its critic.

    uint8 pixels [..., H, W, C] are scaled to [0, 1], then: a 3x3 convolution
    with ``channels`` outputs and stride 2, ELU, a 3x3 convolution with stride 1,
    ELU (both unpadded), flattened, a Dense of ``features`` units, LayerNorm and
    tanh. 84x84x9 inputs give 41x41 and 39x39 maps.

    Attributes:
      channels: output channels of both convolutions (paper: 32).
      features: width of the output (paper: 50).
      patches: ``Conv3x3``'s choice of method (None: by the default backend).
    """

    channels: int = 32
    features: int = 50
    patches: bool | None = None

    @nn.compact
    def __call__(self, pixels: jax.Array) -> jax.Array:
        batch = pixels.shape[:-3]
        x = pixels.reshape(-1, *pixels.shape[-3:]).astype(jnp.float32) / 255.0
        # Named as nn.Conv's were, so that checkpoints of earlier runs restore.
        x = nn.elu(Conv3x3(self.channels, 2, self.patches, name="Conv_0")(x))
        x = nn.elu(Conv3x3(self.channels, 1, self.patches, name="Conv_1")(x))
        x = nn.Dense(self.features)(x.reshape(x.shape[0], -1))
        return jnp.tanh(nn.LayerNorm()(x)).reshape(*batch, self.features)

"""Image augmentation for learning from pixels: random shifts (Kostrikov et al., 2020, DrQ).

A shift pads each image by ``pad`` pixels, repeating its border, and crops it back
to its size at a random offset: the image moves by up to ``pad`` pixels along each
axis, a different move per example. The learner shifts the observations of each
batch it samples (and, independently, the observations it bootstraps from), so the
encoder sees each stored frame at many positions. It is not the suite paper's method
and is off unless asked (``OffPolicyConfig.random_shift``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def random_shift(key: jax.Array, images: jax.Array, pad: int) -> jax.Array:
    """Each image of ``images`` [B, H, W, C] moved by up to ``pad`` pixels, border repeated.

    Args:
      key: PRNG key; one offset is drawn per image.
      images: a batch of images of any dtype (uint8 pixels).
      pad: the largest move along each axis, in pixels (0: ``images`` unchanged).

    Returns:
      The shifted images, of ``images``' shape and dtype.
    """
    if pad == 0:
        return images
    b, h, w, c = images.shape
    padded = jnp.pad(images, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="edge")
    offsets = jax.random.randint(key, (b, 2), 0, 2 * pad + 1)

    def crop(image, offset):
        return jax.lax.dynamic_slice(image, (offset[0], offset[1], 0), (h, w, c))

    return jax.vmap(crop)(padded, offsets)

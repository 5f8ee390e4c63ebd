"""Flattening of dict observations, in observation_spec key order."""

from __future__ import annotations

import math
from collections.abc import Mapping

import jax
import jax.numpy as jnp


def observation_size(observation_spec: Mapping[str, object]) -> int:
    """Number of floats in the flattened observation.

    Args:
      observation_spec: OrderedDict of ``dm_env.specs.Array`` (anything with ``.shape``).

    Returns:
      The sum over keys of the product of each spec's shape.
    """
    return sum(int(math.prod(spec.shape)) for spec in observation_spec.values())


def flatten_observation(
    observation: Mapping[str, jax.Array], observation_spec: Mapping[str, object]
) -> jax.Array:
    """Concatenates a dict observation into one float vector per batch element.

    Keys are taken in ``observation_spec`` order (dm_control's order), whatever
    the order of ``observation``. Leading batch dimensions are those of the
    observation beyond each spec's shape.

    Args:
      observation: mapping key -> array of shape [*batch, *spec.shape].
      observation_spec: OrderedDict key -> spec, giving order and shapes.

    Returns:
      Array of shape [*batch, observation_size(observation_spec)], float32.
    """
    parts = []
    for key, spec in observation_spec.items():
        value = jnp.asarray(observation[key], jnp.float32)
        batch_shape = value.shape[: value.ndim - len(spec.shape)]
        parts.append(value.reshape(*batch_shape, int(math.prod(spec.shape))))
    return jnp.concatenate(parts, axis=-1)

"""Flattening of observations, in observation_spec key order.

An observation spec is dm_control's dict of ``dm_env.specs.Array`` (a bare
``Env``, most wrappers) or a single ``Array`` (``FlattenObservation``); both
flatten to one float vector per environment.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp


def _entries(observation_spec: Any) -> Mapping[Any, Any]:
    if isinstance(observation_spec, Mapping):
        return observation_spec
    return {None: observation_spec}


def observation_size(observation_spec: Any) -> int:
    """Number of floats in the flattened observation.

    Args:
      observation_spec: OrderedDict of ``dm_env.specs.Array`` (anything with
        ``.shape``), or one such spec.

    Returns:
      The sum over keys of the product of each spec's shape.
    """
    return sum(int(math.prod(spec.shape)) for spec in _entries(observation_spec).values())


def flatten_observation(observation: Any, observation_spec: Any) -> jax.Array:
    """Concatenates an observation into one float vector per batch element.

    Keys are taken in ``observation_spec`` order (dm_control's order), whatever
    the order of ``observation``. Leading batch dimensions are those of the
    observation beyond each spec's shape.

    Args:
      observation: mapping key -> array of shape [*batch, *spec.shape], or one
        array when the spec is a single ``Array``.
      observation_spec: OrderedDict key -> spec, giving order and shapes, or one spec.

    Returns:
      Array of shape [*batch, observation_size(observation_spec)], float32.
    """
    if not isinstance(observation_spec, Mapping):
        observation = {None: observation}
    parts = []
    for key, spec in _entries(observation_spec).items():
        value = jnp.asarray(observation[key], jnp.float32)
        batch_shape = value.shape[: value.ndim - len(spec.shape)]
        parts.append(value.reshape(*batch_shape, int(math.prod(spec.shape))))
    return jnp.concatenate(parts, axis=-1)

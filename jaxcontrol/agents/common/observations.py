"""Flattening of observations, in observation_spec key order, and images kept whole.

An observation spec is dm_control's dict of ``dm_env.specs.Array`` (a bare
``Env``, most wrappers) or a single ``Array`` (``FlattenObservation``); both
flatten to one float vector per environment. An observation that is one uint8
image (``Pixels``, under ``FrameStack`` or not) is the exception: the
off-policy learners keep it as uint8 (H, W, C), for their pixel encoder.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


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


def is_image(observation_spec: Any) -> bool:
    """Whether the observation is one uint8 image (H, W, C) and nothing else.

    ``Pixels(env)`` (``pixels_only=True``) and ``FrameStack`` over it are;
    ``Pixels(env, pixels_only=False)`` is not (it flattens with the state).
    """
    entries = list(_entries(observation_spec).values())
    return (
        len(entries) == 1 and len(entries[0].shape) == 3 and np.dtype(entries[0].dtype) == np.uint8
    )


def learner_shape(observation_spec: Any) -> tuple[int, ...]:
    """The shape of ``learner_observation``'s result for one environment: (H, W, C) or (D,)."""
    if is_image(observation_spec):
        return tuple(next(iter(_entries(observation_spec).values())).shape)
    return (observation_size(observation_spec),)


def learner_observation(observation: Any, observation_spec: Any) -> jax.Array:
    """What a learner stores and reads of an observation.

    Args:
      observation: as for ``flatten_observation``.
      observation_spec: the env's observation spec.

    Returns:
      The uint8 image [*batch, H, W, C] when ``is_image(observation_spec)``,
      else ``flatten_observation`` [*batch, D] (float32).
    """
    if not is_image(observation_spec):
        return flatten_observation(observation, observation_spec)
    if not isinstance(observation_spec, Mapping):
        return jnp.asarray(observation, jnp.uint8)
    (key,) = observation_spec
    return jnp.asarray(observation[key], jnp.uint8)

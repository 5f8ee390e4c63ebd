"""The shape every learner shares, and ``train(key)`` built from it.

A learner is a few pure functions over one ``TrainState`` pytree:

* ``init(key) -> state``: parameters, optimiser, env states, replay, keys.
* ``run_chunk(state) -> (state, metrics)``: a fixed number of updates as one
  ``lax.scan``; metrics is a dict of float32 scalars.
* ``policy(params, observation) -> action``: the deterministic, batched policy.
* ``policy_params(state)``: what ``policy`` needs (a frozen copy for evaluation).

The command line drives ``run_chunk`` from Python (a progress bar and a
checkpoint between chunks); ``make_train`` chains the same chunks inside one
``lax.scan`` so the whole run is a single jittable, key-vmappable function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax


class Learner(NamedTuple):
    """Pure pieces of a learner (see module docstring)."""

    init: Callable[[jax.Array], Any]
    run_chunk: Callable[[Any], tuple[Any, dict[str, jax.Array]]]
    policy: Callable[[Any, Any], jax.Array]
    policy_params: Callable[[Any], Any]
    env_steps_per_chunk: int
    num_chunks: int
    updates_per_chunk: int
    env_steps_at_init: int = 0


def train_from_learner(learner: Learner) -> Callable[[jax.Array], tuple[Any, dict]]:
    """``train(key) -> (final_state, metrics)``; metrics leaves are [num_chunks].

    Args:
      learner: the learner's pieces.

    Returns:
      A pure function of a PRNG key; jit it, or ``jax.jit(jax.vmap(train))``
      for several seeds in one call.
    """

    def train(key: jax.Array):
        state = learner.init(key)
        return jax.lax.scan(
            lambda s, _: learner.run_chunk(s), state, None, length=learner.num_chunks
        )

    return train


def chunks_for(
    total_env_steps: int, env_steps_per_update: int, updates_per_chunk: int
) -> tuple[int, int]:
    """Splits a step budget into chunks of whole updates.

    Args:
      total_env_steps: requested env steps (rounded up to whole chunks).
      env_steps_per_update: env steps one update consumes.
      updates_per_chunk: desired updates per chunk.

    Returns:
      (updates_per_chunk, num_chunks), the former reduced when the budget
      is smaller than one chunk.
    """
    updates = max(1, -(-total_env_steps // env_steps_per_update))
    per_chunk = max(1, min(updates_per_chunk, updates))
    return per_chunk, -(-updates // per_chunk)

"""The shape every learner shares, its chunked run loop, and ``train(key)`` built from it.

A learner is a few pure functions over one train-state pytree:

* ``init(key) -> state``: parameters, optimiser, env states, replay, keys.
* ``run_chunk(state) -> (state, metrics)``: a fixed number of iterations as one
  ``lax.scan``; metrics is a dict of float32 scalars (``summarize_chunk``).
* ``policy(params, observation) -> action``: the deterministic, batched policy.
* ``policy_params(state)``: what ``policy`` needs (a frozen copy for evaluation).

``chunked`` builds ``run_chunk`` from one iteration (a PPO update, or an
off-policy act-and-learn step); every learner's loop is that one function.
The command line drives ``run_chunk`` from Python (a progress bar and a
checkpoint between chunks); ``make_train`` chains the same chunks inside one
``lax.scan`` so the whole run is a single jittable, key-vmappable function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxcontrol.agents.common.episodes import summarize_chunk


class Learner(NamedTuple):
    """Pure pieces of a learner (see module docstring).

    Attributes:
      env_steps_per_chunk: steps of the training env (the stack as given) per chunk.
      num_chunks: chunks in the run.
      updates_per_chunk: gradient updates per chunk (what ``--checkpoint-every`` counts).
      env_steps_at_init: env steps taken by ``init`` (an off-policy prefill).
    """

    init: Callable[[jax.Array], Any]
    run_chunk: Callable[[Any], tuple[Any, dict[str, jax.Array]]]
    policy: Callable[[Any, Any], jax.Array]
    policy_params: Callable[[Any], Any]
    env_steps_per_chunk: int
    num_chunks: int
    updates_per_chunk: int
    env_steps_at_init: int = 0


def chunked(
    iteration: Callable[[Any], tuple[Any, dict[str, jax.Array]]], length: int
) -> Callable[[Any], tuple[Any, dict[str, jax.Array]]]:
    """``run_chunk``: ``length`` iterations in one ``lax.scan``, then the chunk's summary.

    Args:
      iteration: ``state -> (state, metrics)``; ``state.iterations`` counts
        iterations, and ``metrics`` holds ``return_sum`` and ``episodes`` of
        the episodes that ended in it, beside the learner's own scalars.
      length: iterations per chunk.

    Returns:
      ``run_chunk(state) -> (state, summarize_chunk(...))``.
    """

    def run_chunk(state):
        state, metrics = jax.lax.scan(lambda s, _: iteration(s), state, None, length=length)
        return state, summarize_chunk(metrics, state.iterations)

    return run_chunk


def train_from_learner(learner: Learner) -> Callable[[jax.Array], tuple[Any, dict]]:
    """``train(key) -> (final_state, metrics)``; metrics leaves are [num_chunks].

    Args:
      learner: the learner's pieces.

    Returns:
      A pure function of a PRNG key; jit it, or ``jax.jit(jax.vmap(train))``
      for several seeds in one call. ``episodes.episode_returns(metrics)`` is
      its learning curve.
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

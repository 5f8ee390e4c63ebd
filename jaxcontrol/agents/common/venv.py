"""Batched, auto-resetting environments for training."""

from __future__ import annotations

from typing import Any

import jax

from jaxcontrol.core import StepType


def batched_env(env: Any) -> Any:
    """Wraps a jaxcontrol Env in AutoReset (batched reset/step).

    Args:
      env: an unbatched jaxcontrol Env.

    Returns:
      ``AutoReset(env)``: ``reset(key, num_envs)`` and ``step(state, action)``
      on batched states; ``state.info["final_observation"]`` holds the
      observation each transition really ended in.
    """
    from jaxcontrol.wrappers import AutoReset  # pylint: disable=import-outside-toplevel

    return AutoReset(env)


def is_last(state: Any) -> jax.Array:
    """[E] bool: the transition that produced ``state`` ended its episode."""
    return state.step_type == StepType.LAST

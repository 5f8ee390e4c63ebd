"""Per-environment episode-return tracking for training metrics."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def track_returns(
    running: jax.Array, reward: jax.Array, done: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Accumulates rewards and collects returns of episodes that just ended.

    Args:
      running: [E] return so far of each env's current episode.
      reward: [E] reward of this step.
      done: [E] bool, episode ended on this step.

    Returns:
      new running returns [E] (zeroed where done), the sum of finished
      returns (scalar) and how many finished (scalar float32).
    """
    total = running + reward
    done_f = done.astype(jnp.float32)
    return (total * (1.0 - done_f), jnp.sum(total * done_f), jnp.sum(done_f))


def summarize_chunk(metrics: dict, updates: jax.Array) -> dict:
    """Means of per-update metrics, plus the chunk's finished-episode return.

    Args:
      metrics: per-update metrics with leading [U] axis, including
        ``return_sum`` and ``episodes``.
      updates: updates done after this chunk.

    Returns:
      dict of float32 scalars; ``episode_return`` is NaN when no episode ended.
    """
    return_sum = jnp.sum(metrics.pop("return_sum"))
    episodes = jnp.sum(metrics.pop("episodes"))
    out = jax.tree.map(jnp.mean, metrics)
    out["episodes"] = episodes
    out["episode_return"] = jnp.where(episodes > 0, return_sum / jnp.maximum(episodes, 1), jnp.nan)
    out["updates"] = updates.astype(jnp.float32)
    return out

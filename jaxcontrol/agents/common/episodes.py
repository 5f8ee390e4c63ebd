"""Episode returns in training metrics: tracked per environment, reported per chunk.

A chunk's metrics carry the SUM of the returns of the episodes that ended in
it (``return_sum``) and their number (``episodes``), both always finite. The
mean return of a chunk exists only where ``episodes > 0``: ``chunk_line``
(the metrics.jsonl line) leaves ``episode_return`` out of a chunk in which no
episode ended, and ``episode_returns`` gives the curve of the chunks that
have one. With 1000-step episodes and short chunks (D4PG's default chunk
steps each actor 250 times) most chunks end no episode, so nothing reads a
NaN or a 0 that is not a return.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def track_returns(
    running: jax.Array, reward: jax.Array, done: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Accumulates rewards and collects returns of episodes that just ended.

    Args:
      running: [E] return so far of each env's current episode; NaN for an
        episode that is not reported (one that began part-way, as a staggered
        first episode does: ``TrainingEnv.reset``).
      reward: [E] reward of this step.
      done: [E] bool, episode ended on this step.

    Returns:
      new running returns [E] (zeroed where done), the sum of finished
      returns (scalar) and how many finished (scalar float32), both over the
      reported episodes only.
    """
    total = running + reward
    reported = done & ~jnp.isnan(total)
    return (
        jnp.where(done, 0.0, total),
        jnp.sum(jnp.where(reported, total, 0.0)),
        jnp.sum(reported.astype(jnp.float32)),
    )


def summarize_chunk(metrics: dict, updates: jax.Array) -> dict:
    """A chunk's metrics from per-iteration metrics.

    Args:
      metrics: per-iteration metrics with a leading [U] axis, including
        ``return_sum`` and ``episodes`` (finished episodes' return sum and count).
      updates: iterations done after this chunk.

    Returns:
      dict of float32 scalars: the means of the learner's metrics, ``updates``,
      and the chunk's totals ``return_sum`` and ``episodes``.
    """
    metrics = dict(metrics)
    return_sum = jnp.sum(metrics.pop("return_sum"))
    episodes = jnp.sum(metrics.pop("episodes"))
    out = jax.tree.map(jnp.mean, metrics)
    out["return_sum"] = return_sum
    out["episodes"] = episodes
    out["updates"] = updates.astype(jnp.float32)
    return out


def chunk_line(metrics: dict[str, Any]) -> dict[str, Any]:
    """A chunk's metrics as a JSON line's fields.

    ``episode_return`` (the mean return of the episodes that ended in the
    chunk) is present only when one did; ``return_sum`` is folded into it.
    A non-finite learner metric (a diverged loss) is written as null.
    """
    line = {}
    for key, value in metrics.items():
        if key != "return_sum":
            value = float(value)
            line[key] = value if math.isfinite(value) else None
    episodes = float(metrics["episodes"])
    if episodes > 0:
        line["episode_return"] = float(metrics["return_sum"]) / episodes
    return line


def episode_returns(metrics: dict[str, Any]) -> np.ma.MaskedArray:
    """Mean episode return per chunk from stacked chunk metrics (e.g. ``train(key)``'s).

    Args:
      metrics: chunk metrics with leaves [..., C] (C chunks, after any leading
        axes such as seeds), holding ``return_sum`` and ``episodes``.

    Returns:
      [..., C] masked array: the mean return of the episodes that ended in each
      chunk, masked where none did (matplotlib leaves masked points out).
    """
    sums = np.asarray(metrics["return_sum"], np.float64)
    counts = np.asarray(metrics["episodes"], np.float64)
    return np.ma.masked_where(counts <= 0, sums / np.maximum(counts, 1.0))

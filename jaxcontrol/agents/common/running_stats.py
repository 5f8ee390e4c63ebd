"""Observation normalisation shared by every learner: running statistics, pure functions.

``RunningStats`` holds the count, mean and sum of squared deviations of every
observation seen; ``init``/``update``/``normalize`` are pure. ``Normalizer``
is the one switch the learners use: with ``enabled=False`` its ``update``
keeps the statistics as they are and ``apply`` is the identity, so a learner
carries the same state layout either way.
"""

from __future__ import annotations

import dataclasses

import flax.struct
import jax
import jax.numpy as jnp


@flax.struct.dataclass
class RunningStats:
    """Count, mean and sum of squared deviations (M2) of everything seen so far.

    Attributes:
      count: scalar float32, number of vectors seen.
      mean: [D] running mean.
      m2: [D] running sum of squared deviations from the mean.
    """

    count: jax.Array
    mean: jax.Array
    m2: jax.Array

    @property
    def variance(self) -> jax.Array:
        return self.m2 / jnp.maximum(self.count, 1.0)


def init(size: int) -> RunningStats:
    """Empty statistics for vectors of length ``size``."""
    return RunningStats(
        count=jnp.zeros((), jnp.float32),
        mean=jnp.zeros((size,), jnp.float32),
        m2=jnp.zeros((size,), jnp.float32),
    )


def update(stats: RunningStats, batch: jax.Array) -> RunningStats:
    """Folds a batch into the statistics (Chan et al.'s parallel combination).

    Args:
      stats: statistics so far.
      batch: [..., D] vectors; every leading axis is treated as batch.

    Returns:
      Statistics over everything seen before plus ``batch``.
    """
    batch = batch.reshape(-1, stats.mean.shape[-1]).astype(jnp.float32)
    n_b = jnp.asarray(batch.shape[0], jnp.float32)
    mean_b = jnp.mean(batch, axis=0)
    m2_b = jnp.sum(jnp.square(batch - mean_b), axis=0)
    count = stats.count + n_b
    delta = mean_b - stats.mean
    mean = stats.mean + delta * (n_b / count)
    m2 = stats.m2 + m2_b + jnp.square(delta) * (stats.count * n_b / count)
    return RunningStats(count=count, mean=mean, m2=m2)


def normalize(stats: RunningStats, x: jax.Array, clip: float = 5.0, eps: float = 1e-6) -> jax.Array:
    """Standardises ``x`` ([..., D]) and clips to [-clip, clip]."""
    std = jnp.sqrt(stats.variance + eps)
    return jnp.clip((x - stats.mean) / std, -clip, clip)


@dataclasses.dataclass(frozen=True)
class Normalizer:
    """Observation normalisation as a learner uses it, on or off.

    Attributes:
      enabled: standardise observations with running statistics; when False,
        ``apply`` returns observations unchanged and ``update`` keeps the
        (empty) statistics.
      clip: standardised values are clipped to [-clip, clip].
    """

    enabled: bool
    clip: float = 5.0

    def init(self, size: int) -> RunningStats:
        """Empty statistics for observations of length ``size``."""
        return init(size)

    def update(self, stats: RunningStats, batch: jax.Array) -> RunningStats:
        """``stats`` with the [..., D] ``batch`` folded in (unchanged when disabled)."""
        return update(stats, batch) if self.enabled else stats

    def apply(self, stats: RunningStats, x: jax.Array) -> jax.Array:
        """``x`` ([..., D]) standardised by ``stats`` (unchanged when disabled)."""
        return normalize(stats, x, self.clip) if self.enabled else x

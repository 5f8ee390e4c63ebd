"""An on-device replay buffer: a circular, time-major pytree.

Each call to ``add`` writes one row: one transition from each of E parallel
environments. Rows are kept in time order, so a sample can read a window of
n consecutive transitions of one environment (for n-step returns) without
any per-step bookkeeping. Windows never cross the write position, so they
never mix old and new data.

Every leaf of ``Replay.data`` has shape [T, E, ...] (T rows of capacity).
"""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp


@flax.struct.dataclass
class Replay:
    """Replay contents and write state.

    Attributes:
      data: pytree with leaves [T, E, ...].
      priorities: [T, E] float32 raw priorities (used by prioritized sampling).
      max_priority: scalar, priority given to new transitions.
      position: scalar int32, the row the next ``add`` writes.
      size: scalar int32, rows written so far (at most T).
    """

    data: Any
    priorities: jax.Array
    max_priority: jax.Array
    position: jax.Array
    size: jax.Array

    @property
    def capacity(self) -> int:
        return self.priorities.shape[0]

    @property
    def num_envs(self) -> int:
        return self.priorities.shape[1]


def init(example_row: Any, capacity: int) -> Replay:
    """Empty replay holding ``capacity`` rows shaped like ``example_row``.

    Args:
      example_row: pytree with leaves [E, ...] (one transition per env).
      capacity: number of rows T.

    Returns:
      A zero-filled Replay.
    """
    data = jax.tree.map(lambda x: jnp.zeros((capacity, *x.shape), x.dtype), example_row)
    num_envs = jax.tree.leaves(example_row)[0].shape[0]
    return Replay(
        data=data,
        priorities=jnp.zeros((capacity, num_envs), jnp.float32),
        max_priority=jnp.ones((), jnp.float32),
        position=jnp.zeros((), jnp.int32),
        size=jnp.zeros((), jnp.int32),
    )


def add(replay: Replay, row: Any) -> Replay:
    """Writes one row (leaves [E, ...]) at the write position, overwriting the oldest."""
    pos = replay.position
    data = jax.tree.map(lambda buf, x: buf.at[pos].set(x.astype(buf.dtype)), replay.data, row)
    priorities = replay.priorities.at[pos].set(replay.max_priority)
    return replay.replace(
        data=data,
        priorities=priorities,
        position=(pos + 1) % replay.capacity,
        size=jnp.minimum(replay.size + 1, replay.capacity),
    )


def num_windows(replay: Replay, window: int) -> jax.Array:
    """How many full windows of ``window`` rows can start (per env)."""
    return jnp.maximum(replay.size - window + 1, 0)


def _oldest(replay: Replay) -> jax.Array:
    return (replay.position - replay.size) % replay.capacity


def _gather(replay: Replay, rows: jax.Array, envs: jax.Array, window: int) -> Any:
    """Leaves [window, B, ...]: rows rows+i (mod T) of env envs."""
    offsets = jnp.arange(window)[:, None]
    t = (rows[None, :] + offsets) % replay.capacity
    return jax.tree.map(lambda buf: buf[t, envs[None, :]], replay.data)


def sample(
    replay: Replay, key: jax.Array, batch_size: int, window: int = 1
) -> tuple[jax.Array, jax.Array, Any]:
    """Uniform sample of windows of consecutive transitions.

    Call only once ``num_windows(replay, window) > 0``.

    Args:
      replay: the buffer.
      key: PRNG key.
      batch_size: B, windows to sample.
      window: n, transitions per window.

    Returns:
      rows [B] (physical start rows), envs [B], and the windows: a pytree
      with leaves [n, B, ...].
    """
    key_row, key_env = jax.random.split(key)
    count = jnp.maximum(num_windows(replay, window), 1)
    logical = jax.random.randint(key_row, (batch_size,), 0, count)
    rows = (_oldest(replay) + logical) % replay.capacity
    envs = jax.random.randint(key_env, (batch_size,), 0, replay.num_envs)
    return rows, envs, _gather(replay, rows, envs, window)


def sample_prioritized(
    replay: Replay, key: jax.Array, batch_size: int, window: int, alpha: float, beta: float
) -> tuple[jax.Array, jax.Array, Any, jax.Array]:
    """Prioritized sample (Schaul et al., 2016): P(i) proportional to p_i^alpha.

    Args:
      replay: the buffer.
      key: PRNG key.
      batch_size: B.
      window: n, transitions per window (priority is that of the first).
      alpha: priority exponent.
      beta: importance-sampling exponent.

    Returns:
      rows [B], envs [B], windows (leaves [n, B, ...]) and importance
      weights [B], (N P(i))^-beta normalised so the largest is 1.
    """
    logical = (jnp.arange(replay.capacity) - _oldest(replay)) % replay.capacity
    valid = logical < num_windows(replay, window)
    scaled = jnp.where(valid[:, None], replay.priorities**alpha, 0.0)
    flat = scaled.reshape(-1)
    cdf = jnp.cumsum(flat)
    total = cdf[-1]
    u = jax.random.uniform(key, (batch_size,)) * total
    index = jnp.clip(jnp.searchsorted(cdf, u, side="right"), 0, flat.shape[0] - 1)
    rows, envs = index // replay.num_envs, index % replay.num_envs
    probs = flat[index] / total
    n_valid = jnp.sum(valid) * replay.num_envs
    weights = (n_valid * probs) ** (-beta)
    weights = weights / jnp.max(weights)
    return rows, envs, _gather(replay, rows, envs, window), weights


def update_priorities(
    replay: Replay, rows: jax.Array, envs: jax.Array, priorities: jax.Array
) -> Replay:
    """Sets new priorities for sampled transitions and tracks the maximum."""
    priorities = jnp.maximum(priorities, 1e-6)
    return replay.replace(
        priorities=replay.priorities.at[rows, envs].set(priorities),
        max_priority=jnp.maximum(replay.max_priority, jnp.max(priorities)),
    )

"""The suite paper's evaluation protocol for a frozen policy.

Each episode runs for the env's full ``episode_length`` (1000 steps) from a
fresh reset, with the deterministic policy (no exploration noise); its score
is the plain sum of rewards. Episodes are vmapped, steps are a ``lax.scan``.
Nothing here touches learner state: the policy parameters go in, returns
come out.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol.core import StepType

# policy(params, observation) -> action, observation a batched dict, action [N, A].
Policy = Callable[[Any, Any], jax.Array]


def evaluate(
    env: Any,
    policy: Policy,
    params: Any,
    key: jax.Array,
    num_episodes: int,
    num_steps: int | None = None,
) -> jax.Array:
    """Returns of ``num_episodes`` full episodes of a frozen policy.

    Args:
      env: any ``EnvLike`` (unbatched reset/step): an ``Env`` or a wrapper stack.
      policy: deterministic batched policy ``policy(params, observation)``.
      params: policy parameters (not modified).
      key: PRNG key for the initial states.
      num_episodes: N.
      num_steps: steps per episode; default ``env.episode_length`` (1000 for
        the suite, ceil(1000 / k) under ``ActionRepeat(k)``).

    Returns:
      [N] float32 episode returns: sums of rewards up to each episode's first
      LAST (later rewards, e.g. of a new episode an ``AutoReset`` began, are
      not counted).

    Raises:
      ValueError: if the env has no time limit and ``num_steps`` is not given.
    """
    length = env.episode_length if num_steps is None else num_steps
    if length is None:
        raise ValueError(
            "evaluate: this env has no time limit (episode_length is None); pass num_steps"
        )
    reset_keys = jax.random.split(key, num_episodes)
    states = jax.vmap(env.reset)(reset_keys)

    def step(carry, _):
        states, total, running = carry
        actions = policy(params, states.observation)
        states = jax.vmap(env.step)(states, actions)
        total = total + jnp.where(running, states.reward, 0.0).astype(jnp.float32)
        return (states, total, running & (states.step_type != StepType.LAST)), None

    total = jnp.zeros((num_episodes,), jnp.float32)
    running = jnp.ones((num_episodes,), bool)
    (_, total, _), _ = jax.lax.scan(step, (states, total, running), None, length=length)
    return total


def evaluate_seeds(
    env: Any, policy: Policy, params: Any, key: jax.Array, num_episodes: int
) -> jax.Array:
    """``evaluate`` for S seeds' policies at once (params with a leading [S] axis).

    Args:
      env: a jaxcontrol Env.
      policy: deterministic batched policy.
      params: policy parameters stacked over seeds, e.g. from ``jax.vmap(train)``.
      key: PRNG key; each seed gets its own split.
      num_episodes: N per seed.

    Returns:
      [S, N] returns, ready for ``summarize``.
    """
    num_seeds = jax.tree.leaves(params)[0].shape[0]
    keys = jax.random.split(key, num_seeds)
    return jax.vmap(lambda p, k: evaluate(env, policy, p, k, num_episodes))(params, keys)


def summarize(returns: Any) -> dict[str, Any]:
    """Mean and standard error of evaluation returns.

    Args:
      returns: [N] returns of one run, or [S, N] for S seeds.

    Returns:
      dict with ``mean_return``, ``stderr`` (of the mean over all episodes,
      std / sqrt(count)), ``episodes`` (total count) and, for [S, N] input,
      ``seed_means`` and ``seed_stderr`` (standard error across seeds' means).
    """
    r = np.asarray(returns, np.float64)
    flat = r.reshape(-1)
    n = flat.size
    out = {
        "mean_return": float(flat.mean()),
        "stderr": float(flat.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0,
        "episodes": int(n),
    }
    if r.ndim == 2:
        seed_means = r.mean(axis=1)
        s = seed_means.size
        out["seed_means"] = [float(m) for m in seed_means]
        out["seed_stderr"] = float(seed_means.std(ddof=1) / math.sqrt(s)) if s > 1 else 0.0
    return out

"""Acting into the replay and sampling n-step batches: shared by SAC and D4PG.

A replay row holds one transition per environment:
``obs`` [E, D], ``action`` [E, A], ``reward`` [E], ``discount`` [E],
``done`` [E] (episode ended on this transition) and ``next_obs`` [E, D], the
observation the transition really ended in (the AutoReset wrapper's
``final_observation``), so time-limit ends bootstrap correctly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxcontrol.agents.common import replay as replay_lib
from jaxcontrol.agents.common import sharding
from jaxcontrol.agents.common.learner import chunks_for
from jaxcontrol.agents.common.returns import n_step_return
from jaxcontrol.agents.common.venv import TrainingEnv


class Schedule(NamedTuple):
    """How an off-policy run spends its budget.

    Attributes:
      prefill_iterations: iterations of random actions before learning; enough
        for ``learning_starts`` env steps and for one batch of n-step windows.
      iterations_per_chunk: act-and-learn iterations per jitted chunk.
      num_chunks: chunks in the run.
      capacity: replay rows (each row holds one transition per env).
    """

    prefill_iterations: int
    iterations_per_chunk: int
    num_chunks: int
    capacity: int


def schedule(config: Any) -> Schedule:
    """The schedule of a SAC or D4PG config (the fields they share)."""
    num_envs = config.num_envs
    prefill = max(
        -(-config.learning_starts // num_envs), -(-config.batch_size // num_envs) + config.n_step
    )
    per_chunk, num_chunks = chunks_for(
        max(config.total_env_steps - prefill * num_envs, 1), num_envs, config.iterations_per_chunk
    )
    capacity = max(config.replay_capacity // num_envs, prefill + config.n_step)
    return Schedule(prefill, per_chunk, num_chunks, capacity)


def empty_row(env: TrainingEnv) -> dict:
    """A zero row, the template of the replay's layout."""
    e, d, a = env.num_envs, env.obs_size, env.action_size
    return {
        "obs": jnp.zeros((e, d), jnp.float32),
        "action": jnp.zeros((e, a), jnp.float32),
        "reward": jnp.zeros((e,), jnp.float32),
        "discount": jnp.zeros((e,), jnp.float32),
        "done": jnp.zeros((e,), jnp.bool_),
        "next_obs": jnp.zeros((e, d), jnp.float32),
    }


def act_and_store(
    env: TrainingEnv,
    env_state: Any,
    episode_return: jax.Array,
    replay: replay_lib.Replay,
    action_fn: Callable[[jax.Array], jax.Array],
):
    """Steps every env once with ``action_fn(obs)`` and writes the transitions.

    Args:
      env: the training env.
      env_state: batched env state [E].
      episode_return: [E] running returns.
      replay: the buffer.
      action_fn: flat observations [E, D] -> actions [E, A] in [-1, 1].

    Returns:
      (env_state, episode_return, replay, finished_return_sum, finished_count).
    """
    action = action_fn(env.flatten(env_state.observation))
    env_state, episode_return, row, finished, count = env.step(env_state, episode_return, action)
    replay = replay_lib.add(replay, row)
    replay = replay.replace(data=sharding.constrain(replay.data, env.mesh, axis=1))
    return env_state, episode_return, replay, finished, count


def start(env: TrainingEnv, plan: Schedule, key: jax.Array):
    """Resets the envs and fills a fresh replay with random actions.

    Returns:
      (env_state, episode_return [E], replay).
    """
    key_env, key_prefill = jax.random.split(key)
    env_state = env.reset(key_env)
    replay = replay_lib.init(empty_row(env), plan.capacity)
    episode_return = env.zero_returns()

    def body(carry, step_key):
        env_state, episode_return, replay = carry

        def random_action(obs):
            shape = (obs.shape[0], env.action_size)
            return jax.random.uniform(step_key, shape, minval=-1.0, maxval=1.0)

        env_state, episode_return, replay, _, _ = act_and_store(
            env, env_state, episode_return, replay, random_action
        )
        return (env_state, episode_return, replay), None

    keys = jax.random.split(key_prefill, plan.prefill_iterations)
    (env_state, episode_return, replay), _ = jax.lax.scan(
        body, (env_state, episode_return, replay), keys
    )
    return env_state, episode_return, replay


def learn(state: Any, learn_step: Callable, key: jax.Array, steps: int, finished, count):
    """Runs ``steps`` gradient steps and packs an iteration's metrics.

    Args:
      state: the learner state.
      learn_step: ``(state, key) -> (state, metrics)``.
      key: PRNG key, split once per step.
      steps: gradient steps this iteration.
      finished, count: the acting step's finished-episode return sum and count.

    Returns:
      (state, metrics averaged over the steps, with ``return_sum`` and ``episodes``).
    """
    state, metrics = jax.lax.scan(learn_step, state, jax.random.split(key, steps))
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics["return_sum"], metrics["episodes"] = finished, count
    return state, metrics


def batch_from_windows(windows: dict, gamma: float) -> dict:
    """n-step transitions from windows of consecutive transitions.

    Args:
      windows: replay rows gathered as leaves [n, B, ...].
      gamma: discount factor.

    Returns:
      dict with ``obs`` [B, D], ``action`` [B, A], ``reward`` [B] (the n-step
      return), ``bootstrap_discount`` [B] and ``next_obs`` [B, D] (observation
      to bootstrap from).
    """
    returns, bootstrap_discount, k = n_step_return(
        windows["reward"], windows["discount"], windows["done"], gamma
    )
    next_obs = jnp.take_along_axis(windows["next_obs"], k[None, :, None], axis=0)[0]
    return {
        "obs": windows["obs"][0],
        "action": windows["action"][0],
        "reward": returns,
        "bootstrap_discount": bootstrap_discount,
        "next_obs": next_obs,
    }


def sample_batch(
    replay: replay_lib.Replay,
    key: jax.Array,
    batch_size: int,
    n_step: int,
    gamma: float,
    prioritized: bool = False,
    alpha: float = 0.6,
    beta: float = 0.4,
) -> tuple[dict, jax.Array, jax.Array, jax.Array]:
    """Samples n-step transitions, uniformly or by priority.

    Returns:
      (batch, rows [B], envs [B], importance weights [B]; ones when uniform).
    """
    if prioritized:
        rows, envs, windows, weights = replay_lib.sample_prioritized(
            replay, key, batch_size, n_step, alpha, beta
        )
    else:
        rows, envs, windows = replay_lib.sample(replay, key, batch_size, n_step)
        weights = jnp.ones((batch_size,), jnp.float32)
    return batch_from_windows(windows, gamma), rows, envs, weights

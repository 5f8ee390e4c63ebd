"""Acting into the replay and sampling n-step batches: shared by SAC and D4PG.

A replay row holds one transition per environment:
``obs`` [E, D], ``action`` [E, A], ``reward`` [E], ``discount`` [E],
``done`` [E] (episode ended on this transition) and ``next_obs`` [E, D], the
observation the transition really ended in (the AutoReset wrapper's
``final_observation``), so time-limit ends bootstrap correctly.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from jaxcontrol.agents.common import replay as replay_lib
from jaxcontrol.agents.common import sharding
from jaxcontrol.agents.common.episodes import track_returns
from jaxcontrol.agents.common.observations import flatten_observation
from jaxcontrol.agents.common.returns import n_step_return
from jaxcontrol.agents.common.venv import is_last


def empty_row(num_envs: int, obs_size: int, action_size: int) -> dict:
    """A zero row, the template of the replay's layout."""
    return {
        "obs": jnp.zeros((num_envs, obs_size), jnp.float32),
        "action": jnp.zeros((num_envs, action_size), jnp.float32),
        "reward": jnp.zeros((num_envs,), jnp.float32),
        "discount": jnp.zeros((num_envs,), jnp.float32),
        "done": jnp.zeros((num_envs,), jnp.bool_),
        "next_obs": jnp.zeros((num_envs, obs_size), jnp.float32),
    }


def act_and_store(
    venv: Any,
    obs_spec: Any,
    env_state: Any,
    episode_return: jax.Array,
    replay: replay_lib.Replay,
    action_fn: Callable[[jax.Array], jax.Array],
    mesh: Mesh | None = None,
):
    """Steps every env once with ``action_fn(obs)`` and writes the transitions.

    Args:
      venv: the AutoReset-wrapped env.
      obs_spec: observation spec (flattening order).
      env_state: batched env state [E].
      episode_return: [E] running returns.
      replay: the buffer.
      action_fn: flat observations [E, D] -> actions [E, A] in [-1, 1].
      mesh: optional device mesh (envs sharded).

    Returns:
      (env_state, episode_return, replay, finished_return_sum, finished_count).
    """
    obs = flatten_observation(env_state.observation, obs_spec)
    action = action_fn(obs)
    env_state = sharding.constrain(venv.step(env_state, action), mesh)
    done = is_last(env_state)
    episode_return, finished, count = track_returns(episode_return, env_state.reward, done)
    row = {
        "obs": obs,
        "action": action,
        "reward": env_state.reward,
        "discount": env_state.discount,
        "done": done,
        "next_obs": flatten_observation(env_state.info["final_observation"], obs_spec),
    }
    replay = replay_lib.add(replay, row)
    replay = replay.replace(data=sharding.constrain(replay.data, mesh, axis=1))
    return env_state, episode_return, replay, finished, count


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


def prefill(
    venv: Any,
    obs_spec: Any,
    env_state: Any,
    episode_return: jax.Array,
    replay: replay_lib.Replay,
    key: jax.Array,
    iterations: int,
    action_size: int,
    mesh: Mesh | None = None,
):
    """Fills the replay with ``iterations`` steps of uniformly random actions.

    Returns:
      (env_state, episode_return, replay).
    """
    if iterations <= 0:
        return env_state, episode_return, replay

    def body(carry, step_key):
        env_state, episode_return, replay = carry

        def random_action(obs):
            return jax.random.uniform(
                step_key, (obs.shape[0], action_size), minval=-1.0, maxval=1.0
            )

        env_state, episode_return, replay, _, _ = act_and_store(
            venv, obs_spec, env_state, episode_return, replay, random_action, mesh
        )
        return (env_state, episode_return, replay), None

    (env_state, episode_return, replay), _ = jax.lax.scan(
        body, (env_state, episode_return, replay), jax.random.split(key, iterations)
    )
    return env_state, episode_return, replay

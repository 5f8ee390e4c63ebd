"""Batched, auto-resetting environments for training."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from jaxcontrol.agents.common import sharding
from jaxcontrol.agents.common.episodes import track_returns
from jaxcontrol.agents.common.observations import flatten_observation, observation_size
from jaxcontrol.core import StepType


class TrainingEnv(NamedTuple):
    """A batched env and the sizes a learner builds its networks from.

    Attributes:
      venv: ``AutoReset(env)``: ``reset(key, num_envs)`` and ``step(state, action)``
        on batched states; ``state.info["final_observation"]`` holds the
        observation each transition really ended in.
      obs_spec: the env's observation spec (fixes the flattening order).
      obs_size: length D of a flattened observation.
      action_size: length A of an action.
      num_envs: parallel environments E.
      mesh: optional one-axis device mesh the envs are sharded on.
    """

    venv: Any
    obs_spec: Any
    obs_size: int
    action_size: int
    num_envs: int
    mesh: Mesh | None

    def flatten(self, observation: Any) -> jax.Array:
        """[E, D] flat observation of a batched observation dict."""
        return flatten_observation(observation, self.obs_spec)

    def reset(self, key: jax.Array) -> Any:
        """Batched initial states [E], sharded on the mesh."""
        return sharding.constrain(self.venv.reset(key, self.num_envs), self.mesh)

    def zero_returns(self) -> jax.Array:
        """[E] float32 zeros, sharded like the envs (as the step's outputs are)."""
        return sharding.constrain(jnp.zeros((self.num_envs,), jnp.float32), self.mesh)

    def step(self, env_state: Any, episode_return: jax.Array, action: jax.Array):
        """Steps every env once and records the transition.

        Args:
          env_state: batched env state [E].
          episode_return: [E] return so far of each env's current episode.
          action: [E, A] actions in [-1, 1].

        Returns:
          (env_state, episode_return, transition, finished_return_sum,
          finished_count), where ``transition`` holds ``obs`` [E, D],
          ``action`` [E, A], ``reward``, ``discount``, ``done`` [E] and
          ``next_obs`` [E, D], the observation the transition really ended in
          (so time-limit ends can bootstrap).
        """
        obs = self.flatten(env_state.observation)
        env_state = sharding.constrain(self.venv.step(env_state, action), self.mesh)
        done = is_last(env_state)
        episode_return, finished, count = track_returns(episode_return, env_state.reward, done)
        transition = {
            "obs": obs,
            "action": action,
            "reward": env_state.reward,
            "discount": env_state.discount,
            "done": done,
            "next_obs": self.flatten(env_state.info["final_observation"]),
        }
        return env_state, episode_return, transition, finished, count


def training_env(env: Any, num_envs: int, mesh: Mesh | None = None) -> TrainingEnv:
    """Wraps a jaxcontrol Env for training on ``num_envs`` parallel copies.

    Raises:
      ValueError: if ``num_envs`` does not split evenly over the mesh.
    """
    from jaxcontrol.wrappers import AutoReset  # pylint: disable=import-outside-toplevel

    sharding.check_divisible(num_envs, mesh)
    obs_spec = env.observation_spec()
    return TrainingEnv(
        venv=AutoReset(env),
        obs_spec=obs_spec,
        obs_size=observation_size(obs_spec),
        action_size=env.action_spec().shape[0],
        num_envs=num_envs,
        mesh=mesh,
    )


def is_last(state: Any) -> jax.Array:
    """[E] bool: the transition that produced ``state`` ended its episode."""
    return state.step_type == StepType.LAST

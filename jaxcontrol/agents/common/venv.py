"""Batched, auto-resetting environments for training, from any `EnvLike`.

A learner takes any object that satisfies ``jaxcontrol.wrappers.EnvLike``: a
bare ``Env`` or a stack of wrappers (``ActionRepeat``, ``Observables``,
``DomainRandomization``, ``FlattenObservation``, ...). It uses only the
protocol (``reset``, ``step``, the two specs, ``episode_length``) and the
``State`` fields every env returns (``observation``, ``reward``,
``discount``, ``step_type``, ``info["final_observation"]``), never an
``Env``'s internals, so whatever a stack changes is what the learner sees.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from jaxcontrol.agents.common import sharding
from jaxcontrol.agents.common.episodes import track_returns
from jaxcontrol.agents.common.observations import (
    flatten_observation,
    is_image,
    learner_observation,
    learner_shape,
    observation_size,
)
from jaxcontrol.core import StepType


class TrainingEnv(NamedTuple):
    """A batched env and the sizes a learner builds its networks from.

    Attributes:
      venv: the env with an ``AutoReset`` on top (the user's own, if the
        stack has one), one environment's ``reset(key)`` and ``step(state,
        action)``, vmapped here over the batch;
        ``state.info["final_observation"]`` holds the observation each
        transition really ended in.
      obs_spec: the env's observation spec (fixes the flattening order).
      obs_size: length D of a flattened observation.
      obs_shape: shape of one environment's ``observe``: (D,), or (H, W, C)
        for pixels.
      pixels: the observation is one uint8 image, which ``observe`` keeps as
        uint8 (H, W, C) for a pixel encoder (``observations.is_image``).
      action_size: length A of an action.
      num_envs: parallel environments E.
      mesh: optional one-axis device mesh the envs are sharded on.
    """

    venv: Any
    obs_spec: Any
    obs_size: int
    obs_shape: tuple[int, ...]
    pixels: bool
    action_size: int
    num_envs: int
    mesh: Mesh | None

    def flatten(self, observation: Any) -> jax.Array:
        """[E, D] flat observation of a batched observation."""
        return flatten_observation(observation, self.obs_spec)

    def observe(self, observation: Any) -> jax.Array:
        """What the replay stores: [E, D] float32 flat, or the [E, H, W, C] uint8 image."""
        return learner_observation(observation, self.obs_spec)

    @property
    def obs_dtype(self) -> jnp.dtype:
        """dtype of ``observe``'s result: uint8 for pixels, else float32."""
        return jnp.dtype(jnp.uint8 if self.pixels else jnp.float32)

    def reset(self, key: jax.Array, stagger: bool = False) -> Any:
        """Batched initial states [E], sharded on the mesh.

        With ``stagger``, environment i begins its first episode i / E of the
        way through its time limit (``State.step`` starts at floor(i * L / E)
        of the bare env's L steps), so that the batch covers every phase of an
        episode from the first step on. Without it, every environment of a task
        that never terminates (cartpole, walker...) runs its episodes in
        lock-step: a PPO update of a 32-step rollout then sees one 32-step slice
        of the episode (only the swing-up, then only balancing), which made PPO
        oscillate and collapse on cartpole-swingup (docs/design/staggered-episodes.md). The first
        episodes are shorter, nothing else changes; ``zero_returns(stagger=True)``
        keeps them out of the reported returns. No effect without a time limit.
        """
        keys = jax.random.split(key, self.num_envs)
        states = jax.vmap(self.venv.reset)(keys)
        if stagger:
            states = states.replace(step=self.stagger_offsets().astype(states.step.dtype))
        return sharding.constrain(states, self.mesh)

    def stagger_offsets(self) -> jax.Array:
        """[E] int32 first steps of staggered episodes, floor(i * L / E); zeros
        without a time limit."""
        limit = self.venv.unwrapped.episode_length or 0
        return (jnp.arange(self.num_envs, dtype=jnp.int32) * limit) // self.num_envs

    def zero_returns(self, stagger: bool = False) -> jax.Array:
        """[E] float32 running returns of the first episodes, sharded like the envs.

        Zeros; with ``stagger`` (as in ``reset``), NaN for the environments whose
        first episode starts part-way, which ``track_returns`` does not report.
        """
        returns = jnp.zeros((self.num_envs,), jnp.float32)
        if stagger:
            returns = jnp.where(self.stagger_offsets() > 0, jnp.nan, returns)
        return sharding.constrain(returns, self.mesh)

    def step(self, env_state: Any, episode_return: jax.Array, action: jax.Array):
        """Steps every env once and records the transition.

        Args:
          env_state: batched env state [E].
          episode_return: [E] return so far of each env's current episode.
          action: [E, A] actions in [-1, 1].

        Returns:
          (env_state, episode_return, transition, finished_return_sum,
          finished_count), where ``transition`` holds ``obs`` [E, *obs_shape]
          (``observe``'s), ``action`` [E, A], ``reward``, ``discount``,
          ``done`` [E] and ``next_obs`` [E, *obs_shape], the observation the
          transition really ended in (so time-limit ends can bootstrap).
        """
        obs = self.observe(env_state.observation)
        env_state = sharding.constrain(self._step_batch(env_state, action), self.mesh)
        done = is_last(env_state)
        reward = env_state.reward.astype(jnp.float32)
        episode_return, finished, count = track_returns(episode_return, reward, done)
        transition = {
            "obs": obs,
            "action": action,
            "reward": reward,
            "discount": env_state.discount.astype(jnp.float32),
            "done": done,
            "next_obs": self.observe(env_state.info["final_observation"]),
        }
        return env_state, episode_return, transition, finished, count

    def _step_batch(self, env_state: Any, action: jax.Array) -> Any:
        """Every env's step. With an ``AutoReset`` on top and one device, only the envs
        whose episodes ended reset (``AutoReset.step_batch``): staggered episodes end a few
        at a time, and a restart of the whole batch every few steps would cost more than
        the episodes themselves where a reset steps physics (cheetah's settle)."""
        from jaxcontrol.wrappers import AutoReset  # pylint: disable=import-outside-toplevel

        if isinstance(self.venv, AutoReset) and self.mesh is None:
            return self.venv.step_batch(env_state, action)
        return jax.vmap(self.venv.step)(env_state, action)


def training_env(env: Any, num_envs: int, mesh: Mesh | None = None) -> TrainingEnv:
    """Batches ``env`` (an ``Env`` or any wrapper stack) for training on ``num_envs`` copies.

    An ``AutoReset`` is put on top unless the stack has one already.

    Raises:
      TypeError: if ``env`` does not satisfy ``EnvLike``.
      ValueError: if ``num_envs`` does not split evenly over the mesh, the
        action spec is not a vector, or the stack cannot take an ``AutoReset``
        on top (the message names the order that works).
    """
    from jaxcontrol.wrappers import AutoReset, EnvLike  # pylint: disable=import-outside-toplevel

    if not isinstance(env, EnvLike):
        raise TypeError(
            "learners train on a jaxcontrol environment (jaxcontrol.load(domain, task), "
            f"or a stack of jaxcontrol.wrappers around one), got {type(env).__name__}"
        )
    sharding.check_divisible(num_envs, mesh)
    action_shape = env.action_spec().shape
    if len(action_shape) != 1:
        raise ValueError(f"learners need a vector action spec, got shape {action_shape}")
    if not resets_itself(env):
        env = AutoReset(env)
    obs_spec = env.observation_spec()
    return TrainingEnv(
        venv=env,
        obs_spec=obs_spec,
        obs_size=observation_size(obs_spec),
        obs_shape=learner_shape(obs_spec),
        pixels=is_image(obs_spec),
        action_size=action_shape[0],
        num_envs=num_envs,
        mesh=mesh,
    )


def resets_itself(env: Any) -> bool:
    """Whether a layer of ``env``'s stack restarts episodes (an ``AutoReset``)."""
    layers = env.stack() if hasattr(env, "stack") else (env,)
    return any(getattr(layer, "resets_episodes", False) for layer in layers)


def is_last(state: Any) -> jax.Array:
    """[E] bool: the transition that produced ``state`` ended its episode."""
    return state.step_type == StepType.LAST

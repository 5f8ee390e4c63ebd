"""`BraxEnv`: any jaxcontrol environment as a `brax.envs.Env`, for Brax's trainers.

    from brax.training.agents.ppo import train as ppo
    env = BraxEnv(jaxcontrol.load("cartpole", "balance"))
    make_policy, params, metrics = ppo.train(
        environment=env, episode_length=env.episode_length, num_timesteps=..., ...)

Brax's trainers wrap the environment themselves (`brax.envs.training.wrap`):
a vmap, an episode counter that ends an episode after `episode_length` steps
(marking it `info["truncation"]`), and an auto-reset. The adapter therefore
acts on ONE environment, resets nothing itself, and reports as `done` only a
true terminal state (a LAST step with discount 0). A time limit is Brax's
truncation, so Brax's PPO masks it out of its advantages rather than treating
it as a terminal; pass `episode_length=env.episode_length` (the task's own, 1000
in the suite) so the two agree.

Semantics of the Brax `State`:

* `pipeline_state` is the jaxcontrol `State` itself (physics, observation dict,
  per-episode variables, model fields), so Brax's auto-reset, which puts back
  each environment's FIRST state where it is done, restores all of it;
* `obs` is the observation flattened in `observation_spec()` order (float32);
* `reward` is the step's reward, `done` 1.0 at a terminal state, else 0.0;
* `metrics` and `info` start empty, for Brax's wrappers.

Brax's auto-reset restarts an environment from the state its first reset
drew, not from a fresh draw (that is how Brax's wrappers work), so across
`num_envs` environments Brax samples `num_envs` initial states in all.

Needs the extra: `pip install 'jaxcontrol[brax]'` (brax 0.14.2, whose trainers
run on jax 0.9, the version jaxcontrol pins).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

try:
    from brax.envs import base as brax_base
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "jaxcontrol.wrappers.BraxEnv needs Brax: pip install 'jaxcontrol[brax]'"
    ) from error

from jaxcontrol.core import State, StepType
from jaxcontrol.wrappers.base import EnvLike, check_resettable


def _flatten(observation: Any, spec: Any) -> jax.Array:
    """One float32 vector of an observation (a dict in spec order, or one array)."""
    if not hasattr(spec, "items"):
        return jnp.ravel(jnp.asarray(observation, jnp.float32))
    return jnp.concatenate([jnp.ravel(jnp.asarray(observation[k], jnp.float32)) for k in spec])


class BraxEnv(brax_base.Env):
    """A jaxcontrol environment (an `Env` or a stack of wrappers) as a `brax.envs.Env`.

    Args:
      env: the environment; one environment, as Brax's `Env` is (Brax's
        trainers vmap it). A stack with an `AutoReset` is refused: Brax resets.

    Raises:
      TypeError: if `env` is not a jaxcontrol environment.
      ValueError: if it resets itself, or its action is not a vector.
    """

    def __init__(self, env: EnvLike):
        check_resettable(env, "BraxEnv")
        action_shape = env.action_spec().shape
        if len(action_shape) != 1:
            raise ValueError(f"BraxEnv needs a vector action, got shape {action_shape}")
        self._env = env
        self._spec = env.observation_spec()
        entries = self._spec.values() if hasattr(self._spec, "values") else [self._spec]
        self._obs_size = sum(int(math.prod(spec.shape)) for spec in entries)
        self._action_size = int(action_shape[0])

    @property
    def env(self) -> EnvLike:
        """The wrapped jaxcontrol environment."""
        return self._env

    @property
    def episode_length(self) -> int | None:
        """Steps per episode at the task's time limit: pass it to Brax's `train`."""
        return self._env.episode_length

    def _observe(self, state: State) -> jax.Array:
        return _flatten(state.observation, self._spec)

    def reset(self, rng: jax.Array) -> brax_base.State:
        """The env's FIRST state from `rng` (a PRNG key, as Brax passes)."""
        state = self._env.reset(rng)
        zero = jnp.zeros((), jnp.float32)
        return brax_base.State(
            pipeline_state=state, obs=self._observe(state), reward=zero, done=zero
        )

    def step(self, state: brax_base.State, action: jax.Array) -> brax_base.State:
        """One step of the env; `done` is 1.0 only at a terminal state (discount 0)."""
        stepped = self._env.step(state.pipeline_state, action)
        terminal = (stepped.step_type == StepType.LAST) & (stepped.discount == 0)
        return state.replace(
            pipeline_state=stepped,
            obs=self._observe(stepped),
            reward=stepped.reward.astype(jnp.float32),
            done=terminal.astype(jnp.float32),
        )

    @property
    def observation_size(self) -> int:
        return self._obs_size

    @property
    def action_size(self) -> int:
        return self._action_size

    @property
    def backend(self) -> str:
        return "mjx"

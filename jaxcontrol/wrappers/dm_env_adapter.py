"""`DmEnv`: one jaxcontrol environment as a `dm_env.Environment`, NumPy outside.

A drop-in for `dm_control.suite.load(domain, task)` in code written for
dm_control or dm_env (Acme's actors, evaluation loops):

* the specs are dm_control's: float64 arrays of the same shapes and names, the
  action spec unnamed with the control range as its bounds, dm_env's default
  reward and discount specs;
* the TimeStep sequence is dm_control's: `reset()` gives FIRST with reward and
  discount None; `step` gives MID, then LAST at the end of the episode
  (discount 1 at the time limit, 0 at a true terminal state); the `step`
  after LAST starts a new episode and returns its FIRST, ignoring the action;
  `step` on a fresh environment does the same;
* observations are `OrderedDict`s of float64 NumPy arrays in dm_control's key
  order, rewards NumPy float64, discounts Python floats.

There is no `physics` attribute: the state lives in `state` (a `State`). The
first reset draws from `jax.random.key(seed)`; each later reset uses the key
the previous episode carries (`State.key`), the sequence `AutoReset` follows,
so episode n of a `DmEnv` is episode n of `AutoReset` from the same key.
Reset and step are jitted once per environment and shared by every `DmEnv` of
it. An `AutoReset` in the stack is refused: dm_env resets through `step`.
"""

from __future__ import annotations

import collections
import functools

import dm_env
import jax
import numpy as np
from dm_env import specs

from jaxcontrol.core import State, StepType
from jaxcontrol.wrappers.base import EnvLike, check_resettable


@functools.partial(jax.jit, static_argnums=0)
def _reset(env: EnvLike, key: jax.Array) -> State:
    return env.reset(key)


@functools.partial(jax.jit, static_argnums=0)
def _step(env: EnvLike, state: State, action: jax.Array) -> State:
    return env.step(state, action)


class DmEnv(dm_env.Environment):
    """A `dm_env.Environment` over one jaxcontrol environment.

    Args:
      env: an `Env` or a stack of wrappers without `AutoReset`.
      seed: the first reset's key is `jax.random.key(seed)`.
    """

    def __init__(self, env: EnvLike, seed: int = 0):
        check_resettable(env, "DmEnv")
        self._env = env
        self._seed = int(seed)
        self._state: State | None = None
        self._reset_next_step = True
        inner = env.action_spec()
        self._action_spec = specs.BoundedArray(
            inner.shape, np.float64, np.asarray(inner.minimum), np.asarray(inner.maximum)
        )
        self._observation_spec = _as_float64(env.observation_spec())

    @property
    def env(self) -> EnvLike:
        """The jaxcontrol environment underneath."""
        return self._env

    @property
    def state(self) -> State | None:
        """The current `State` (None before the first reset)."""
        return self._state

    def reset(self) -> dm_env.TimeStep:
        """Starts a new episode (FIRST, reward and discount None)."""
        key = jax.random.key(self._seed) if self._state is None else self._state.key
        self._state = _reset(self._env, key)
        self._reset_next_step = False
        return dm_env.restart(self._observation())

    def step(self, action) -> dm_env.TimeStep:
        """Applies `action`; after LAST (or before any reset) starts a new episode."""
        if self._reset_next_step:
            return self.reset()
        action = np.asarray(action, np.float64)
        if action.shape != self._action_spec.shape:
            raise ValueError(
                f"expected an action of shape {self._action_spec.shape}, got {action.shape}"
            )
        self._state = _step(self._env, self._state, action.astype(self._env.action_spec().dtype))
        reward = np.float64(self._state.reward)
        discount = float(self._state.discount)
        observation = self._observation()
        if int(self._state.step_type) == StepType.LAST:
            self._reset_next_step = True
            return dm_env.TimeStep(dm_env.StepType.LAST, reward, discount, observation)
        return dm_env.TimeStep(dm_env.StepType.MID, reward, discount, observation)

    def _observation(self):
        observation = self._state.observation
        if isinstance(observation, collections.abc.Mapping):
            return collections.OrderedDict(
                (key, np.array(value, np.float64)) for key, value in observation.items()
            )
        return np.array(observation, np.float64)

    def action_spec(self) -> specs.BoundedArray:
        return self._action_spec

    def observation_spec(self):
        return self._observation_spec

    def close(self) -> None:
        self._state = None
        self._reset_next_step = True


def _as_float64(spec):
    if isinstance(spec, collections.abc.Mapping):
        return collections.OrderedDict((key, _as_float64(value)) for key, value in spec.items())
    return spec.replace(dtype=np.float64)

"""`FrameStack`: an observation entry holds its last k values, stacked on the last axis.

Learning from pixels (the suite paper, section 6) feeds the agent 3 stacked
frames: the pixels of (84, 84, 3) become (84, 84, 9), oldest frame first. A
reset repeats the first frame k times; each step drops the oldest frame and
appends the new one. The stack lives in the observation itself, so the
wrapper keeps nothing in `State.info`.

It keeps per-episode state, so it goes below `AutoReset`, whose restart then
runs its reset: `AutoReset(FrameStack(Pixels(env), 3))`. A new episode's first
observation is its first frame repeated, never frames of the episode before,
and `info["final_observation"]` is the finished episode's last stack.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Mapping
from typing import ClassVar

import jax
import jax.numpy as jnp
from dm_env import specs

from jaxcontrol.core import State
from jaxcontrol.wrappers.base import Wrapper


@dataclasses.dataclass(frozen=True)
class FrameStack(Wrapper):
    """Stacks the last `num_frames` values of one observation entry along its last axis.

    Attributes:
      env: the environment to wrap (dict observations).
      num_frames: k >= 1, frames per stack (3 in the suite paper).
      observation_key: the entry to stack; its spec needs at least one axis.
    """

    num_frames: int = 3
    observation_key: str = "pixels"

    below_auto_reset: ClassVar[bool] = True

    def __post_init__(self):
        super().__post_init__()
        k = self.num_frames
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"FrameStack needs an integer num_frames >= 1, got {k!r}")
        inner = self.env.observation_spec()
        if not isinstance(inner, Mapping) or self.observation_key not in inner:
            keys = list(inner) if isinstance(inner, Mapping) else "one unnamed array"
            raise ValueError(
                f"FrameStack stacks the observation entry {self.observation_key!r}, "
                f"but the observations are {keys}; pass observation_key"
            )
        if not inner[self.observation_key].shape:
            raise ValueError(
                f"FrameStack stacks along the last axis; {self.observation_key!r} is a scalar"
            )

    @property
    def _channels(self) -> int:
        return self.env.observation_spec()[self.observation_key].shape[-1]

    def _newest(self, state: State) -> State:
        """``state`` as the wrapped env knows it: the entry holds its newest frame only."""
        stack = state.observation[self.observation_key]
        return self._with(state, stack[..., stack.shape[-1] - self._channels :])

    def _first(self, state: State) -> State:
        """A state whose entry is its first frame repeated k times."""
        frame = state.observation[self.observation_key]
        return self._with(state, jnp.concatenate([frame] * self.num_frames, axis=-1))

    def _with(self, state: State, stack: jax.Array) -> State:
        observation = collections.OrderedDict(state.observation)
        observation[self.observation_key] = stack
        return state.replace(observation=observation)

    def reset(self, key: jax.Array) -> State:
        return self._first(self.env.reset(key))

    def step(self, state: State, action: jax.Array) -> State:
        """The wrapped env's step; the entry drops its oldest frame and appends the new one."""
        stack = state.observation[self.observation_key]
        stepped = self.env.step(self._newest(state), action)
        frame = stepped.observation[self.observation_key]
        return self._with(stepped, jnp.concatenate([stack[..., self._channels :], frame], -1))

    def set_state(self, state: State, *args, **kwargs) -> State:
        """The wrapped env's `set_state`, its frame repeated as at a reset."""
        return self._first(self.env.set_state(self._newest(state), *args, **kwargs))

    def observation_spec(self) -> collections.OrderedDict:
        spec = collections.OrderedDict(self.env.observation_spec())
        entry = spec[self.observation_key]
        shape = (*entry.shape[:-1], entry.shape[-1] * self.num_frames)
        spec[self.observation_key] = specs.Array(shape, entry.dtype, name=entry.name)
        return spec

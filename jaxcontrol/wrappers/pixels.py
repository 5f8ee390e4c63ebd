"""Pixel observations rendered in pure JAX, inside `jax.jit(jax.vmap(env.step))`.

dm_control's `pixels.Wrapper` renders each environment through OpenGL after
its step. `Pixels` renders with `jaxcontrol.render.raycast` instead: a ray per
pixel against the model's geoms, shaded like MuJoCo's renderer, as ordinary
JAX array code, so a batch of thousands renders in the same jitted program as
the physics, on CPU, GPU or TPU, with no callbacks and no OpenGL.

    env = Pixels(jaxcontrol.load("cartpole", "balance"))          # 84x84, camera 0
    states = jax.vmap(env.reset)(keys)
    states = jax.jit(jax.vmap(env.step))(states, actions)
    states.observation["pixels"]                                  # uint8 (N, 84, 84, 3)

With `pixels_only=False` the state observations stay beside the pixels (the
pixels last, as dm_control's wrapper adds them). The fidelity against MuJoCo's
own renderer, per task, is in docs/rendering.md.
"""

from __future__ import annotations

import collections
import dataclasses

import jax
import numpy as np
from dm_env import specs

from jaxcontrol.core import State
from jaxcontrol.render import raycast, reward_colors
from jaxcontrol.wrappers.base import Wrapper


@dataclasses.dataclass(frozen=True)
class Pixels(Wrapper):
    """Adds (or substitutes) a uint8 (height, width, 3) image to each observation.

    Attributes:
      env: the environment to wrap.
      height, width: image size in pixels (84x84 as in the suite paper).
      camera_id: one of the model's cameras, by index or name.
      pixels_only: observe only the image (True), or the state observations too.
      observation_key: the image's key in the observation.
      shadows: cast shadow rays toward the lights that cast shadows (costs one
        extra ray per pixel and such light).
      visualize_reward: colour the bodies by the reward at the state, as
        dm_control's `visualize_reward`: the `self`, `effector` and `target`
        materials blend from `*_default` to `*_highlight` by reward**4 (the
        reward clipped to [0, 1]). Tasks without those materials (dog) draw as
        without it.
    """

    height: int = 84
    width: int = 84
    camera_id: int | str = 0
    pixels_only: bool = True
    observation_key: str = "pixels"
    shadows: bool = True
    visualize_reward: bool = False

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.observation_key, str) or not self.observation_key:
            raise ValueError(
                f"observation_key must be a non-empty str, got {self.observation_key!r}"
            )
        if not self.pixels_only:
            inner = self.env.observation_spec()
            if not isinstance(inner, collections.abc.Mapping):
                raise ValueError("pixels_only=False needs an environment with dict observations")
            if self.observation_key in inner:
                raise ValueError(
                    f"observation_key {self.observation_key!r} is already one of the "
                    f"observations {list(inner)}; choose another key"
                )
        render = raycast.make_render(
            self.env, self.height, self.width, self.camera_id, shadows=self.shadows
        )
        object.__setattr__(self, "_render", render)

    def render_pixels(self, state: State) -> jax.Array:
        """The uint8 (height, width, 3) image of one environment's state."""
        fields = state.model_fields
        if self.visualize_reward:
            fields = reward_colors.colored_fields(self.env.unwrapped, state)
        return self._render(state.data, fields)

    def _observe(self, state: State) -> State:
        pixels = self.render_pixels(state)
        if self.pixels_only:
            observation = collections.OrderedDict([(self.observation_key, pixels)])
        else:
            observation = collections.OrderedDict(state.observation)
            observation[self.observation_key] = pixels
        return state.replace(observation=observation)

    def reset(self, key: jax.Array) -> State:
        return self._observe(self.env.reset(key))

    def step(self, state: State, action: jax.Array) -> State:
        return self._observe(self.env.step(state, action))

    def set_state(self, state: State, *args, **kwargs) -> State:
        """The wrapped environment's `set_state`, observed in pixels."""
        return self._observe(self.env.set_state(state, *args, **kwargs))

    def observation_spec(self) -> collections.OrderedDict:
        pixels = specs.Array((self.height, self.width, 3), np.uint8, name=self.observation_key)
        if self.pixels_only:
            return collections.OrderedDict([(self.observation_key, pixels)])
        spec = collections.OrderedDict(self.env.observation_spec())
        spec[self.observation_key] = pixels
        return spec

"""A tiny pure-JAX env with the jaxcontrol Env contract, for fast learner tests.

A damped point on a line: observation {"position": (1,), "velocity": ()},
action (1,) in [-1, 1] accelerates it, reward max(0, 1 - |x|) (1 at the
origin), episodes end by time limit after ``episode_length`` steps with
discount 1. It compiles in well under a second, so shape, jit, resume and
multi-device tests of the learners run in seconds; learning on it is easy
(random policy ~ 0.4 * length, a good policy > 0.85 * length).
"""

import collections

import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

from jaxcontrol.core import State, StepType


class ToyEnv:
    """Immutable and hashable, like jaxcontrol.Env."""

    def __init__(self, episode_length: int = 50):
        self.episode_length = episode_length

    def __hash__(self):
        return hash(("ToyEnv", self.episode_length))

    def __eq__(self, other):
        return isinstance(other, ToyEnv) and other.episode_length == self.episode_length

    control_timestep = 0.1

    @property
    def unwrapped(self):
        return self

    def action_spec(self):
        return specs.BoundedArray((1,), np.float32, -1.0, 1.0, name="action")

    def observation_spec(self):
        return collections.OrderedDict(
            position=specs.Array((1,), np.float32, name="position"),
            velocity=specs.Array((), np.float32, name="velocity"),
        )

    def _obs(self, x, v):
        return collections.OrderedDict(position=x[None], velocity=v)

    def reset(self, key):
        next_key, init_key = jax.random.split(key)
        x = jax.random.uniform(init_key, (), minval=-1.0, maxval=1.0)
        v = jnp.zeros(())
        # "act" mimics MJX data's zero-size arrays, which checkpoints must handle.
        return State(
            data={"x": x, "v": v, "act": jnp.zeros((0,))},
            observation=self._obs(x, v),
            reward=jnp.zeros(()),
            discount=jnp.ones(()),
            step_type=jnp.int32(StepType.FIRST),
            step=jnp.int32(0),
            variables={},
            model_fields={},
            key=next_key,
            diverged=jnp.bool_(False),
        )

    def step(self, state, action):
        a = jnp.clip(action[0], -1.0, 1.0)
        v = 0.8 * state.data["v"] + 0.1 * a
        x = jnp.clip(state.data["x"] + v, -2.0, 2.0)
        step = state.step + 1
        last = step >= self.episode_length
        return state.replace(
            data={**state.data, "x": x, "v": v},
            observation=self._obs(x, v),
            reward=jnp.maximum(0.0, 1.0 - jnp.abs(x)),
            discount=jnp.ones(()),
            step_type=jnp.where(last, StepType.LAST, StepType.MID).astype(jnp.int32),
            step=step,
        )

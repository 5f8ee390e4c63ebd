"""Pendulum domain: swing a pole up and balance it (dm_control `pendulum`)."""

import collections
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol import mjcf, rewards
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 20
_ANGLE_BOUND = 8
_COSINE_BOUND = float(np.cos(np.deg2rad(_ANGLE_BOUND)))


def pole_vertical(physics: Physics) -> jax.Array:
    """Vertical (z) component of the pole frame."""
    return physics.named.data.xmat["pole", "zz"]


def angular_velocity(physics: Physics) -> jax.Array:
    return physics.named.data.qvel["hinge"]


def pole_orientation(physics: Physics) -> jax.Array:
    """Vertical and horizontal components of the pole frame."""
    return physics.named.data.xmat["pole", ["zz", "xz"]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class SwingUp(Task):
    """Swing the pole up from a uniformly random angle and keep it upright."""

    time_limit: float = _DEFAULT_TIME_LIMIT

    def make_model(self):
        return mjcf.pendulum.make_model()

    def initialize_episode(self, physics, key):
        angle = jax.random.uniform(key, minval=-jnp.pi, maxval=jnp.pi)
        qpos = physics.named.data.qpos.at["hinge"].set(angle).array
        return physics.with_data(qpos=qpos), {}

    def get_observation(self, physics, variables):
        return collections.OrderedDict(
            orientation=pole_orientation(physics),
            velocity=angular_velocity(physics),
        )

    def get_reward(self, physics, variables):
        return rewards.tolerance(pole_vertical(physics), (_COSINE_BOUND, 1))


REGISTRY.add("pendulum", "swingup", SwingUp(), tags=("benchmarking",))

"""Reacher domain: bring a two-link arm's fingertip to a target (dm_control `reacher`)."""

import collections
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol import mjcf, randomizers
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 20
_BIG_TARGET = 0.05
_SMALL_TARGET = 0.015


def finger_to_target(physics: Physics) -> jax.Array:
    """The vector from target to finger in global coordinates (x, y)."""
    geom_xpos = physics.named.data.geom_xpos
    return geom_xpos["target", :2] - geom_xpos["finger", :2]


def finger_to_target_dist(physics: Physics) -> jax.Array:
    """The distance between the finger's and the target's centres."""
    return jnp.linalg.norm(finger_to_target(physics))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Reacher(Task):
    """Reach a randomly placed target of radius `target_size` with the fingertip.

    Attributes:
      target_size: the target's radius, written into the model at every reset;
        the reward is 1 while the finger's and target's spheres overlap.
    """

    target_size: float
    time_limit: float = _DEFAULT_TIME_LIMIT

    # dm_control writes the target's size (a constant, every reset) and position.
    episode_model_fields: ClassVar[tuple[str, ...]] = ("geom_size", "geom_pos")
    # MJX solver caps: stock MJX's float64 trajectories under them stayed identical to
    # those at dm_control's settings (16 rollouts of 1000 steps), and it ran 3.2x
    # faster at batch 256 (docs/design/solver-caps.md). The CPU model keeps dm_control's.
    solver_caps: ClassVar[tuple[int, int] | None] = (8, 4)

    def make_model(self):
        return mjcf.reacher.make_model()

    def initialize_episode(self, physics, key):
        joint_key, angle_key, radius_key = jax.random.split(key, 3)
        dtype = physics.data.qpos.dtype
        geom_size = physics.named.model.geom_size.at["target", 0].set(self.target_size).array
        physics = physics.with_model(geom_size=geom_size)
        qpos = randomizers.randomize_limited_and_rotational_joints(
            physics.mj_model, joint_key, physics.data.qpos
        )
        physics = physics.with_data(qpos=qpos)

        # Randomize target position.
        angle = jax.random.uniform(angle_key, (), dtype, minval=0, maxval=2 * np.pi)
        radius = jax.random.uniform(radius_key, (), dtype, minval=0.05, maxval=0.20)
        geom_pos = physics.named.model.geom_pos
        geom_pos = geom_pos.at["target", "x"].set(radius * jnp.sin(angle))
        geom_pos = geom_pos.at["target", "y"].set(radius * jnp.cos(angle))
        return physics.with_model(geom_pos=geom_pos.array), {}

    def get_observation(self, physics, variables):
        return collections.OrderedDict(
            position=physics.position(),
            to_target=finger_to_target(physics),
            velocity=physics.velocity(),
        )

    def get_reward(self, physics, variables):
        radii = physics.named.model.geom_size[["target", "finger"], 0].sum()
        dist = finger_to_target_dist(physics)
        # tolerance(dist, (0, radii)) with a traced upper bound: margin 0, so the
        # indicator of 0 <= dist <= radii.
        return jnp.where((0 <= dist) & (dist <= radii), 1.0, 0.0).astype(dist.dtype)


REGISTRY.add("reacher", "easy", Reacher(target_size=_BIG_TARGET), tags=("benchmarking", "easy"))
REGISTRY.add("reacher", "hard", Reacher(target_size=_SMALL_TARGET), tags=("benchmarking",))

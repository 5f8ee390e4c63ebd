"""Planar stacker: stack boxes on a target with the planar arm (dm_control `stacker`).

The reset is dm_control's rejection loop (`randomizers.resample_while_penetrating`):
each attempt draws the arm's joint angles (the hand symmetrised), the target's
height (an odd number of box half-sizes, so on top of 0 to n_boxes - 1 boxes)
and x position, written into the model's `body_pos`, and every box's pose; an
attempt whose state penetrates (`ncon > 0`) is redrawn.
"""

import collections
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol import mjcf, randomizers, rewards
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task
from jaxcontrol.tasks.manipulator import (
    ARM_JOINTS,
    arm_limits,
    body_2d_pose,
    bounded_joint_pos,
    joint_vel,
    site_distance,
)

_CLOSE = 0.01  # (Meters) Distance below which a thing is considered close.
_CONTROL_TIMESTEP = 0.01  # (Seconds)
_TIME_LIMIT = 10  # (Seconds)


# ----- dm_control's stacker.Physics (the rest is manipulator's) -------------------------------


def touch(physics: Physics) -> jax.Array:
    """log1p of every sensor: the five touch sensors (the last substep's)."""
    return jnp.log1p(physics.data.sensordata)


# MJX solver caps by box count. Under them, stock MJX's float64 trajectories
# stayed identical to those at dm_control's 100/50 (16 rollouts of 1000 steps,
# benchmarks/solver_caps.py; docs/design/solver-caps.md). 8/8 is not: the line search binds. Four boxes keep dm_control's
# settings: a line search capped at 16 steps changes their trajectories (even at
# 100 iterations), and so does 8/32. Other counts are unmeasured.
_SOLVER_CAPS: dict[int, tuple[int, int]] = {2: (8, 16)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Stack(Task):
    """Stack the boxes: bring one to the target while the hand stays away from it.

    Attributes:
      n_boxes: how many boxes (1 to 4; dm_control's builder has four).
      fully_observable: observe the hand, box and target poses and the boxes'
        velocities (otherwise only the arm's joints and touch sensors).
    """

    n_boxes: int
    fully_observable: bool = True
    time_limit: float = _TIME_LIMIT
    control_timestep: float | None = _CONTROL_TIMESTEP

    # dm_control writes the target's position at every reset.
    episode_model_fields: ClassVar[tuple[str, ...]] = ("body_pos",)

    @property
    def solver_caps(self) -> tuple[int, int] | None:
        """MJX solver caps where measured for this box count (`_SOLVER_CAPS`)."""
        return _SOLVER_CAPS.get(self.n_boxes)

    @property
    def _box_names(self) -> list[str]:
        return [f"box{b}" for b in range(self.n_boxes)]

    @property
    def _box_joint_names(self) -> list[str]:
        return [f"{name}_{dim}" for name in self._box_names for dim in "xyz"]

    def make_model(self):
        return mjcf.stacker.make_model(self.n_boxes)

    def initialize_episode(self, physics, key):
        # Find a collision-free random initial configuration.
        return randomizers.resample_while_penetrating(physics, key, self._draw), {}

    def _draw(self, physics: Physics, key: jax.Array) -> Physics:
        """One attempt of dm_control's loop: arm, target and boxes."""
        arm_key, height_key, x_key, boxes_key = jax.random.split(key, 4)
        dtype = physics.data.qpos.dtype

        def uniform(k, low, high, shape=()):
            return jax.random.uniform(k, shape, dtype, minval=low, maxval=high)

        # Randomise angles of arm joints.
        lower, upper = arm_limits(physics)
        angles = uniform(arm_key, lower, upper, (len(ARM_JOINTS),))
        qpos = physics.named.data.qpos.at[ARM_JOINTS].set(angles)

        # Symmetrize hand.
        qpos = qpos.at["finger"].set(qpos["thumb"])

        # Randomise target location.
        target_height = 2 * jax.random.randint(height_key, (), 0, self.n_boxes) + 1
        box_size = float(physics.named.mj_model.geom_size["target", 0])
        body_pos = physics.named.model.body_pos.at["target", "z"].set(box_size * target_height)
        body_pos = body_pos.at["target", "x"].set(uniform(x_key, -0.37, 0.37))
        physics = physics.with_model(body_pos=body_pos.array)

        # Randomise box locations.
        low = np.array([0.1, 0, 0])
        high = np.array([0.3, 0.7, 2 * np.pi])
        poses = uniform(boxes_key, low, high, (self.n_boxes, 3))  # x, z, y per box
        for name, pose in zip(self._box_names, poses):
            qpos = qpos.at[[f"{name}_{dim}" for dim in "xzy"]].set(pose)
        return physics.with_data(qpos=qpos.array)

    def get_observation(self, physics, variables):
        """Either features or only sensors (to be used with pixels)."""
        obs = collections.OrderedDict()
        obs["arm_pos"] = bounded_joint_pos(physics, ARM_JOINTS)
        obs["arm_vel"] = joint_vel(physics, ARM_JOINTS)
        obs["touch"] = touch(physics)
        if self.fully_observable:
            obs["hand_pos"] = body_2d_pose(physics, "hand")
            obs["box_pos"] = body_2d_pose(physics, self._box_names)
            obs["box_vel"] = joint_vel(physics, self._box_joint_names)
            obs["target_pos"] = body_2d_pose(physics, "target", orientation=False)
        return obs

    def get_reward(self, physics, variables):
        box_size = float(physics.named.mj_model.geom_size["target", 0])
        min_box_to_target_distance = jnp.min(
            jnp.stack([site_distance(physics, name, "target") for name in self._box_names])
        )
        box_is_close = rewards.tolerance(min_box_to_target_distance, margin=2 * box_size)
        hand_to_target_distance = site_distance(physics, "grasp", "target")
        hand_is_far = rewards.tolerance(
            hand_to_target_distance, bounds=(0.1, float("inf")), margin=_CLOSE
        )
        return box_is_close * hand_is_far


REGISTRY.add("stacker", "stack_2", Stack(n_boxes=2), tags=("hard",))
REGISTRY.add("stacker", "stack_4", Stack(n_boxes=4), tags=("hard",))

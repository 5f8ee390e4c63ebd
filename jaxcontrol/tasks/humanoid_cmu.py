"""CMU humanoid domain: make the 56-motor CMU humanoid stand, walk or run
(dm_control `humanoid_CMU`).

The task is the humanoid's with other body names (the trunk is the `thorax`,
whose upright axis is its y-axis), a shorter episode and a finer control step;
the reward, the reset and the sensor sync are `tasks.humanoid`'s.
"""

import collections
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from jaxcontrol import mjcf
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task
from jaxcontrol.tasks import humanoid

_DEFAULT_TIME_LIMIT = 20
_CONTROL_TIMESTEP = 0.02

# Horizontal speeds of the centre of mass above which the move reward is 1.
_WALK_SPEED = 1
_RUN_SPEED = 10


def thorax_upright(physics: Physics) -> jax.Array:
    """The world-z component of the thorax's y-axis (its upright axis)."""
    return physics.named.data.xmat["thorax", "zy"]


def center_of_mass_velocity(physics: Physics) -> jax.Array:
    """The centre of mass's velocity: the `thorax_subtreelinvel` sensor."""
    return physics.named.data.sensordata["thorax_subtreelinvel"]


def torso_vertical_orientation(physics: Physics) -> jax.Array:
    """The bottom row of the thorax's orientation matrix."""
    return physics.named.data.xmat["thorax", ["zx", "zy", "zz"]]


def extremities(physics: Physics) -> jax.Array:
    """The hands and feet relative to the thorax, in its frame (lhand, lfoot, rhand, rfoot)."""
    frame = physics.named.data.xmat["thorax"].reshape(3, 3)
    origin = physics.named.data.xpos["thorax"]
    ends = [side + limb for side in ("l", "r") for limb in ("hand", "foot")]
    return jnp.concatenate([(physics.named.data.xpos[end] - origin) @ frame for end in ends])


@dataclasses.dataclass(frozen=True, kw_only=True)
class HumanoidCMU(Task):
    """Stand up (`move_speed` 0) or move at least `move_speed` m/s.

    Attributes:
      move_speed: 0 rewards standing still; otherwise the horizontal speed of
        the centre of mass above which the move reward is 1.
    """

    move_speed: float
    time_limit: float = _DEFAULT_TIME_LIMIT
    control_timestep: float | None = _CONTROL_TIMESTEP

    # dm_control's solver settings: caps not measured for this model.
    solver_caps: ClassVar[tuple[int, int] | None] = None

    def make_model(self):
        return mjcf.humanoid_cmu.make_model()

    def sync(self, physics):
        # The sensors are the humanoid's kinds (subtree velocity, velocimeter,
        # gyro, accelerometer, touch): no position stage, one velocity sensor read.
        return humanoid.sync_velocity_sensors(physics)

    def initialize_episode(self, physics, key):
        return humanoid.random_collision_free_pose(physics, key), {}

    def get_observation(self, physics, variables):
        """Egocentric features."""
        return collections.OrderedDict(
            joint_angles=humanoid.joint_angles(physics),
            head_height=humanoid.head_height(physics),
            extremities=extremities(physics),
            torso_vertical=torso_vertical_orientation(physics),
            com_velocity=center_of_mass_velocity(physics),
            velocity=physics.velocity(),
        )

    def get_reward(self, physics, variables):
        return humanoid.stand_move_reward(
            humanoid.head_height(physics),
            thorax_upright(physics),
            physics.control(),
            center_of_mass_velocity(physics),
            self.move_speed,
        )


# dm_control tags none of humanoid_CMU's tasks.
REGISTRY.add("humanoid_CMU", "stand", HumanoidCMU(move_speed=0))
REGISTRY.add("humanoid_CMU", "walk", HumanoidCMU(move_speed=_WALK_SPEED))
REGISTRY.add("humanoid_CMU", "run", HumanoidCMU(move_speed=_RUN_SPEED))

"""Humanoid domain: make a 21-motor humanoid stand, walk or run (dm_control `humanoid`)."""

import collections
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
from mujoco import mjx

from jaxcontrol import mjcf, randomizers, rewards
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 25
_CONTROL_TIMESTEP = 0.025

# Height of head above which stand reward is 1.
_STAND_HEIGHT = 1.4

# Horizontal speeds above which move reward is 1.
_WALK_SPEED = 1
_RUN_SPEED = 10


def torso_upright(physics: Physics) -> jax.Array:
    """Projection from z-axes of torso to the z-axes of world."""
    return physics.named.data.xmat["torso", "zz"]


def head_height(physics: Physics) -> jax.Array:
    """The height of the head."""
    return physics.named.data.xpos["head", "z"]


def center_of_mass_position(physics: Physics) -> jax.Array:
    """Position of the center of mass (needs `sync_position` or more to be current)."""
    return physics.named.data.subtree_com["torso"]


def center_of_mass_velocity(physics: Physics) -> jax.Array:
    """Velocity of the center of mass: the `torso_subtreelinvel` sensor."""
    return physics.named.data.sensordata["torso_subtreelinvel"]


def torso_vertical_orientation(physics: Physics) -> jax.Array:
    """The z-projection of the torso orientation matrix."""
    return physics.named.data.xmat["torso", ["zx", "zy", "zz"]]


def joint_angles(physics: Physics) -> jax.Array:
    """The state without global orientation or position."""
    return physics.data.qpos[7:]  # Skip the 7 DoFs of the free root joint.


def extremities(physics: Physics) -> jax.Array:
    """End effector positions in egocentric frame."""
    torso_frame = physics.named.data.xmat["torso"].reshape(3, 3)
    torso_pos = physics.named.data.xpos["torso"]
    positions = []
    for side in ("left_", "right_"):
        for limb in ("hand", "foot"):
            torso_to_limb = physics.named.data.xpos[side + limb] - torso_pos
            positions.append(torso_to_limb @ torso_frame)
    return jnp.concatenate(positions)


def sync_velocity_sensors(physics: Physics) -> mjx.Data:
    """The part of `mj_step1` that the humanoid reads beyond the poses.

    Observations and rewards read body poses (current after a step) and the
    `torso_subtreelinvel` sensor, a velocity-stage sensor computed from the
    centres of mass (`com_pos`), the bodies' velocities (`com_vel`) and the
    poses. Those three stages reproduce it exactly; the model has no
    position-stage sensors, and `sensor_vel` also refreshes the other velocity
    sensors (velocimeter, gyro), so `sensordata` holds what dm_control's
    `mj_step1` leaves there (acceleration sensors: the last substep's). Cheaper
    than `sync_full`, which would also run collision, the inertia matrix and
    constraints for nothing the task reads.
    """
    model = physics.model
    data = mjx.com_pos(model, physics.data)
    data = mjx.com_vel(model, data)
    return mjx.sensor_vel(model, data)


def random_collision_free_pose(physics: Physics, key: jax.Array) -> Physics:
    """Random joint angles and root orientation, redrawn until nothing touches."""

    def draw(physics, key):
        qpos = randomizers.randomize_limited_and_rotational_joints(
            physics.mj_model, key, physics.data.qpos
        )
        return physics.with_data(qpos=qpos)

    return randomizers.resample_while_penetrating(physics, key, draw)


def stand_move_reward(
    head_height: jax.Array,
    uprightness: jax.Array,
    control: jax.Array,
    com_velocity: jax.Array,
    move_speed: float,
) -> jax.Array:
    """Both humanoid domains' reward: head high, trunk upright, small controls, and
    either keep still (`move_speed` 0) or move at least `move_speed` m/s.

    Args:
      head_height: the head's height (the standing term is 1 from `_STAND_HEIGHT`,
        1.4 m in both domains).
      uprightness: the world-z component of the trunk's upright axis.
      control: the actions.
      com_velocity: the centre of mass's velocity, (3,).
      move_speed: 0, or the horizontal speed above which the move term is 1.
    """
    standing = rewards.tolerance(
        head_height, bounds=(_STAND_HEIGHT, float("inf")), margin=_STAND_HEIGHT / 4
    )
    upright = rewards.tolerance(
        uprightness, bounds=(0.9, float("inf")), sigmoid="linear", margin=1.9, value_at_margin=0
    )
    stand_reward = standing * upright
    small_control = rewards.tolerance(
        control, margin=1, value_at_margin=0, sigmoid="quadratic"
    ).mean()
    small_control = (4 + small_control) / 5
    if move_speed == 0:
        dont_move = rewards.tolerance(com_velocity[:2], margin=2).mean()
        return small_control * stand_reward * dont_move
    move = rewards.tolerance(
        jnp.linalg.norm(com_velocity[:2]),
        bounds=(move_speed, float("inf")),
        margin=move_speed,
        value_at_margin=0,
        sigmoid="linear",
    )
    move = (5 * move + 1) / 6
    return small_control * stand_reward * move


@dataclasses.dataclass(frozen=True, kw_only=True)
class Humanoid(Task):
    """Stand up (`move_speed` 0) or move at least `move_speed` m/s.

    Attributes:
      move_speed: 0 rewards standing still; otherwise the horizontal speed of
        the centre of mass above which the move reward is 1.
      pure_state: observe `position` and `velocity` (the MuJoCo state) instead
        of the egocentric features.
    """

    move_speed: float
    pure_state: bool = False
    time_limit: float = _DEFAULT_TIME_LIMIT
    control_timestep: float | None = _CONTROL_TIMESTEP

    # MJX solver caps: stock MJX's float64 trajectories under them stayed identical to
    # those at dm_control's settings (16 rollouts of 1000 steps); docs/design/solver-caps.md
    # has the method. The CPU model keeps dm_control's.
    solver_caps: ClassVar[tuple[int, int] | None] = (16, 8)

    def make_model(self):
        return mjcf.humanoid.make_model()

    def sync(self, physics):
        return sync_velocity_sensors(physics)

    def initialize_episode(self, physics, key):
        return random_collision_free_pose(physics, key), {}

    def get_observation(self, physics, variables):
        """Either the pure state or a set of egocentric features."""
        if self.pure_state:
            return collections.OrderedDict(
                position=physics.position(),
                velocity=physics.velocity(),
            )
        return collections.OrderedDict(
            joint_angles=joint_angles(physics),
            head_height=head_height(physics),
            extremities=extremities(physics),
            torso_vertical=torso_vertical_orientation(physics),
            com_velocity=center_of_mass_velocity(physics),
            velocity=physics.velocity(),
        )

    def get_reward(self, physics, variables):
        return stand_move_reward(
            head_height(physics),
            torso_upright(physics),
            physics.control(),
            center_of_mass_velocity(physics),
            self.move_speed,
        )


_BENCHMARKING = ("benchmarking",)
REGISTRY.add("humanoid", "stand", Humanoid(move_speed=0), _BENCHMARKING)
REGISTRY.add("humanoid", "walk", Humanoid(move_speed=_WALK_SPEED), _BENCHMARKING)
REGISTRY.add("humanoid", "run", Humanoid(move_speed=_RUN_SPEED), _BENCHMARKING)
REGISTRY.add("humanoid", "run_pure_state", Humanoid(move_speed=_RUN_SPEED, pure_state=True))

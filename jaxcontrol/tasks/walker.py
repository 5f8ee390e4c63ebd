"""Planar walker domain: stand, walk and run (dm_control `walker`)."""

import collections
import dataclasses

import jax

from jaxcontrol import mjcf, randomizers, rewards
from jaxcontrol import physics as physics_lib
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 25
_CONTROL_TIMESTEP = 0.025

# Minimal height of the torso to be considered standing.
_STAND_HEIGHT = 1.2

# Horizontal speeds (meters/second) above which the move reward is 1.
_WALK_SPEED = 1
_RUN_SPEED = 8


def torso_upright(physics: Physics) -> jax.Array:
    """Projection from the z-axis of the torso to the z-axis of the world."""
    return physics.named.data.xmat["torso", "zz"]


def torso_height(physics: Physics) -> jax.Array:
    return physics.named.data.xpos["torso", "z"]


def horizontal_velocity(physics: Physics) -> jax.Array:
    """Horizontal velocity of the centre of mass (the subtree-linvel sensor)."""
    return physics.named.data.sensordata["torso_subtreelinvel"][0]


def orientations(physics: Physics) -> jax.Array:
    """Planar orientations of all bodies: the xx and xz entries of their frames."""
    return physics.named.data.xmat[1:, ["xx", "xz"]].ravel()


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlanarWalker(Task):
    """Stand up (`move_speed` 0) or move forward at `move_speed` m/s."""

    move_speed: float
    time_limit: float = _DEFAULT_TIME_LIMIT
    control_timestep: float = _CONTROL_TIMESTEP

    # MJX solver caps: stock MJX's float64 trajectories under them stayed identical to
    # those at dm_control's settings (16 rollouts of 1000 steps), and it ran 3.9x
    # faster at batch 256 (docs/design/solver-caps.md). The CPU model keeps dm_control's.
    solver_caps = (16, 8)

    def make_model(self):
        return mjcf.walker.make_model()

    def sync(self, physics):
        # Standing reads body poses (current after a step) and qvel only; moving
        # also reads the centre-of-mass velocity sensor.
        if self.move_speed == 0:
            return physics_lib.sync_kinematics(physics)
        return physics_lib.sync_subtree_velocity(physics)

    def initialize_episode(self, physics, key):
        # Limited joints uniform in range, the unlimited root hinge uniform in
        # [-pi, pi]; the walker then falls to the floor (no penetration check).
        qpos = randomizers.randomize_limited_and_rotational_joints(
            physics.mj_model, key, physics.data.qpos
        )
        return physics.with_data(qpos=qpos), {}

    def get_observation(self, physics, variables):
        return collections.OrderedDict(
            orientations=orientations(physics),
            height=torso_height(physics),
            velocity=physics.velocity(),
        )

    def get_reward(self, physics, variables):
        standing = rewards.tolerance(
            torso_height(physics), bounds=(_STAND_HEIGHT, float("inf")), margin=_STAND_HEIGHT / 2
        )
        upright = (1 + torso_upright(physics)) / 2
        stand_reward = (3 * standing + upright) / 4
        if self.move_speed == 0:
            return stand_reward
        move_reward = rewards.tolerance(
            horizontal_velocity(physics),
            bounds=(self.move_speed, float("inf")),
            margin=self.move_speed / 2,
            value_at_margin=0.5,
            sigmoid="linear",
        )
        return stand_reward * (5 * move_reward + 1) / 6


_BENCHMARKING = ("benchmarking",)
REGISTRY.add("walker", "stand", PlanarWalker(move_speed=0), _BENCHMARKING)
REGISTRY.add("walker", "walk", PlanarWalker(move_speed=_WALK_SPEED), _BENCHMARKING)
REGISTRY.add("walker", "run", PlanarWalker(move_speed=_RUN_SPEED), _BENCHMARKING)

"""Hopper domain: stand upright, or hop forward (dm_control `hopper`)."""

import collections
import dataclasses

import jax
import jax.numpy as jnp

from jaxcontrol import mjcf, randomizers, rewards
from jaxcontrol import physics as physics_lib
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_CONTROL_TIMESTEP = 0.02  # (Seconds)

# Default duration of an episode, in seconds.
_DEFAULT_TIME_LIMIT = 20

# Minimal height of torso over foot above which stand reward is 1.
_STAND_HEIGHT = 0.6

# Hopping speed above which hop reward is 1.
_HOP_SPEED = 2


def height(physics: Physics) -> jax.Array:
    """Height of the torso's centre of mass over the foot's."""
    xipos = physics.named.data.xipos
    return xipos["torso", "z"] - xipos["foot", "z"]


def speed(physics: Physics) -> jax.Array:
    """Horizontal speed of the hopper (the subtree-linvel sensor)."""
    return physics.named.data.sensordata["torso_subtreelinvel"][0]


def touch(physics: Physics) -> jax.Array:
    """The signals of the two foot touch sensors, log1p-compressed."""
    return jnp.log1p(physics.named.data.sensordata[["touch_toe", "touch_heel"]])


@dataclasses.dataclass(frozen=True, kw_only=True)
class Hopper(Task):
    """Balance upright (`hopping` False) or hop forward (`hopping` True)."""

    hopping: bool
    time_limit: float = _DEFAULT_TIME_LIMIT
    control_timestep: float = _CONTROL_TIMESTEP

    # MJX solver caps: stock MJX's float64 trajectories under them stayed identical to
    # those at dm_control's settings (16 rollouts of 1000 steps), and it ran 3.3x
    # faster at batch 256 (docs/design/solver-caps.md). The CPU model keeps dm_control's.
    solver_caps = (8, 8)

    def make_model(self):
        return mjcf.hopper.make_model()

    def sync(self, physics):
        # The touch sensors are acceleration-stage: they belong to the transition
        # just taken (the last substep's forward pass), as after dm_control's
        # mj_step1, so they need nothing here. `height` reads body poses
        # (current). Only hopping reads a velocity sensor.
        if not self.hopping:
            return physics_lib.sync_kinematics(physics)
        return physics_lib.sync_subtree_velocity(physics)

    def initialize_episode(self, physics, key):
        # dm_control also sets `self._timeout_progress = 0`, which nothing reads.
        qpos = randomizers.randomize_limited_and_rotational_joints(
            physics.mj_model, key, physics.data.qpos
        )
        return physics.with_data(qpos=qpos), {}

    def get_observation(self, physics, variables):
        # Ignores horizontal position to maintain translational invariance.
        return collections.OrderedDict(
            position=physics.position()[1:],
            velocity=physics.velocity(),
            touch=touch(physics),
        )

    def get_reward(self, physics, variables):
        standing = rewards.tolerance(height(physics), (_STAND_HEIGHT, 2))
        if self.hopping:
            hopping = rewards.tolerance(
                speed(physics),
                bounds=(_HOP_SPEED, float("inf")),
                margin=_HOP_SPEED / 2,
                value_at_margin=0.5,
                sigmoid="linear",
            )
            return standing * hopping
        small_control = rewards.tolerance(
            physics.control(), margin=1, value_at_margin=0, sigmoid="quadratic"
        ).mean()
        small_control = (small_control + 4) / 5
        return standing * small_control


_BENCHMARKING = ("benchmarking",)
REGISTRY.add("hopper", "stand", Hopper(hopping=False), _BENCHMARKING)
REGISTRY.add("hopper", "hop", Hopper(hopping=True), _BENCHMARKING)

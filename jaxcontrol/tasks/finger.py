"""Finger domain: spin a hinged body, or turn its tip to a target (dm_control `finger`).

All observations are functions of sensors, as in dm_control: joint positions
and velocities, the tip's, target's and spinner's frame positions, and the two
touch sensors on the fingertip.
"""

import collections
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from mujoco import mjx

from jaxcontrol import mjcf, randomizers
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 20  # (seconds)
_CONTROL_TIMESTEP = 0.02  # (seconds)
_EASY_TARGET_SIZE = 0.07
_HARD_TARGET_SIZE = 0.03
_INITIAL_SPIN_VELOCITY = 100  # unused by dm_control's tasks too
_STOP_VELOCITY = 1e-6  # unused by dm_control's tasks too
_SPIN_VELOCITY = 15.0
# dm_control's `_set_random_joint_angles` gives up (raises) after this many draws.
_MAX_ATTEMPTS = 1000


# ----- dm_control's Physics methods -------------------------------------------------


def touch(physics: Physics) -> jax.Array:
    """Logarithmically scaled signals from the two touch sensors."""
    return jnp.log1p(physics.named.data.sensordata[["touchtop", "touchbottom"]])


def hinge_velocity(physics: Physics) -> jax.Array:
    """The velocity of the hinge joint."""
    return physics.named.data.sensordata["hinge_velocity"][0]


def tip_position(physics: Physics) -> jax.Array:
    """The (x, z) position of the tip relative to the hinge."""
    sensordata = physics.named.data.sensordata
    return sensordata["tip"][np.array([0, 2])] - sensordata["spinner"][np.array([0, 2])]


def bounded_position(physics: Physics) -> jax.Array:
    """The positions, with the hinge angle replaced by the tip position."""
    joints = physics.named.data.sensordata[["proximal", "distal"]]
    return jnp.concatenate([joints, tip_position(physics)])


def velocity(physics: Physics) -> jax.Array:
    """The velocities (from sensordata)."""
    return physics.named.data.sensordata[["proximal_velocity", "distal_velocity", "hinge_velocity"]]


def target_position(physics: Physics) -> jax.Array:
    """The (x, z) position of the target relative to the hinge."""
    sensordata = physics.named.data.sensordata
    return sensordata["target"][np.array([0, 2])] - sensordata["spinner"][np.array([0, 2])]


def to_target(physics: Physics) -> jax.Array:
    """The vector from the tip to the target."""
    return target_position(physics) - tip_position(physics)


def dist_to_target(physics: Physics) -> jax.Array:
    """The signed distance to the target surface, negative inside."""
    return jnp.linalg.norm(to_target(physics)) - physics.named.model.site_size["target", 0]


def sync_sensors(physics: Physics) -> mjx.Data:
    """Refreshes the position and velocity sensors, as `mj_step1` does.

    Every observation is a sensor. The position-stage ones are joint positions
    (`qpos`) and frame positions (`site_xpos`, the spinner's `xpos`), the
    velocity-stage ones joint velocities (`qvel`): all copies of quantities that
    `step` leaves current, so `sensor_pos` and `sensor_vel` make them exact
    without `com_pos`, tendons or `fwd_velocity` (`sync_full`). Neither touches
    the touch sensors (acceleration stage), which keep the last substep's
    values, as dm_control's do.
    """
    data = mjx.sensor_pos(physics.model, physics.data)
    return mjx.sensor_vel(physics.model, data)


def _set_random_joint_angles(physics: Physics, key: jax.Array) -> Physics:
    """Sets the joints to a random collision-free state.

    dm_control redraws all three joints (proximal and distal uniform in their
    ranges, the hinge uniform in [-pi, pi]) until nothing is in contact, and
    raises after 1000 attempts; here the 1000th draw is kept. Measured
    acceptance rate of one draw (C MuJoCo, 20000 draws): 0.907.
    """

    def draw(physics, key):
        qpos = randomizers.randomize_limited_and_rotational_joints(
            physics.mj_model, key, physics.data.qpos
        )
        return physics.with_data(qpos=qpos)

    return randomizers.resample_while_penetrating(physics, key, draw, _MAX_ATTEMPTS)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Finger(Task):
    time_limit: float = _DEFAULT_TIME_LIMIT
    control_timestep: float | None = _CONTROL_TIMESTEP

    # MJX solver caps: stock MJX's float64 trajectories under them stayed identical to
    # those at dm_control's settings (16 rollouts of 1000 steps), and it ran 2.7x
    # faster at batch 256 (docs/design/solver-caps.md). The CPU model keeps dm_control's.
    solver_caps: ClassVar[tuple[int, int] | None] = (8, 8)

    def make_model(self):
        return mjcf.finger.make_model()

    def sync(self, physics):
        return sync_sensors(physics)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Spin(_Finger):
    """Spin the body (the hinge's velocity at most -15 rad/s)."""

    # Written at every reset (constants): the target's and tip's alpha (render
    # only; MJX has no site_rgba) and the hinge's damping.
    episode_model_fields: ClassVar[tuple[str, ...]] = ("site_rgba", "dof_damping")

    def initialize_episode(self, physics, key):
        rgba = physics.named.model.site_rgba.at["target", 3].set(0)
        rgba = rgba.at["tip", 3].set(0).array
        damping = physics.named.model.dof_damping.at["hinge"].set(0.03).array
        physics = physics.with_model(site_rgba=rgba, dof_damping=damping)
        return _set_random_joint_angles(physics, key), {}

    def get_observation(self, physics, variables):
        """State and touch sensors."""
        return collections.OrderedDict(
            position=bounded_position(physics),
            velocity=velocity(physics),
            touch=touch(physics),
        )

    def get_reward(self, physics, variables):
        """A sparse reward."""
        return (hinge_velocity(physics) <= -_SPIN_VELOCITY).astype(physics.data.qpos.dtype)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Turn(_Finger):
    """Turn the body's tip into a target site on its circle.

    Attributes:
      target_radius: the target site's radius, written into the model at every
        reset; the reward is 1 while the tip is inside it.
    """

    target_radius: float

    # The target's position (a random angle on the tip's circle) and its size.
    episode_model_fields: ClassVar[tuple[str, ...]] = ("site_pos", "site_size")

    def initialize_episode(self, physics, key):
        angle_key, joints_key = jax.random.split(key)
        dtype = physics.data.qpos.dtype
        target_angle = jax.random.uniform(angle_key, (), dtype, minval=-np.pi, maxval=np.pi)
        hinge_x, hinge_z = physics.named.data.xanchor["hinge", ["x", "z"]]
        # dm_control reads the model's cap1 size, which no task edits: a constant.
        radius = float(physics.named.mj_model.geom_size["cap1"].sum())
        target_x = hinge_x + radius * jnp.sin(target_angle)
        target_z = hinge_z + radius * jnp.cos(target_angle)
        site_pos = physics.named.model.site_pos.at["target", ["x", "z"]].set(
            jnp.stack([target_x, target_z])
        )
        site_size = physics.named.model.site_size.at["target", 0].set(self.target_radius)
        physics = physics.with_model(site_pos=site_pos.array, site_size=site_size.array)
        return _set_random_joint_angles(physics, joints_key), {}

    def get_observation(self, physics, variables):
        """State, touch sensors, and target info."""
        return collections.OrderedDict(
            position=bounded_position(physics),
            velocity=velocity(physics),
            touch=touch(physics),
            target_position=target_position(physics),
            dist_to_target=dist_to_target(physics),
        )

    def get_reward(self, physics, variables):
        return (dist_to_target(physics) <= 0).astype(physics.data.qpos.dtype)


_BENCHMARKING = ("benchmarking",)
REGISTRY.add("finger", "spin", Spin(), _BENCHMARKING)
REGISTRY.add("finger", "turn_easy", Turn(target_radius=_EASY_TARGET_SIZE), _BENCHMARKING)
REGISTRY.add("finger", "turn_hard", Turn(target_radius=_HARD_TARGET_SIZE), _BENCHMARKING)

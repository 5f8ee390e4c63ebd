"""Fish domain: turn upright, or swim the mouth to a target (dm_control `fish`).

The model has no gravity and no constraints: the fish floats in a dense fluid
(`opt.density`), and the fluid forces come from MuJoCo's inertia-box model,
which MJX implements (`passive._fluid`). With constraints disabled C MuJoCo runs
no collision detection, and neither does our step, so the model's
(ellipsoid, box) geom pairs never matter.
"""

import collections
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol import mjcf, rewards
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 40
_CONTROL_TIMESTEP = 0.04
_JOINTS = [
    "tail1",
    "tail_twist",
    "tail2",
    "finright_roll",
    "finright_pitch",
    "finleft_roll",
    "finleft_pitch",
]


def upright(physics: Physics) -> jax.Array:
    """Projection of the torso's z-axis on the world's z-axis."""
    return physics.named.data.xmat["torso", "zz"]


def torso_velocity(physics: Physics) -> jax.Array:
    """Velocities and angular velocities of the torso (its sensors).

    Unused by the tasks, as in dm_control; a sensor read needs a `sync` that
    refreshes velocity sensors (`physics_lib.sync_full`).
    """
    return physics.data.sensordata


def joint_velocities(physics: Physics) -> jax.Array:
    return physics.named.data.qvel[_JOINTS]


def joint_angles(physics: Physics) -> jax.Array:
    return physics.named.data.qpos[_JOINTS]


def mouth_to_target(physics: Physics) -> jax.Array:
    """The vector from mouth to target, in the mouth's frame."""
    geom_xpos = physics.named.data.geom_xpos
    mouth_to_target_global = geom_xpos["target"] - geom_xpos["mouth"]
    return mouth_to_target_global @ physics.named.data.geom_xmat["mouth"].reshape(3, 3)


def _random_pose(physics: Physics, key: jax.Array) -> jax.Array:
    """The root's orientation uniform on the sphere, the joints uniform in [-.2, .2].

    dm_control normalises a 4-D standard normal draw; the root's position keeps
    its reset value.
    """
    quat_key, joints_key = jax.random.split(key)
    dtype = physics.data.qpos.dtype
    quat = jax.random.normal(quat_key, (4,), dtype)
    qpos = physics.named.data.qpos
    qpos = qpos.at["root"].set(qpos["root"].at[3:7].set(quat / jnp.linalg.norm(quat)))
    angles = jax.random.uniform(joints_key, (len(_JOINTS),), dtype, minval=-0.2, maxval=0.2)
    return qpos.at[_JOINTS].set(angles).array


# Sync: the observations and rewards read qpos, qvel and body/geom poses only,
# which `step` leaves current: the default `sync_kinematics` is exact.


@dataclasses.dataclass(frozen=True, kw_only=True)
class Upright(Task):
    """Get the torso upright; the target is hidden (alpha 0)."""

    time_limit: float = _DEFAULT_TIME_LIMIT
    control_timestep: float | None = _CONTROL_TIMESTEP

    episode_model_fields: ClassVar[tuple[str, ...]] = ("geom_rgba",)
    # Lower solver caps left trajectories identical but gained nothing (1.01x at
    # batch 256: no constraint is active), so dm_control's settings stay.
    solver_caps: ClassVar[tuple[int, int] | None] = None

    def make_model(self):
        return mjcf.fish.make_model()

    def initialize_episode(self, physics, key):
        physics = physics.with_data(qpos=_random_pose(physics, key))
        # Hide the target. It's irrelevant for this task.
        rgba = physics.named.model.geom_rgba.at["target", 3].set(0).array
        return physics.with_model(geom_rgba=rgba), {}

    def get_observation(self, physics, variables):
        return collections.OrderedDict(
            joint_angles=joint_angles(physics),
            upright=upright(physics),
            velocity=physics.velocity(),
        )

    def get_reward(self, physics, variables):
        return rewards.tolerance(upright(physics), bounds=(1, 1), margin=1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Swim(Task):
    """Swim the mouth to a target placed at random above the floor."""

    time_limit: float = _DEFAULT_TIME_LIMIT
    control_timestep: float | None = _CONTROL_TIMESTEP

    episode_model_fields: ClassVar[tuple[str, ...]] = ("geom_pos",)
    # Lower solver caps left trajectories identical but gained nothing (1.01x at
    # batch 256: no constraint is active), so dm_control's settings stay.
    solver_caps: ClassVar[tuple[int, int] | None] = None

    def make_model(self):
        return mjcf.fish.make_model()

    def initialize_episode(self, physics, key):
        pose_key, x_key, y_key, z_key = jax.random.split(key, 4)
        physics = physics.with_data(qpos=_random_pose(physics, pose_key))
        # Randomize target position.
        dtype = physics.data.qpos.dtype
        target = jnp.stack(
            [
                jax.random.uniform(x_key, (), dtype, minval=-0.4, maxval=0.4),
                jax.random.uniform(y_key, (), dtype, minval=-0.4, maxval=0.4),
                jax.random.uniform(z_key, (), dtype, minval=0.1, maxval=0.3),
            ]
        )
        geom_pos = physics.named.model.geom_pos.at["target"].set(target).array
        return physics.with_model(geom_pos=geom_pos), {}

    def get_observation(self, physics, variables):
        return collections.OrderedDict(
            joint_angles=joint_angles(physics),
            upright=upright(physics),
            target=mouth_to_target(physics),
            velocity=physics.velocity(),
        )

    def get_reward(self, physics, variables):
        # Both radii are constants of the model (the reset moves the target only).
        radii = float(np.sum(physics.named.mj_model.geom_size[["mouth", "target"], 0]))
        in_target = rewards.tolerance(
            jnp.linalg.norm(mouth_to_target(physics)), bounds=(0, radii), margin=2 * radii
        )
        is_upright = 0.5 * (upright(physics) + 1)
        return (7 * in_target + is_upright) / 8


REGISTRY.add("fish", "upright", Upright(), tags=("benchmarking",))
REGISTRY.add("fish", "swim", Swim(), tags=("benchmarking",))

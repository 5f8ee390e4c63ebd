"""Swimmer domain: a planar chain of links swims its nose to a target (dm_control `swimmer`).

The chain is procedural: `n_links` links, head included (dm_control's
`swimmer(n_links)`); the suite registers 6 and 15. The fluid forces come from
MuJoCo's inertia-box model (`opt.density`), which MJX implements. Contacts are
disabled, so the model's (ellipsoid, box) geom pairs never touch.
"""

import collections
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from jaxcontrol import mjcf, randomizers, rewards
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 30
_CONTROL_TIMESTEP = 0.03  # (Seconds)
_CLOSE_TARGET_PROBABILITY = 0.2
_CLOSE_TARGET_BOX = 0.3
_FAR_TARGET_BOX = 2.0
# The head's position and axis sensors (nose_pos, target_pos, head_xaxis,
# head_yaxis: 4 x 3 values) come first in sensordata; then, per link, a
# velocimeter and a gyro.
_POSITION_SENSOR_DIM = 12


def nose_to_target(physics: Physics) -> jax.Array:
    """The x, y components of the vector from nose to target, in the head's frame."""
    geom_xpos = physics.named.data.geom_xpos
    to_target = geom_xpos["target"] - geom_xpos["nose"]
    head_orientation = physics.named.data.xmat["head"].reshape(3, 3)
    return (to_target @ head_orientation)[:2]


def nose_to_target_dist(physics: Physics) -> jax.Array:
    return jnp.linalg.norm(nose_to_target(physics))


def body_velocities(physics: Physics) -> jax.Array:
    """Local body velocities: x, y linear and z rotational, per link."""
    xvel_local = physics.data.sensordata[_POSITION_SENSOR_DIM:].reshape((-1, 6))
    vx_vy_wz = np.array([0, 1, 5])  # Indices for linear x,y vels and rotational z vel.
    return xvel_local[:, vx_vy_wz].ravel()


def joints(physics: Physics) -> jax.Array:
    """All internal joint angles (excluding the root joints)."""
    return physics.data.qpos[3:]


def _light_index(physics: Physics, name: str) -> int:
    index = mujoco.mj_name2id(physics.mj_model, mujoco.mjtObj.mjOBJ_LIGHT, name)
    if index < 0:
        raise KeyError(f"no light named {name!r}")
    return index


@dataclasses.dataclass(frozen=True, kw_only=True)
class Swimmer(Task):
    """Reach the target with the nose.

    Attributes:
      n_links: number of links, head included (an integer >= 3).
    """

    n_links: int = 6
    time_limit: float = _DEFAULT_TIME_LIMIT
    control_timestep: float | None = _CONTROL_TIMESTEP

    # target_light's light_pos only places the light for renderers (MJX's
    # camlight); dm_control moves it with the target.
    episode_model_fields: ClassVar[tuple[str, ...]] = ("geom_pos", "light_pos")
    # MJX solver caps: stock MJX's float64 trajectories under them stayed identical to
    # those at dm_control's settings (16 rollouts of 1000 steps; swimmer6 and swimmer15), and
    # swimmer6 ran 1.8x faster at batch 256 (docs/design/solver-caps.md). The CPU model
    # keeps dm_control's.
    solver_caps: ClassVar[tuple[int, int] | None] = (8, 4)

    def make_model(self):
        return mjcf.swimmer.make_model(self.n_links)

    def sync(self, physics):
        """Makes sensordata current; everything else read is a body or geom pose.

        `body_velocities` reads velocimeters and gyros: they need `cvel`
        (`com_vel`, from `com_pos`'s `cdof`), `subtree_com` (`com_pos`) and the
        site frames (current after `step`). `sensor_pos` refreshes the head's
        frame sensors too, so that all of `sensordata` is `mj_step1`'s. Nothing
        here needs the inertia, tendons, constraints or actuation (`sync_full`).
        """
        model = physics.model
        data = mjx.com_pos(model, physics.data)
        data = mjx.sensor_pos(model, data)
        data = mjx.com_vel(model, data)
        return mjx.sensor_vel(model, data)

    def initialize_episode(self, physics, key):
        joints_key, close_key, target_key = jax.random.split(key, 3)
        # Random joint angles: the head's heading uniform in [-pi, pi], each
        # joint uniform in its range; the root slides keep their reset value.
        qpos = randomizers.randomize_limited_and_rotational_joints(
            physics.mj_model, joints_key, physics.data.qpos
        )
        physics = physics.with_data(qpos=qpos)
        # Random target position.
        dtype = qpos.dtype
        close_target = jax.random.uniform(close_key, (), dtype) < _CLOSE_TARGET_PROBABILITY
        target_box = jnp.where(close_target, _CLOSE_TARGET_BOX, _FAR_TARGET_BOX).astype(dtype)
        xy = jax.random.uniform(target_key, (2,), dtype, minval=-target_box, maxval=target_box)
        geom_pos = physics.named.model.geom_pos.at["target", ["x", "y"]].set(xy).array
        light = _light_index(physics, "target_light")
        light_pos = physics.model.light_pos.at[light, :2].set(xy)
        return physics.with_model(geom_pos=geom_pos, light_pos=light_pos), {}

    def get_observation(self, physics, variables):
        return collections.OrderedDict(
            joints=joints(physics),
            to_target=nose_to_target(physics),
            body_velocities=body_velocities(physics),
        )

    def get_reward(self, physics, variables):
        target_size = float(physics.named.mj_model.geom_size["target", 0])
        return rewards.tolerance(
            nose_to_target_dist(physics),
            bounds=(0, target_size),
            margin=5 * target_size,
            sigmoid="long_tail",
        )


REGISTRY.add("swimmer", "swimmer6", Swimmer(n_links=6), tags=("benchmarking",))
REGISTRY.add("swimmer", "swimmer15", Swimmer(n_links=15), tags=("benchmarking",))

"""Planar manipulator: bring (or insert) a ball or a peg to a target (dm_control `manipulator`).

The reset is dm_control's rejection loop (`randomizers.resample_while_penetrating`):
each attempt draws the arm's joint angles (the hand symmetrised), a target pose
written into the model (`body_pos`/`body_quat` of the target, and of the
receptacle for the insert tasks), and the object's pose, which is 'in_hand'
(at the grasp site of the drawn arm pose), 'in_target' or 'uniform' (with a
random x velocity). An attempt whose state penetrates (`ncon > 0`) is redrawn
from where the last one left off, so a velocity that a rejected 'uniform'
attempt wrote survives an accepted 'in_hand' or 'in_target' one, as in
dm_control.
"""

import collections
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from mujoco import mjx

from jaxcontrol import mjcf, randomizers, rewards
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_CLOSE = 0.01  # (Meters) Distance below which a thing is considered close.
_CONTROL_TIMESTEP = 0.01  # (Seconds)
_TIME_LIMIT = 10  # (Seconds)
_P_IN_HAND = 0.1  # Probability of object-in-hand initial state
_P_IN_TARGET = 0.1  # Probability of object-in-target initial state
ARM_JOINTS = [
    "arm_root",
    "arm_shoulder",
    "arm_elbow",
    "arm_wrist",
    "finger",
    "fingertip",
    "thumb",
    "thumbtip",
]
_TOUCH_SENSORS = ["palm_touch", "finger_touch", "thumb_touch", "fingertip_touch", "thumbtip_touch"]
# dm_control's `choice(['in_hand', 'in_target', 'uniform'], p=...)`.
_IN_HAND, _IN_TARGET, _UNIFORM = 0, 1, 2
_OBJECT_INIT_PROBS = (_P_IN_HAND, _P_IN_TARGET, 1 - _P_IN_HAND - _P_IN_TARGET)


# ----- dm_control's manipulator.Physics -------------------------------------------------------


def bounded_joint_pos(physics: Physics, joint_names) -> jax.Array:
    """Joint positions as (sin, cos) rows, shape (len(joint_names), 2)."""
    joint_pos = physics.named.data.qpos[joint_names]
    return jnp.stack([jnp.sin(joint_pos), jnp.cos(joint_pos)], axis=1)


def joint_vel(physics: Physics, joint_names) -> jax.Array:
    return physics.named.data.qvel[joint_names]


def body_2d_pose(physics: Physics, body_names, orientation: bool = True) -> jax.Array:
    """Bodies' (x, z) positions and, with `orientation`, their (qw, qy) quaternion
    entries: one row per body for a list of names, a vector for one name."""
    pos = physics.named.data.xpos[body_names, ["x", "z"]]
    if not orientation:
        return pos
    ori = physics.named.data.xquat[body_names, ["qw", "qy"]]
    return jnp.concatenate([pos, ori], axis=-1)


def touch(physics: Physics) -> jax.Array:
    """log1p of the touch sensors (acceleration stage: those of the last substep)."""
    return jnp.log1p(physics.named.data.sensordata[_TOUCH_SENSORS])


def site_distance(physics: Physics, site1: str, site2: str) -> jax.Array:
    site_xpos = physics.named.data.site_xpos
    return jnp.linalg.norm(site_xpos[site1] - site_xpos[site2])


# Sync: observations and rewards read qpos, qvel, body poses (xpos, xquat), site
# positions and the touch sensors. `step` leaves poses current; touch sensors
# are acceleration-stage, and dm_control's closing `mj_step1` does not
# recompute them either (they are those of the last substep's forward pass,
# which our step keeps). So the default `sync_kinematics` is exact.


def arm_limits(physics: Physics) -> tuple[np.ndarray, np.ndarray]:
    """Joint ranges of the arm joints; [-pi, pi] where a joint is unlimited."""
    m = physics.mj_model
    ids = np.array([m.joint(name).id for name in ARM_JOINTS])
    is_limited = m.jnt_limited[ids].astype(bool)
    joint_range = m.jnt_range[ids]
    lower = np.where(is_limited, joint_range[:, 0], -np.pi)
    upper = np.where(is_limited, joint_range[:, 1], np.pi)
    return lower, upper


# MJX solver caps by (use_peg, insert): the smallest measured setting under which
# stock MJX's float64 trajectories stayed identical to those at dm_control's 100/50
# over 16 rollouts of 1000 steps, and ran faster (benchmarks/solver_caps.py;
# docs/design/solver-caps.md: 1.20-1.32x at batch 256 on one CPU core for the three extras). In the three extras a
# line search capped at 8 or 16 steps binds somewhere in those rollouts, and the
# trajectories leave dm_control's. The CPU model keeps dm_control's settings.
_SOLVER_CAPS: dict[tuple[bool, bool], tuple[int, int]] = {
    (False, False): (8, 8),  # bring_ball
    (True, False): (8, 32),  # bring_peg
    (False, True): (8, 32),  # insert_ball
    (True, True): (8, 32),  # insert_peg
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Bring(Task):
    """Bring the prop to the target.

    Attributes:
      use_peg: the peg prop instead of the ball.
      insert: insert the prop in a receptacle (cup or slot) placed at the target.
      fully_observable: observe the hand, object and target poses and the
        object's velocity (otherwise only the arm's joints and touch sensors).
    """

    use_peg: bool
    insert: bool
    fully_observable: bool = True
    time_limit: float = _TIME_LIMIT
    control_timestep: float | None = _CONTROL_TIMESTEP

    # dm_control writes the target's pose (and the receptacle's) at every reset.
    episode_model_fields: ClassVar[tuple[str, ...]] = ("body_pos", "body_quat")

    @property
    def solver_caps(self) -> tuple[int, int] | None:
        """MJX solver caps measured for this prop and receptacle (`_SOLVER_CAPS`)."""
        return _SOLVER_CAPS[self.use_peg, self.insert]

    @property
    def _target(self) -> str:
        return "target_peg" if self.use_peg else "target_ball"

    @property
    def _object(self) -> str:
        return "peg" if self.use_peg else "ball"

    @property
    def _object_joints(self) -> list[str]:
        return [f"{self._object}_{dim}" for dim in "xzy"]

    @property
    def _receptacle(self) -> str:
        return "slot" if self.use_peg else "cup"

    def make_model(self):
        return mjcf.manipulator.make_model(self.use_peg, self.insert)

    def initialize_episode(self, physics, key):
        # Find a collision-free random initial configuration.
        physics = randomizers.resample_while_penetrating(physics, key, self._draw)
        return physics, {}

    def _draw(self, physics: Physics, key: jax.Array) -> Physics:
        """One attempt of dm_control's loop: arm, target and object."""
        keys = jax.random.split(key, 11)
        dtype = physics.data.qpos.dtype

        def uniform(k, low, high, shape=()):
            return jax.random.uniform(k, shape, dtype, minval=low, maxval=high)

        # Randomise angles of arm joints.
        lower, upper = arm_limits(physics)
        angles = uniform(keys[0], lower, upper, (len(ARM_JOINTS),))
        qpos = physics.named.data.qpos.at[ARM_JOINTS].set(angles)

        # Symmetrize hand.
        qpos = qpos.at["finger"].set(qpos["thumb"])

        # Randomise target location.
        target_x = uniform(keys[1], -0.4, 0.4)
        target_z = uniform(keys[2], 0.1, 0.4)
        body_pos, body_quat = physics.named.model.body_pos, physics.named.model.body_quat
        if self.insert:
            target_angle = uniform(keys[3], -np.pi / 3, np.pi / 3)
            body_pos = body_pos.at[self._receptacle, ["x", "z"]].set(
                jnp.stack([target_x, target_z])
            )
            body_quat = body_quat.at[self._receptacle, ["qw", "qy"]].set(
                jnp.stack([jnp.cos(target_angle / 2), jnp.sin(target_angle / 2)])
            )
        else:
            target_angle = uniform(keys[3], -np.pi, np.pi)
        body_pos = body_pos.at[self._target, ["x", "z"]].set(jnp.stack([target_x, target_z]))
        body_quat = body_quat.at[self._target, ["qw", "qy"]].set(
            jnp.stack([jnp.cos(target_angle / 2), jnp.sin(target_angle / 2)])
        )
        physics = physics.with_model(body_pos=body_pos.array, body_quat=body_quat.array)

        # Randomise object location.
        init_type = jax.random.choice(keys[4], 3, p=jnp.array(_OBJECT_INIT_PROBS, dtype))

        # 'in_hand': dm_control runs a forward pass here for the grasp site's pose,
        # which depends on the arm's joints only: kinematics suffice.
        arm = mjx.kinematics(physics.model, physics.data.replace(qpos=qpos.array))
        grasp = dataclasses.replace(physics, data=arm).named.data
        grasp_direction = grasp.site_xmat["grasp", ["xx", "zx"]]
        in_hand = jnp.stack(
            [
                grasp.site_xpos["grasp", "x"],
                grasp.site_xpos["grasp", "z"],
                np.pi - jnp.arctan2(grasp_direction[1], grasp_direction[0]),
            ]
        )
        in_target = jnp.stack([target_x, target_z, target_angle])
        uniform_pose = jnp.stack(
            [uniform(keys[5], -0.5, 0.5), uniform(keys[6], 0, 0.7), uniform(keys[7], 0, 2 * np.pi)]
        )
        object_pose = jnp.where(
            init_type == _IN_HAND,
            in_hand,
            jnp.where(init_type == _IN_TARGET, in_target, uniform_pose),
        )
        qpos = qpos.at[self._object_joints].set(object_pose)

        # Only a 'uniform' attempt writes the object's x velocity; otherwise the
        # previous attempt's value stays.
        qvel = physics.named.data.qvel
        object_vx = jnp.where(
            init_type == _UNIFORM, uniform(keys[8], -5, 5), qvel[self._object + "_x"][0]
        )
        qvel = qvel.at[self._object + "_x"].set(object_vx)
        return physics.with_data(qpos=qpos.array, qvel=qvel.array)

    def get_observation(self, physics, variables):
        """Either features or only sensors (to be used with pixels)."""
        obs = collections.OrderedDict()
        obs["arm_pos"] = bounded_joint_pos(physics, ARM_JOINTS)
        obs["arm_vel"] = joint_vel(physics, ARM_JOINTS)
        obs["touch"] = touch(physics)
        if self.fully_observable:
            obs["hand_pos"] = body_2d_pose(physics, "hand")
            obs["object_pos"] = body_2d_pose(physics, self._object)
            obs["object_vel"] = joint_vel(physics, self._object_joints)
            obs["target_pos"] = body_2d_pose(physics, self._target)
        return obs

    def _is_close(self, distance):
        return rewards.tolerance(distance, (0, _CLOSE), _CLOSE * 2)

    def _peg_reward(self, physics):
        """Reward for bringing the peg prop to the target."""
        grasp = self._is_close(site_distance(physics, "peg_grasp", "grasp"))
        pinch = self._is_close(site_distance(physics, "peg_pinch", "pinch"))
        grasping = (grasp + pinch) / 2
        bring = self._is_close(site_distance(physics, "peg", "target_peg"))
        bring_tip = self._is_close(site_distance(physics, "target_peg_tip", "peg_tip"))
        bringing = (bring + bring_tip) / 2
        return jnp.maximum(bringing, grasping / 3)

    def _ball_reward(self, physics):
        """Reward for bringing the ball prop to the target."""
        return self._is_close(site_distance(physics, "ball", "target_ball"))

    def get_reward(self, physics, variables):
        if self.use_peg:
            return self._peg_reward(physics)
        return self._ball_reward(physics)


REGISTRY.add(
    "manipulator", "bring_ball", Bring(use_peg=False, insert=False), tags=("benchmarking", "hard")
)
REGISTRY.add("manipulator", "bring_peg", Bring(use_peg=True, insert=False), tags=("hard",))
REGISTRY.add("manipulator", "insert_ball", Bring(use_peg=False, insert=True), tags=("hard",))
REGISTRY.add("manipulator", "insert_peg", Bring(use_peg=True, insert=True), tags=("hard",))

"""Dog domain: make a Pharaoh hound stand, walk, trot, run or fetch a thrown ball (dm_control).

Every reset starts from the model's default pose (standing, the torso 0.415 m up) turned
to a random heading, with random horizontal root velocities and random actuator
activations: no rejection sampling and no height search. fetch then throws the ball
from 7.5 m out towards the arena's centre. The stand heights (90 % of the torso's and
pelvis's at the default pose) and the body weight that the rewards compare against
are constants of the model, read from the CPU model when the reward is traced (as
dm_control measures them at every reset from the same, unedited model).
"""

import collections
import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from jaxcontrol import mjcf, rewards
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task
from jaxcontrol.tasks import humanoid

_DEFAULT_TIME_LIMIT = 15
_CONTROL_TIMESTEP = 0.015

# The torso, pelvis and head count as upright within this angle of vertical.
_MIN_UPRIGHT_COSINE = np.cos(np.deg2rad(30))

# The stand reward is 1 above this fraction of the default pose's torso and pelvis heights.
_STAND_HEIGHT_FRACTION = 0.9

# Forward speeds of the centre of mass from which the move reward is 1 (up to twice that).
_WALK_SPEED = 1
_TROT_SPEED = 3
_RUN_SPEED = 9

# fetch: the ball is thrown from this fraction of the floor's half-size, at most this
# high (m) and this fast horizontally (m/s), its heading off the centre by this noise.
_THROW_RADIUS_FRACTION = 0.75
_THROW_HEIGHT = 0.05
_MAX_APEX = 3
_MAX_THROW_SPEED = 5
_THROW_AIM_NOISE = 0.05
_BITE_MARGIN = 2

_HINGE = mujoco.mjtJoint.mjJNT_HINGE


# ----- dm_control's dog.Physics ---------------------------------------------------------------


def torso_pelvis_height(physics: Physics) -> jax.Array:
    """The heights of the torso and the pelvis."""
    return physics.named.data.xpos[["torso", "pelvis"], "z"]


def z_projection(physics: Physics) -> jax.Array:
    """The world-z rows of the skull's, torso's and pelvis's frames (3 x 3)."""
    return physics.named.data.xmat[["skull", "torso", "pelvis"], ["zx", "zy", "zz"]]


def upright(physics: Physics) -> jax.Array:
    """The world-z components of the skull's, torso's and pelvis's z axes."""
    return z_projection(physics)[:, 2]


def center_of_mass_velocity(physics: Physics) -> jax.Array:
    """The centre of mass's velocity: the `torso_linvel` sensor (subtree linear velocity)."""
    return physics.named.data.sensordata["torso_linvel"]


def _torso_frame(physics: Physics) -> jax.Array:
    return physics.named.data.xmat["torso"].reshape(3, 3)


def torso_com_velocity(physics: Physics) -> jax.Array:
    """The centre of mass's velocity in the torso's frame."""
    return center_of_mass_velocity(physics) @ _torso_frame(physics)


def com_forward_velocity(physics: Physics) -> jax.Array:
    """The centre of mass's velocity along the torso's forward (x) axis."""
    return torso_com_velocity(physics)[0]


def _hinges(physics: Physics) -> np.ndarray:
    return np.nonzero(physics.mj_model.jnt_type == _HINGE)[0]


def joint_angles(physics: Physics) -> jax.Array:
    """Every hinge's angle (the free joints skipped)."""
    return physics.data.qpos[physics.mj_model.jnt_qposadr[_hinges(physics)]]


def joint_velocities(physics: Physics) -> jax.Array:
    """Every hinge's velocity (the free joints skipped)."""
    return physics.data.qvel[physics.mj_model.jnt_dofadr[_hinges(physics)]]


def inertial_sensors(physics: Physics) -> jax.Array:
    """The head's accelerometer, velocimeter and gyro."""
    return physics.named.data.sensordata[["accelerometer", "velocimeter", "gyro"]]


def touch_sensors(physics: Physics) -> jax.Array:
    """The touch sensors of the palms and soles."""
    return physics.named.data.sensordata[["palm_L", "palm_R", "sole_L", "sole_R"]]


def foot_forces(physics: Physics) -> jax.Array:
    """The force sensors of the feet and hands."""
    return physics.named.data.sensordata[["foot_L", "foot_R", "hand_L", "hand_R"]]


def object_linear_velocity(physics: Physics, body: int, pos: jax.Array) -> jax.Array:
    """The world-frame linear velocity of a point `pos` fixed to `body` (the linear half
    of `mj_objectVelocity` for a site or geom there; needs `com_pos` and `com_vel`)."""
    root = int(physics.mj_model.body_rootid[body])
    cvel = physics.data.cvel[body]
    offset = pos - physics.data.subtree_com[root]
    return cvel[3:] - jnp.cross(offset, cvel[:3])


def _head_frame(physics: Physics) -> tuple[jax.Array, jax.Array]:
    data = physics.named.data
    return data.site_xpos["head"], data.site_xmat["head"].reshape(3, 3)


def ball_in_head_frame(physics: Physics) -> jax.Array:
    """The ball's position and velocity relative to the head, in the head's frame."""
    model = physics.mj_model
    head_pos, head_frame = _head_frame(physics)
    ball_pos = physics.named.data.geom_xpos["ball"]
    head_vel = object_linear_velocity(physics, model.site_bodyid[model.site("head").id], head_pos)
    ball_vel = object_linear_velocity(physics, model.geom_bodyid[model.geom("ball").id], ball_pos)
    return jnp.concatenate([(ball_pos - head_pos) @ head_frame, (ball_vel - head_vel) @ head_frame])


def target_in_head_frame(physics: Physics) -> jax.Array:
    """The target's position in the head's frame."""
    head_pos, head_frame = _head_frame(physics)
    return (physics.named.data.geom_xpos["target"] - head_pos) @ head_frame


def ball_to_mouth_distance(physics: Physics) -> jax.Array:
    """The mean distance from the ball to the upper and lower bite sites."""
    data = physics.named.data
    ball_pos = data.geom_xpos["ball"]
    upper = jnp.linalg.norm(ball_pos - data.site_xpos["upper_bite"])
    lower = jnp.linalg.norm(ball_pos - data.site_xpos["lower_bite"])
    return 0.5 * (upper + lower)


def ball_to_target_distance(physics: Physics) -> jax.Array:
    """The distance from the ball to the target."""
    data = physics.named.data
    return jnp.linalg.norm(data.geom_xpos["ball"] - data.geom_xpos["target"])


# ----- constants of the model -----------------------------------------------------------------


def stand_heights(mj_model: mujoco.MjModel) -> tuple[float, float]:
    """The torso's and pelvis's heights above which standing is rewarded in full."""
    data = mujoco.MjData(mj_model)
    mujoco.mj_kinematics(mj_model, data)
    torso, pelvis = (data.xpos[mj_model.body(name).id, 2] for name in ("torso", "pelvis"))
    return float(torso * _STAND_HEIGHT_FRACTION), float(pelvis * _STAND_HEIGHT_FRACTION)


def body_weight(mj_model: mujoco.MjModel) -> float:
    """The dog's weight (N): the torso subtree's mass times gravity."""
    return float(-mj_model.opt.gravity[2] * mj_model.body_subtreemass[mj_model.body("torso").id])


# ----- tasks ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class Stand(Task):
    """Stand tall and upright on a floor of half-size `floor_size` (no ball)."""

    floor_size: float = _WALK_SPEED * _DEFAULT_TIME_LIMIT
    time_limit: float = _DEFAULT_TIME_LIMIT
    control_timestep: float | None = _CONTROL_TIMESTEP

    def make_model(self):
        return mjcf.dog.make_model(floor_size=self.floor_size, remove_ball=True)

    def sync(self, physics):
        # Poses, the subtree-velocity, velocimeter and gyro sensors, and (fetch) the
        # bodies' velocities `cvel` about `subtree_com`; no position-stage sensors.
        return humanoid.sync_velocity_sensors(physics)

    def initialize_episode(self, physics, key):
        """The default pose at a random heading, with random root velocities in the
        horizontal plane and random actuator activations."""
        model = physics.mj_model
        if model.nu != model.na:
            raise ValueError(f"every dog actuator must be stateful; nu={model.nu}, na={model.na}")
        heading_key, velocity_key, act_key = jax.random.split(key, 3)
        dtype = physics.data.qpos.dtype
        # Randomize horizontal orientation.
        azimuth = jax.random.uniform(heading_key, (), dtype, 0, 2 * np.pi)
        zero = jnp.zeros((), dtype)
        orientation = jnp.stack([jnp.cos(azimuth / 2), zero, zero, jnp.sin(azimuth / 2)])
        qpos = physics.data.qpos.at[physics.names.rows("qpos")["root"][3:]].set(orientation)
        # Randomize root velocities in the horizontal plane (x, y and yaw rate).
        root_dofs = physics.names.rows("dof")["root"][np.array([0, 1, 5])]
        qvel = physics.data.qvel.at[root_dofs].set(2 * jax.random.normal(velocity_key, (3,), dtype))
        # Randomize actuator states.
        low, high = model.actuator_ctrlrange.T
        act = jax.random.uniform(act_key, (model.nu,), dtype, low, high)
        return physics.with_data(qpos=qpos, qvel=qvel, act=act), {}

    def get_observation(self, physics, variables):
        obs = collections.OrderedDict()
        obs["joint_angles"] = joint_angles(physics)
        obs["joint_velocites"] = joint_velocities(physics)  # dm_control's spelling
        obs["torso_pelvis_height"] = torso_pelvis_height(physics)
        obs["z_projection"] = z_projection(physics).ravel()
        obs["torso_com_velocity"] = torso_com_velocity(physics)
        obs["inertial_sensors"] = inertial_sensors(physics)
        obs["foot_forces"] = foot_forces(physics)
        obs["touch_sensors"] = touch_sensors(physics)
        obs["actuator_state"] = physics.data.act
        return obs

    def reward_factors(self, physics: Physics) -> jax.Array:
        """The reward's factors: torso and pelvis height, three uprights, paw contact."""
        torso_height, pelvis_height = stand_heights(physics.mj_model)
        heights = torso_pelvis_height(physics)
        # Keep the torso and the pelvis at standing height.
        torso = rewards.tolerance(
            heights[0], bounds=(torso_height, float("inf")), margin=torso_height
        )
        pelvis = rewards.tolerance(
            heights[1], bounds=(pelvis_height, float("inf")), margin=pelvis_height
        )
        # Keep head, torso and pelvis upright.
        upright_reward = rewards.tolerance(
            upright(physics),
            bounds=(_MIN_UPRIGHT_COSINE, float("inf")),
            sigmoid="linear",
            margin=_MIN_UPRIGHT_COSINE + 1,
            value_at_margin=0,
        )
        # Reward paw touch forces up to body weight.
        weight = body_weight(physics.mj_model)
        touch = rewards.tolerance(
            touch_sensors(physics).sum(),
            bounds=(weight, float("inf")),
            margin=weight,
            sigmoid="linear",
            value_at_margin=0.9,
        )
        return jnp.concatenate([jnp.stack([torso, pelvis]), upright_reward, touch[None]])

    def get_reward(self, physics, variables):
        return jnp.prod(self.reward_factors(physics))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Move(Stand):
    """Stand and move forward at `move_speed` to twice that, on a floor sized to reach."""

    move_speed: float

    def reward_factors(self, physics):
        forward = rewards.tolerance(
            com_forward_velocity(physics),
            bounds=(self.move_speed, 2 * self.move_speed),
            margin=max(1.0, self.move_speed),
            value_at_margin=0,
            sigmoid="linear",
        )
        forward = (4 * forward + 1) / 5
        return jnp.concatenate([super().reward_factors(physics), forward[None]])


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fetch(Stand):
    """Stand, catch the ball thrown towards the arena's centre, and bring it to the target."""

    floor_size: float = mjcf.dog.DEFAULT_FLOOR_SIZE

    def make_model(self):
        return mjcf.dog.make_model(floor_size=self.floor_size, remove_ball=False)

    def initialize_episode(self, physics, key):
        """Stand's start, and the ball thrown from a random azimuth towards the centre."""
        stand_key, azimuth_key, apex_key, speed_key, aim_key = jax.random.split(key, 5)
        physics, variables = super().initialize_episode(physics, stand_key)
        model = physics.mj_model
        dtype = physics.data.qpos.dtype
        radius = _THROW_RADIUS_FRACTION * float(physics.named.mj_model.geom_size["floor", 0])
        azimuth = jax.random.uniform(azimuth_key, (), dtype, 0, 2 * np.pi)
        sin, cos = jnp.sin(azimuth), jnp.cos(azimuth)
        position = jnp.stack([radius * sin, radius * cos, jnp.asarray(_THROW_HEIGHT, dtype)])
        # Launched upwards fast enough to rise to a random apex: v = sqrt(2 g h).
        apex = jax.random.uniform(apex_key, (), dtype, 0, _MAX_APEX)
        vertical_velocity = jnp.sqrt(2 * float(-model.opt.gravity[2]) * apex)
        speed = jax.random.uniform(speed_key, (), dtype, 0, _MAX_THROW_SPEED)
        # Pointing towards the centre, with some noise.
        direction = jnp.stack([-sin, -cos]) + _THROW_AIM_NOISE * jax.random.normal(
            aim_key, (2,), dtype
        )
        velocity = jnp.concatenate([speed * direction, vertical_velocity[None]])
        qpos = physics.data.qpos.at[physics.names.rows("qpos")["ball_root"][:3]].set(position)
        qvel = physics.data.qvel.at[physics.names.rows("dof")["ball_root"][:3]].set(velocity)
        return physics.with_data(qpos=qpos, qvel=qvel), variables

    def get_observation(self, physics, variables):
        obs = super().get_observation(physics, variables)
        obs["ball_state"] = ball_in_head_frame(physics)
        obs["target_position"] = target_in_head_frame(physics)
        return obs

    def reward_factors(self, physics):
        named = physics.named.mj_model
        # Reward bringing the mouth to the ball.
        bite_radius = float(named.site_size["upper_bite", 0])
        reach_ball = rewards.tolerance(
            ball_to_mouth_distance(physics),
            bounds=(0, bite_radius),
            sigmoid="reciprocal",
            margin=_BITE_MARGIN,
        )
        reach_ball = (6 * reach_ball + 1) / 7
        # Reward bringing the ball to the target.
        target_radius = float(named.geom_size["target", 0])
        to_target = ball_to_target_distance(physics)
        ball_near_target = rewards.tolerance(
            to_target,
            bounds=(0, target_radius),
            sigmoid="reciprocal",
            margin=float(named.geom_size["floor", 0]),
        )
        fetch_ball = (ball_near_target + 1) / 2
        # Once the ball is fetched, the dog may let go of it.
        reach_ball = jnp.where(to_target < 2 * target_radius, 1, reach_ball).astype(
            reach_ball.dtype
        )
        return jnp.concatenate(
            [super().reward_factors(physics), jnp.stack([reach_ball, fetch_ball])]
        )


# dm_control's tags: no reward visualisation for any, and fetch is hard.
_TAGS = ("no_reward_visualization",)
REGISTRY.add("dog", "stand", Stand(), _TAGS)
for _name, _speed in (("walk", _WALK_SPEED), ("trot", _TROT_SPEED), ("run", _RUN_SPEED)):
    # dm_control sizes each floor for its default episode at the target speed.
    REGISTRY.add(
        "dog", _name, Move(move_speed=_speed, floor_size=_speed * _DEFAULT_TIME_LIMIT), _TAGS
    )
REGISTRY.add("dog", "fetch", Fetch(), _TAGS + ("hard",))

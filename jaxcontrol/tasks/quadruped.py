"""Quadruped domain: walk, run, escape a bowl of random terrain, fetch a ball (dm_control).

Every reset ends with dm_control's search for a resting height: the torso, in a
random orientation, starts embedded in the floor and rises in 1 cm steps until
nothing touches (`find_non_contacting_height`, a `lax.while_loop` over MJX's
collision). `escape` first draws a new terrain into the height field's
`hfield_data`, a per-episode model field: a sinusoidal bowl times smooth random
bumps, which dm_control upsamples with `scipy.ndimage.zoom` (cubic splines). That
zoom is linear and separable, so here it is one precomputed 201 x 30 matrix
applied on both sides (equal to SciPy's result to 1e-15).
"""

import collections
import dataclasses
import functools
from typing import ClassVar

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx
from scipy import ndimage

from jaxcontrol import mjcf, rewards
from jaxcontrol import physics as physics_lib
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 20
_CONTROL_TIMESTEP = 0.02

# Horizontal speeds above which the move reward is 1.
_RUN_SPEED = 5
_WALK_SPEED = 0.5

# Constants related to terrain generation.
_HEIGHTFIELD_ID = 0
_TERRAIN_SMOOTHNESS = 0.15  # 0.0: maximally bumpy; 1.0: completely smooth.
_TERRAIN_BUMP_SCALE = 2  # Spatial scale of terrain bumps (in meters).

# Named model elements.
_TOES = ["toe_front_left", "toe_back_left", "toe_back_right", "toe_front_right"]
_MAX_HEIGHT_ATTEMPTS = 10000
_HEIGHT_STEP = 0.01  # (Meters) the search's increment
# A contact counts in the search only when it penetrates deeper than this many rounding
# units (machine epsilons of a one-metre length), and a body left within them is lifted
# by as much. fetch's upright start puts four toes on the floor exactly at the grid height
# 0.52 m; float64 lands 2e-16 above it as C does, float32's 52 additions of 0.01 land
# 1.5e-7 (1.3 epsilons) below it and would take one more step.
_HEIGHT_ROUNDING_EPS = 8


# ----- dm_control's quadruped.Physics ---------------------------------------------------------


def _sensor_names(physics: Physics, *sensor_types: mujoco.mjtSensor) -> list[str]:
    """Names of the sensors of the given types, in sensor id order."""
    model = physics.mj_model
    ids = np.nonzero(np.isin(model.sensor_type, [int(t) for t in sensor_types]))[0]
    return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SENSOR, i) for i in ids]


def _hinge_names(physics: Physics) -> list[str]:
    model = physics.mj_model
    ids = np.nonzero(model.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)[0]
    return [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, i) for i in ids]


def _torso_frame(physics: Physics) -> jax.Array:
    return physics.named.data.xmat["torso"].reshape(3, 3)


def torso_upright(physics: Physics) -> jax.Array:
    """The dot product of the torso's z axis and the global z axis."""
    return physics.named.data.xmat["torso", "zz"]


def torso_velocity(physics: Physics) -> jax.Array:
    """The torso's velocity in its own frame (the velocimeter)."""
    return physics.named.data.sensordata["velocimeter"]


def egocentric_state(physics: Physics) -> jax.Array:
    """The state without global orientation or position: hinges and actuator states."""
    hinges = _hinge_names(physics)
    data = physics.named.data
    return jnp.concatenate([data.qpos[hinges], data.qvel[hinges], physics.data.act])


def toe_positions(physics: Physics) -> jax.Array:
    """Toe positions in the torso's frame (unused by the tasks, as in dm_control)."""
    torso_to_toe = physics.named.data.xpos[_TOES] - physics.named.data.xpos["torso"]
    return torso_to_toe @ _torso_frame(physics)


def force_torque(physics: Physics) -> jax.Array:
    """arcsinh of the toes' force and torque sensors (acceleration stage)."""
    names = _sensor_names(physics, mujoco.mjtSensor.mjSENS_FORCE, mujoco.mjtSensor.mjSENS_TORQUE)
    return jnp.arcsinh(physics.named.data.sensordata[names])


def imu(physics: Physics) -> jax.Array:
    """The accelerometer and gyro, in sensor order."""
    names = _sensor_names(
        physics, mujoco.mjtSensor.mjSENS_GYRO, mujoco.mjtSensor.mjSENS_ACCELEROMETER
    )
    return physics.named.data.sensordata[names]


def rangefinder(physics: Physics) -> jax.Array:
    """tanh of the rangefinders' distances; 1 where a ray hits nothing."""
    names = _sensor_names(physics, mujoco.mjtSensor.mjSENS_RANGEFINDER)
    readings = physics.named.data.sensordata[names]
    return jnp.where(readings == -1.0, 1.0, jnp.tanh(readings))


def origin_distance(physics: Physics) -> jax.Array:
    """Distance from the origin to the workspace."""
    return jnp.linalg.norm(physics.named.data.site_xpos["workspace"])


def origin(physics: Physics) -> jax.Array:
    """The origin's position in the torso's frame."""
    return -physics.named.data.xpos["torso"] @ _torso_frame(physics)


def ball_state(physics: Physics) -> jax.Array:
    """The ball's position and velocity relative to the torso, in its frame."""
    data = physics.named.data
    ball_rel_pos = data.xpos["ball"] - data.xpos["torso"]
    ball_rel_vel = data.qvel["ball_root"][:3] - data.qvel["root"][:3]
    ball_rot_vel = data.qvel["ball_root"][3:]
    state = jnp.stack([ball_rel_pos, ball_rel_vel, ball_rot_vel])
    return (state @ _torso_frame(physics)).ravel()


def target_position(physics: Physics) -> jax.Array:
    """The target's position in the torso's frame."""
    torso_to_target = physics.named.data.site_xpos["target"] - physics.named.data.xpos["torso"]
    return torso_to_target @ _torso_frame(physics)


def ball_to_target_distance(physics: Physics) -> jax.Array:
    """Horizontal distance from the ball to the target."""
    ball_to_target = physics.named.data.site_xpos["target"] - physics.named.data.xpos["ball"]
    return jnp.linalg.norm(ball_to_target[:2])


def self_to_ball_distance(physics: Physics) -> jax.Array:
    """Horizontal distance from the quadruped's workspace to the ball."""
    self_to_ball = physics.named.data.site_xpos["workspace"] - physics.named.data.xpos["ball"]
    return jnp.linalg.norm(self_to_ball[:2])


# ----- resets ---------------------------------------------------------------------------------


def find_non_contacting_height(
    physics: Physics, orientation: jax.Array, x_pos=0.0, y_pos=0.0
) -> Physics:
    """dm_control's `_find_non_contacting_height`: the first height without contacts.

    The torso is placed at (x_pos, y_pos, z) in `orientation`, z = 0, 0.01, 0.02, ...
    accumulated by repeated addition as dm_control's float does, until C's `ncon`
    (`contact_count`) is 0. A contact shallower than the height's own rounding
    (`_HEIGHT_ROUNDING_EPS` epsilons of the dtype: 9.5e-7 m in float32, 1.8e-15 m in
    float64) does not count, and a body left touching is then lifted by that much,
    so that a boundary on the grid resolves in float32 as dm_control's float64
    resolves it: the same height (to 1e-6), and no contact. In float64 at
    dm_control's heights nothing is left to lift. dm_control raises after 10,000 heights (100 m);
    here the loop stops there and keeps the last one. On the C backend C finds the
    contacts from qpos alone, and no height gets MJX's kinematics (the poses come
    back NaN for the reset's C forward pass to compute: `with_kinematics_left_to_c`).

    Returns:
      The physics with that root pose and the kinematics of it.
    """
    on_host = physics.count_contacts is not None
    adr = int(physics.mj_model.jnt_qposadr[physics.names.rows("joint")["root"]])
    dtype = physics.data.qpos.dtype
    orientation = jnp.asarray(orientation, dtype)
    slack = _HEIGHT_ROUNDING_EPS * float(jnp.finfo(dtype).eps)

    def place(z):
        root = jnp.concatenate([jnp.stack([x_pos, y_pos, z]).astype(dtype), orientation])
        qpos = jax.lax.dynamic_update_slice(physics.data.qpos, root, (adr,))
        placed = dataclasses.replace(physics, data=physics.data.replace(qpos=qpos))
        if on_host:
            return physics_lib.with_kinematics_left_to_c(placed)
        # MJX's kinematics writes the normalised quaternion back to qpos (1 ulp here);
        # C's keeps dm_control's quaternion as given.
        data = mjx.kinematics(physics.model, placed.data)
        return dataclasses.replace(physics, data=data.replace(qpos=qpos))

    def attempt(carry):
        z, count, _, _, _ = carry
        placed = place(z)
        # One collision pass per height (on MJX, it dominates the reset's compile).
        ncon, depth = physics_lib.contact_count_and_depth(placed, slack)
        return z + jnp.asarray(_HEIGHT_STEP, dtype), count + 1, ncon, depth, placed.data

    def again(carry):
        _, count, ncon, _, _ = carry
        return (ncon > 0) & (count < _MAX_HEIGHT_ATTEMPTS)

    start = (jnp.zeros((), dtype), jnp.int32(0), jnp.int32(1), jnp.zeros((), dtype), physics.data)
    _, _, _, depth, data = jax.lax.while_loop(again, attempt, start)
    return place(data.qpos[adr + 2] + jnp.where(depth > 0, slack, 0).astype(dtype))


def _random_quaternion(key: jax.Array, dtype) -> jax.Array:
    """dm_control's `randn(4)`, normalised: a uniformly random orientation."""
    orientation = jax.random.normal(key, (4,), dtype)
    return orientation / jnp.linalg.norm(orientation)


@functools.cache
def _bowl_and_zoom(res: int, bump_res: int) -> tuple[np.ndarray, np.ndarray]:
    """The bowl's shape (res x res) and the zoom's matrix Z (res x bump_res).

    SciPy's `zoom(bumps, res / bump_res)` (cubic B-splines, SciPy's defaults) is linear
    in the bumps and separable by axis, so it equals Z @ bumps @ Z.T, where column j of
    Z is the 1-D zoom of the j-th unit vector.
    """
    row_grid, col_grid = np.ogrid[-1 : 1 : res * 1j, -1 : 1 : res * 1j]
    radius = np.clip(np.sqrt(col_grid**2 + row_grid**2), 0.04, 1)
    bowl_shape = 0.5 - np.cos(2 * np.pi * radius) / 2
    zoom = np.stack([ndimage.zoom(e, res / float(bump_res)) for e in np.eye(bump_res)], axis=1)
    if zoom.shape != (res, bump_res):
        raise ValueError(f"zoom to {res} rows gave {zoom.shape[0]}")
    return bowl_shape, zoom


def _terrain_shape(physics: Physics) -> tuple[int, int]:
    """The height field's resolution and the bump grid's (dm_control's asserts)."""
    model = physics.mj_model
    res = int(model.hfield_nrow[_HEIGHTFIELD_ID])
    if res != int(model.hfield_ncol[_HEIGHTFIELD_ID]):
        raise ValueError("escape's height field must be square")
    terrain_size = 2 * float(model.hfield_size[_HEIGHTFIELD_ID, 0])
    return res, int(terrain_size / _TERRAIN_BUMP_SCALE)


def terrain_from_bumps(physics: Physics, bumps: jax.Array) -> jax.Array:
    """The height field's `hfield_data` for a bump grid: the bowl times the zoomed bumps."""
    res, bump_res = _terrain_shape(physics)
    bowl_shape, zoom = _bowl_and_zoom(res, bump_res)
    dtype = bumps.dtype
    zoom = jnp.asarray(zoom, dtype)
    terrain = jnp.asarray(bowl_shape, dtype) * (zoom @ bumps @ zoom.T)
    start = int(physics.mj_model.hfield_adr[_HEIGHTFIELD_ID])
    data = jnp.ravel(physics.model.hfield_data)
    return jax.lax.dynamic_update_slice(data, terrain.ravel().astype(data.dtype), (start,))


def draw_terrain(physics: Physics, key: jax.Array) -> jax.Array:
    """A random bowl-shaped terrain (dm_control's `Escape`): new `hfield_data`."""
    _, bump_res = _terrain_shape(physics)
    dtype = physics.data.qpos.dtype
    bumps = jax.random.uniform(key, (bump_res, bump_res), dtype, _TERRAIN_SMOOTHNESS, 1)
    return terrain_from_bumps(physics, bumps)


# ----- tasks ----------------------------------------------------------------------------------


def _upright_reward(physics: Physics, deviation_angle: float = 0) -> jax.Array:
    """1 when the torso's z axis is within `deviation_angle` of vertical, 0 upside down."""
    deviation = np.cos(np.deg2rad(deviation_angle))
    return rewards.tolerance(
        torso_upright(physics),
        bounds=(deviation, float("inf")),
        sigmoid="linear",
        margin=1 + deviation,
        value_at_margin=0,
    )


def sync_sensors(physics: Physics) -> mjx.Data:
    """The part of `mj_step1` that the quadruped reads beyond the poses.

    Observations read the velocimeter and gyro (velocity stage: `com_pos`, `com_vel`,
    then `sensor_vel`), and the rangefinders (position stage), which MJX casts
    against every geom type but height fields: `physics.rangefinders_with_height_fields`
    adds the terrain. The accelerometer and the toes' force and torque sensors
    (acceleration stage) keep the last substep's values, as dm_control's do.
    """
    model = physics.model
    data = mjx.com_pos(model, physics.data)
    data = mjx.sensor_pos(model, data)
    data = physics_lib.rangefinders_with_height_fields(dataclasses.replace(physics, data=data))
    data = mjx.com_vel(model, data)
    return mjx.sensor_vel(model, data)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Quadruped(Task):
    """What every quadruped task shares: its model edits, sensors and observations."""

    time_limit: float = _DEFAULT_TIME_LIMIT
    control_timestep: float | None = _CONTROL_TIMESTEP

    def sync(self, physics):
        return sync_sensors(physics)

    def common_observations(self, physics: Physics) -> collections.OrderedDict:
        obs = collections.OrderedDict()
        obs["egocentric_state"] = egocentric_state(physics)
        obs["torso_velocity"] = torso_velocity(physics)
        obs["torso_upright"] = torso_upright(physics)
        obs["imu"] = imu(physics)
        obs["force_torque"] = force_torque(physics)
        return obs


@dataclasses.dataclass(frozen=True, kw_only=True)
class Move(_Quadruped):
    """Move forward at `desired_speed` (0: stand upright) on a floor sized to reach."""

    desired_speed: float
    floor_size: float

    def make_model(self):
        return mjcf.quadruped.make_model(floor_size=self.floor_size)

    def initialize_episode(self, physics, key):
        # Initial configuration.
        orientation = _random_quaternion(key, physics.data.qpos.dtype)
        return find_non_contacting_height(physics, orientation), {}

    def get_observation(self, physics, variables):
        return self.common_observations(physics)

    def get_reward(self, physics, variables):
        # Move reward term.
        move_reward = rewards.tolerance(
            torso_velocity(physics)[0],
            bounds=(self.desired_speed, float("inf")),
            margin=self.desired_speed,
            value_at_margin=0.5,
            sigmoid="linear",
        )
        return _upright_reward(physics) * move_reward


@dataclasses.dataclass(frozen=True, kw_only=True)
class Escape(_Quadruped):
    """Escape a bowl of random bumpy terrain, drawn anew at every reset."""

    episode_model_fields: ClassVar[tuple[str, ...]] = ("hfield_data",)

    def make_model(self):
        return mjcf.quadruped.make_model(floor_size=40, terrain=True, rangefinders=True)

    def initialize_episode(self, physics, key):
        terrain_key, orientation_key = jax.random.split(key)
        physics = physics.with_model(hfield_data=draw_terrain(physics, terrain_key))
        # Initial configuration.
        orientation = _random_quaternion(orientation_key, physics.data.qpos.dtype)
        return find_non_contacting_height(physics, orientation), {}

    def get_observation(self, physics, variables):
        obs = self.common_observations(physics)
        obs["origin"] = origin(physics)
        obs["rangefinder"] = rangefinder(physics)
        return obs

    def get_reward(self, physics, variables):
        # Escape reward term.
        terrain_size = float(physics.mj_model.hfield_size[_HEIGHTFIELD_ID, 0])
        escape_reward = rewards.tolerance(
            origin_distance(physics),
            bounds=(terrain_size, float("inf")),
            margin=terrain_size,
            value_at_margin=0,
            sigmoid="linear",
        )
        return _upright_reward(physics, deviation_angle=20) * escape_reward


@dataclasses.dataclass(frozen=True, kw_only=True)
class Fetch(_Quadruped):
    """Bring the ball to the target at the arena's centre."""

    def make_model(self):
        return mjcf.quadruped.make_model(walls_and_ball=True)

    def initialize_episode(self, physics, key):
        azimuth_key, xy_key, ball_key, ball_vel_key = jax.random.split(key, 4)
        dtype = physics.data.qpos.dtype
        # Initial configuration, random azimuth and horizontal position.
        azimuth = jax.random.uniform(azimuth_key, (), dtype, 0, 2 * np.pi)
        zero = jnp.zeros((), dtype)
        orientation = jnp.stack([jnp.cos(azimuth / 2), zero, zero, jnp.sin(azimuth / 2)])
        spawn_radius = 0.9 * float(physics.named.mj_model.geom_size["floor", 0])
        x_pos, y_pos = jax.random.uniform(xy_key, (2,), dtype, -spawn_radius, spawn_radius)
        physics = find_non_contacting_height(physics, orientation, x_pos, y_pos)

        # Initial ball state.
        ball_xy = jax.random.uniform(ball_key, (2,), dtype, -spawn_radius, spawn_radius)
        qpos = physics.named.data.qpos.at["ball_root"].set(
            jnp.concatenate(
                [ball_xy, jnp.full((1,), 2, dtype), physics.named.data.qpos["ball_root"][3:]]
            )
        )
        qvel = physics.named.data.qvel.at["ball_root"].set(
            jnp.concatenate(
                [
                    5 * jax.random.normal(ball_vel_key, (2,), dtype),
                    physics.named.data.qvel["ball_root"][2:],
                ]
            )
        )
        return physics.with_data(qpos=qpos.array, qvel=qvel.array), {}

    def get_observation(self, physics, variables):
        obs = self.common_observations(physics)
        obs["ball_state"] = ball_state(physics)
        obs["target_position"] = target_position(physics)
        return obs

    def get_reward(self, physics, variables):
        # Reward for moving close to the ball.
        arena_radius = float(physics.named.mj_model.geom_size["floor", 0]) * np.sqrt(2)
        workspace_radius = float(physics.named.mj_model.site_size["workspace", 0])
        ball_radius = float(physics.named.mj_model.geom_size["ball", 0])
        reach_reward = rewards.tolerance(
            self_to_ball_distance(physics),
            bounds=(0, workspace_radius + ball_radius),
            sigmoid="linear",
            margin=arena_radius,
            value_at_margin=0,
        )
        # Reward for bringing the ball to the target.
        target_radius = float(physics.named.mj_model.site_size["target", 0])
        fetch_reward = rewards.tolerance(
            ball_to_target_distance(physics),
            bounds=(0, target_radius),
            sigmoid="linear",
            margin=arena_radius,
            value_at_margin=0,
        )
        reach_then_fetch = reach_reward * (0.5 + 0.5 * fetch_reward)
        return _upright_reward(physics) * reach_then_fetch


REGISTRY.add(
    "quadruped",
    "walk",
    Move(desired_speed=_WALK_SPEED, floor_size=_DEFAULT_TIME_LIMIT * _WALK_SPEED),
)
REGISTRY.add(
    "quadruped",
    "run",
    Move(desired_speed=_RUN_SPEED, floor_size=_DEFAULT_TIME_LIMIT * _RUN_SPEED),
)
REGISTRY.add("quadruped", "escape", Escape())
REGISTRY.add("quadruped", "fetch", Fetch())

"""Humanoid: a free-floating, 21-motor capsule humanoid with touch and force sensors.

A torso with a head, a two-part abdomen and a pelvis carrying two legs
(three-hinge hips, knees, two-hinge ankles with split-toe feet), and two arms
(two-hinge shoulders, elbows). Touch sites cover every limb; force-torque
sites at the root, hips, knees and ankles carry the IMU and force sensors.
"""

from __future__ import annotations

from typing import Any

import mujoco

from jaxcontrol.mjcf import common

_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_BOX = mujoco.mjtGeom.mjGEOM_BOX
_XYAXES = mujoco.mjtOrientation.mjORIENTATION_XYAXES
_ZAXIS = mujoco.mjtOrientation.mjORIENTATION_ZAXIS
_TRACKCOM = mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM

# The "body" class (childclass of the whole humanoid): frictional capsules
# without torsional or rolling friction, soft limited hinges, hidden sites.
_GEOM = {
    "type": _CAPSULE,
    "condim": 1,
    "friction": (0.7, 0.005, 0.0001),
    "solimp": (0.9, 0.99, 0.003, 0.5, 2),
    "solref": (0.015, 1),
    "material": "self",
}
_JOINT = {
    "type": mujoco.mjtJoint.mjJNT_HINGE,
    "damping": (0.2, 0, 0),
    "stiffness": (1, 0, 0),
    "armature": 0.01,
    "limited": mujoco.mjtLimited.mjLIMITED_TRUE,
    "solimp_limit": (0, 0.99, 0.01, 0.5, 2),
}
_SITE = {"size": (0.04, 0.005, 0.005), "group": 3}
# Its subclasses: stronger joints, and the force-torque and touch sites.
_BIG_JOINT = {**_JOINT, "damping": (5, 0, 0), "stiffness": (10, 0, 0)}
_BIG_STIFF_JOINT = {**_BIG_JOINT, "stiffness": (20, 0, 0)}
_FORCE_TORQUE_SITE = {**_SITE, "type": _BOX, "size": (0.01, 0.01, 0.02), "rgba": (1, 0, 0, 1)}
_TOUCH_SITE = {**_SITE, "type": _CAPSULE, "rgba": (0, 0, 1, 0.3)}

# Per side, the y sign of the (mirror-symmetric) limb positions.
_SIGN = {"right": -1, "left": 1}
# Per side, the hip joints: name suffix, axis, range, class.
_HIP_JOINTS = {
    "right": (
        ("hip_x", (1, 0, 0), (-25, 5), _BIG_JOINT),
        ("hip_z", (0, 0, 1), (-60, 35), _BIG_JOINT),
        ("hip_y", (0, 1, 0), (-110, 20), _BIG_STIFF_JOINT),
    ),
    "left": (
        ("hip_x", (-1, 0, 0), (-25, 5), _BIG_JOINT),
        ("hip_z", (0, 0, -1), (-60, 35), _BIG_JOINT),
        ("hip_y", (0, 1, 0), (-120, 20), _BIG_STIFF_JOINT),
    ),
}
# Ankle joints (both sides): name suffix, position, axis, stiffness.
_ANKLE_JOINTS = (
    ("ankle_y", (0, 0, 0.08), (0, 1, 0), 6),
    ("ankle_x", (0, 0, 0.04), (1, 0, 0.5), 3),
)
# Per side, the shoulder joints (name suffix, axis, range) and the elbow axis.
_SHOULDER_JOINTS = {
    "right": (("shoulder1", (2, 1, 1), (-85, 60)), ("shoulder2", (0, -1, 1), (-85, 60))),
    "left": (("shoulder1", (2, -1, 1), (-60, 85)), ("shoulder2", (0, 1, 1), (-60, 85))),
}
_ELBOW_AXIS = {"right": (0, -1, 1), "left": (0, -1, -1)}
# Motors: name (= joint), gear.
_MOTORS = (
    ("abdomen_y", 40),
    ("abdomen_z", 40),
    ("abdomen_x", 40),
    ("right_hip_x", 40),
    ("right_hip_z", 40),
    ("right_hip_y", 120),
    ("right_knee", 80),
    ("right_ankle_x", 20),
    ("right_ankle_y", 20),
    ("left_hip_x", 40),
    ("left_hip_z", 40),
    ("left_hip_y", 120),
    ("left_knee", 80),
    ("left_ankle_x", 20),
    ("left_ankle_y", 20),
    ("right_shoulder1", 20),
    ("right_shoulder2", 20),
    ("right_elbow", 40),
    ("left_shoulder1", 20),
    ("left_shoulder2", 20),
    ("left_elbow", 40),
)
# Force and torque sensors are on these force-torque sites, in this order.
_FORCE_TORQUE_SITES = ("ankle", "knee", "hip")
# Touch sensors: "<site>_touch" for each touch site, in site order.
_TOUCH_SITES = (
    "torso",
    "head",
    "lower_waist",
    "butt",
    "right_thigh",
    "right_shin",
    "right_right_foot",
    "left_right_foot",
    "left_thigh",
    "left_shin",
    "right_left_foot",
    "left_left_foot",
    "right_upper_arm",
    "right_lower_arm",
    "right_hand",
    "left_upper_arm",
    "left_lower_arm",
    "left_hand",
)


def _geom(body: mujoco.MjsBody, **kwargs: Any) -> mujoco.MjsGeom:
    """Adds a "body" geom (a capsule unless `type` is given)."""
    return body.add_geom(**{**_GEOM, **kwargs})


def _joint(body: mujoco.MjsBody, cls: dict[str, Any] = _JOINT, **kwargs: Any) -> mujoco.MjsJoint:
    """Adds a joint with the defaults of the joint class `cls`, overridden by `kwargs`."""
    return body.add_joint(**{**cls, **kwargs})


def _site(
    body: mujoco.MjsBody, cls: dict[str, Any], zaxis: tuple | None = None, **kwargs: Any
) -> mujoco.MjsSite:
    """Adds a site of class `cls`, its z axis along `zaxis` if given."""
    site = body.add_site(**{**cls, **kwargs})
    if zaxis is not None:
        site.alt.type = _ZAXIS
        site.alt.zaxis = zaxis
    return site


def _capsule_touch(
    body: mujoco.MjsBody, name: str, radius: float, half_length: float, **kwargs: Any
) -> mujoco.MjsSite:
    """Adds a capsule touch site; its unset third size stays the class default."""
    return _site(body, _TOUCH_SITE, name=name, size=(radius, half_length, 0.005), **kwargs)


def _sphere_touch(body: mujoco.MjsBody, name: str, radius: float) -> mujoco.MjsSite:
    """Adds a sphere touch site; its unset sizes stay the class defaults."""
    return _site(body, _TOUCH_SITE, name=name, type=_SPHERE, size=(radius, 0.005, 0.005))


def _add_torso(world: mujoco.MjsBody) -> mujoco.MjsBody:
    """Adds the free-floating torso with its light, cameras, root site and head."""
    torso = world.add_body(name="torso", pos=(0, 0, 1.5))
    torso.add_light(name="top", pos=(0, 0, 2), mode=_TRACKCOM)
    for name, pos, xyaxes in (
        ("back", (-3, 0, 1), (0, -1, 0, 1, 0, 2)),
        ("side", (0, -3, 1), (1, 0, 0, 0, 1, 2)),
    ):
        camera = torso.add_camera(name=name, pos=pos, mode=_TRACKCOM)
        camera.alt.type = _XYAXES
        camera.alt.xyaxes = xyaxes
    torso.add_freejoint(name="root")
    _site(torso, _FORCE_TORQUE_SITE, name="root")
    _geom(torso, name="torso", fromto=(0, -0.07, 0, 0, 0.07, 0), size=(0.07, 0, 0))
    _geom(
        torso,
        name="upper_waist",
        fromto=(-0.01, -0.06, -0.12, -0.01, 0.06, -0.12),
        size=(0.06, 0, 0),
    )
    _site(torso, _TOUCH_SITE, name="torso", type=_BOX, pos=(0, 0, -0.05), size=(0.075, 0.14, 0.13))

    head = torso.add_body(name="head", pos=(0, 0, 0.19))
    _geom(head, name="head", type=_SPHERE, size=(0.09, 0, 0))
    _sphere_touch(head, "head", 0.091)
    egocentric = head.add_camera(name="egocentric", pos=(0.09, 0, 0), fovy=80)
    egocentric.alt.type = _XYAXES
    egocentric.alt.xyaxes = (0, -1, 0, 0.1, 0, 1)
    return torso


def _add_abdomen(torso: mujoco.MjsBody) -> mujoco.MjsBody:
    """Adds the lower waist and the pelvis below it; returns the pelvis."""
    waist = torso.add_body(name="lower_waist", pos=(-0.01, 0, -0.26), quat=(1, 0, -0.002, 0))
    _geom(waist, name="lower_waist", fromto=(0, -0.06, 0, 0, 0.06, 0), size=(0.06, 0, 0))
    _capsule_touch(waist, "lower_waist", 0.061, 0.06, zaxis=(0, 1, 0))
    _joint(
        waist,
        _BIG_STIFF_JOINT,
        name="abdomen_z",
        pos=(0, 0, 0.065),
        axis=(0, 0, 1),
        range=(-45, 45),
    )
    _joint(waist, _BIG_JOINT, name="abdomen_y", pos=(0, 0, 0.065), axis=(0, 1, 0), range=(-75, 30))

    pelvis = waist.add_body(name="pelvis", pos=(0, 0, -0.165), quat=(1, 0, -0.002, 0))
    _joint(pelvis, _BIG_JOINT, name="abdomen_x", pos=(0, 0, 0.1), axis=(1, 0, 0), range=(-35, 35))
    _geom(pelvis, name="butt", fromto=(-0.02, -0.07, 0, -0.02, 0.07, 0), size=(0.09, 0, 0))
    _capsule_touch(pelvis, "butt", 0.091, 0.07, pos=(-0.02, 0, 0), zaxis=(0, 1, 0))
    return pelvis


def _add_leg(pelvis: mujoco.MjsBody, side: str) -> None:
    """Adds the `side` ("right" or "left") thigh, shin and two-toed foot."""
    y = _SIGN[side]
    other = "left" if side == "right" else "right"
    thigh = pelvis.add_body(name=f"{side}_thigh", pos=(0, 0.1 * y, -0.04))
    _site(thigh, _FORCE_TORQUE_SITE, name=f"{side}_hip")
    for suffix, axis, joint_range, cls in _HIP_JOINTS[side]:
        _joint(thigh, cls, name=f"{side}_{suffix}", axis=axis, range=joint_range)
    _geom(thigh, name=f"{side}_thigh", fromto=(0, 0, 0, 0, -0.01 * y, -0.34), size=(0.06, 0, 0))
    _capsule_touch(
        thigh, f"{side}_thigh", 0.061, 0.17, pos=(0, -0.005 * y, -0.17), zaxis=(0, y, 34)
    )

    shin = thigh.add_body(name=f"{side}_shin", pos=(0, -0.01 * y, -0.403))
    _site(shin, _FORCE_TORQUE_SITE, name=f"{side}_knee", pos=(0, 0, 0.02))
    _joint(shin, name=f"{side}_knee", pos=(0, 0, 0.02), axis=(0, -1, 0), range=(-160, 2))
    _geom(shin, name=f"{side}_shin", fromto=(0, 0, 0, 0, 0, -0.3), size=(0.049, 0, 0))
    _capsule_touch(shin, f"{side}_shin", 0.05, 0.15, pos=(0, 0, -0.15))

    foot = shin.add_body(name=f"{side}_foot", pos=(0, 0, -0.39))
    _site(foot, _FORCE_TORQUE_SITE, name=f"{side}_ankle")
    for suffix, pos, axis, stiffness in _ANKLE_JOINTS:
        _joint(
            foot,
            name=f"{side}_{suffix}",
            pos=pos,
            axis=axis,
            range=(-50, 50),
            stiffness=(stiffness, 0, 0),
        )
    # Toe geoms: the outer toe, then the inner one.
    outer, inner = f"{side}_{side}_foot", f"{other}_{side}_foot"
    _geom(foot, name=outer, fromto=(-0.07, 0.02 * y, 0, 0.14, 0.04 * y, 0), size=(0.027, 0, 0))
    _geom(foot, name=inner, fromto=(-0.07, 0, 0, 0.14, -0.02 * y, 0), size=(0.027, 0, 0))
    # Toe touch sites: the right toe (smaller y), then the left one.
    toes = [(outer, 0.03 * y, 2 * y), (inner, -0.01 * y, -2 * y)]
    for name, toe_y, slant in sorted(toes, key=lambda toe: toe[1]):
        _capsule_touch(foot, name, 0.03, 0.11, pos=(0.035, toe_y, 0), zaxis=(21, slant, 0))


def _add_arm(torso: mujoco.MjsBody, side: str) -> None:
    """Adds the `side` ("right" or "left") upper arm, lower arm and hand."""
    y = _SIGN[side]
    upper = torso.add_body(name=f"{side}_upper_arm", pos=(0, 0.17 * y, 0.06))
    for suffix, axis, joint_range in _SHOULDER_JOINTS[side]:
        _joint(upper, name=f"{side}_{suffix}", axis=axis, range=joint_range)
    _geom(
        upper,
        name=f"{side}_upper_arm",
        fromto=(0, 0, 0, 0.16, 0.16 * y, -0.16),
        size=(0.04, 0.16, 0),
    )
    _capsule_touch(
        upper, f"{side}_upper_arm", 0.041, 0.14, pos=(0.08, 0.08 * y, -0.08), zaxis=(1, y, -1)
    )

    lower = upper.add_body(name=f"{side}_lower_arm", pos=(0.18, 0.18 * y, -0.18))
    _joint(
        lower,
        name=f"{side}_elbow",
        axis=_ELBOW_AXIS[side],
        range=(-90, 50),
        stiffness=(0, 0, 0),
    )
    _geom(
        lower,
        name=f"{side}_lower_arm",
        fromto=(0.01, -0.01 * y, 0.01, 0.17, -0.17 * y, 0.17),
        size=(0.031, 0, 0),
    )
    _capsule_touch(
        lower, f"{side}_lower_arm", 0.032, 0.14, pos=(0.09, -0.09 * y, 0.09), zaxis=(1, -y, 1)
    )

    hand = lower.add_body(name=f"{side}_hand", pos=(0.18, -0.18 * y, 0.18))
    _geom(hand, name=f"{side}_hand", type=_SPHERE, size=(0.04, 0, 0))
    _sphere_touch(hand, f"{side}_hand", 0.041)


def _add_sensors(spec: mujoco.MjSpec) -> None:
    """Adds the torso velocity and IMU, force-torque and touch sensors."""
    site = mujoco.mjtObj.mjOBJ_SITE
    spec.add_sensor(
        name="torso_subtreelinvel",
        type=mujoco.mjtSensor.mjSENS_SUBTREELINVEL,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        objname="torso",
    )
    for name, sensor_type in (
        ("torso_accel", mujoco.mjtSensor.mjSENS_ACCELEROMETER),
        ("torso_vel", mujoco.mjtSensor.mjSENS_VELOCIMETER),
        ("torso_gyro", mujoco.mjtSensor.mjSENS_GYRO),
    ):
        spec.add_sensor(name=name, type=sensor_type, objtype=site, objname="root")
    for quantity, sensor_type in (
        ("force", mujoco.mjtSensor.mjSENS_FORCE),
        ("torque", mujoco.mjtSensor.mjSENS_TORQUE),
    ):
        for joint in _FORCE_TORQUE_SITES:
            for side in ("left", "right"):
                name = f"{side}_{joint}"
                spec.add_sensor(
                    name=f"{name}_{quantity}", type=sensor_type, objtype=site, objname=name
                )
    for name in _TOUCH_SITES:
        spec.add_sensor(
            name=f"{name}_touch", type=mujoco.mjtSensor.mjSENS_TOUCH, objtype=site, objname=name
        )


def make_spec() -> mujoco.MjSpec:
    """Returns the humanoid spec."""
    spec = common.new_spec("humanoid")
    spec.stat.extent = 2
    spec.stat.center = (0, 0, 1)
    spec.option.timestep = 0.005

    world = spec.worldbody
    world.add_geom(
        name="floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        conaffinity=1,
        size=(100, 100, 0.2),
        material="grid",
    )
    torso = _add_torso(world)
    pelvis = _add_abdomen(torso)
    for side in ("right", "left"):
        _add_leg(pelvis, side)
    for side in ("right", "left"):
        _add_arm(torso, side)

    for name, gear in _MOTORS:
        motor = spec.add_actuator(name=name, target=name)
        motor.set_to_motor()
        motor.trntype = mujoco.mjtTrn.mjTRN_JOINT
        motor.gear[0] = gear
        motor.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        motor.ctrlrange = (-1, 1)
    _add_sensors(spec)
    return spec


def make_model() -> mujoco.MjModel:
    """Returns the compiled humanoid model."""
    return common.compile_spec(make_spec())

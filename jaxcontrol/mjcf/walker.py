"""Planar walker: a capsule torso on two legs of thigh, leg and foot capsules.

The torso slides in z and x and hinges about y; hips, knees and ankles are
damped, limited hinges about -y, each driven by a motor.
"""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_SLIDE = mujoco.mjtJoint.mjJNT_SLIDE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_ZAXIS = mujoco.mjtOrientation.mjORIENTATION_ZAXIS
_TRACKCOM = mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
_LIMITED = mujoco.mjtLimited.mjLIMITED_TRUE

# The main default class: damped, limited joints with soft limits; geoms
# that collide only with the floor.
_JOINT = {
    "damping": (0.1, 0, 0),
    "armature": 0.01,
    "limited": _LIMITED,
    "solimp_limit": (0, 0.99, 0.01, 0.5, 2),
}
_GEOM = {"contype": 1, "conaffinity": 0, "friction": (0.7, 0.1, 0.1)}
# The "walker" class (a child of main): -y hinges and "self" capsules.
_WALKER_JOINT = {**_JOINT, "axis": (0, -1, 0)}
_WALKER_GEOM = {**_GEOM, "type": _CAPSULE, "material": "self"}
# Root joints: name, type, axis.
_ROOT_JOINTS = (
    ("rootz", _SLIDE, (0, 0, 1)),
    ("rootx", _SLIDE, (1, 0, 0)),
    ("rooty", _HINGE, (0, 1, 0)),
)
# Motors: name (= joint), gear.
_MOTORS = (
    ("right_hip", 100),
    ("right_knee", 50),
    ("right_ankle", 20),
    ("left_hip", 100),
    ("left_knee", 50),
    ("left_ankle", 20),
)


def _joint(body: mujoco.MjsBody, **kwargs) -> mujoco.MjsJoint:
    """Adds a "walker" joint, overridden by `kwargs`."""
    return body.add_joint(**{**_WALKER_JOINT, **kwargs})


def _geom(body: mujoco.MjsBody, zaxis: tuple | None = None, **kwargs) -> mujoco.MjsGeom:
    """Adds a "walker" capsule, its z axis along `zaxis` if given."""
    geom = body.add_geom(**{**_WALKER_GEOM, **kwargs})
    if zaxis is not None:
        geom.alt.type = _ZAXIS
        geom.alt.zaxis = zaxis
    return geom


def _add_torso(world: mujoco.MjsBody) -> mujoco.MjsBody:
    """Adds the torso with its tracking light and cameras and root joints."""
    torso = world.add_body(name="torso", pos=(0, 0, 1.3))
    torso.add_light(name="light", pos=(0, 0, 2), mode=_TRACKCOM)
    side = torso.add_camera(name="side", pos=(0, -2, 0.7), mode=_TRACKCOM)
    side.alt.type = mujoco.mjtOrientation.mjORIENTATION_EULER
    side.alt.euler = (60, 0, 0)
    back = torso.add_camera(name="back", pos=(-2, 0, 0.5), mode=_TRACKCOM)
    back.alt.type = mujoco.mjtOrientation.mjORIENTATION_XYAXES
    back.alt.xyaxes = (0, -1, 0, 1, 0, 3)
    for name, joint_type, axis in _ROOT_JOINTS:
        _joint(
            torso,
            name=name,
            type=joint_type,
            axis=axis,
            limited=mujoco.mjtLimited.mjLIMITED_FALSE,
            armature=0,
            damping=(0, 0, 0),
        )
    _geom(torso, name="torso", size=(0.07, 0.3, 0))
    return torso


def _add_leg(torso: mujoco.MjsBody, side: str, y: float) -> None:
    """Adds the `side` ("right" or "left") thigh, leg and foot at lateral offset `y`."""
    thigh = torso.add_body(name=f"{side}_thigh", pos=(0, y, -0.3))
    _joint(thigh, name=f"{side}_hip", range=(-20, 100))
    _geom(thigh, name=f"{side}_thigh", pos=(0, 0, -0.225), size=(0.05, 0.225, 0))
    leg = thigh.add_body(name=f"{side}_leg", pos=(0, 0, -0.7))
    _joint(leg, name=f"{side}_knee", pos=(0, 0, 0.25), range=(-150, 0))
    _geom(leg, name=f"{side}_leg", size=(0.04, 0.25, 0))
    foot = leg.add_body(name=f"{side}_foot", pos=(0.06, 0, -0.25))
    _joint(foot, name=f"{side}_ankle", pos=(-0.06, 0, 0), range=(-45, 45))
    _geom(foot, name=f"{side}_foot", zaxis=(1, 0, 0), size=(0.05, 0.1, 0))


def make_spec() -> mujoco.MjSpec:
    """Returns the walker spec."""
    spec = common.new_spec("planar walker")
    spec.option.timestep = 0.0025
    spec.stat.extent = 2
    spec.stat.center = (0, 0, 1)

    world = spec.worldbody
    floor = world.add_geom(
        **{
            **_GEOM,
            "name": "floor",
            "type": mujoco.mjtGeom.mjGEOM_PLANE,
            "conaffinity": 1,
            "pos": (248, 0, 0),
            "size": (250, 0.8, 0.2),
            "material": "grid",
        }
    )
    floor.alt.type = _ZAXIS
    floor.alt.zaxis = (0, 0, 1)
    torso = _add_torso(world)
    _add_leg(torso, "right", -0.05)
    _add_leg(torso, "left", 0.05)

    spec.add_sensor(
        name="torso_subtreelinvel",
        type=mujoco.mjtSensor.mjSENS_SUBTREELINVEL,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        objname="torso",
    )
    for name, gear in _MOTORS:
        motor = spec.add_actuator(name=name, target=name)
        motor.set_to_motor()
        motor.trntype = mujoco.mjtTrn.mjTRN_JOINT
        motor.gear[0] = gear
        motor.ctrllimited = _LIMITED
        motor.ctrlrange = (-1, 1)
    return spec


def make_model() -> mujoco.MjModel:
    """Returns the compiled walker model."""
    return common.compile_spec(make_spec())

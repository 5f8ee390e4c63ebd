"""Planar hopper: a one-legged chain of torso, pelvis, thigh, calf and foot capsules.

The torso slides in x and z and hinges about y; waist, hip, knee and ankle
are damped, limited y-hinges driven by motors. Touch sensors sit at the toe
and the heel.
"""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_SLIDE = mujoco.mjtJoint.mjJNT_SLIDE
_TRACKCOM = mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
_LIMITED = mujoco.mjtLimited.mjLIMITED_TRUE

# The "hopper" class: damped, limited y-hinges, "self" capsules, sphere sites.
_JOINT = {
    "type": _HINGE,
    "axis": (0, 1, 0),
    "limited": _LIMITED,
    "damping": (0.05, 0, 0),
    "armature": 0.2,
}
_GEOM = {"type": mujoco.mjtGeom.mjGEOM_CAPSULE, "material": "self"}
_SITE = {"type": mujoco.mjtGeom.mjGEOM_SPHERE, "size": (0.05, 0.005, 0.005), "group": 3}
# The "free" class (a sibling of "hopper"): unlimited, passive root joints.
_FREE_JOINT = {
    "limited": mujoco.mjtLimited.mjLIMITED_FALSE,
    "damping": (0, 0, 0),
    "armature": 0,
    "stiffness": (0, 0, 0),
}
# Root joints: name, type, axis.
_ROOT_JOINTS = (
    ("rootx", _SLIDE, (1, 0, 0)),
    ("rootz", _SLIDE, (0, 0, 1)),
    ("rooty", _HINGE, (0, 1, 0)),
)
# Leg links, each a child of the previous one: body name, body position,
# joint name, joint range, capsule fromto, capsule radius.
_LINKS = (
    ("pelvis", (0, 0, -0.05), "waist", (-30, 30), (0, 0, 0, 0, 0, -0.15), 0.065),
    ("thigh", (0, 0, -0.2), "hip", (-170, 10), (0, 0, 0, 0, 0, -0.33), 0.04),
    ("calf", (0, 0, -0.33), "knee", (5, 150), (0, 0, 0, 0, 0, -0.32), 0.03),
    ("foot", (0, 0, -0.32), "ankle", (-45, 45), (-0.08, 0, 0, 0.17, 0, 0), 0.04),
)
# Touch sites on the foot: name, position.
_TOUCH_SITES = (("touch_toe", (0.17, 0, 0)), ("touch_heel", (-0.08, 0, 0)))
# Motors: name (= joint), gear.
_MOTORS = (("waist", 30), ("hip", 40), ("knee", 30), ("ankle", 10))


def _geom(body: mujoco.MjsBody, name: str, fromto: tuple, radius: float) -> mujoco.MjsGeom:
    """Adds a "hopper" capsule spanning `fromto`."""
    return body.add_geom(**_GEOM, name=name, fromto=fromto, size=(radius, 0, 0))


def _add_cameras(world: mujoco.MjsBody) -> None:
    """Adds the side and back cameras, both tracking the centre of mass."""
    cam0 = world.add_camera(name="cam0", pos=(0, -2.8, 0.8), mode=_TRACKCOM)
    cam0.alt.type = mujoco.mjtOrientation.mjORIENTATION_EULER
    cam0.alt.euler = (90, 0, 0)
    back = world.add_camera(name="back", pos=(-2, -0.2, 1.2), mode=_TRACKCOM)
    back.alt.type = mujoco.mjtOrientation.mjORIENTATION_XYAXES
    back.alt.xyaxes = (0.2, -1, 0, 0.5, 0, 2)


def _add_hopper(world: mujoco.MjsBody) -> None:
    """Adds the torso with its root joints, then the leg chain down to the foot."""
    torso = world.add_body(name="torso", pos=(0, 0, 1))
    torso.add_light(name="top", pos=(0, 0, 2), mode=_TRACKCOM)
    for name, joint_type, axis in _ROOT_JOINTS:
        torso.add_joint(**_FREE_JOINT, name=name, type=joint_type, axis=axis)
    _geom(torso, "torso", (0, 0, -0.05, 0, 0, 0.2), 0.0653)
    _geom(torso, "nose", (0.08, 0, 0.13, 0.15, 0, 0.14), 0.03)
    parent = torso
    for name, pos, joint, joint_range, fromto, radius in _LINKS:
        parent = parent.add_body(name=name, pos=pos)
        parent.add_joint(**_JOINT, name=joint, range=joint_range)
        _geom(parent, name, fromto, radius)
    for name, pos in _TOUCH_SITES:
        parent.add_site(**_SITE, name=name, pos=pos)


def make_spec() -> mujoco.MjSpec:
    """Returns the hopper spec."""
    spec = common.new_spec("planar hopper")
    spec.stat.extent = 2
    spec.stat.center = (0, 0, 0.5)
    spec.option.timestep = 0.005

    world = spec.worldbody
    _add_cameras(world)
    world.add_geom(
        name="floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        conaffinity=1,
        pos=(48, 0, 0),
        size=(50, 1, 0.2),
        material="grid",
    )
    _add_hopper(world)

    spec.add_sensor(
        name="torso_subtreelinvel",
        type=mujoco.mjtSensor.mjSENS_SUBTREELINVEL,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        objname="torso",
    )
    for name, _ in _TOUCH_SITES:
        spec.add_sensor(
            name=name,
            type=mujoco.mjtSensor.mjSENS_TOUCH,
            objtype=mujoco.mjtObj.mjOBJ_SITE,
            objname=name,
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
    """Returns the compiled hopper model."""
    return common.compile_spec(make_spec())

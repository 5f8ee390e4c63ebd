"""Planar cheetah: a capsule torso and head on two three-link legs, 14 kg in all.

The torso slides in x and z and hinges about y; each leg's thigh, shin and
foot hinge about y on stiff, damped, limited joints driven by motors.
"""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_SLIDE = mujoco.mjtJoint.mjJNT_SLIDE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_EULER = mujoco.mjtOrientation.mjORIENTATION_EULER
_XYAXES = mujoco.mjtOrientation.mjORIENTATION_XYAXES
_TRACKCOM = mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
_LIMITED = mujoco.mjtLimited.mjLIMITED_TRUE
_UNLIMITED = mujoco.mjtLimited.mjLIMITED_FALSE

# The "cheetah" class: stiff, damped, limited y-hinges and frictional capsules.
_JOINT = {
    "type": _HINGE,
    "axis": (0, 1, 0),
    "limited": _LIMITED,
    "damping": (0.01, 0, 0),
    "armature": 0.1,
    "stiffness": (8, 0, 0),
}
_GEOM = {
    "type": _CAPSULE,
    "contype": 1,
    "conaffinity": 1,
    "condim": 3,
    "friction": (0.4, 0.1, 0.1),
    "material": "self",
}
# The "free" class (a sibling of "cheetah"): unlimited, passive root joints.
_FREE_JOINT = {"limited": _UNLIMITED, "damping": (0, 0, 0), "armature": 0, "stiffness": (0, 0, 0)}
# Root joints: name, type, axis.
_ROOT_JOINTS = (
    ("rootx", _SLIDE, (1, 0, 0)),
    ("rootz", _SLIDE, (0, 0, 1)),
    ("rooty", _HINGE, (0, 1, 0)),
)
# Leg links, each a child of the previous one within its leg: name (of body,
# joint and geom), body position, joint range, stiffness, damping, geom
# position, geom euler (about y, degrees), capsule half-length.
_LEGS = (
    (
        ("bthigh", (-0.5, 0, 0), (-30, 60), 240, 6, (0.1, 0, -0.13), -218, 0.145),
        ("bshin", (0.16, 0, -0.25), (-50, 50), 180, 4.5, (-0.14, 0, -0.07), -116, 0.15),
        ("bfoot", (-0.28, 0, -0.14), (-230, 50), 120, 3, (0.03, 0, -0.097), -15, 0.094),
    ),
    (
        ("fthigh", (0.5, 0, 0), (-57, 0.4), 180, 4.5, (-0.07, 0, -0.12), 30, 0.133),
        ("fshin", (-0.14, 0, -0.24), (-70, 50), 120, 3, (0.065, 0, -0.09), -34, 0.106),
        ("ffoot", (0.13, 0, -0.18), (-28, 28), 60, 1.5, (0.045, 0, -0.07), -34, 0.07),
    ),
)
_RADIUS = 0.046
# Motors: name (= joint), gear.
_MOTORS = (
    ("bthigh", 120),
    ("bshin", 90),
    ("bfoot", 60),
    ("fthigh", 90),
    ("fshin", 60),
    ("ffoot", 30),
)


def _geom(body: mujoco.MjsBody, pitch: float | None = None, **kwargs) -> mujoco.MjsGeom:
    """Adds a "cheetah" capsule, pitched by `pitch` degrees about y if given."""
    geom = body.add_geom(**{**_GEOM, **kwargs})
    if pitch is not None:
        geom.alt.type = _EULER
        geom.alt.euler = (0, pitch, 0)
    return geom


def _add_torso(world: mujoco.MjsBody) -> mujoco.MjsBody:
    """Adds the torso with its tracking light and cameras, root joints and head."""
    torso = world.add_body(name="torso", pos=(0, 0, 0.7))
    torso.add_light(name="light", pos=(0, 0, 2), mode=_TRACKCOM)
    torso.add_camera(name="side", pos=(0, -3, 0), quat=(0.707, 0.707, 0, 0), mode=_TRACKCOM)
    back = torso.add_camera(name="back", pos=(-1.8, -1.3, 0.8), mode=_TRACKCOM)
    back.alt.type = _XYAXES
    back.alt.xyaxes = (0.45, -0.9, 0, 0.3, 0.15, 0.94)
    for name, joint_type, axis in _ROOT_JOINTS:
        torso.add_joint(**{**_JOINT, **_FREE_JOINT, "name": name, "type": joint_type, "axis": axis})
    _geom(torso, name="torso", fromto=(-0.5, 0, 0, 0.5, 0, 0), size=(_RADIUS, 0, 0))
    _geom(torso, name="head", pos=(0.6, 0, 0.1), pitch=50, size=(_RADIUS, 0.15, 0))
    return torso


def _add_leg(torso: mujoco.MjsBody, links: tuple) -> None:
    """Adds one leg's chain of `links` (see `_LEGS`) below the torso."""
    parent = torso
    for name, pos, joint_range, stiffness, damping, geom_pos, pitch, half_length in links:
        parent = parent.add_body(name=name, pos=pos)
        parent.add_joint(
            **{
                **_JOINT,
                "name": name,
                "range": joint_range,
                "stiffness": (stiffness, 0, 0),
                "damping": (damping, 0, 0),
            }
        )
        _geom(parent, name=name, pos=geom_pos, pitch=pitch, size=(_RADIUS, half_length, 0))


_TOTAL_MASS = 14  # dm_control's <compiler settotalmass="14">


def make_spec() -> mujoco.MjSpec:
    """Returns the cheetah spec (its masses before `make_model` scales them to 14 kg)."""
    spec = common.new_spec("cheetah")
    spec.stat.center = (0, 0, 0.7)
    spec.stat.extent = 2
    spec.option.timestep = 0.01

    world = spec.worldbody
    world.add_geom(
        name="ground",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        conaffinity=1,
        pos=(98, 0, 0),
        size=(100, 0.8, 0.5),
        material="grid",
    )
    torso = _add_torso(world)
    for links in _LEGS:
        _add_leg(torso, links)

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
    """Returns the compiled cheetah model, its total mass scaled to dm_control's 14 kg."""
    model = common.compile_spec(make_spec())
    common.set_total_mass(model, _TOTAL_MASS)
    return model

"""Finger: a planar two-link finger that spins a free-hinged body, without gravity.

The proximal and distal links hinge about -y with limits and damping; the
distal link's fingertip carries two touch sites. The spinner is a pair of
capsules on a frictional hinge, with a tip site to bring to a target site.
All observations are sensors: joint positions and velocities, site and body
positions, and the two touch sensors.
"""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_CYLINDER = mujoco.mjtGeom.mjGEOM_CYLINDER
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_XYAXES = mujoco.mjtOrientation.mjORIENTATION_XYAXES
_LIMITED = mujoco.mjtLimited.mjLIMITED_TRUE

# The default class: soft contacts for every geom; joints are -y hinges.
_GEOM = {"solimp": (0, 0.9, 0.01, 0.5, 2), "solref": (0.02, 1)}
_JOINT = {"type": _HINGE, "axis": (0, -1, 0)}
# The "finger" class: damped, limited joints and ellipsoidal touch sites.
_FINGER_JOINT = {**_JOINT, "damping": (2.5, 0, 0), "limited": _LIMITED}
_FINGER_SITE = {
    "type": mujoco.mjtGeom.mjGEOM_ELLIPSOID,
    "size": (0.025, 0.03, 0.025),
    "material": "site",
    "group": 3,
}
# Cameras: name, position, xyaxes.
_CAMERAS = (
    ("cam0", (0, -1, 0.8), (1, 0, 0, 0, 1, 2)),
    ("cam1", (0, -1, 0.4), (1, 0, 0, 0, 0, 1)),
)
# Motors: name (= joint), gear.
_MOTORS = (("proximal", 30), ("distal", 15))
_SITE, _XBODY = mujoco.mjtObj.mjOBJ_SITE, mujoco.mjtObj.mjOBJ_XBODY
# Sensors, in id order: name, type, object type, object name.
_SENSORS = (
    ("proximal", mujoco.mjtSensor.mjSENS_JOINTPOS, mujoco.mjtObj.mjOBJ_JOINT, "proximal"),
    ("distal", mujoco.mjtSensor.mjSENS_JOINTPOS, mujoco.mjtObj.mjOBJ_JOINT, "distal"),
    ("proximal_velocity", mujoco.mjtSensor.mjSENS_JOINTVEL, mujoco.mjtObj.mjOBJ_JOINT, "proximal"),
    ("distal_velocity", mujoco.mjtSensor.mjSENS_JOINTVEL, mujoco.mjtObj.mjOBJ_JOINT, "distal"),
    ("hinge_velocity", mujoco.mjtSensor.mjSENS_JOINTVEL, mujoco.mjtObj.mjOBJ_JOINT, "hinge"),
    ("tip", mujoco.mjtSensor.mjSENS_FRAMEPOS, _SITE, "tip"),
    ("target", mujoco.mjtSensor.mjSENS_FRAMEPOS, _SITE, "target"),
    ("spinner", mujoco.mjtSensor.mjSENS_FRAMEPOS, _XBODY, "spinner"),
    ("touchtop", mujoco.mjtSensor.mjSENS_TOUCH, _SITE, "touchtop"),
    ("touchbottom", mujoco.mjtSensor.mjSENS_TOUCH, _SITE, "touchbottom"),
    ("touchtop_pos", mujoco.mjtSensor.mjSENS_FRAMEPOS, _SITE, "touchtop"),
    ("touchbottom_pos", mujoco.mjtSensor.mjSENS_FRAMEPOS, _SITE, "touchbottom"),
)


def _add_geom(body: mujoco.MjsBody, **kwargs) -> mujoco.MjsGeom:
    """Adds a geom with the default-class contact parameters, overridden by `kwargs`."""
    return body.add_geom(**{**_GEOM, **kwargs})


def _add_finger(world: mujoco.MjsBody) -> None:
    """Adds the proximal and distal links (the "finger" class) and the touch sites."""
    proximal = world.add_body(name="proximal", pos=(-0.2, 0, 0.4))
    _add_geom(
        proximal,
        name="proximal_decoration",
        type=_CYLINDER,
        fromto=(0, -0.033, 0, 0, 0.033, 0),
        size=(0.034, 0, 0),
        material="decoration",
    )
    proximal.add_joint(name="proximal", range=(-110, 110), ref=-90, **_FINGER_JOINT)
    _add_geom(
        proximal,
        name="proximal",
        type=_CAPSULE,
        material="self",
        size=(0.03, 0, 0),
        fromto=(0, 0, 0, 0, 0, -0.17),
    )
    distal = proximal.add_body(name="distal", pos=(0, 0, -0.18))
    distal.add_joint(name="distal", range=(-110, 110), **_FINGER_JOINT)
    _add_geom(
        distal,
        name="distal",
        type=_CAPSULE,
        size=(0.028, 0, 0),
        material="self",
        fromto=(0, 0, 0, 0, 0, -0.16),
        contype=0,
        conaffinity=0,
    )
    _add_geom(
        distal,
        name="fingertip",
        type=_CAPSULE,
        size=(0.03, 0, 0),
        material="effector",
        fromto=(0, 0, -0.13, 0, 0, -0.161),
    )
    distal.add_site(name="touchtop", pos=(0.01, 0, -0.17), **_FINGER_SITE)
    distal.add_site(name="touchbottom", pos=(-0.01, 0, -0.17), **_FINGER_SITE)


def _add_spinner(world: mujoco.MjsBody) -> None:
    """Adds the spinner: two capsules on a frictional hinge, with a tip site."""
    spinner = world.add_body(name="spinner", pos=(0.2, 0, 0.4))
    spinner.add_joint(name="hinge", frictionloss=0.1, damping=(0.5, 0, 0), **_JOINT)
    for name, x in (("cap1", 0.02), ("cap2", -0.02)):
        _add_geom(
            spinner,
            name=name,
            type=_CAPSULE,
            size=(0.04, 0.09, 0),
            material="self",
            pos=(x, 0, 0),
        )
    spinner.add_site(
        name="tip", type=_SPHERE, size=(0.02, 0.005, 0.005), pos=(0, 0, 0.13), material="target"
    )
    _add_geom(
        spinner,
        name="spinner_decoration",
        type=_CYLINDER,
        fromto=(0, -0.045, 0, 0, 0.045, 0),
        size=(0.02, 0, 0),
        material="decoration",
    )


def make_spec() -> mujoco.MjSpec:
    """Returns the finger spec."""
    spec = common.new_spec("finger")
    spec.option.timestep = 0.01
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.iterations = 200
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_GRAVITY

    world = spec.worldbody
    world.add_light(
        name="light",
        type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
        diffuse=(0.6, 0.6, 0.6),
        pos=(0, 0, 2),
        specular=(0.3, 0.3, 0.3),
    )
    _add_geom(
        world,
        name="ground",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        pos=(0, 0, 0),
        size=(0.6, 0.2, 10),
        material="grid",
    )
    for name, pos, xyaxes in _CAMERAS:
        camera = world.add_camera(name=name, pos=pos)
        camera.alt.type = _XYAXES
        camera.alt.xyaxes = xyaxes
    _add_finger(world)
    _add_spinner(world)
    world.add_site(
        name="target",
        type=_SPHERE,
        size=(0.03, 0.005, 0.005),
        pos=(0, 0, 0.4),
        material="target",
    )

    for name, gear in _MOTORS:
        motor = spec.add_actuator(name=name, target=name)
        motor.set_to_motor()
        motor.trntype = mujoco.mjtTrn.mjTRN_JOINT
        motor.gear[0] = gear
        motor.ctrllimited = _LIMITED
        motor.ctrlrange = (-1, 1)
    for name, sensor_type, objtype, objname in _SENSORS:
        spec.add_sensor(name=name, type=sensor_type, objtype=objtype, objname=objname)
    return spec


def make_model() -> mujoco.MjModel:
    """Returns the compiled finger model."""
    return common.compile_spec(make_spec())

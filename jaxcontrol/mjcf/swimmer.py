"""Swimmer: a planar chain of `n_links` capsule links in a dense fluid.

A free-floating head (x, y slides and a z hinge) pulls a chain of
`n_links - 1` segments, each on a limited, motorised z hinge; a site per
link carries a velocimeter and a gyro. The tracking cameras move back in
proportion to the chain's length, as in dm_control's procedural model.
"""

from __future__ import annotations

import operator

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_SLIDE = mujoco.mjtJoint.mjJNT_SLIDE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_XYAXES = mujoco.mjtOrientation.mjORIENTATION_XYAXES
_TRACKCOM = mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
_INVISIBLE = (0.0, 0.0, 0.0, 0.0)

MIN_LINKS = 3
# Joints hinge at the rear end of their link (links are 0.1 m long along y).
_JOINT_POS = (0, -0.05, 0)
# Tracking cameras (name, position for a 6-link swimmer, xyaxes).
_TRACKING_CAMERAS = (
    ("tracking1", (0, -0.2, 0.5), (1, 0, 0, 0, 1, 1)),
    ("tracking2", (-0.9, 0.5, 0.15), (0, -1, 0, 0.3, 0, 1)),
)
# Head sensors: (name, type, object type, object name).
_HEAD_SENSORS = (
    ("nose_pos", mujoco.mjtSensor.mjSENS_FRAMEPOS, mujoco.mjtObj.mjOBJ_GEOM, "nose"),
    ("target_pos", mujoco.mjtSensor.mjSENS_FRAMEPOS, mujoco.mjtObj.mjOBJ_GEOM, "target"),
    ("head_xaxis", mujoco.mjtSensor.mjSENS_FRAMEXAXIS, mujoco.mjtObj.mjOBJ_XBODY, "head"),
    ("head_yaxis", mujoco.mjtSensor.mjSENS_FRAMEYAXIS, mujoco.mjtObj.mjOBJ_XBODY, "head"),
    ("head_vel", mujoco.mjtSensor.mjSENS_VELOCIMETER, mujoco.mjtObj.mjOBJ_SITE, "head"),
    ("head_gyro", mujoco.mjtSensor.mjSENS_GYRO, mujoco.mjtObj.mjOBJ_SITE, "head"),
)


def _check_n_links(n_links: int) -> int:
    """Returns `n_links` as an int; raises ValueError unless it is an integer >= 3."""
    try:
        n = operator.index(n_links)
    except TypeError:
        n = None
    if n is None or isinstance(n_links, bool) or n < MIN_LINKS:
        raise ValueError(f"n_links must be an integer >= {MIN_LINKS}, got {n_links!r}")
    return n


def _add_visual_geom(body: mujoco.MjsBody, name: str) -> None:
    """Adds the link's massless capsule, 0.1 m long along y (the "visual" class)."""
    body.add_geom(
        name=name,
        type=_CAPSULE,
        size=(0.01, 0, 0),
        fromto=(0, -0.05, 0, 0, 0.05, 0),
        material="self",
        mass=0,
    )


def _add_inertial_geom(body: mujoco.MjsBody, name: str) -> None:
    """Adds the link's invisible 10 g box, which carries its mass (the "inertial" class)."""
    body.add_geom(
        name=name,
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=(0.001, 0.05, 0.01),
        rgba=_INVISIBLE,
        mass=0.01,
    )


def _add_site(body: mujoco.MjsBody, name: str) -> None:
    """Adds the invisible sensor site `name` at the body's origin."""
    body.add_site(name=name, size=(0.01, 0.005, 0.005), rgba=_INVISIBLE)


def _add_head(world: mujoco.MjsBody, camera_scale: float) -> mujoco.MjsBody:
    """Adds the free-floating head with its light, cameras and decorations."""
    head = world.add_body(name="head", pos=(0, 0, 0.05))
    head.add_light(name="light_1", diffuse=(0.8, 0.8, 0.8), pos=(0, 0, 1.5))
    head.add_geom(
        name="head",
        type=mujoco.mjtGeom.mjGEOM_ELLIPSOID,
        size=(0.02, 0.04, 0.017),
        pos=(0, -0.022, 0),
        material="self",
        mass=0,
    )
    head.add_geom(
        name="nose",
        type=mujoco.mjtGeom.mjGEOM_SPHERE,
        pos=(0, -0.06, 0),
        size=(0.004, 0, 0),
        material="effector",
        mass=0,
    )
    head.add_geom(
        name="eyes",
        type=_CAPSULE,
        fromto=(-0.006, -0.054, 0.005, 0.006, -0.054, 0.005),
        size=(0.004, 0, 0),
        material="eye",
        mass=0,
    )
    for name, pos, xyaxes in _TRACKING_CAMERAS:
        camera = head.add_camera(
            name=name,
            pos=tuple(p * camera_scale for p in pos),
            mode=_TRACKCOM,
            fovy=60,
        )
        camera.alt.type = _XYAXES
        camera.alt.xyaxes = xyaxes
    eyes = head.add_camera(name="eyes", pos=(0, -0.058, 0.005))
    eyes.alt.type = _XYAXES
    eyes.alt.xyaxes = (-1, 0, 0, 0, 0, 1)
    # The root joints: unlimited, no armature (the "free" class).
    for name, joint_type, axis in (
        ("rootx", _SLIDE, (1, 0, 0)),
        ("rooty", _SLIDE, (0, 1, 0)),
        ("rootz", _HINGE, (0, 0, 1)),
    ):
        head.add_joint(
            name=name,
            type=joint_type,
            axis=axis,
            pos=_JOINT_POS,
            limited=mujoco.mjtLimited.mjLIMITED_FALSE,
        )
    # The head lists its inertial geom first, the segments their visual one.
    _add_inertial_geom(head, "inertial")
    _add_visual_geom(head, "visual")
    _add_site(head, "head")
    return head


def _add_segment(parent: mujoco.MjsBody, index: int, joint_limit: float) -> mujoco.MjsBody:
    """Adds segment `index` (0-based) 0.1 m ahead of `parent`, on a limited hinge."""
    segment = parent.add_body(name=f"segment_{index}", pos=(0, 0.1, 0))
    _add_visual_geom(segment, f"visual_{index}")
    _add_inertial_geom(segment, f"inertial_{index}")
    _add_site(segment, f"site_{index}")
    segment.add_joint(
        name=f"joint_{index}",
        type=_HINGE,
        pos=_JOINT_POS,
        axis=(0, 0, 1),
        limited=mujoco.mjtLimited.mjLIMITED_TRUE,
        range=(-joint_limit, joint_limit),
        solref_limit=(0.05, 1),
        solimp_limit=(0, 0.8, 0.1, 0.5, 2),
        armature=1e-6,
    )
    return segment


def make_spec(n_links: int = 6) -> mujoco.MjSpec:
    """Returns the swimmer spec.

    Args:
        n_links: Number of links (bodies) in the chain, head included; the
            suite's swimmer6 and swimmer15 use 6 and 15. At least 3.

    Raises:
        ValueError: If `n_links` is not an integer >= 3.
    """
    n_links = _check_n_links(n_links)
    spec = common.new_spec("swimmer")
    spec.option.timestep = 0.002
    spec.option.density = 3000
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT

    world = spec.worldbody
    world.add_geom(
        name="ground", type=mujoco.mjtGeom.mjGEOM_PLANE, size=(2, 2, 0.1), material="grid"
    )
    parent = _add_head(world, camera_scale=n_links / 6.0)
    world.add_geom(
        name="target",
        type=mujoco.mjtGeom.mjGEOM_SPHERE,
        pos=(1, 1, 0.05),
        size=(0.1, 0, 0),
        material="target",
    )
    world.add_light(name="target_light", diffuse=(1, 1, 1), pos=(1, 1, 1.5))

    joint_limit = 360.0 / n_links  # Degrees.
    for index in range(n_links - 1):
        parent = _add_segment(parent, index, joint_limit)

    for name, sensor_type, objtype, objname in _HEAD_SENSORS:
        spec.add_sensor(name=name, type=sensor_type, objtype=objtype, objname=objname)
    for index in range(n_links - 1):
        motor = spec.add_actuator(name=f"motor_{index}", target=f"joint_{index}")
        motor.set_to_motor()
        motor.trntype = mujoco.mjtTrn.mjTRN_JOINT
        motor.gear[0] = 5e-4
        motor.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        motor.ctrlrange = (-1, 1)
    for index in range(n_links - 1):
        site = f"site_{index}"
        for kind, sensor_type in (
            ("velocimeter", mujoco.mjtSensor.mjSENS_VELOCIMETER),
            ("gyro", mujoco.mjtSensor.mjSENS_GYRO),
        ):
            spec.add_sensor(
                name=f"{kind}_{index}",
                type=sensor_type,
                objtype=mujoco.mjtObj.mjOBJ_SITE,
                objname=site,
            )
    return spec


def make_model(n_links: int = 6) -> mujoco.MjModel:
    """Returns the compiled swimmer model with `n_links` links."""
    return common.compile_spec(make_spec(n_links))

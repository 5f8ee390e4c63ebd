"""Fish: a free-swimming fish in a dense fluid, with no gravity and no constraints.

A torso on a free joint carries a two-segment tail and two fins on damped,
unlimited hinges; five position servos drive the tail, its twist, the fins'
flapping (through a fixed tendon) and each fin's pitch. A velocimeter and a
gyro at the torso site measure its motion.
"""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_ELLIPSOID = mujoco.mjtGeom.mjGEOM_ELLIPSOID
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_XYAXES = mujoco.mjtOrientation.mjORIENTATION_XYAXES
_TRACKCOM = mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM

# The "fish" default class: unlimited hinges whose (inactive) range and limit
# solver parameters are nevertheless set, and light damping.
_FISH_JOINT = {
    "type": _HINGE,
    "limited": mujoco.mjtLimited.mjLIMITED_FALSE,
    "range": (-60, 60),
    "damping": (2e-5, 0, 0),
    "solref_limit": (0.1, 1),
    "solimp_limit": (0, 0.8, 0.1, 0.5, 2),
}
# World cameras: name, position, xyaxes (None: default frame), fovy (45 is
# MuJoCo's default), whether it tracks the centre of mass.
_WORLD_CAMERAS = (
    ("tracking_top", (0, 0, 1), (1, 0, 0, 0, 1, 0), 45, True),
    ("tracking_x", (-0.3, 0, 0.2), (0, -1, 0, 0.342, 0, 0.940), 60, True),
    ("tracking_y", (0, -0.3, 0.2), (1, 0, 0, 0, 0.342, 0.940), 60, True),
    ("fixed_top", (0, 0, 5.5), None, 10, False),
)
# Fins: side, body x position, sign of the geom's x offset.
_FINS = (("finright", 0.01, 1), ("finleft", -0.01, -1))
# Fixed tendons: name, (finleft_roll, finright_roll) coefficients, stiffness.
_TENDONS = (
    ("fins_flap", (-0.5, 0.5), 0.0),
    ("fins_sym", (0.5, 0.5), 1e-4),
)
# Position servos: name, transmission, target, kp.
_ACTUATORS = (
    ("tail", mujoco.mjtTrn.mjTRN_JOINT, "tail1", 5e-4),
    ("tail_twist", mujoco.mjtTrn.mjTRN_JOINT, "tail_twist", 1e-4),
    ("fins_flap", mujoco.mjtTrn.mjTRN_TENDON, "fins_flap", 3e-4),
    ("finleft_pitch", mujoco.mjtTrn.mjTRN_JOINT, "finleft_pitch", 1e-4),
    ("finright_pitch", mujoco.mjtTrn.mjTRN_JOINT, "finright_pitch", 1e-4),
)


def _add_skybox_last(spec: mujoco.MjSpec) -> None:
    """Moves the skybox texture after the grid texture.

    fish.xml does not include the common skybox before the materials; it
    defines an identical skybox of its own after them, so its texture ids are
    grid (0), skybox (1) instead of the usual skybox (0), grid (1).
    """
    spec.delete(spec.texture("skybox"))
    common.add_skybox(spec)


def _add_joint(body: mujoco.MjsBody, **kwargs) -> mujoco.MjsJoint:
    """Adds a joint with the "fish" class defaults, overridden by `kwargs`."""
    return body.add_joint(**{**_FISH_JOINT, **kwargs})


def _add_geom(body: mujoco.MjsBody, **kwargs) -> mujoco.MjsGeom:
    """Adds a geom with the "fish" class default material, overridden by `kwargs`."""
    return body.add_geom(**{"material": "self", **kwargs})


def _add_cameras(world: mujoco.MjsBody) -> None:
    """Adds the three COM-tracking cameras and the fixed top-down one."""
    for name, pos, xyaxes, fovy, tracking in _WORLD_CAMERAS:
        camera = world.add_camera(name=name, pos=pos, fovy=fovy)
        if tracking:
            camera.mode = _TRACKCOM
        if xyaxes is not None:
            camera.alt.type = _XYAXES
            camera.alt.xyaxes = xyaxes


def _add_head(torso: mujoco.MjsBody) -> None:
    """Adds the eye with its camera, the mouth and the massless torso shell and fin."""
    eye = _add_geom(
        torso,
        name="eye",
        type=_ELLIPSOID,
        pos=(0, 0.055, 0.015),
        size=(0.008, 0.012, 0.008),
        material="eye",
        mass=0,
    )
    eye.alt.type = mujoco.mjtOrientation.mjORIENTATION_EULER
    eye.alt.euler = (-10, 0, 0)
    camera = torso.add_camera(name="eye", pos=(0, 0.06, 0.02))
    camera.alt.type = _XYAXES
    camera.alt.xyaxes = (1, 0, 0, 0, 0, 1)
    for name, fromto, radius in (
        ("mouth", (0, 0.079, 0, 0, 0.07, 0), 0.005),
        ("lower_mouth", (0, 0.079, -0.004, 0, 0.07, -0.003), 0.0045),
    ):
        _add_geom(
            torso,
            name=name,
            type=_CAPSULE,
            fromto=fromto,
            size=(radius, 0, 0),
            material="effector",
            mass=0,
        )
    _add_geom(torso, name="torso", type=_ELLIPSOID, size=(0.01, 0.08, 0.04), mass=0)
    _add_geom(
        torso,
        name="back_fin",
        type=_ELLIPSOID,
        size=(0.001, 0.03, 0.015),
        pos=(0, -0.03, 0.03),
        material="effector",
        mass=0,
    )


def _add_tail(torso: mujoco.MjsBody) -> None:
    """Adds the two tail segments: a yawing, twisting one and a springy yawing one."""
    tail1 = torso.add_body(name="tail1", pos=(0, -0.09, 0))
    _add_joint(tail1, name="tail1", axis=(0, 0, 1), pos=(0, 0.01, 0))
    _add_joint(tail1, name="tail_twist", axis=(0, 1, 0), pos=(0, 0.01, 0), range=(-30, 30))
    _add_geom(tail1, name="tail1", type=_ELLIPSOID, size=(0.001, 0.008, 0.016))
    tail2 = tail1.add_body(name="tail2", pos=(0, -0.028, 0))
    _add_joint(tail2, name="tail2", axis=(0, 0, 1), pos=(0, 0.02, 0), stiffness=(8e-5, 0, 0))
    _add_geom(tail2, name="tail2", type=_ELLIPSOID, size=(0.001, 0.018, 0.035))


def _add_fins(torso: mujoco.MjsBody) -> None:
    """Adds the right and left fins, each on a roll and a pitch hinge."""
    for name, x, sign in _FINS:
        fin = torso.add_body(name=name, pos=(x, 0, 0))
        _add_joint(fin, name=f"{name}_roll", axis=(0, 1, 0))
        _add_joint(fin, name=f"{name}_pitch", axis=(1, 0, 0), pos=(0, 0.005, 0))
        _add_geom(
            fin,
            name=name,
            type=_ELLIPSOID,
            pos=(sign * 0.015, 0, 0),
            size=(0.02, 0.015, 0.001),
        )


def make_spec() -> mujoco.MjSpec:
    """Returns the fish spec."""
    spec = common.new_spec("fish")
    _add_skybox_last(spec)
    spec.option.timestep = 0.004
    spec.option.density = 5000
    spec.option.disableflags |= (
        mujoco.mjtDisableBit.mjDSBL_GRAVITY | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    )

    world = spec.worldbody
    _add_cameras(world)
    world.add_geom(
        name="ground", type=mujoco.mjtGeom.mjGEOM_PLANE, size=(0.5, 0.5, 0.1), material="grid"
    )
    world.add_geom(
        name="target",
        type=mujoco.mjtGeom.mjGEOM_SPHERE,
        pos=(0, 0.4, 0.1),
        size=(0.04, 0, 0),
        material="target",
    )

    torso = world.add_body(name="torso", pos=(0, 0, 0.1))
    torso.add_light(
        name="light",
        diffuse=(0.6, 0.6, 0.6),
        pos=(0, 0, 0.5),
        dir=(0, 0, -1),
        specular=(0.3, 0.3, 0.3),
        mode=mujoco.mjtCamLight.mjCAMLIGHT_TRACK,
    )
    _add_joint(torso, name="root", type=mujoco.mjtJoint.mjJNT_FREE, damping=(0, 0, 0))
    torso.add_site(name="torso", size=(0.01, 0.005, 0.005), rgba=(0, 0, 0, 0))
    _add_head(torso)
    # The invisible (group 4) box that carries the torso's mass.
    _add_geom(
        torso,
        name="torso_massive",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=(0.002, 0.06, 0.03),
        group=4,
    )
    _add_tail(torso)
    _add_fins(torso)

    for name, (left, right), stiffness in _TENDONS:
        tendon = spec.add_tendon(name=name, stiffness=(stiffness, 0, 0))
        tendon.wrap_joint("finleft_roll", left)
        tendon.wrap_joint("finright_roll", right)
    for name, trntype, target, kp in _ACTUATORS:
        actuator = spec.add_actuator(name=name, target=target)
        actuator.set_to_position(kp=kp)
        actuator.trntype = trntype
        actuator.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        actuator.ctrlrange = (-1, 1)
    for name, sensor_type in (
        ("velocimeter", mujoco.mjtSensor.mjSENS_VELOCIMETER),
        ("gyro", mujoco.mjtSensor.mjSENS_GYRO),
    ):
        spec.add_sensor(
            name=name, type=sensor_type, objtype=mujoco.mjtObj.mjOBJ_SITE, objname="torso"
        )
    return spec


def make_model() -> mujoco.MjModel:
    """Returns the compiled fish model."""
    return common.compile_spec(make_spec())

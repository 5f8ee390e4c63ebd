"""Humanoid_CMU: the 56-hinge humanoid of the CMU motion-capture skeleton.

A free-floating root (the pelvis) carries two legs (hip, femur, tibia, foot,
toes), a six-segment spine from the lower back up to the head, and, from the
thorax, two arms (clavicle, humerus, radius, wrist, hand, fingers, thumb).
Every hinge has a motor. The sensors: the thorax's subtree velocity, an IMU at
the root site, and touch sites under the feet and toes.

The model's y axis runs up the body and x to its left. Each limb is built once
from the left side's numbers, mirrored through the plane x = 0 for the right;
the few places where dm_control's right side is not the exact mirror image are
spelled out per side.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_PLANE = mujoco.mjtGeom.mjGEOM_PLANE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_ELLIPSOID = mujoco.mjtGeom.mjGEOM_ELLIPSOID
_BOX = mujoco.mjtGeom.mjGEOM_BOX
_EULER = mujoco.mjtOrientation.mjORIENTATION_EULER
_XYAXES = mujoco.mjtOrientation.mjORIENTATION_XYAXES
_ZAXIS = mujoco.mjtOrientation.mjORIENTATION_ZAXIS
_TRACKCOM = mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
_SITE = mujoco.mjtObj.mjOBJ_SITE

# The default classes of humanoid_CMU.xml, with inheritance resolved. "main":
_MAIN_GEOM = {
    "friction": (0.7, 0.005, 0.0001),
    "solref": (0.015, 1),
    "solimp": (0.95, 0.99, 0.003, 0.5, 2),
}
_JOINT = {
    "type": _HINGE,
    "limited": mujoco.mjtLimited.mjLIMITED_TRUE,
    "solimp_limit": (0, 0.99, 0.01, 0.5, 2),
    "stiffness": (0.1, 0, 0),
    "armature": 0.01,
    "damping": (1, 0, 0),
}
# "humanoid" (the childclass of the whole body) and its joint subclasses.
_GEOM = {**_MAIN_GEOM, "type": _CAPSULE, "material": "self"}
_STIFF_LOW = {**_JOINT, "stiffness": (0.5, 0, 0), "damping": (4, 0, 0)}
_STIFF_MEDIUM = {**_JOINT, "stiffness": (10, 0, 0), "damping": (5, 0, 0)}
_STIFF_HIGH = {**_JOINT, "stiffness": (30, 0, 0), "damping": (10, 0, 0)}
_TOUCH_SITE = {"group": 3, "rgba": (0, 0, 1, 0.5)}
_DEFAULT_SITE_SIZE = 0.005

_HINGE_AXES = {"z": (0, 0, 1), "y": (0, 1, 0), "x": (1, 0, 0)}
# Every spine segment turns with the same ranges about its z, y and x axes.
_SPINE_RANGES = {"z": (-30, 30), "y": (-30, 30), "x": (-20, 45)}
# The spine, root to head: body, position, joint class, and its capsule's
# (radius, half-length), position and orientation.
_SPINE = (
    ("lowerback", (0, 0, 0), _STIFF_HIGH, (0.065, 0.055), (0, 0.056, 0.03), (1, 0, 1, 0)),
    ("upperback", (0, 0.1, -0.01), _STIFF_HIGH, (0.06, 0.06), (0, 0.06, 0.02), (1, 0, 1, 0)),
    (
        "thorax",
        (0.000512528, 0.11356, 0.000936821),
        _STIFF_HIGH,
        (0.08, 0.07),
        (0, 0.05, 0),
        (1, 0, 1, 0),
    ),
    (
        "lowerneck",
        (0, 0.113945, 0.00468037),
        _STIFF_MEDIUM,
        (0.08, 0.02),
        (0, 0.04, -0.02),
        (1, 1, 0, 0),
    ),
    ("upperneck", (0, 0.09, 0.01), _STIFF_MEDIUM, (0.05, 0.03), (0, 0.05, 0), (0.8, 1, 0, 0)),
    ("head", (0, 0.09, 0), _STIFF_MEDIUM, (0.085, 0.035), (0, 0.11, 0.03), (1, 0.9, 0, 0)),
)
# Motor gears by segment (a body's name without its side prefix), and by hinge
# where a segment's hinges differ. Every hinge has a motor named after it.
_GEARS = {
    "lowerback": 40,
    "upperback": 40,
    "thorax": 40,
    "lowerneck": 20,
    "upperneck": 20,
    "head": 20,
    "femur": 40,
    "femurrx": 120,
    "tibia": 80,
    "foot": 20,
    "toes": 20,
    "clavicle": 20,
    "humerus": 40,
    "radius": 40,
    "wrist": 20,
    "hand": 20,
    "fingers": 20,
    "thumb": 20,
}
# Bodies whose contacts are excluded: the clavicles with each other and the neck.
_EXCLUDES = (
    ("lclavicle", "rclavicle"),
    ("lowerneck", "lclavicle"),
    ("lowerneck", "rclavicle"),
    ("upperneck", "lclavicle"),
    ("upperneck", "rclavicle"),
)


@dataclasses.dataclass(frozen=True)
class _Side:
    """A side of the body: mirrors the left side's numbers through x = 0."""

    prefix: str  # Of the side's names: "l" or "r".
    sign: int  # +1 on the left, -1 on the right.

    def pos(self, x: float, y: float, z: float) -> tuple[float, float, float]:
        return (self.sign * x, y, z)

    def quat(self, w: float, x: float, y: float, z: float) -> tuple[float, ...]:
        """The mirror image of the rotation `(w, x, y, z)`."""
        return (w, x, self.sign * y, self.sign * z)

    def euler(self, x: float, y: float, z: float) -> tuple[float, float, float]:
        return (x, self.sign * y, self.sign * z)

    def turn(self, low: float, high: float) -> tuple[float, float]:
        """The mirror image of a range of turns about the y or z axis."""
        return (low, high) if self.sign > 0 else (-high, -low)

    def pick(self, left: Any, right: Any) -> Any:
        """Where the right side is not the mirror image of the left."""
        return left if self.sign > 0 else right


_LEFT = _Side("l", 1)
_RIGHT = _Side("r", -1)


def _orient(element: Any, kind: mujoco.mjtOrientation, value: tuple) -> None:
    element.alt.type = kind
    setattr(element.alt, {_EULER: "euler", _XYAXES: "xyaxes", _ZAXIS: "zaxis"}[kind], value)


def _hinges(body: mujoco.MjsBody, cls: dict[str, Any], **ranges: tuple[float, float]) -> None:
    """Adds hinges "<body>rz", "<body>ry", "<body>rx" (in this order) for the axes in `ranges`."""
    for axis, vector in _HINGE_AXES.items():
        if axis in ranges:
            body.add_joint(
                **{**cls, "name": f"{body.name}r{axis}", "axis": vector}, range=ranges[axis]
            )


def _geom(
    body: mujoco.MjsBody,
    name: str,
    size: tuple[float, ...],
    pos: tuple[float, float, float],
    quat: tuple[float, ...] | None = None,
    euler: tuple[float, float, float] | None = None,
    **kwargs: Any,
) -> None:
    """Adds a "humanoid" geom (a capsule unless `type` is given)."""
    geom = body.add_geom(**{**_GEOM, **kwargs}, name=name, size=(*size, 0, 0)[:3], pos=pos)
    if quat is not None:
        geom.quat = quat
    if euler is not None:
        _orient(geom, _EULER, euler)


def _touch(
    body: mujoco.MjsBody,
    name: str,
    site_type: mujoco.mjtGeom,
    size: tuple[float, ...],
    pos: tuple[float, float, float],
    orientation: tuple[mujoco.mjtOrientation, tuple],
) -> None:
    """Adds a "touch" site; its unset sizes stay the default."""
    site = body.add_site(
        **_TOUCH_SITE,
        name=name,
        type=site_type,
        size=(*size, _DEFAULT_SITE_SIZE, _DEFAULT_SITE_SIZE)[:3],
        pos=pos,
    )
    _orient(site, *orientation)


def _add_leg(root: mujoco.MjsBody, side: _Side) -> None:
    """Adds one side's hip, femur, tibia, foot and toes."""
    p = side.prefix
    hip = root.add_body(name=f"{p}hipjoint")
    hip_quat = side.pick((0.5708, -0.566602, -0.594264, 0), (0.574856, -0.547594, 0.608014, 0))
    _geom(hip, f"{p}hipjoint", (0.008, 0.022), side.pos(0.051, -0.046, 0.025), hip_quat)

    femur = hip.add_body(
        name=f"{p}femur", pos=side.pos(0.102, -0.092, 0.05), quat=side.quat(1, 0, 0, 0.17365)
    )
    _hinges(femur, _STIFF_MEDIUM, z=side.turn(-60, 70), y=(-70, 70), x=(-160, 20))
    femur_quat = side.quat(0.7, -0.7, -0.1228, -0.07)
    _geom(femur, f"{p}femur", (0.06, 0.17), side.pos(-0.01, -0.202473, 0), femur_quat)

    tibia = femur.add_body(name=f"{p}tibia", pos=(0, -0.404945, 0))
    _hinges(tibia, _STIFF_LOW, x=(1, 170))
    tibia_quat = side.quat(0.7, -0.7, -0.1228, -0.1228)
    _geom(tibia, f"{p}tibia", (0.03, 0.1825614), (0, -0.202846, 0), tibia_quat)
    # The right calf keeps the left calf's orientation.
    _geom(tibia, f"{p}calf", (0.045, 0.08), (0, -0.1, -0.01), (0.7, -0.7, -0.1228, -0.1228))

    foot = tibia.add_body(name=f"{p}foot", pos=(0, -0.405693, 0), quat=(0.707107, -0.707107, 0, 0))
    _touch(
        foot,
        f"{p}foot_touch",
        _BOX,
        (0.04, 0.08, 0.02),
        side.pos(-0.005, -0.02, -0.025),
        (_EULER, (10, 0, 0)),
    )
    _hinges(foot, _STIFF_MEDIUM, z=side.turn(-70, 20), x=(-45, 90))
    for i, (x, turn) in enumerate(((-0.02, -2), (0, 0), (0.01, 10))):
        pos = side.pos(x, -0.023, -0.01)
        _geom(foot, f"{p}foot{i}", (0.02, 0.06), pos, euler=side.euler(100, turn, 0))

    toes = foot.add_body(name=f"{p}toes", pos=(0, -0.106372, -0.0227756))
    _hinges(toes, _JOINT, x=(-90, 20))
    for i, (x, y) in enumerate(((-0.025, -0.01), (0, -0.005), (0.02, 0.001))):
        _geom(toes, f"{p}toes{i}", (0.02,), side.pos(x, y, -0.01), type=_SPHERE)
    # The right capsule's axis is reversed: the same line, another orientation.
    toe_axis = side.pick((1, 0.2, 0), (1, -0.2, 0))
    _touch(
        toes,
        f"{p}toes_touch",
        _CAPSULE,
        (0.025, 0.02),
        side.pos(-0.005, -0.005, -0.01),
        (_ZAXIS, toe_axis),
    )


def _add_spine(root: mujoco.MjsBody) -> mujoco.MjsBody:
    """Adds the spine from the lower back to the head, with the eyes; returns the thorax."""
    spine = {}
    parent = root
    for name, pos, cls, size, geom_pos, geom_quat in _SPINE:
        parent = spine[name] = parent.add_body(name=name, pos=pos)
        _hinges(parent, cls, **_SPINE_RANGES)
        _geom(parent, name, size, geom_pos, geom_quat)
    head = spine["head"]
    egocentric = head.add_camera(name="egocentric", fovy=80)
    _orient(egocentric, _XYAXES, (-1, 0, 0, 0, 1, 0))
    for side in (_LEFT, _RIGHT):
        _geom(head, f"{side.prefix}eye", (0.02,), side.pos(0.03, 0.11, 0.1), type=_SPHERE)
    return spine["thorax"]


def _add_arm(thorax: mujoco.MjsBody, side: _Side) -> None:
    """Adds one side's clavicle, humerus, radius, wrist, hand, fingers and thumb."""
    p = side.prefix
    clavicle = thorax.add_body(name=f"{p}clavicle", pos=(0, 0.113945, 0.00468037))
    _hinges(clavicle, _STIFF_HIGH, z=side.turn(0, 20), y=side.turn(-20, 10))
    clavicle_quat = side.pick((1, 0, -1, -0.4), (1, 0, -1, 0.4))
    _geom(clavicle, f"{p}clavicle", (0.08, 0.04), side.pos(0.09, 0.05, -0.01), clavicle_quat)

    humerus = clavicle.add_body(
        name=f"{p}humerus",
        pos=side.pos(0.183, 0.076, 0.01),
        quat=side.quat(0.18, 0.68, -0.68, 0.18),
    )
    _hinges(humerus, _STIFF_LOW, z=(-90, 90), y=(-90, 90), x=(-60, 90))
    humerus_quat = side.pick((0.612, -0.612, 0.35, 0.35), (0.61, -0.61, -0.35, -0.35))
    _geom(humerus, f"{p}humerus", (0.035, 0.124), (0, -0.138, 0), humerus_quat)

    radius = humerus.add_body(name=f"{p}radius", pos=(0, -0.277, 0))
    _hinges(radius, _STIFF_LOW, x=(-10, 170))
    _geom(radius, f"{p}radius", (0.03, 0.06), (0, -0.08, 0), side.quat(0.612, -0.612, 0.35, 0.35))

    wrist = radius.add_body(name=f"{p}wrist", pos=(0, -0.17, 0), quat=side.quat(-0.5, 0, 0.866, 0))
    _hinges(wrist, _JOINT, y=(-180, 0))  # The right wrist's range is not mirrored.
    _geom(wrist, f"{p}wrist", (0.025, 0.03), (0, -0.02, 0), side.quat(0, 0, -1, -1))

    hand = wrist.add_body(name=f"{p}hand", pos=(0, -0.08, 0))
    _hinges(hand, _JOINT, z=(-45, 45), x=(-90, 90))
    hand_size = (0.048, 0.02, 0.06)
    hand_quat = side.quat(0, 0, -1, -1)
    _geom(hand, f"{p}hand", hand_size, (0, -0.047, 0), hand_quat, type=_ELLIPSOID)

    fingers = hand.add_body(name=f"{p}fingers", pos=(0, -0.08, 0))
    _hinges(fingers, _JOINT, x=(0, 90))
    # Finger capsules: radius and (x, y) position, from the thumb's side outwards.
    for i, (radius_i, x, y) in enumerate(
        ((0.01, -0.03, -0.05), (0.01, -0.008, -0.06), (0.009, 0.014, -0.06), (0.008, 0.032, -0.05))
    ):
        _geom(fingers, f"{p}finger{i}", (radius_i, 0.04), side.pos(x, y, 0), (1, -1, 0, 0))

    thumb = hand.add_body(
        name=f"{p}thumb", pos=side.pos(-0.02, -0.03, 0), quat=side.quat(0.92388, 0, 0, -0.382683)
    )
    _hinges(thumb, _JOINT, z=(-45, 45), x=(0, 90))
    _geom(thumb, f"{p}thumb", (0.012, 0.04), (0, -0.06, 0), side.quat(0, 0, -1, -1))


def _gear(joint: str) -> float:
    """The gear of the motor of hinge `joint` ("<body>r<axis>")."""
    segment = joint[:-2]
    if segment not in _GEARS:
        segment = segment[1:]  # Drop the side prefix.
    return _GEARS.get(segment + joint[-2:], _GEARS[segment])


def _add_actuators(spec: mujoco.MjSpec) -> None:
    """Adds a motor for every hinge, in the order of their names."""
    hinges = sorted(joint.name for joint in spec.joints if joint.type == _HINGE)
    for name in hinges:
        motor = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        motor.set_to_motor()
        motor.gear[0] = _gear(name)
        motor.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        motor.ctrlrange = (-1, 1)


def _add_sensors(spec: mujoco.MjSpec) -> None:
    """Adds the thorax's subtree velocity, the root IMU and the foot touch sensors."""
    spec.add_sensor(
        name="thorax_subtreelinvel",
        type=mujoco.mjtSensor.mjSENS_SUBTREELINVEL,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        objname="thorax",
    )
    for name, sensor_type in (
        ("veloc", mujoco.mjtSensor.mjSENS_VELOCIMETER),
        ("gyro", mujoco.mjtSensor.mjSENS_GYRO),
        ("accel", mujoco.mjtSensor.mjSENS_ACCELEROMETER),
    ):
        spec.add_sensor(name=f"sensor_root_{name}", type=sensor_type, objtype=_SITE, objname="root")
    for name in ("ltoes", "rtoes", "rfoot", "lfoot"):
        spec.add_sensor(
            name=f"sensor_touch_{name}",
            type=mujoco.mjtSensor.mjSENS_TOUCH,
            objtype=_SITE,
            objname=f"{name}_touch",
        )


def make_spec() -> mujoco.MjSpec:
    """Returns the humanoid_CMU spec."""
    spec = common.new_spec("humanoid_CMU")
    spec.stat.extent = 2
    spec.stat.center = (0, 0, 1)

    world = spec.worldbody
    world.add_geom(
        **_MAIN_GEOM,
        name="floor",
        type=_PLANE,
        conaffinity=1,
        size=(100, 100, 0.2),
        material="grid",
    )
    world.add_light(name="tracking_light", pos=(0, 0, 7), dir=(0, 0, -1), mode=_TRACKCOM)
    for name, pos, xyaxes in (
        ("back", (0, 3, 2.4), (-1, 0, 0, 0, -1, 2)),
        ("side", (-3, 0, 2.4), (0, -1, 0, 1, 0, 2)),
    ):
        _orient(world.add_camera(name=name, pos=pos, mode=_TRACKCOM), _XYAXES, xyaxes)

    root = world.add_body(name="root", pos=(0, 0, 1))
    _orient(root, _EULER, (90, 0, 0))
    root.add_site(name="root", size=(0.01, 0.005, 0.005), rgba=(0.5, 0.5, 0.5, 0))
    root.add_freejoint(name="root")
    _geom(root, "root_geom", (0.09, 0.06), (0, -0.05, 0), (1, 0, -1, 0))
    for side in (_LEFT, _RIGHT):
        _add_leg(root, side)
    thorax = _add_spine(root)
    for side in (_LEFT, _RIGHT):
        _add_arm(thorax, side)

    for body1, body2 in _EXCLUDES:
        spec.add_exclude(bodyname1=body1, bodyname2=body2)
    _add_actuators(spec)
    _add_sensors(spec)
    return spec


def make_model() -> mujoco.MjModel:
    """Returns the compiled humanoid_CMU model."""
    return common.compile_spec(make_spec())

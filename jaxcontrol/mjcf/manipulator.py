"""Planar manipulator: a four-link arm with a two-fingered hand, and task props.

The arm hinges about -y on a pedestal between two slanted walls; the hand's
thumb and finger are coupled by a tendon equality and driven together through
a "grasp" tendon. Five touch sensors line the palm and fingers. As in
dm_control's procedural model, only the props a task uses are added: a ball
or a peg with its ghost target, plus a cup or a slot for the insert tasks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_SLIDE = mujoco.mjtJoint.mjJNT_SLIDE
_PLANE = mujoco.mjtGeom.mjGEOM_PLANE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_BOX = mujoco.mjtGeom.mjGEOM_BOX
_EULER = mujoco.mjtOrientation.mjORIENTATION_EULER
_XYAXES = mujoco.mjtOrientation.mjORIENTATION_XYAXES
_ZAXIS = mujoco.mjtOrientation.mjORIENTATION_ZAXIS
_LIMITED = mujoco.mjtLimited.mjLIMITED_TRUE
_UNLIMITED = mujoco.mjtLimited.mjLIMITED_FALSE


@dataclasses.dataclass(frozen=True)
class _Class:
    """The geom, joint and site attributes of one MJCF default class.

    A site's "euler" entry is applied as its orientation (`alt`).
    """

    geom: dict[str, Any]
    joint: dict[str, Any]
    site: dict[str, Any]

    def child(
        self,
        geom: dict[str, Any] | None = None,
        joint: dict[str, Any] | None = None,
        site: dict[str, Any] | None = None,
    ) -> _Class:
        """Returns a class inheriting from this one, with the given overrides."""
        return _Class(
            geom={**self.geom, **(geom or {})},
            joint={**self.joint, **(joint or {})},
            site={**self.site, **(site or {})},
        )


# The default classes of manipulator.xml, with inheritance resolved.
_MAIN = _Class(
    geom={
        "friction": (0.7, 0.005, 0.0001),
        "solimp": (0.9, 0.97, 0.001, 0.5, 2),
        "solref": (0.005, 1),
    },
    joint={"solimp_limit": (0, 0.99, 0.01, 0.5, 2), "solref_limit": (0.005, 1)},
    site={"size": (0.003, 0.003, 0.003), "material": "site", "group": 3},
)
_ARM = _MAIN.child(
    geom={"type": _CAPSULE, "material": "self", "density": 500},
    joint={"type": _HINGE, "pos": (0, 0, 0), "axis": (0, -1, 0), "limited": _LIMITED},
)
_HAND = _ARM.child(
    geom={"size": (0.008, 0, 0)},
    joint={"damping": (0.5, 0, 0), "range": (-10, 60)},
    site={
        "type": _BOX,
        "size": (0.018, 0.005, 0.005),
        "pos": (0.022, 0, -0.002),
        "euler": (0, 15, 0),
        "group": 4,
    },
)
_FINGERTIP = _HAND.child(
    geom={"type": _SPHERE, "size": (0.008, 0, 0), "material": "effector"},
    joint={"damping": (0.01, 0, 0), "stiffness": (0.01, 0, 0), "range": (-40, 20)},
    site={"size": (0.012, 0.005, 0.008), "pos": (0.003, 0, 0.003), "group": 4, "euler": (0, 0, 0)},
)
_OBJECT = _MAIN.child(geom={"material": "self"})
_OBSTACLE = _MAIN.child(geom={"material": "decoration", "friction": (0, 0.005, 0.0001)})
_GHOST = _MAIN.child(geom={"material": "target", "contype": 0, "conaffinity": 0})

# Arena planes: name, position, size, material, normal (None: +z).
_PLANES = (
    ("floor", (0, 0, 0), (0.4, 0.2, 10), "grid", None),
    ("wall1", (-0.682843, 0, 0.282843), (0.4, 0.2, 10), "grid", (1, 0, 1)),
    ("wall2", (0.682843, 0, 0.282843), (0.4, 0.2, 10), "grid", (-1, 0, 1)),
    ("background", (0, 0.2, 0.5), (1, 0.5, 10), "background", (0, -1, 0)),
)
# Arm links below the hand: name, position in parent, joint, joint damping,
# joint range (None: unlimited), capsule radius, capsule length.
_LINKS = (
    ("upper_arm", (0, 0, 0.4), "arm_root", 2, None, 0.02, 0.18),
    ("middle_arm", (0, 0, 0.18), "arm_shoulder", 1.5, (-160, 160), 0.017, 0.15),
    ("lower_arm", (0, 0, 0.15), "arm_elbow", 1, (-160, 160), 0.014, 0.12),
)
# Hand digits: name, position in the hand, euler.
_DIGITS = (
    ("thumb", (0.03, 0, 0.045), (0, -90, 0)),
    ("finger", (-0.03, 0, 0.045), (0, 90, 180)),
)
# Peg-shaped capsules (the blade, then the guard): suffix, fromto.
_PEG_CAPSULES = (
    ("blade", (0, 0, -0.013, 0, 0, -0.113)),
    ("guard", (-0.017, 0, -0.043, 0.017, 0, -0.043)),
)
# Peg-shaped sites: suffix, z position.
_PEG_SITES = (("", -0.063), ("_pinch", -0.025), ("_grasp", 0), ("_tip", -0.113))
# Cup capsules, as fromto segments.
_CUP_PARTS = (
    (-0.03, 0, 0.06, -0.03, 0, -0.015),
    (-0.03, 0, -0.015, 0, 0, -0.04),
    (0, 0, -0.04, 0.03, 0, -0.015),
    (0.03, 0, -0.015, 0.03, 0, 0.06),
)
# Slot boxes: position, size.
_SLOT_PARTS = (
    ((-0.0252, 0, -0.083), (0.0198, 0.01, 0.035)),
    ((0.0252, 0, -0.083), (0.0198, 0.01, 0.035)),
    ((0, 0, -0.138), (0.045, 0.01, 0.02)),
)
_TOUCH_SENSORS = ("palm_touch", "finger_touch", "thumb_touch", "fingertip_touch", "thumbtip_touch")
# Motors: name, transmission type, target, gear.
_MOTORS = (
    ("root", mujoco.mjtTrn.mjTRN_JOINT, "arm_root", 12),
    ("shoulder", mujoco.mjtTrn.mjTRN_JOINT, "arm_shoulder", 8),
    ("elbow", mujoco.mjtTrn.mjTRN_JOINT, "arm_elbow", 4),
    ("wrist", mujoco.mjtTrn.mjTRN_JOINT, "arm_wrist", 2),
    ("grasp", mujoco.mjtTrn.mjTRN_TENDON, "grasp", 2),
)


def _geom(body: mujoco.MjsBody, cls: _Class, **kwargs) -> mujoco.MjsGeom:
    """Adds a geom with the defaults of `cls`, overridden by `kwargs`."""
    return body.add_geom(**{**cls.geom, **kwargs})


def _joint(body: mujoco.MjsBody, cls: _Class, **kwargs) -> mujoco.MjsJoint:
    """Adds a joint with the defaults of `cls`, overridden by `kwargs`."""
    return body.add_joint(**{**cls.joint, **kwargs})


def _site(body: mujoco.MjsBody, cls: _Class, **kwargs) -> mujoco.MjsSite:
    """Adds a site with the defaults of `cls`, overridden by `kwargs`."""
    attrs = {**cls.site, **kwargs}
    euler = attrs.pop("euler", None)
    site = body.add_site(**attrs)
    if euler is not None:
        site.alt.type = _EULER
        site.alt.euler = euler
    return site


def _body(
    parent: mujoco.MjsBody, name: str, pos: tuple, euler: tuple | None = None
) -> mujoco.MjsBody:
    """Adds a body at `pos`, rotated by `euler` (degrees) if given."""
    body = parent.add_body(name=name, pos=pos)
    if euler is not None:
        body.alt.type = _EULER
        body.alt.euler = euler
    return body


def _add_assets(spec: mujoco.MjSpec) -> None:
    """Adds the flat, speckled background texture and its material."""
    spec.add_texture(
        name="background",
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_FLAT,
        rgb1=(0.2, 0.3, 0.4),
        width=800,
        height=800,
        mark=mujoco.mjtMark.mjMARK_RANDOM,
        markrgb=(1.0, 1.0, 1.0),
    )
    background = spec.add_material(name="background", texrepeat=(1.0, 1.0), texuniform=True)
    background.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "background"


def _add_arena(world: mujoco.MjsBody) -> None:
    """Adds the light, the floor, the slanted walls, the backdrop and the camera."""
    world.add_light(
        name="light",
        type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
        diffuse=(0.6, 0.6, 0.6),
        pos=(0, 0, 1),
        specular=(0.3, 0.3, 0.3),
    )
    for name, pos, size, material, normal in _PLANES:
        plane = _geom(world, _MAIN, name=name, type=_PLANE, pos=pos, size=size, material=material)
        if normal is not None:
            plane.alt.type = _ZAXIS
            plane.alt.zaxis = normal
    camera = world.add_camera(name="fixed", pos=(0, -16, 0.4), fovy=4)
    camera.alt.type = _XYAXES
    camera.alt.xyaxes = (1, 0, 0, 0, 0, 1)


def _add_digit(hand: mujoco.MjsBody, name: str, pos: tuple, euler: tuple) -> None:
    """Adds the thumb or the finger ("hand" class) and its tip ("fingertip" class)."""
    digit = _body(hand, name, pos, euler)
    _joint(digit, _HAND, name=name)
    _geom(digit, _HAND, name=f"{name}1", fromto=(0, 0, 0, 0.02, 0, -0.01), size=(0.007, 0, 0))
    _geom(
        digit, _HAND, name=f"{name}2", fromto=(0.02, 0, -0.01, 0.04, 0, -0.01), size=(0.007, 0, 0)
    )
    _site(digit, _HAND, name=f"{name}_touch")
    tip = digit.add_body(name=f"{name}tip", pos=(0.05, 0, -0.01))
    _joint(tip, _FINGERTIP, name=f"{name}tip")
    _geom(tip, _FINGERTIP, name=f"{name}tip1", pos=(-0.003, 0, 0))
    _geom(tip, _FINGERTIP, name=f"{name}tip2", pos=(0.003, 0, 0))
    _site(tip, _FINGERTIP, name=f"{name}tip_touch")


def _add_hand(lower_arm: mujoco.MjsBody) -> None:
    """Adds the hand: wrist, palm, grasp and pinch sites, thumb and finger."""
    hand = lower_arm.add_body(name="hand", pos=(0, 0, 0.12))
    _joint(hand, _ARM, name="arm_wrist", damping=(0.5, 0, 0), range=(-140, 140))
    _geom(hand, _ARM, name="hand", size=(0.011, 0, 0), fromto=(0, 0, 0, 0, 0, 0.03))
    _geom(hand, _HAND, name="palm1", fromto=(0, 0, 0.03, 0.03, 0, 0.045))
    _geom(hand, _HAND, name="palm2", fromto=(0, 0, 0.03, -0.03, 0, 0.045))
    _site(hand, _ARM, name="grasp", pos=(0, 0, 0.065))
    pinch = hand.add_body(name="pinch site", pos=(0, 0, 0.09))
    _site(pinch, _ARM, name="pinch")
    pinch.explicitinertial = True
    pinch.ipos = (0, 0, 0)
    pinch.mass = 1e-6
    pinch.inertia = (1e-12, 1e-12, 1e-12)
    camera = pinch.add_camera(
        name="hand", pos=(0, -0.3, 0), mode=mujoco.mjtCamLight.mjCAMLIGHT_TRACK
    )
    camera.alt.type = _XYAXES
    camera.alt.xyaxes = (1, 0, 0, 0, 0, 1)
    _site(
        hand,
        _ARM,
        name="palm_touch",
        type=_BOX,
        group=4,
        size=(0.025, 0.005, 0.008),
        pos=(0, 0, 0.043),
    )
    for name, pos, euler in _DIGITS:
        _add_digit(hand, name, pos, euler)


def _add_arm(world: mujoco.MjsBody) -> None:
    """Adds the pedestal decoration and the arm ("arm" class) down to the hand."""
    _geom(
        world,
        _MAIN,
        name="arm_root",
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        fromto=(0, -0.022, 0.4, 0, 0.022, 0.4),
        size=(0.024, 0, 0),
        material="decoration",
        contype=0,
        conaffinity=0,
    )
    parent = world
    for name, pos, joint, damping, limits, radius, length in _LINKS:
        parent = parent.add_body(name=name, pos=pos)
        limit = {"limited": _UNLIMITED} if limits is None else {"range": limits}
        _joint(parent, _ARM, name=joint, damping=(damping, 0, 0), **limit)
        _geom(parent, _ARM, name=name, size=(radius, 0, 0), fromto=(0, 0, 0, 0, 0, length))
    _add_hand(parent)


def _add_peg_parts(body: mujoco.MjsBody, cls: _Class, prefix: str) -> None:
    """Adds the blade and guard capsules of a peg, named `prefix` + part."""
    for suffix, fromto in _PEG_CAPSULES:
        _geom(body, cls, name=prefix + suffix, type=_CAPSULE, size=(0.005, 0, 0), fromto=fromto)


def _add_peg_sites(body: mujoco.MjsBody, cls: _Class, name: str) -> None:
    """Adds the four box sites along a peg, named `name` + suffix."""
    for suffix, z in _PEG_SITES:
        _site(body, cls, name=name + suffix, type=_BOX, pos=(0, 0, z))


def add_prop(
    world: mujoco.MjsBody, name: str, pos: tuple, geom_type: mujoco.mjtGeom, size: tuple
) -> mujoco.MjsBody:
    """Adds a prop ("object" class) on x, z slides (their refs at `pos`) and a y hinge,
    with a geom and a sphere site named `name`."""
    body = world.add_body(name=name, pos=pos)
    _joint(body, _OBJECT, name=f"{name}_x", type=_SLIDE, axis=(1, 0, 0), ref=pos[0])
    _joint(body, _OBJECT, name=f"{name}_z", type=_SLIDE, axis=(0, 0, 1), ref=pos[2])
    _joint(body, _OBJECT, name=f"{name}_y", type=_HINGE, axis=(0, 1, 0))
    if geom_type is not None:
        _geom(body, _OBJECT, name=name, type=geom_type, size=size)
        _site(body, _OBJECT, name=name, type=_SPHERE)
    return body


def add_ghost(
    world: mujoco.MjsBody, name: str, pos: tuple, geom_type: mujoco.mjtGeom, size: tuple
) -> mujoco.MjsBody:
    """Adds a target marker ("ghost" class: no collisions), a geom and a sphere site
    named `name`."""
    target = world.add_body(name=name, pos=pos)
    _geom(target, _GHOST, name=name, type=geom_type, size=size)
    _site(target, _GHOST, name=name, type=_SPHERE)
    return target


def _add_ball(world: mujoco.MjsBody) -> None:
    """Adds the ball on x, z slides and a y hinge."""
    add_prop(world, "ball", (0.4, 0, 0.4), _SPHERE, (0.022, 0, 0))


def _add_peg(world: mujoco.MjsBody) -> None:
    """Adds the peg (blade, guard, pommel) on x, z slides and a y hinge."""
    peg = add_prop(world, "peg", (-0.4, 0, 0.4), None, ())
    _add_peg_parts(peg, _OBJECT, "")
    pommel = peg.add_body(name="pommel", pos=(0, 0, -0.013))
    _geom(pommel, _OBJECT, name="pommel", type=_SPHERE, size=(0.009, 0, 0))
    _add_peg_sites(peg, _OBJECT, "peg")


def _add_slot(world: mujoco.MjsBody) -> None:
    """Adds the tilted slot (three boxes) that the peg is inserted into."""
    slot = _body(world, "slot", (-0.405, 0, 0.2), (0, 20, 0))
    for index, (pos, size) in enumerate(_SLOT_PARTS):
        _geom(slot, _OBSTACLE, name=f"slot_{index}", type=_BOX, pos=pos, size=size)
    _site(slot, _OBSTACLE, name="slot", type=_BOX, pos=(0, 0, 0))
    _site(slot, _OBSTACLE, name="slot_end", type=_BOX, pos=(0, 0, -0.05))


def _add_cup(world: mujoco.MjsBody) -> None:
    """Adds the tilted cup (four capsules) that the ball is inserted into."""
    cup = _body(world, "cup", (0.3, 0, 0.4), (0, -15, 0))
    for index, fromto in enumerate(_CUP_PARTS):
        _geom(cup, _OBSTACLE, name=f"cup_{index}", type=_CAPSULE, size=(0.008, 0, 0), fromto=fromto)
    _site(cup, _OBSTACLE, name="cup", size=(0.005, 0.003, 0.003))


def _add_target_ball(world: mujoco.MjsBody) -> None:
    """Adds the ghost ball marking the ball's target."""
    add_ghost(world, "target_ball", (0.4, 0.001, 0.4), _SPHERE, (0.02, 0, 0))


def _add_target_peg(world: mujoco.MjsBody) -> None:
    """Adds the ghost peg marking the peg's target."""
    target = world.add_body(name="target_peg", pos=(-0.2, 0.001, 0.4))
    _add_peg_parts(target, _GHOST, "target_")
    _geom(
        target, _GHOST, name="target_pommel", type=_SPHERE, size=(0.009, 0, 0), pos=(0, 0, -0.013)
    )
    _add_peg_sites(target, _GHOST, "target_peg")


def _add_props(world: mujoco.MjsBody, use_peg: bool, insert: bool) -> None:
    """Adds the props the task uses, in the order of dm_control's XML."""
    props = {"peg", "target_peg"} if use_peg else {"ball", "target_ball"}
    if insert:
        props.add("slot" if use_peg else "cup")
    for name, add in (
        ("ball", _add_ball),
        ("peg", _add_peg),
        ("slot", _add_slot),
        ("cup", _add_cup),
        ("target_ball", _add_target_ball),
        ("target_peg", _add_target_peg),
    ):
        if name in props:
            add(world)


def _add_tendons(spec: mujoco.MjSpec) -> None:
    """Adds the grasp and coupling tendons and the equality on the coupling."""
    for name, thumb_coef in (("grasp", 0.5), ("coupling", -0.5)):
        tendon = spec.add_tendon(name=name, width=0.01)
        tendon.wrap_joint("thumb", thumb_coef)
        tendon.wrap_joint("finger", 0.5)
    spec.add_equality(
        name="coupling",
        type=mujoco.mjtEq.mjEQ_TENDON,
        name1="coupling",
        solimp=(0.95, 0.99, 0.001, 0.5, 2),
        solref=(0.005, 0.5),
    )


def make_arm_spec(model_name: str) -> mujoco.MjSpec:
    """Returns the planar arm in its arena, without props (add bodies after the arm).

    The arena, the arm and hand, the tendons, touch sensors and motors: all that
    dm_control's manipulator and stacker models share, but for the geoms'
    default `solref` (stacker's is (0.01, 1)).
    """
    spec = common.new_spec(model_name)
    _add_assets(spec)
    spec.visual.map.shadowclip = 0.5
    spec.option.timestep = 0.001
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC

    world = spec.worldbody
    _add_arena(world)
    _add_arm(world)
    _add_tendons(spec)

    for name in _TOUCH_SENSORS:
        spec.add_sensor(
            name=name,
            type=mujoco.mjtSensor.mjSENS_TOUCH,
            objtype=mujoco.mjtObj.mjOBJ_SITE,
            objname=name,
        )
    for name, trntype, target, gear in _MOTORS:
        motor = spec.add_actuator(name=name, target=target)
        motor.set_to_motor()
        motor.trntype = trntype
        motor.gear[0] = gear
        motor.ctrllimited = _LIMITED
        motor.ctrlrange = (-1, 1)
    return spec


def make_spec(use_peg: bool = False, insert: bool = False) -> mujoco.MjSpec:
    """Returns the manipulator spec.

    Args:
        use_peg: Use the peg (and slot) props instead of the ball (and cup).
        insert: Add the receptacle (cup or slot) for the insert tasks.
    """
    spec = make_arm_spec("planar manipulator")
    _add_props(spec.worldbody, use_peg, insert)
    return spec


def make_model(use_peg: bool = False, insert: bool = False) -> mujoco.MjModel:
    """Returns the compiled manipulator model with the props of the given task."""
    return common.compile_spec(make_spec(use_peg, insert))

"""Ball in cup: a planar cup on two sprung slide joints, with a ball on a string.

The cup is a chain of five capsules driven by x and z motors; the ball, free
to slide in x and z, hangs from the cup's bottom by a 0.3 m spatial tendon.
"""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_SLIDE = mujoco.mjtJoint.mjJNT_SLIDE
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_XYAXES = mujoco.mjtOrientation.mjORIENTATION_XYAXES

# The "cup" default class: sprung, damped slide joints and thin capsules.
_CUP_JOINT = {"type": _SLIDE, "damping": (3, 0, 0), "stiffness": (20, 0, 0)}
_CUP_GEOM = {"type": mujoco.mjtGeom.mjGEOM_CAPSULE, "size": (0.008, 0, 0), "material": "self"}
# The cup's five capsules, as fromto segments.
_CUP_PARTS = (
    (-0.05, 0, 0, -0.05, 0, -0.075),
    (-0.05, 0, -0.075, -0.025, 0, -0.1),
    (-0.025, 0, -0.1, 0.025, 0, -0.1),
    (0.025, 0, -0.1, 0.05, 0, -0.075),
    (0.05, 0, -0.075, 0.05, 0, 0),
)
# Cameras: name, position, xyaxes.
_CAMERAS = (
    ("cam0", (0, -1, 0.8), (1, 0, 0, 0, 1, 2)),
    ("cam1", (0, -1, 0.4), (1, 0, 0, 0, 0, 1)),
)


def _add_cup(world: mujoco.MjsBody) -> None:
    """Adds the cup body: its x and z slides, its capsules and its two sites."""
    cup = world.add_body(name="cup", pos=(0, 0, 0.6))
    for name, axis in (("cup_x", (1, 0, 0)), ("cup_z", (0, 0, 1))):
        cup.add_joint(name=name, axis=axis, **_CUP_JOINT)
    for index, fromto in enumerate(_CUP_PARTS):
        cup.add_geom(name=f"cup_part_{index}", fromto=fromto, **_CUP_GEOM)
    cup.add_site(name="cup", pos=(0, 0, -0.108), size=(0.005, 0.005, 0.005))
    cup.add_site(
        name="target",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        pos=(0, 0, -0.05),
        size=(0.05, 0.006, 0.05),
        group=4,
    )


def _add_ball(world: mujoco.MjsBody) -> None:
    """Adds the ball on its (undamped, unsprung) x and z slides."""
    ball = world.add_body(name="ball", pos=(0, 0, 0.2))
    for name, axis in (("ball_x", (1, 0, 0)), ("ball_z", (0, 0, 1))):
        ball.add_joint(name=name, type=_SLIDE, axis=axis)
    ball.add_geom(name="ball", type=_SPHERE, size=(0.025, 0, 0), material="effector")
    ball.add_site(name="ball", size=(0.005, 0.005, 0.005))


def make_spec() -> mujoco.MjSpec:
    """Returns the ball-in-cup spec."""
    spec = common.new_spec("ball in cup")

    world = spec.worldbody
    world.add_light(
        name="light",
        type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL,
        diffuse=(0.6, 0.6, 0.6),
        pos=(0, 0, 2),
        specular=(0.3, 0.3, 0.3),
    )
    world.add_geom(
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
    _add_cup(world)
    _add_ball(world)

    for name, joint in (("x", "cup_x"), ("z", "cup_z")):
        motor = spec.add_actuator(name=name, target=joint)
        motor.set_to_motor()
        motor.trntype = mujoco.mjtTrn.mjTRN_JOINT
        motor.gear[0] = 5
        motor.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        motor.ctrlrange = (-1, 1)

    string = spec.add_tendon(
        name="string", limited=mujoco.mjtLimited.mjLIMITED_TRUE, range=(0, 0.3), width=0.003
    )
    string.wrap_site("ball")
    string.wrap_site("cup")
    return spec


def make_model() -> mujoco.MjModel:
    """Returns the compiled ball-in-cup model."""
    return common.compile_spec(make_spec())

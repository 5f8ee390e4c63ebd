"""Planar point mass: a 0.3 kg sphere on two damped, limited slide joints.

Two fixed tendons, one per axis, carry the two motors.
"""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_PLANE = mujoco.mjtGeom.mjGEOM_PLANE
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_ZAXIS = mujoco.mjtOrientation.mjORIENTATION_ZAXIS

# Walls: name, position, outward-facing normal, size.
_WALLS = (
    ("wall_x", (-0.3, 0, 0.02), (1, 0, 0), (0.02, 0.3, 0.02)),
    ("wall_y", (0, -0.3, 0.02), (0, 1, 0), (0.3, 0.02, 0.02)),
    ("wall_neg_x", (0.3, 0, 0.02), (-1, 0, 0), (0.02, 0.3, 0.02)),
    ("wall_neg_y", (0, 0.3, 0.02), (0, -1, 0), (0.3, 0.02, 0.02)),
)


def make_spec() -> mujoco.MjSpec:
    """Returns the point-mass spec."""
    spec = common.new_spec("planar point mass")
    spec.option.timestep = 0.02
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT

    world = spec.worldbody
    world.add_light(name="light", pos=(0, 0, 1))
    world.add_camera(name="fixed", pos=(0, 0, 0.75), quat=(1, 0, 0, 0))
    world.add_geom(
        name="ground",
        type=_PLANE,
        pos=(0, 0, 0),
        size=(0.3, 0.3, 0.1),
        material="grid",
    )
    for name, pos, normal, size in _WALLS:
        wall = world.add_geom(name=name, type=_PLANE, pos=pos, size=size, material="decoration")
        wall.alt.type = _ZAXIS
        wall.alt.zaxis = normal

    body = world.add_body(name="pointmass", pos=(0, 0, 0.01))
    cam0 = body.add_camera(name="cam0", pos=(0, -0.3, 0.3))
    cam0.alt.type = mujoco.mjtOrientation.mjORIENTATION_XYAXES
    cam0.alt.xyaxes = (1, 0, 0, 0, 0.7, 0.7)
    for name, axis in (("root_x", (1, 0, 0)), ("root_y", (0, 1, 0))):
        body.add_joint(
            name=name,
            type=mujoco.mjtJoint.mjJNT_SLIDE,
            pos=(0, 0, 0),
            axis=axis,
            limited=mujoco.mjtLimited.mjLIMITED_TRUE,
            range=(-0.29, 0.29),
            damping=(1, 0, 0),
        )
    body.add_geom(
        name="pointmass",
        type=_SPHERE,
        size=(0.01, 0, 0),
        material="self",
        mass=0.3,
    )
    world.add_geom(
        name="target",
        type=_SPHERE,
        pos=(0, 0, 0.01),
        size=(0.015, 0, 0),
        material="target",
    )

    for name, coefs in (("t1", (1, 0)), ("t2", (0, 1))):
        tendon = spec.add_tendon(name=name)
        tendon.wrap_joint("root_x", coefs[0])
        tendon.wrap_joint("root_y", coefs[1])
    for name in ("t1", "t2"):
        motor = spec.add_actuator(name=name, target=name)
        motor.set_to_motor()
        motor.trntype = mujoco.mjtTrn.mjTRN_TENDON
        motor.gear[0] = 0.1
        motor.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        motor.ctrlrange = (-1, 1)
    return spec


def make_model() -> mujoco.MjModel:
    """Returns the compiled point-mass model."""
    return common.compile_spec(make_spec())

"""Two-link planar reacher: a 0.12 m arm and a 0.1 m hand on z-axis hinges.

The arm moves in the plane of a small walled arena; a fingertip sphere at the
end of the hand should reach a spherical target. Contacts are disabled.
"""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_PLANE = mujoco.mjtGeom.mjGEOM_PLANE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_ZAXIS = mujoco.mjtOrientation.mjORIENTATION_ZAXIS

# The default joint: a lightly damped z-axis hinge.
_JOINT = {"type": _HINGE, "axis": (0, 0, 1), "damping": (0.01, 0, 0)}
# Walls: name, position, outward-facing normal, size.
_WALLS = (
    ("wall_x", (-0.3, 0, 0.02), (1, 0, 0), (0.02, 0.3, 0.02)),
    ("wall_y", (0, -0.3, 0.02), (0, 1, 0), (0.3, 0.02, 0.02)),
    ("wall_neg_x", (0.3, 0, 0.02), (-1, 0, 0), (0.02, 0.3, 0.02)),
    ("wall_neg_y", (0, 0.3, 0.02), (0, -1, 0), (0.3, 0.02, 0.02)),
)


def _add_joint(body: mujoco.MjsBody, **kwargs) -> mujoco.MjsJoint:
    """Adds a joint with the default-class values, overridden by `kwargs`."""
    return body.add_joint(**{**_JOINT, **kwargs})


def _add_arena(world: mujoco.MjsBody) -> None:
    """Adds the ground plane and the four low walls around it."""
    world.add_geom(name="ground", type=_PLANE, pos=(0, 0, 0), size=(0.3, 0.3, 10), material="grid")
    for name, pos, normal, size in _WALLS:
        wall = world.add_geom(name=name, type=_PLANE, pos=pos, size=size, material="decoration")
        wall.alt.type = _ZAXIS
        wall.alt.zaxis = normal


def _add_arm(world: mujoco.MjsBody) -> None:
    """Adds the root decoration and the arm -> hand -> finger chain."""
    world.add_geom(
        name="root",
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        fromto=(0, 0, 0, 0, 0, 0.02),
        size=(0.011, 0, 0),
        material="decoration",
    )
    arm = world.add_body(name="arm", pos=(0, 0, 0.01))
    arm.add_geom(
        name="arm", type=_CAPSULE, fromto=(0, 0, 0, 0.12, 0, 0), size=(0.01, 0, 0), material="self"
    )
    _add_joint(arm, name="shoulder")
    hand = arm.add_body(name="hand", pos=(0.12, 0, 0))
    hand.add_geom(
        name="hand", type=_CAPSULE, fromto=(0, 0, 0, 0.1, 0, 0), size=(0.01, 0, 0), material="self"
    )
    _add_joint(hand, name="wrist", limited=mujoco.mjtLimited.mjLIMITED_TRUE, range=(-160, 160))
    finger = hand.add_body(name="finger", pos=(0.12, 0, 0))
    finger.add_camera(name="hand", pos=(0, 0, 0.2), mode=mujoco.mjtCamLight.mjCAMLIGHT_TRACK)
    finger.add_geom(name="finger", type=_SPHERE, size=(0.01, 0, 0), material="effector")


def make_spec() -> mujoco.MjSpec:
    """Returns the reacher spec."""
    spec = common.new_spec("two-link planar reacher")
    spec.option.timestep = 0.02
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT

    world = spec.worldbody
    world.add_light(name="light", pos=(0, 0, 1))
    world.add_camera(name="fixed", pos=(0, 0, 0.75), quat=(1, 0, 0, 0))
    _add_arena(world)
    _add_arm(world)
    world.add_geom(
        name="target", type=_SPHERE, pos=(0, 0, 0.01), size=(0.05, 0, 0), material="target"
    )

    for name in ("shoulder", "wrist"):
        motor = spec.add_actuator(name=name, target=name)
        motor.set_to_motor()
        motor.trntype = mujoco.mjtTrn.mjTRN_JOINT
        motor.gear[0] = 0.05
        motor.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        motor.ctrlrange = (-1, 1)
    return spec


def make_model() -> mujoco.MjModel:
    """Returns the compiled reacher model."""
    return common.compile_spec(make_spec())

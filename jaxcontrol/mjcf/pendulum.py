"""Pendulum: a 1 kg point mass on a massless 0.5 m pole, torque-actuated."""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_PLANE = mujoco.mjtGeom.mjGEOM_PLANE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_CYLINDER = mujoco.mjtGeom.mjGEOM_CYLINDER
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE


def make_spec() -> mujoco.MjSpec:
    """Returns the pendulum spec."""
    spec = common.new_spec("pendulum")
    spec.option.timestep = 0.02
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    spec.option.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY

    world = spec.worldbody
    world.add_light(name="light", pos=(0, 0, 2))
    world.add_geom(name="floor", type=_PLANE, size=(2, 2, 0.2), material="grid")
    fixed = world.add_camera(name="fixed", pos=(0, -1.5, 2))
    fixed.alt.type = mujoco.mjtOrientation.mjORIENTATION_XYAXES
    fixed.alt.xyaxes = (1, 0, 0, 0, 1, 1)
    world.add_camera(
        name="lookat",
        mode=mujoco.mjtCamLight.mjCAMLIGHT_TARGETBODYCOM,
        targetbody="pole",
        pos=(0, -2, 1),
    )

    pole = world.add_body(name="pole", pos=(0, 0, 0.6))
    pole.add_joint(name="hinge", type=_HINGE, axis=(0, 1, 0), damping=(0.1, 0, 0))
    pole.add_geom(
        name="base",
        type=_CYLINDER,
        material="decoration",
        fromto=(0, -0.03, 0, 0, 0.03, 0),
        size=(0.021, 0, 0),
        mass=0,
    )
    pole.add_geom(
        name="pole",
        type=_CAPSULE,
        material="self",
        fromto=(0, 0, 0, 0, 0, 0.5),
        size=(0.02, 0, 0),
        mass=0,
    )
    pole.add_geom(
        name="mass",
        type=_SPHERE,
        material="effector",
        pos=(0, 0, 0.5),
        size=(0.05, 0, 0),
        mass=1,
    )

    torque = spec.add_actuator(name="torque", target="hinge")
    torque.set_to_motor()
    torque.trntype = mujoco.mjtTrn.mjTRN_JOINT
    torque.gear[0] = 1
    torque.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
    torque.ctrlrange = (-1, 1)
    return spec


def make_model() -> mujoco.MjModel:
    """Returns the compiled pendulum model."""
    return common.compile_spec(make_spec())

"""Acrobot: a two-link planar arm actuated only at the elbow.

Coulom's variant of the acrobot: two 1 kg, 1 m capsule links on y-axis
hinges with 0.05 damping; constraints are disabled.
"""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_ZAXIS = mujoco.mjtOrientation.mjORIENTATION_ZAXIS
_DAMPING = (0.05, 0, 0)


def make_spec() -> mujoco.MjSpec:
    """Returns the acrobot spec."""
    spec = common.new_spec("acrobot")
    spec.option.timestep = 0.01
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_RK4
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    spec.option.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY

    world = spec.worldbody
    world.add_light(name="light", pos=(0, 0, 6))
    world.add_geom(
        name="floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=(3, 3, 0.2),
        material="grid",
    )
    world.add_site(
        name="target",
        type=mujoco.mjtGeom.mjGEOM_SPHERE,
        pos=(0, 0, 4),
        size=(0.2, 0.005, 0.005),
        material="target",
        group=3,
    )
    fixed = world.add_camera(name="fixed", pos=(0, -6, 2))
    fixed.alt.type = _ZAXIS
    fixed.alt.zaxis = (0, -1, 0)
    world.add_camera(
        name="lookat",
        mode=mujoco.mjtCamLight.mjCAMLIGHT_TARGETBODYCOM,
        targetbody="upper_arm",
        pos=(0, -2, 3),
    )

    upper = world.add_body(name="upper_arm", pos=(0, 0, 2))
    upper.add_joint(name="shoulder", type=_HINGE, axis=(0, 1, 0), damping=_DAMPING)
    upper.add_geom(
        name="upper_arm_decoration",
        type=mujoco.mjtGeom.mjGEOM_CYLINDER,
        material="decoration",
        fromto=(0, -0.06, 0, 0, 0.06, 0),
        size=(0.051, 0, 0),
        mass=0,
    )
    upper.add_geom(
        name="upper_arm",
        type=_CAPSULE,
        fromto=(0, 0, 0, 0, 0, 1),
        size=(0.05, 0, 0),
        material="self",
        mass=1,
    )
    lower = upper.add_body(name="lower_arm", pos=(0, 0, 1))
    lower.add_joint(name="elbow", type=_HINGE, axis=(0, 1, 0), damping=_DAMPING)
    lower.add_geom(
        name="lower_arm",
        type=_CAPSULE,
        fromto=(0, 0, 0, 0, 0, 1),
        size=(0.049, 0, 0),
        material="self",
        mass=1,
    )
    lower.add_site(name="tip", pos=(0, 0, 1), size=(0.01, 0.005, 0.005))

    elbow = spec.add_actuator(name="elbow", target="elbow")
    elbow.set_to_motor()
    elbow.trntype = mujoco.mjtTrn.mjTRN_JOINT
    elbow.gear[0] = 2
    elbow.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
    elbow.ctrlrange = (-1, 1)
    return spec


def make_model() -> mujoco.MjModel:
    """Returns the compiled acrobot model."""
    return common.compile_spec(make_spec())

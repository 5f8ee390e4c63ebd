"""Cart-pole: a cart on a rail carrying a chain of `num_poles` hinged poles.

With more than one pole, each extra pole hangs off the tip of the previous
one, the floor drops by one pole length per extra pole and both cameras move
back, as in dm_control's procedural multi-pole variant.
"""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_PLANE = mujoco.mjtGeom.mjGEOM_PLANE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_BOX = mujoco.mjtGeom.mjGEOM_BOX
_ZAXIS = mujoco.mjtOrientation.mjORIENTATION_ZAXIS


def _add_pole(parent: mujoco.MjsBody, index: int, pos: tuple) -> mujoco.MjsBody:
    """Adds pole `index` (1-based): a 1 m, 0.1 kg capsule on a y-axis hinge."""
    pole = parent.add_body(name=f"pole_{index}", pos=pos)
    pole.add_joint(
        name=f"hinge_{index}",
        type=mujoco.mjtJoint.mjJNT_HINGE,
        axis=(0, 1, 0),
        damping=(2e-6, 0, 0),
    )
    pole.add_geom(
        name=f"pole_{index}",
        type=_CAPSULE,
        fromto=(0, 0, 0, 0, 0, 1),
        size=(0.045, 0, 0),
        material="self",
        mass=0.1,
    )
    return pole


def make_spec(num_poles: int = 1) -> mujoco.MjSpec:
    """Returns the cart-pole spec.

    Args:
        num_poles: Number of poles in the chain (at least 1).

    Raises:
        ValueError: If `num_poles` < 1.
    """
    if num_poles < 1:
        raise ValueError(f"num_poles must be >= 1, got {num_poles}")
    spec = common.new_spec("cart-pole")
    spec.option.timestep = 0.01
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_RK4
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    spec.option.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY

    # The single-pole layout; extra poles push the floor down, cameras back.
    extra = num_poles > 1
    floor_z = 1 - num_poles - 0.05 if extra else -0.05
    fixed_y = -1 - 2 * num_poles if extra else -4
    lookat_y = -2 * num_poles if extra else -2

    world = spec.worldbody
    world.add_light(name="light", pos=(0, 0, 6))
    fixed = world.add_camera(name="fixed", pos=(0, fixed_y, 1))
    fixed.alt.type = _ZAXIS
    fixed.alt.zaxis = (0, -1, 0)
    world.add_camera(
        name="lookatcart",
        mode=mujoco.mjtCamLight.mjCAMLIGHT_TARGETBODY,
        targetbody="cart",
        pos=(0, lookat_y, 2),
    )
    world.add_geom(
        name="floor",
        type=_PLANE,
        pos=(0, 0, floor_z),
        size=(4, 4, 0.2),
        material="grid",
    )
    for name, y in (("rail1", 0.07), ("rail2", -0.07)):
        rail = world.add_geom(
            name=name,
            type=_CAPSULE,
            pos=(0, y, 1),
            size=(0.02, 2, 0),
            material="decoration",
        )
        rail.alt.type = _ZAXIS
        rail.alt.zaxis = (1, 0, 0)

    cart = world.add_body(name="cart", pos=(0, 0, 1))
    cart.add_joint(
        name="slider",
        type=mujoco.mjtJoint.mjJNT_SLIDE,
        limited=mujoco.mjtLimited.mjLIMITED_TRUE,
        axis=(1, 0, 0),
        range=(-1.8, 1.8),
        solref_limit=(0.08, 1),
        damping=(5e-4, 0, 0),
    )
    cart.add_geom(name="cart", type=_BOX, size=(0.2, 0.15, 0.1), material="self", mass=1)
    parent = _add_pole(cart, 1, pos=(0, 0, 0))
    for index in range(2, num_poles + 1):
        parent = _add_pole(parent, index, pos=(0, 0, 1))

    slide = spec.add_actuator(name="slide", target="slider")
    slide.set_to_motor()
    slide.trntype = mujoco.mjtTrn.mjTRN_JOINT
    slide.gear[0] = 10
    slide.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
    slide.ctrlrange = (-1, 1)
    return spec


def make_model(num_poles: int = 1) -> mujoco.MjModel:
    """Returns the compiled cart-pole model with `num_poles` poles."""
    return common.compile_spec(make_spec(num_poles))

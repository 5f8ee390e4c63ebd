"""LQR: a chain of spring-loaded sliders, the first few driven by motors.

A procedural model, as dm_control's: `n_bodies` spheres nested one in the
next, each on a slide joint along y with a random stiffness (and a damping
drawn from an empty range, so 0), the first `n_actuators` driven by unlimited
motors. Spatial tendons between consecutive spheres are for show only (the
model disables constraints, and tendons without stiffness exert nothing).

dm_control draws the joints' parameters from the task's `numpy` random state
when it loads the environment, stiffness then damping for each body in turn;
`draw_joint_parameters` makes the same draws, so `make_model(n, m,
random=np.random.RandomState(seed))` is the model of `suite.load('lqr', ...,
task_kwargs={'random': seed})`.
"""

from __future__ import annotations

import operator

import mujoco
import numpy as np

from jaxcontrol.mjcf import common

_SLIDE = mujoco.mjtJoint.mjJNT_SLIDE
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_XYAXES = mujoco.mjtOrientation.mjORIENTATION_XYAXES

STIFFNESS_RANGE = (15.0, 25.0)
DAMPING_RANGE = (0.0, 0.0)

# Cameras: name, position, xyaxes.
_CAMERAS = (
    ("cam0", (-1.428, -0.311, 0.856), (0.099, -0.995, 0.0, 0.350, 0.035, 0.936)),
    ("cam1", (1.787, 2.452, 4.331), (-1, 0, 0, 0, -0.868, 0.497)),
)


def _is_integer(value) -> bool:
    try:
        operator.index(value)
    except TypeError:
        return False
    return not isinstance(value, bool)


def _check_sizes(n_bodies: int, n_actuators: int) -> None:
    """dm_control's checks, with its messages (and integers demanded)."""
    for name, value in (("n_bodies", n_bodies), ("n_actuators", n_actuators)):
        if not _is_integer(value):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if n_bodies < 1 or n_actuators < 1:
        raise ValueError("At least 1 body and 1 actuator required.")
    if n_actuators > n_bodies:
        raise ValueError("At most 1 actuator per body.")


def draw_joint_parameters(
    n_bodies: int, random: np.random.RandomState
) -> tuple[np.ndarray, np.ndarray]:
    """Each joint's (stiffness, damping), drawn as dm_control draws them.

    Args:
      n_bodies: the number of bodies (joints).
      random: the random state; advanced by 2 * n_bodies uniform draws,
        stiffness then damping for each body in turn.

    Returns:
      (stiffness, damping), each of shape (n_bodies,).
    """
    stiffness, damping = np.zeros(n_bodies), np.zeros(n_bodies)
    for body in range(n_bodies):
        stiffness[body] = random.uniform(*STIFFNESS_RANGE)
        damping[body] = random.uniform(*DAMPING_RANGE)
    return stiffness, damping


def make_spec(
    n_bodies: int, n_actuators: int, stiffness: np.ndarray, damping: np.ndarray
) -> mujoco.MjSpec:
    """Returns the LQR spec with the given joint parameters.

    Args:
      n_bodies: the number of bodies (degrees of freedom), >= 1.
      n_actuators: how many of the first bodies are actuated, in [1, n_bodies].
      stiffness, damping: (n_bodies,) joint stiffness and damping.
    """
    _check_sizes(n_bodies, n_actuators)
    stiffness, damping = np.asarray(stiffness, float), np.asarray(damping, float)
    if stiffness.shape != (n_bodies,) or damping.shape != (n_bodies,):
        raise ValueError(
            f"stiffness and damping need shape ({n_bodies},), got {stiffness.shape} and "
            f"{damping.shape}"
        )
    spec = common.new_spec("LQR")
    spec.option.timestep = 0.03
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT

    world = spec.worldbody
    world.add_light(name="light", pos=(0, 0, 2))
    for name, pos, xyaxes in _CAMERAS:
        camera = world.add_camera(name=name, pos=pos)
        camera.alt.type = _XYAXES
        camera.alt.xyaxes = xyaxes
    world.add_geom(
        name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=(4, 1, 0.2), material="grid"
    )
    world.add_geom(
        name="origin",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        pos=(2, 0, 0.05),
        size=(2, 0.003, 0.05),
        rgba=(0.5, 0.5, 0.5, 0.5),
        material="self",  # the default class's, under its own rgba
    )

    parent = world
    for body in range(n_bodies):
        child = parent.add_body(name=f"body_{body}", pos=(0.25, 0, 0.1 if body == 0 else 0))
        child.add_joint(
            name=f"joint_{body}",
            type=_SLIDE,
            axis=(0, 1, 0),
            stiffness=float(stiffness[body]),
            damping=float(damping[body]),
        )
        child.add_geom(name=f"geom_{body}", type=_SPHERE, size=(0.1, 0, 0), material="self")
        child.add_site(name=f"site_{body}", size=(0.01, 0.005, 0.005))
        parent = child

    for body in range(n_actuators):
        motor = spec.add_actuator(name=f"motor_{body}", target=f"joint_{body}")
        motor.set_to_motor()
        motor.trntype = mujoco.mjtTrn.mjTRN_JOINT
    for body in range(n_bodies - 1):
        tendon = spec.add_tendon(name=f"tendon_{body}", width=0.02, material="self")
        tendon.wrap_site(f"site_{body}")
        tendon.wrap_site(f"site_{body + 1}")
    return spec


def make_model(
    n_bodies: int = 2, n_actuators: int = 1, random: np.random.RandomState | int = 0
) -> mujoco.MjModel:
    """Returns the compiled LQR model, its joints drawn from `random`.

    Args:
      n_bodies: the number of bodies, >= 1.
      n_actuators: how many of the first bodies are actuated, in [1, n_bodies].
      random: a `numpy.random.RandomState` (advanced by the draws, as
        dm_control's is before its task draws the episodes), or an integer seed.
    """
    _check_sizes(n_bodies, n_actuators)
    if not isinstance(random, np.random.RandomState):
        random = np.random.RandomState(random)
    joints = draw_joint_parameters(n_bodies, random)
    return common.compile_spec(make_spec(n_bodies, n_actuators, *joints))

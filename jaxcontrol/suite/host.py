"""The host-side physics: dm_control's `Physics` class over jaxcontrol's model.

`env.physics` is an instance of dm_control's own Physics class for the domain
(`dm_control.suite.cartpole.Physics`, ...; `dm_control.mujoco.Physics` where a
domain has none) built over a copy of the Env's `MjModel`. Named indexing,
rendering, `get_state`/`set_state`, `reset_context` and the domain's accessors
are dm_control's code; the model, the episode's sampling, the observations and
the rewards are jaxcontrol's (docs/design/suite-drop-in.md says why).
"""

from __future__ import annotations

import copy
import importlib
import os

import mujoco
import numpy as np

from jaxcontrol import physics as physics_lib

# MjData fields that the JAX task reads from the host (`observe`): the state, the
# controls and applied forces, the sensors and the poses `mj_kinematics` computes.
# The rest of what a task reads its `sync` recomputes, as after a C backend step.
STATE = ("time", "qpos", "qvel", "act", "qacc_warmstart")
READ = (*STATE, "ctrl", "qfrc_applied", "xfrc_applied", "sensordata", *physics_lib.KINEMATICS)


def dm_control_modules():
    """`dm_control.mujoco` and its wrapper, with an ImportError that names the extra."""
    os.environ.setdefault("MUJOCO_GL", "disable")
    try:
        from dm_control import mujoco as dm_mujoco  # pylint: disable=import-outside-toplevel
        from dm_control.mujoco import wrapper  # pylint: disable=import-outside-toplevel
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError(
            "jaxcontrol.suite's env.physics is dm_control's Physics class: "
            "pip install 'jaxcontrol[suite]'"
        ) from e
    return dm_mujoco, wrapper


def physics_class(domain: str):
    """dm_control's Physics subclass of `domain` (its accessors), else its base class."""
    dm_mujoco, _ = dm_control_modules()
    try:
        module = importlib.import_module(f"dm_control.suite.{domain}")
    except ImportError:
        return dm_mujoco.Physics
    return getattr(module, "Physics", dm_mujoco.Physics)


def make_physics(env):
    """A dm_control Physics of `env`'s domain over a copy of `env.mj_model`."""
    _, wrapper = dm_control_modules()
    model = wrapper.MjModel(copy.deepcopy(env.mj_model))
    return physics_class(env.domain).from_model(model)


def read(physics) -> dict[str, np.ndarray]:
    """The `READ` fields of the physics' data, float64 copies."""
    data = physics.data
    return {name: np.array(getattr(data, name), np.float64) for name in READ}


def model_fields(physics, names) -> dict[str, np.ndarray]:
    """The physics' model's values of `names` (the task's per-episode fields), copies."""
    return {name: np.array(getattr(physics.model, name)) for name in names}


def write_model_fields(physics, fields) -> None:
    """Writes model fields (full arrays) into the physics' model.

    New height field data (quadruped-escape's terrain) is uploaded to the physics'
    rendering context where it has one, as dm_control's escape does at reset; a
    context made later uploads the model's data itself.
    """
    for name, value in fields.items():
        target = getattr(physics.model, name)
        target[...] = np.asarray(value).reshape(target.shape)
    if "hfield_data" in fields and physics._contexts:  # pylint: disable=protected-access
        with physics.contexts.gl.make_current() as context:
            for hfield in range(physics.model.nhfield):
                context.call(
                    mujoco.mjr_uploadHField, physics.model.ptr, physics.contexts.mujoco.ptr, hfield
                )


def write_state(physics, qpos, qvel, act=None, time=None, warmstart=None) -> None:
    """Writes a physics state into the physics' data (no forward pass)."""
    data = physics.data
    data.qpos[:] = qpos
    data.qvel[:] = qvel
    if act is not None and np.size(act):
        data.act[:] = act
    if time is not None:
        data.time = float(time)
    if warmstart is not None:
        data.qacc_warmstart[:] = warmstart


# The acceleration stage's results of an MJX step that the host physics keeps as C
# MuJoCo's step leaves them (`mj_step1` recomputes the position and velocity stages).
ACCELERATION = (
    "qacc",
    "qacc_smooth",
    "qfrc_smooth",
    "qfrc_actuator",
    "qfrc_constraint",
    "actuator_force",
)


def write_acceleration(physics, data) -> None:
    """Writes the `ACCELERATION` fields of an `mjx.Data` (host copies) into the physics."""
    for name in ACCELERATION:
        target = getattr(physics.data, name)
        target[...] = np.reshape(getattr(data, name), target.shape)


def positions_and_velocities(physics) -> None:
    """`mj_step1` on the physics: what dm_control's step leaves current at the end."""
    mujoco.mj_step1(physics.model.ptr, physics.data.ptr)


# What a JAX evaluation of the physics reads directly (the rest follows from these).
EVALUATED = (*STATE, "ctrl", "qfrc_applied", "xfrc_applied", "sensordata", "xpos")


def fingerprint(physics, names, fields=EVALUATED) -> tuple[bytes, ...]:
    """The physics' data `fields` and model fields `names`, as bytes: a cheap test
    that nothing was written into them since."""
    parts = [np.asarray(getattr(physics.data, name)).tobytes() for name in fields]
    parts += [np.asarray(getattr(physics.model, name)).tobytes() for name in names]
    return tuple(parts)


def physics_error(message: str) -> Exception:
    """dm_control's `PhysicsError`, which its Physics raises for an invalid state."""
    dm_control_modules()
    from dm_control.rl import control  # pylint: disable=import-outside-toplevel

    return control.PhysicsError(message)

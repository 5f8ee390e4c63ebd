"""Adaptations of a compiled model that MJX needs before `mjx.put_model`.

Our builders reproduce dm_control's models exactly, including settings that
MJX does not support. Every change made to let MJX load them lives here,
each with why it is needed and why it does not change the task.
"""

from __future__ import annotations

import copy
from typing import Any

import jax
import mujoco
from mujoco import mjx

_ENERGY = int(mujoco.mjtEnableBit.mjENBL_ENERGY)


def to_mjx_compatible(mj_model: mujoco.MjModel) -> mujoco.MjModel:
    """Returns a copy of `mj_model` that `mujoco.mjx.put_model` accepts.

    The input model is not modified.

    Args:
        mj_model: A compiled model, e.g. from `jaxcontrol.mjcf.build`.

    Returns:
        An adapted deep copy.
    """
    model = copy.deepcopy(mj_model)
    # Energy: cartpole, pendulum and acrobot enable mjENBL_ENERGY, which MJX's
    # put_model rejects (NotImplementedError). The flag only makes MuJoCo fill
    # the diagnostic data.energy (potential and kinetic energy); it has no
    # effect on the dynamics, and no observation or reward of these tasks
    # reads data.energy, so clearing it is harmless.
    model.opt.enableflags &= ~_ENERGY
    return model


def put_model(mj_model: mujoco.MjModel, **kwargs: Any) -> mjx.Model:
    """Returns `mjx.put_model(to_mjx_compatible(mj_model), **kwargs)` on a local device.

    Args:
        mj_model: A compiled model.
        **kwargs: Passed on to `mujoco.mjx.put_model` (e.g. `device`, `impl`).
    """
    kwargs.setdefault("device", local_device())
    return mjx.put_model(to_mjx_compatible(mj_model), **kwargs)


def put_data(mj_model: mujoco.MjModel, mj_data: mujoco.MjData) -> mjx.Data:
    """Returns `mjx.put_data(mj_model, mj_data)` on a local device."""
    return mjx.put_data(mj_model, mj_data, device=local_device())


def local_device() -> jax.Device:
    """This process's first device.

    MJX defaults to `jax.devices()[0]`. After `jax.distributed.initialize` that is
    process 0's device, which other hosts cannot address (using it crashes them).
    """
    return jax.local_devices()[0]

"""Adaptations of a compiled model that MJX needs before `mjx.put_model`.

Our builders reproduce dm_control's models exactly, including settings that
MJX does not support. Every change made to let MJX load them lives here,
each with why it is needed and why it does not change the task.
"""

from __future__ import annotations

import copy
import functools
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
from mujoco import mjx

_ENERGY = int(mujoco.mjtEnableBit.mjENBL_ENERGY)


def to_mjx_compatible(
    mj_model: mujoco.MjModel, solver_caps: tuple[int, int] | None = None
) -> mujoco.MjModel:
    """Returns a copy of `mj_model` that `mujoco.mjx.put_model` accepts.

    The input model is not modified.

    Args:
        mj_model: A compiled model, e.g. from `jaxcontrol.mjcf.build`.
        solver_caps: (iterations, ls_iterations) for MJX's constraint solver in
            place of the model's, for tasks whose measured caps keep MJX as
            close to C MuJoCo as dm_control's settings do (`Task.solver_caps`,
            benchmarks/solver_caps.py). None keeps dm_control's.

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
    if solver_caps is not None:
        # Under vmap MJX's solver loops until the slowest environment converges
        # and runs every line-search step; lower caps are a speed-up where they
        # do not bind measurably (the parity tests hold them to C MuJoCo).
        model.opt.iterations, model.opt.ls_iterations = solver_caps
    return model


def put_model(
    mj_model: mujoco.MjModel,
    solver_caps: tuple[int, int] | None = None,
    steps: bool = True,
    **kwargs: Any,
) -> mjx.Model:
    """Returns `mjx.put_model(to_mjx_compatible(mj_model, solver_caps), **kwargs)`.

    On a local device, with our collision functions for the geom pairs MJX lacks
    (`jaxcontrol.collision`, e.g. ellipsoid-box in fish and swimmer) registered.

    Args:
        mj_model: A compiled model.
        solver_caps: see `to_mjx_compatible`.
        steps: whether MJX will step this model; if so, a setting that MJX ignores
            and that changes the dynamics (noslip) is warned about.
        **kwargs: Passed on to `mujoco.mjx.put_model` (e.g. `device`, `impl`).
    """
    _register_collisions()
    if steps and mj_model.opt.noslip_iterations > 0:
        # MJX has no noslip solver and ignores the setting without a word; say so, because
        # the dynamics then differ from C MuJoCo's (dog: 4 noslip iterations).
        warnings.warn(
            f"the model sets noslip_iterations={mj_model.opt.noslip_iterations}, which MJX "
            "ignores (it has no noslip solver): its contact friction, and so its trajectories, "
            "will differ from C MuJoCo's (the C MuJoCo backend, backend='mujoco', keeps them)",
            stacklevel=2,
        )
    kwargs.setdefault("device", local_device())
    return mjx.put_model(to_mjx_compatible(mj_model, solver_caps), **kwargs)


def put_data(mj_model: mujoco.MjModel, mj_data: mujoco.MjData) -> mjx.Data:
    """Returns `mjx.put_data(mj_model, mj_data)` on a local device.

    `mjx.put_data` sizes the contacts from MJX's collision table, so our
    collision functions are registered here too.
    """
    _register_collisions()
    data = mjx.put_data(mj_model, mj_data, device=local_device())
    # MJX's collision and tendon passes build contact geom ids and tendon wrap
    # indices as JAX's default int (int64 under x64) where put_data gives int32:
    # match them, or a scan over steps (RK4's own, ours over substeps, or stock
    # mjx.step's) would change its carry's type.
    names = [f"contact.{f}" for f in ("geom", "geom1", "geom2")]
    names += ["ten_wrapadr", "ten_wrapnum", "wrap_obj"]
    int_ = jax.dtypes.canonicalize_dtype(jnp.int64)
    impl = data._impl
    ids = {f"_impl.{n}": functools.reduce(getattr, n.split("."), impl) for n in names}
    return data.tree_replace({k: v.astype(int_) for k, v in ids.items()})


def _register_collisions() -> None:
    from jaxcontrol import collision  # imports MJX internals; only when needed

    collision.register()


def local_device() -> jax.Device:
    """This process's first device.

    MJX defaults to `jax.devices()[0]`. After `jax.distributed.initialize` that is
    process 0's device, which other hosts cannot address (using it crashes them).
    """
    return jax.local_devices()[0]

"""Random initial joint configurations, as a pure function of a PRNG key.

:func:`randomize_limited_and_rotational_joints` draws a joint configuration
with, joint by joint, the same distribution as dm_control's
``suite.utils.randomizers.randomize_limited_and_rotational_joints``:

=====================  ====================================================
joint                  new ``qpos`` entries
=====================  ====================================================
limited hinge / slide  uniform in ``jnt_range``
unlimited hinge        uniform in ``[-pi, pi]``
unlimited slide        unchanged
limited ball           :func:`random_limited_quaternion` with limit
                       ``jnt_range[1]`` (random axis, angle uniform in
                       ``[0, limit)``)
unlimited ball         uniform on the unit 3-sphere (normalised Gaussian)
free                   position unchanged; orientation is a normalised
                       vector of four *uniform* ``[0, 1)`` draws
=====================  ====================================================

The free-joint orientation is deliberately not uniform on the sphere (all its
components are non-negative): dm_control draws it that way and keeps it for
benchmark continuity, and we reproduce it so initial-state distributions match.

The MuJoCo model is static: joint types, limits and addresses are read with
NumPy when the function is traced, so the compiled program contains only the
random draws and static-index updates of ``qpos``. The key is split into one
independent subkey per joint; no key is used twice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from jaxcontrol import physics as physics_lib
from jaxcontrol.physics import Physics

__all__ = [
    "random_limited_quaternion",
    "randomize_limited_and_rotational_joints",
    "resample_while_penetrating",
]

_HINGE = int(mujoco.mjtJoint.mjJNT_HINGE)
_SLIDE = int(mujoco.mjtJoint.mjJNT_SLIDE)
_BALL = int(mujoco.mjtJoint.mjJNT_BALL)
_FREE = int(mujoco.mjtJoint.mjJNT_FREE)


def _unit(v: jax.Array) -> jax.Array:
    """Returns `v` divided by its Euclidean norm (last axis)."""
    return v / jnp.linalg.norm(v, axis=-1, keepdims=True)


def random_limited_quaternion(
    key: jax.Array,
    limit: jax.typing.ArrayLike,
    dtype: jax.typing.DTypeLike | None = None,
) -> jax.Array:
    """Draws a unit quaternion rotating by at most `limit` radians.

    The rotation axis is uniform on the unit 2-sphere (a normalised standard
    normal 3-vector) and the rotation angle is uniform in ``[0, limit)``; the
    result is ``(cos(angle / 2), sin(angle / 2) * axis)`` in MuJoCo's
    ``(w, x, y, z)`` order, which is what MuJoCo's ``mju_axisAngle2Quat`` gives.

    Args:
        key: PRNG key; it is split internally into independent axis and angle
            keys and not otherwise used.
        limit: Maximum rotation angle in radians (scalar; may be traced).
        dtype: Floating dtype of the result; JAX's default float if None.

    Returns:
        Array of shape ``(4,)``, a unit quaternion with non-negative ``w``
        whenever ``limit <= pi``.
    """
    if dtype is None:
        dtype = jnp.result_type(float)
    axis_key, angle_key = jax.random.split(key)
    axis = _unit(jax.random.normal(axis_key, (3,), dtype=dtype))
    angle = jax.random.uniform(angle_key, (), dtype=dtype) * jnp.asarray(limit, dtype=dtype)
    half = 0.5 * angle
    return jnp.concatenate([jnp.cos(half)[None], jnp.sin(half) * axis])


def randomize_limited_and_rotational_joints(
    mj_model: mujoco.MjModel, key: jax.Array, qpos: jax.Array
) -> jax.Array:
    """Returns `qpos` with its limited and rotational joints randomised.

    See the module docstring for the per-joint distributions (those of
    dm_control's function of the same name). Entries of joints that are not
    randomised (unlimited slides, free-joint positions) are returned as given.

    Args:
        mj_model: The MuJoCo model; static, read with NumPy at trace time.
        key: PRNG key (raw ``uint32[2]`` or typed). Split into one subkey per
            joint in joint-id order.
        qpos: Current joint positions, shape ``(mj_model.nq,)``, floating; may
            be traced. The result has the same shape and dtype. Under
            ``jax.vmap`` over keys (and optionally ``qpos``) this draws a batch.

    Returns:
        The new ``qpos``.

    Raises:
        ValueError: If `qpos` does not have shape ``(mj_model.nq,)``.
    """
    qpos = jnp.asarray(qpos)
    if qpos.shape != (mj_model.nq,):
        raise ValueError(
            f"qpos must have shape (nq,) = ({mj_model.nq},) for this model, got {qpos.shape}."
        )
    if not jnp.issubdtype(qpos.dtype, jnp.floating):
        raise ValueError(f"qpos must have a floating dtype, got {qpos.dtype}.")
    njnt = int(mj_model.njnt)
    if njnt == 0:
        return qpos

    dtype = qpos.dtype
    jnt_type = np.asarray(mj_model.jnt_type)
    jnt_limited = np.asarray(mj_model.jnt_limited).astype(bool)
    jnt_range = np.asarray(mj_model.jnt_range, dtype=np.float64)
    jnt_qposadr = np.asarray(mj_model.jnt_qposadr)
    joint_keys = jax.random.split(key, njnt)

    for j in range(njnt):
        kind = int(jnt_type[j])
        adr = int(jnt_qposadr[j])
        jkey = joint_keys[j]
        low, high = float(jnt_range[j, 0]), float(jnt_range[j, 1])

        if jnt_limited[j]:
            if kind in (_HINGE, _SLIDE):
                value = jax.random.uniform(jkey, (), dtype=dtype, minval=low, maxval=high)
                qpos = qpos.at[adr].set(value)
            elif kind == _BALL:
                quat = random_limited_quaternion(jkey, high, dtype=dtype)
                qpos = qpos.at[adr : adr + 4].set(quat)
            # A limited free joint is left alone, as in dm_control.
        else:
            if kind == _HINGE:
                value = jax.random.uniform(jkey, (), dtype=dtype, minval=-np.pi, maxval=np.pi)
                qpos = qpos.at[adr].set(value)
            elif kind == _BALL:
                quat = _unit(jax.random.normal(jkey, (4,), dtype=dtype))
                qpos = qpos.at[adr : adr + 4].set(quat)
            elif kind == _FREE:
                # Uniform [0, 1) components, normalised: dm_control's choice.
                quat = _unit(jax.random.uniform(jkey, (4,), dtype=dtype))
                qpos = qpos.at[adr + 3 : adr + 7].set(quat)
            # An unlimited slide joint is left alone.
    return qpos


def resample_while_penetrating(
    physics: Physics,
    key: jax.Array,
    draw: Callable[[Physics, jax.Array], Physics],
    max_attempts: int = 1000,
) -> Physics:
    """dm_control's rejection loop: `draw` a state until nothing penetrates.

    dm_control's tasks repeat "randomise, `after_reset()`, stop once
    `physics.data.ncon == 0`". This is that loop as a `lax.while_loop`, with a
    fresh key for each attempt. Each attempt starts from the previous one's
    state and model fields, as dm_control's does (what one attempt writes and
    the next does not overwrite persists). After `max_attempts` the last draw is
    kept: dm_control raises there (finger) or loops on (humanoid), so a task
    whose acceptance rate could come near this should say so.

    Args:
      physics: the episode's physics so far.
      key: PRNG key; split once per attempt.
      draw: (physics, key) -> physics with a new candidate state.
      max_attempts: the cap on attempts.

    Returns:
      The physics of the first non-penetrating draw, with kinematics of its qpos.
      On the C backend C counts the contacts from qpos alone and the reset's C
      forward pass computes the poses, so no attempt runs MJX's kinematics and
      the poses come back NaN (`physics_lib.with_kinematics_left_to_c`).
    """
    model = physics.model
    on_host = physics.count_contacts is not None

    def kinematic(candidate: Physics) -> Physics:
        return dataclasses.replace(candidate, data=mjx.kinematics(candidate.model, candidate.data))

    def attempt(carry):
        key, count, data, fields, _ = carry
        key, draw_key = jax.random.split(key)
        candidate = Physics.create(model, data, physics.names, fields, physics.count_contacts)
        candidate = draw(candidate, draw_key)
        if not on_host:
            candidate = kinematic(candidate)
        penetrating = physics_lib.contact_count(candidate) > 0
        return key, count + 1, candidate.data, candidate.model_fields, penetrating

    def again(carry):
        _, count, _, _, penetrating = carry
        return penetrating & (count < max_attempts)

    start = (key, jnp.int32(0), physics.data, physics.model_fields, jnp.bool_(True))
    _, _, data, fields, _ = jax.lax.while_loop(again, attempt, start)
    accepted = Physics.create(model, data, physics.names, fields, physics.count_contacts)
    return physics_lib.with_kinematics_left_to_c(accepted) if on_host else accepted

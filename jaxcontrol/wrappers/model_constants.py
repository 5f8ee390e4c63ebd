"""C MuJoCo's `mj_setConst`, in JAX, for per-environment model fields.

MuJoCo derives some model constants from others when it compiles a model:
inverse weights at `qpos0` (which scale constraint softness), subtree masses,
the inertia diagonal, actuator and tendon lengths at `qpos0`, and camera and
light offsets from the centre of mass. Changing a body's mass in a compiled
`MjModel` leaves them stale until `mj_setConst` recomputes them, and MJX reads
several of them in its step:

* `body_invweight0`, `dof_invweight0` and `tendon_invweight0` set the
  regulariser of every contact, joint-limit, friction-loss and equality row;
* `body_subtreemass` divides the subtree linear momentum (`subtree_linvel`,
  humanoid's centre-of-mass velocity);
* `actuator_acc0` enters muscle actuators; `tendon_length0` tendon equalities;
* `cam_poscom0` and `light_poscom0` place tracking cameras and lights.

`derived_constants` recomputes every field that `mj_setConst` of MuJoCo
3.17 changes when inertial, joint or actuator parameters change, from the
same quantities at `qpos0` and by the same formulas (including its shortcut
for bodies that only slide: an inverse weight of 1 / mass). Its results are
tested against `mj_setConst` on randomised models, field by field.
`stat.meaninertia`, which `mj_setConst` leaves unchanged, is left alone.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx
from mujoco.mjx._src import support

from jaxcontrol import physics as physics_lib

# The fields that `derived_constants` returns.
DERIVED = (
    "body_subtreemass",
    "body_invweight0",
    "dof_invweight0",
    "dof_M0",
    "tendon_invweight0",
    "tendon_length0",
    "actuator_acc0",
    "actuator_length0",
    "cam_pos0",
    "cam_poscom0",
    "cam_mat0",
    "light_pos0",
    "light_poscom0",
    "light_dir0",
)

# Model fields whose change makes the derived constants stale: anything that
# moves the bodies at qpos0, their inertia, the joint axes, the transmissions.
INPUTS = frozenset(
    {
        "body_mass",
        "body_inertia",
        "body_ipos",
        "body_iquat",
        "body_pos",
        "body_quat",
        "dof_armature",
        "jnt_pos",
        "jnt_axis",
        "qpos0",
        "actuator_gear",
        "site_pos",
        "site_quat",
        "geom_pos",
        "geom_quat",
        "geom_size",
        "wrap_prm",
        "cam_pos",
        "cam_quat",
        "light_pos",
        "light_dir",
    }
)

_SLIDE_ONLY = 2  # body_simple: a simple body whose joints all slide


def derived_constants(physics: physics_lib.Physics) -> dict[str, jax.Array]:
    """The constants `mj_setConst` derives, for `physics.model` at `qpos0`.

    Args:
      physics: a view whose model carries this environment's fields
        (`Physics.create(env.mjx_model, data, env.names, model_fields)`); its
        data only supplies the layout (any state of the env will do).

    Returns:
      Full arrays keyed by `mjx.Model` field name (see `DERIVED`).
    """
    m, mj = physics.model, physics.mj_model
    data = physics.data.replace(qpos=jnp.asarray(m.qpos0, physics.data.qpos.dtype))
    data = mjx.kinematics(m, data)
    data = mjx.com_pos(m, data)
    data = physics_lib.tendon(dataclasses.replace(physics, data=data))
    data = mjx.crb(m, data)
    data = mjx.transmission(m, data)
    inertia = support.full_m(m, data)
    inverse = jnp.linalg.inv(inertia)
    inverse = 0.5 * (inverse + inverse.T)
    mass = jnp.asarray(m.body_mass)

    out = {
        "body_subtreemass": _subtree_sum(mj, mass),
        "body_invweight0": _body_invweight0(m, mj, data, inverse, mass),
        "dof_invweight0": _dof_invweight0(mj, inverse, mass),
        "dof_M0": jnp.diagonal(inertia),
        "tendon_length0": data.ten_length,
        "actuator_length0": data.actuator_length,
    }
    if mj.ntendon:
        ten_j = data._impl.ten_J
        out["tendon_invweight0"] = jnp.einsum("ti,ij,tj->t", ten_j, inverse, ten_j)
    else:
        out["tendon_invweight0"] = jnp.zeros((0,), inverse.dtype)
    moment = data._impl.actuator_moment
    out["actuator_acc0"] = jnp.linalg.norm(moment @ inverse, axis=-1)
    out.update(_camera_and_light(m, mj, data))
    dtype = physics.data.qpos.dtype  # JAX's float: float64 under x64
    return {
        name: value.astype(dtype).reshape(np.shape(getattr(mj, name)))
        for name, value in out.items()
    }


def _subtree_sum(mj: mujoco.MjModel, mass: jax.Array) -> jax.Array:
    """`body_subtreemass`: each body's mass plus its descendants' (parents precede)."""
    total = mass
    for body in range(mj.nbody - 1, 0, -1):
        total = total.at[mj.body_parentid[body]].add(total[body])
    return total


def _body_invweight0(m, mj, data, inverse, mass) -> jax.Array:
    """Mean diagonal of J M^-1 J' at each body's centre of mass (translation, rotation)."""
    weights = jnp.zeros((mj.nbody, 2), inverse.dtype)
    general = [
        b for b in range(1, mj.nbody) if mj.body_weldid[b] != 0 and mj.body_simple[b] != _SLIDE_ONLY
    ]
    sliding = [
        b for b in range(1, mj.nbody) if mj.body_weldid[b] != 0 and mj.body_simple[b] == _SLIDE_ONLY
    ]
    if sliding:
        rows = np.array(sliding)
        weights = weights.at[rows, 0].set(1 / jnp.maximum(mujoco.mjMINVAL, mass[rows]))
    if general and mj.nv:

        def body(b):
            jacp, jacr = support.jac(m, data, data.xipos[b], b)
            jac = jnp.concatenate([jacp, jacr], axis=1)  # (nv, 6)
            a = jac.T @ inverse @ jac
            return jnp.stack([jnp.trace(a[:3, :3]) / 3, jnp.trace(a[3:, 3:]) / 3])

        rows = np.array(general)
        weights = weights.at[rows].set(jax.vmap(body)(jnp.asarray(rows)))
    return weights


def _dof_invweight0(mj, inverse, mass) -> jax.Array:
    """Mean diagonal of M^-1 over each joint's dofs (free joints: translation, rotation)."""
    weights = jnp.zeros((mj.nv,), inverse.dtype)
    diagonal = jnp.diagonal(inverse)
    for joint in range(mj.njnt):
        first, body = mj.jnt_dofadr[joint], mj.jnt_bodyid[joint]
        kind = mj.jnt_type[joint]
        if mj.body_simple[body] == _SLIDE_ONLY:
            weights = weights.at[first].set(1 / jnp.maximum(mujoco.mjMINVAL, mass[body]))
        elif kind == mujoco.mjtJoint.mjJNT_FREE:
            weights = weights.at[first : first + 3].set(jnp.mean(diagonal[first : first + 3]))
            weights = weights.at[first + 3 : first + 6].set(
                jnp.mean(diagonal[first + 3 : first + 6])
            )
        elif kind == mujoco.mjtJoint.mjJNT_BALL:
            weights = weights.at[first : first + 3].set(jnp.mean(diagonal[first : first + 3]))
        else:
            weights = weights.at[first].set(diagonal[first])
    return weights


def _camera_and_light(m, mj, data) -> dict[str, jax.Array]:
    """Camera and light offsets at qpos0, as if every camera and light were fixed."""
    out = {}
    for prefix, count in (("cam", mj.ncam), ("light", mj.nlight)):
        if not count:
            continue
        body = np.asarray(getattr(mj, f"{prefix}_bodyid"))
        target = np.asarray(getattr(mj, f"{prefix}_targetbodyid"))
        com_body = np.where(target >= 0, target, body)
        xmat = data.xmat[body]
        xpos = data.xpos[body] + jnp.einsum("nij,nj->ni", xmat, getattr(m, f"{prefix}_pos"))
        out[f"{prefix}_pos0"] = xpos - data.xpos[body]
        out[f"{prefix}_poscom0"] = xpos - data.subtree_com[com_body]
        if prefix == "cam":
            frame = jax.vmap(_quat_to_mat)(m.cam_quat)
            out["cam_mat0"] = jnp.einsum("nij,njk->nik", xmat, frame).reshape(count, 9)
        else:
            out["light_dir0"] = jnp.einsum("nij,nj->ni", xmat, m.light_dir)
    return out


def _quat_to_mat(quat: jax.Array) -> jax.Array:
    w, x, y, z = quat / jnp.linalg.norm(quat)
    return jnp.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )

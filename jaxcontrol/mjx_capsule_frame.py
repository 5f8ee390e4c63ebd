"""C MuJoCo's contact frame for plane–capsule contacts in MJX: an opt-in fix.

**The difference** (mujoco-mjx 3.17.0, `collision_primitive.plane_capsule`). Both
engines give a capsule resting on a plane two contacts whose first tangent follows the
capsule's axis projected onto the plane. C MuJoCo (`mjc_PlaneCapsule`, then
`mju_makeFrame`) always does so. MJX does so only while the projected axis is at least
0.5 long, that is while the capsule is within 60° of the plane; for a steeper capsule
it takes the fixed tangent (0, 1, 0) (or (0, 0, 1)). With pyramidal friction cones
(dm_control's default) the tangents are the edges of the friction pyramid, so a steep
capsule's contact gets a pyramid rotated about the normal: another friction law, and
other constraint forces. In humanoid-walk this is the whole of stock MJX's largest
one-step differences from dm_control (0.14 of scale on the hard states of
`jaxcontrol.parity.hard_states`; docs/parity.md).

**The fix** replaces MJX's plane–capsule function with one that takes C's tangent,
except where C's pyramid is MJX's own (C's tangent along one of MJX's two fixed
tangents, as in every planar model): there, and wherever the capsule is within 60° of
the plane, it returns MJX's frame bit for bit. So only models in which a steep capsule
can touch a plane off those axes change (`touching`): of the suite's domains, humanoid,
humanoid_CMU, dog and quadruped. Elliptic cones are isotropic and unaffected.

**Opt-in.** It is off unless `JAXCONTROL_MJX_CAPSULE_FRAME=1` is set before jaxcontrol
is imported (or `install()` runs before anything traces MJX's collision). Turning it on
by default changes the physics of those domains' 16 tasks, whose PARITY.md records must then be
measured again; until they are, the default stays stock MJX's frame and this module
states what the fix does (docs/design/capsule-contacts.md). Pinned to mujoco-mjx
3.17.0: `needed()` checks that MJX still takes the fixed tangent.
"""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco.mjx._src import collision_driver, collision_primitive, math
from mujoco.mjx._src.types import GeomType

PLANE_CAPSULE_FRAME = "plane_capsule_frame"
ENABLE_ENV = "JAXCONTROL_MJX_CAPSULE_FRAME"  # "1" before import: install the fix
_PAIR = (GeomType.PLANE, GeomType.CAPSULE)
_STOCK = collision_driver._COLLISION_FUNC[_PAIR]
# What the fix expects to find in MJX's plane–capsule (and what it changes).
_FIXED_TANGENT = "b = jp.where(b_norm < 0.5"
# A tangent within this of one of MJX's fixed ones (|cos| above 1 - it) spans MJX's pyramid.
_PARALLEL = 1e-6
_MINVAL = 1e-15  # C's mjMINVAL: below it, C's normalisation gives (1, 0, 0)


def tangent(normal: jax.Array, axis: jax.Array) -> jax.Array:
    """The first tangent of a plane–capsule contact, as C MuJoCo gives it where the pyramid
    differs from MJX's, and as MJX gives it (bit for bit) everywhere else."""
    projected, length = math.normalize_with_norm(axis - normal * jnp.dot(normal, axis))
    y, z = jnp.array([0.0, 1.0, 0.0]), jnp.array([0.0, 0.0, 1.0])
    fixed = jnp.where((-0.5 < normal[1]) & (normal[1] < 0.5), y, z)  # MJX's steep tangent
    c_tangent = jnp.where(length < _MINVAL, jnp.array([1.0, 0.0, 0.0]), projected)
    same_pyramid = (
        jnp.maximum(
            jnp.abs(jnp.dot(c_tangent, fixed)),
            jnp.abs(jnp.dot(c_tangent, jnp.cross(normal, fixed))),
        )
        >= 1 - _PARALLEL
    )
    steep = jnp.where(same_pyramid, fixed, c_tangent)
    return jnp.where(length < 0.5, steep, projected)


@collision_primitive.collider(ncon=2)
def plane_capsule(plane, cap):
    """MJX's plane–capsule (two contacts, one at each end's sphere) with `tangent`'s frame."""
    n, axis = plane.mat[:, 2], cap.mat[:, 2]
    b = tangent(n, axis)
    frame = jnp.array([[n, b, jnp.cross(n, b)]])
    segment = axis * cap.size[1]
    contacts = []
    for offset in (segment, -segment):
        dist, pos = collision_primitive._plane_sphere(n, plane.pos, cap.pos + offset, cap.size[0])
        contacts.append((dist[None], pos[None], frame))
    return jax.tree_util.tree_map(lambda *x: jnp.concatenate(x), *contacts)


def needed() -> bool:
    """Whether the installed MJX's plane–capsule still takes the fixed steep tangent."""
    return _FIXED_TANGENT in inspect.getsource(collision_primitive)


def install() -> None:
    """Gives MJX's collision table this plane–capsule for functions traced from now on."""
    collision_driver._COLLISION_FUNC[_PAIR] = plane_capsule


def uninstall() -> None:
    """Gives MJX's collision table its own plane–capsule back."""
    collision_driver._COLLISION_FUNC[_PAIR] = _STOCK


def applied() -> tuple[str, ...]:
    """The fix's name while it is installed, else ()."""
    return (
        (PLANE_CAPSULE_FRAME,) if collision_driver._COLLISION_FUNC[_PAIR] is plane_capsule else ()
    )


def touching(mj_model: mujoco.MjModel) -> tuple[str, ...]:
    """The fix's name if it is installed and can change `mj_model`'s physics: a plane and a
    capsule that can collide with pyramidal friction (condim >= 3), where the capsule can
    stand steeper than 60° with its projected axis off MJX's fixed tangents."""
    return applied() if applied() and can_change(mj_model) else ()


def can_change(mj_model: mujoco.MjModel) -> bool:
    """Whether C's and MJX's plane–capsule pyramids can differ in `mj_model` (whatever is
    installed). Conservative: false only where no pair can, or where every rotation is
    about one axis `h` (hinges only) and each pair's steep tangent stays on MJX's axes."""
    m = mj_model
    if m.opt.cone != mujoco.mjtCone.mjCONE_PYRAMIDAL:
        return False
    pairs = colliding_pairs(m, mujoco.mjtGeom.mjGEOM_PLANE, mujoco.mjtGeom.mjGEOM_CAPSULE, 3)
    if not pairs:
        return False
    data = mujoco.MjData(m)
    mujoco.mj_kinematics(m, data)
    hinge = _common_hinge_axis(m, data)
    if hinge is None:
        return True
    for plane, capsule in pairs:
        n = data.geom_xmat[plane].reshape(3, 3)[:, 2]
        axis = data.geom_xmat[capsule].reshape(3, 3)[:, 2]
        if not _pyramid_fixed_under_rotation(n, axis, hinge):
            return True
    return False


def colliding_pairs(
    m: mujoco.MjModel, type1: mujoco.mjtGeom, type2: mujoco.mjtGeom, min_condim: int = 1
) -> list[tuple[int, int]]:
    """(geom of `type1`, geom of `type2`) pairs that can collide with at least `min_condim`
    (contype/conaffinity across two bodies, or an explicit <pair>); none where contacts
    or constraints are disabled."""
    off = mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    if m.opt.disableflags & off:
        return []
    first = np.nonzero(m.geom_type == type1)[0]
    second = np.nonzero(m.geom_type == type2)[0]
    pairs = set()
    for a in first:
        for b in second:
            if m.geom_bodyid[a] == m.geom_bodyid[b]:
                continue
            masks = (m.geom_contype[a] & m.geom_conaffinity[b]) or (
                m.geom_contype[b] & m.geom_conaffinity[a]
            )
            if masks and max(m.geom_condim[a], m.geom_condim[b]) >= min_condim:
                pairs.add((int(a), int(b)) if type1 != type2 else tuple(sorted((int(a), int(b)))))
    for i in range(m.npair):
        g1, g2 = int(m.pair_geom1[i]), int(m.pair_geom2[i])
        if m.pair_dim[i] >= min_condim and {m.geom_type[g1], m.geom_type[g2]} == {type1, type2}:
            pairs.add((g1, g2) if m.geom_type[g1] == type1 else (g2, g1))
    return sorted(pairs)


def _common_hinge_axis(m: mujoco.MjModel, data: mujoco.MjData) -> np.ndarray | None:
    """The one axis every rotation is about (hinges only, all parallel), else None.
    A model without rotations gives (0, 0, 0): nothing turns."""
    free = np.isin(m.jnt_type, (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL))
    if free.any() or m.nmocap:  # mocap bodies can be turned any way
        return None
    hinges = data.xaxis[m.jnt_type == mujoco.mjtJoint.mjJNT_HINGE]
    if not len(hinges):
        return np.zeros(3)
    h = hinges[0] / np.linalg.norm(hinges[0])
    parallel = np.abs(hinges @ h) >= (1 - _PARALLEL) * np.linalg.norm(hinges, axis=1)
    return h if parallel.all() else None


def _pyramid_fixed_under_rotation(n: np.ndarray, axis: np.ndarray, h: np.ndarray) -> bool:
    """Whether, for every rotation of `axis` about `h` (any, if `h` is 0), MJX's pyramid
    is C's: the capsule stays within 60° of the plane, or its projection stays on one of
    MJX's fixed tangents."""
    within_60 = np.linalg.norm(axis - n * (n @ axis)) >= 0.5
    if not h.any():  # nothing turns
        return within_60 or _on_fixed_axes(n, axis)
    if abs(n @ h) >= 1 - _PARALLEL:  # turning about the normal keeps the projection's length
        return within_60
    if abs(n @ h) > _PARALLEL or abs(axis @ h) > _PARALLEL:
        return False
    return _on_fixed_axes(n, np.cross(h, n))  # the projection stays along h x n


def _on_fixed_axes(n: np.ndarray, direction: np.ndarray) -> bool:
    """Whether `direction` projected onto the plane lies along MJX's fixed tangents."""
    projected = direction - n * (n @ direction)
    length = np.linalg.norm(projected)
    if length < _MINVAL:  # C's normalisation of a zero vector
        projected, length = np.array([1.0, 0.0, 0.0]), 1.0
    fixed = np.array([0.0, 1.0, 0.0]) if -0.5 < n[1] < 0.5 else np.array([0.0, 0.0, 1.0])
    other = np.cross(n, fixed)
    cosines = np.abs([projected @ fixed, projected @ other / np.linalg.norm(other)]) / length
    return bool(cosines.max() >= 1 - _PARALLEL)

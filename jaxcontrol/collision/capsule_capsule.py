"""Capsule–capsule narrow phase as C MuJoCo 3.17's `mjc_CapsuleCapsule` computes it.

MJX 3.17's own capsule–capsule differs from C's in two ways:

* nearest points: MJX solves the two lines' nearest points with a 1e-6 regularisation
  (`math.closest_segment_to_segment_points`), so the points of two segments that cross
  stay about 1e-6 apart and the contact normal is the direction between them. C solves
  exactly; where the points coincide (within `MINVAL`) its `_SphereSphere` takes the
  normal along the cross product of the two axes (hopper's nose and calf, crossing in
  the hopper's plane: C's normal leaves the plane, MJX's lies in it);
* parallel axes: C puts a contact at each end of one segment's shadow on the other (two,
  where they overlap; the same point twice, where they do not); MJX keeps one.

This module is C's routine: the general case's clipping order, the parallel case's two
contacts in C's order, and `_SphereSphere`'s degenerate normal. It is checked against C
MuJoCo 3.17's contacts for general, crossing and parallel pairs
(tests/physics/test_mjx_capsule_capsule.py). It is not registered by
`jaxcontrol.collision.register` (MJX has this pair); `jaxcontrol.mjx_capsule_capsule`
installs it, opt-in.

Float32 cannot resolve C's `mjMINVAL` (1e-15) between two nearest points: there they
count as coinciding within 16 roundings of their coordinates (`_sphere_sphere`). And
C's determinant `ma * mc - mb^2` cancels for near-parallel axes: float32 takes it as
|axis1 x axis2|^2, the same number without the cancellation (`collide`). Float64 runs
C's arithmetic as it is.

Conventions (MJX's): `frame[0]` is the unit normal from capsule 1 to capsule 2,
`dist < 0` is penetration, `pos` is midway between the surfaces. Two slots per pair;
an unused one gets `dist = max(margin, 0) + 1` (inactive).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from mujoco.mjx._src import math as mjx_math

from jaxcontrol.collision import per_pair

__all__ = ["MINVAL", "NCON", "capsule_capsule", "collide"]

NCON = 2
MINVAL = 1e-15  # C's mjMINVAL


def _unit_or_x(v: jax.Array) -> jax.Array:
    """C's `mju_normalize3`: `v` normalised, or (1, 0, 0) if shorter than `MINVAL`."""
    length = jnp.sqrt(jnp.dot(v, v))
    small = length < MINVAL
    return jnp.where(small, jnp.array([1.0, 0.0, 0.0], v.dtype), v / jnp.where(small, 1.0, length))


def _float32(x: jax.Array) -> bool:
    return jnp.finfo(x.dtype).eps > 1e-10


def _sphere_sphere(p1, r1, z1, p2, r2, z2):
    """C's `_SphereSphere` between points `p1`, `p2` (the capsules' axes `z1`, `z2` give the
    normal where the points coincide): (dist, pos, normal). Coincide: closer than `MINVAL`
    in float64, as in C; in float32, closer than 16 roundings of their coordinates."""
    gap = p2 - p1
    length = jnp.sqrt(jnp.dot(gap, gap))
    if _float32(gap):
        scale = 1 + jnp.maximum(jnp.abs(p1).max(), jnp.abs(p2).max())
        coincide = length < 16 * jnp.finfo(gap.dtype).eps * scale
    else:
        coincide = length < MINVAL
    normal = jnp.where(
        coincide, _unit_or_x(jnp.cross(z1, z2)), gap / jnp.where(coincide, 1.0, length)
    )
    dist = length - r1 - r2
    return dist, p1 + normal * (r1 + dist / 2), normal


def _clip(x):
    return jnp.clip(x, -1.0, 1.0)


def collide(pos1, mat1, size1, pos2, mat2, size2, margin=0.0):
    """One capsule pair: (dist [2], pos [2, 3], frame [2, 3, 3]) as C's routine gives them."""
    z1, z2 = mat1[:, 2], mat2[:, 2]
    r1, r2 = size1[0], size2[0]
    axis1, axis2 = z1 * size1[1], z2 * size2[1]
    dif = pos1 - pos2
    ma, mb, mc = jnp.dot(axis1, axis1), -jnp.dot(axis1, axis2), jnp.dot(axis2, axis2)
    u, v = -jnp.dot(axis1, dif), jnp.dot(axis2, dif)
    if _float32(dif):
        # ma * mc - mb * mb cancels for near-parallel axes, where float32 leaves it mostly
        # rounding; |axis1 x axis2|^2 is the same number, computed without cancelling.
        cross = jnp.cross(axis1, axis2)
        det = jnp.dot(cross, cross)
    else:
        det = ma * mc - mb * mb
    parallel = jnp.abs(det) < MINVAL

    # General configuration: C's order of clipping, x1 first, then x2 (re-clipping x1).
    safe_det = jnp.where(parallel, 1.0, det)
    x1, x2 = (mc * u - mb * v) / safe_det, (ma * v - mb * u) / safe_det
    x1, x2 = (
        jnp.where(x1 > 1, 1.0, jnp.where(x1 < -1, -1.0, x1)),
        jnp.where(x1 > 1, (v - mb) / mc, jnp.where(x1 < -1, (v + mb) / mc, x2)),
    )
    x1 = jnp.where(x2 > 1, _clip((u - mb) / ma), jnp.where(x2 < -1, _clip((u + mb) / ma), x1))
    x2 = _clip(x2)
    general = _sphere_sphere(pos1 + axis1 * x1, r1, z1, pos2 + axis2 * x2, r2, z2)

    # Parallel axes: the two ends of segment 2's shadow on segment 1 (clipped to it), each
    # with its nearest point on segment 2; C keeps those within the margin, in this order.
    shadow = jnp.stack([(u - mb) / ma, (u + mb) / ma])
    ends = _clip(jnp.stack([shadow.min(), shadow.max()]))
    found = [
        _sphere_sphere(pos1 + axis1 * x, r1, z1, pos2 + axis2 * _clip((v - mb * x) / mc), r2, z2)
        for x in (ends[0], ends[1])
    ]
    c_dist, c_pos, c_normal = (jnp.stack(x) for x in zip(*found))
    in_range = c_dist <= margin  # C's `cdist > margin + r1 + r2` test, rearranged
    first = jnp.argmax(in_range)  # the second end alone when only it is in range
    inactive = jnp.maximum(margin, 0.0) + 1.0
    slots = [
        (jnp.where(in_range.any(), c_dist[first], inactive), c_pos[first], c_normal[first]),
        (jnp.where(in_range.all(), c_dist[1], inactive), c_pos[1], c_normal[1]),
    ]

    dist_g, pos_g, normal_g = general
    dist = jnp.where(
        parallel,
        jnp.stack([s[0] for s in slots]),
        jnp.stack([dist_g, inactive]),
    )
    pos = jnp.where(parallel, jnp.stack([s[1] for s in slots]), jnp.stack([pos_g, pos_g]))
    normal = jnp.where(parallel, jnp.stack([s[2] for s in slots]), jnp.stack([normal_g, normal_g]))
    return dist, pos, jax.vmap(mjx_math.make_frame)(normal)


def capsule_capsule(m, d, key, geom):
    """MJX collision function for (CAPSULE, CAPSULE) pairs. The margin is `geom_margin`
    summed over the pair (as MJX's own contact margin)."""
    del key
    return per_pair.over_pairs(collide, m, d, geom)


capsule_capsule.ncon = NCON

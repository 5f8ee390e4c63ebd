"""Ellipsoid–box narrow phase: the exact signed distance, normal and contact point.

Why this method: for convex A (ellipsoid), B (box) the signed distance is the maximum over
unit n of gap(n) = min_B n·b - max_A n·a, which is closed-form for any n. The box's support
is piecewise linear in n, so the maximiser is among finitely many candidates: the 6 face
normals, the normals through each edge of the ellipse the ellipsoid projects to along it,
and the ellipsoid's normals through each vertex. Taking all of them gives the global answer
(deep penetration included) to rounding, in a pose-independent number of operations.

Details. Edge and vertex candidates are *all* real roots t of the point-to-ellipse(oid)
equation F(t) = sum (e_i y_i / (t + e_i^2))^2 = 1 (<= 4 in 2-D, <= 6 in 3-D): F is convex
between and beyond its poles, so Newton's method started next to a pole, where F >= 0,
climbs monotonically to the root on that side without bracketing; t is measured from that
pole, so no cancellation occurs there. dist is `gap` at the best candidate; as it
is stationary in n, a direction error δ costs O(δ²). Candidates whose gaps tie to rounding
are told apart by the optimality condition at the box witness, so normal and pos are
accurate too. The gradient of dist is exact with the chosen direction held fixed (envelope
theorem); the root finding is not differentiated.

Conventions (MJX's): geom1 is the ellipsoid, geom2 the box; `frame[0]` is the unit normal
from the ellipsoid to the box; `dist < 0` is penetration; `pos` is the midpoint between the
two surfaces' witness points. C MuJoCo (`mjc_Convex`: nativeccd GJK for separation, EPA for
penetration) reports the same quantities, one contact per pair, to its `opt.ccd_tolerance`.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
from mujoco.mjx._src import math as mjx_math

from jaxcontrol.collision import per_pair

__all__ = ["collide", "ellipsoid_box", "signed_distance_lower_bound"]

# Sign patterns of the 8 box vertices, and of the 4 edges parallel to each axis.
_VERTEX_SIGNS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
_EDGE_SIGNS = np.array(list(itertools.product((-1.0, 1.0), repeat=2)))
_FACE_NORMALS = np.concatenate([np.eye(3), -np.eye(3)])


def _safe_unit(v, fallback):
    """v / |v| along the last axis; `fallback` where that is not a finite unit vector."""
    big = jnp.max(jnp.abs(v), axis=-1, keepdims=True)  # scale first: |v|^2 may overflow
    ok = (big > jnp.finfo(v.dtype).tiny) & jnp.isfinite(big)
    w = jnp.where(ok, v, 1.0) / jnp.where(ok, big, 1.0)
    return jnp.where(ok, w / jnp.sqrt(jnp.sum(w * w, axis=-1, keepdims=True)), fallback)


def _newton_from_left(f_and_slope, lo, hi, n_iter):
    """Newton's method for the root of a convex, decreasing f, started at lo where f >= 0.

    From the left of the root of a convex decreasing function, Newton's iterates increase
    monotonically to the root and never overshoot it, so no bracketing is needed; the
    iterates are clipped to [lo, hi] only to keep lanes without a root finite.
    """

    def body(_, u):
        f, slope = f_and_slope(u)
        step = jnp.where(slope < 0, -f / jnp.where(slope < 0, slope, -1.0), 0.0)
        return jnp.clip(u + step, lo, hi)

    return jax.lax.fori_loop(0, n_iter, body, lo)


def _critical_normals(e, y):
    """All normals of the ellipsoid (ellipse) `sum (x_i/e_i)^2 = 1` whose line passes through y.

    Args:
      e: (k,) positive semi-axes, k = 2 or 3, in descending order.
      y: (k,) the point, in the same (principal) coordinates.

    Returns:
      (2k, k) unit outward normals at the critical points of the distance from y to the
      surface: every real root t of F(t) = sum (e_i y_i/(t + e_i^2))^2 - 1 (normal ∝
      y_i/(t + e_i^2)). Up to 2k roots: one left of the largest pole, one right of the
      smallest, and 0 or 2 in each gap between poles, where F is convex. Lanes without a root
      return some unit vector; callers only ever use these as candidate directions.

    A coordinate |y_i| < eps·min(e) is moved to ±eps·min(e): that turns the degenerate
    critical points of a point on a principal plane (t = -e_i^2 exactly) into ordinary roots
    next to the pole (found to full relative precision, as each lane measures t from its
    own pole), and moves the candidate direction by O(eps).
    """
    k = e.shape[0]
    dtype = e.dtype
    eps = jnp.finfo(dtype).eps
    n_iter = 14 if jnp.dtype(dtype).itemsize <= 4 else 20

    delta = eps * e[-1]
    ys = jnp.where(jnp.abs(y) < delta, jnp.where(y < 0, -delta, delta), y)
    e2 = e * e
    a = (e * ys) ** 2  # > 0
    s_bound = jnp.sqrt(jnp.sum(a))  # F <= 0 once |t + e_j^2| >= s_bound for all j
    ey = e * jnp.abs(ys)  # F >= 0 within ey_i of pole i
    gap = e2[:-1] - e2[1:]  # (k-1,) length of each interval between poles, >= 0

    # Each lane measures t from one pole, t = -e2[pole] + sigma * u with u >= 0, so that
    # t + e2_j = (e2_j - e2_pole) + sigma * u is free of cancellation next to that pole; F is
    # then convex and decreasing in u from the pole to the lane's root: left of the largest
    # pole (the farthest point), right of the smallest (the nearest point), and in each gap
    # between poles, the root next to either end. Lanes are static (pole, sigma) pairs.
    mids = list(range(k - 1))
    poles = np.array([0, k - 1] + mids + [i + 1 for i in mids])
    sigmas = np.array([-1.0, 1.0] + [1.0] * (k - 1) + [-1.0] * (k - 1), dtype)
    # Start where F >= 0, i.e. between the pole and the root: F >= a_j / den_j^2 - 1 >= 0
    # wherever |den_j| <= ey_j. Within ey of the lane's own pole always; for the two outer
    # lanes (F monotone) also up to ey_j - |e2_j - e2_pole| for every j, which starts a
    # far point's Newton iteration within a factor sqrt(3) of its root.
    hi = jnp.concatenate([jnp.stack([s_bound, s_bound]), gap, gap])
    hi = hi * (1 - 4 * eps)  # stay off the far pole
    outer = jnp.stack([jnp.max(ey - jnp.abs(e2 - e2[p])) for p in (0, k - 1)])
    lo = jnp.minimum(jnp.concatenate([outer, ey[poles[2:]]]), hi)

    def f_and_slope(u):
        den = (e2[None, :] - e2[poles][:, None]) + sigmas[:, None] * u[:, None]
        q = a / (den * den)
        return jnp.sum(q, axis=1) - 1.0, -2.0 * sigmas * jnp.sum(q / den, axis=1)

    u = _newton_from_left(f_and_slope, lo, hi, n_iter)
    den = (e2[None, :] - e2[poles][:, None]) + sigmas[:, None] * u[:, None]
    fallback = jnp.zeros(k, dtype).at[0].set(1.0)
    return _safe_unit(ys / den, fallback)


def _gap(n, p, q, r, s):
    """gap(n) = min over the box of n·b - max over the ellipsoid of n·a (box frame).

    n: (..., 3) unit directions; p: ellipsoid centre; q: ellipsoid axes (columns); r: its
    semi-axes; s: box half-sizes.
    """
    return -(n @ p) - jnp.linalg.norm((n @ q) * r, axis=-1) - jnp.abs(n) @ s


def _candidates(p, q, r, s):
    """(6 + 48 + 48, 3) directions, in the box frame, that include the maximiser of gap."""
    dtype = p.dtype
    faces = jnp.asarray(_FACE_NORMALS, dtype)

    # Vertex candidates: normals of the ellipsoid through each box vertex, in the
    # ellipsoid's frame with its axes ordered by decreasing semi-axis.
    rs, qs = jnp.asarray(r), jnp.asarray(q)
    for i, j in ((0, 1), (1, 2), (0, 1)):  # sorting network
        swap = rs[j] > rs[i]
        rs = rs.at[i].set(jnp.where(swap, rs[j], rs[i])).at[j].set(jnp.where(swap, rs[i], rs[j]))
        qi, qj = qs[:, i], qs[:, j]
        qs = qs.at[:, i].set(jnp.where(swap, qj, qi)).at[:, j].set(jnp.where(swap, qi, qj))
    verts = jnp.asarray(_VERTEX_SIGNS, dtype) * s  # (8, 3)
    y = (verts - p) @ qs
    m = jax.vmap(_critical_normals, in_axes=(None, 0))(rs, y)  # (8, 6, 3)
    vertex_dirs = (m @ qs.T).reshape(-1, 3)

    # Edge candidates: for the edges along axis k, project the ellipsoid along k onto the
    # plane of the other two axes (i, j); the ellipse's normals through the edge's point.
    qr = q * r  # columns: the ellipsoid's semi-axis vectors
    es, vs, ys = [], [], []
    for k in range(3):
        i, j = (k + 1) % 3, (k + 2) % 3
        mi, mj = qr[i], qr[j]  # rows i, j of Q diag(r): the projected semi-axis vectors
        aa, bb, cc = mi @ mi, mi @ mj, mj @ mj  # projected shape matrix [[aa, bb], [bb, cc]]
        lam0 = 0.5 * (aa + cc) + jnp.hypot(0.5 * (aa - cc), bb)
        det = jnp.sum(jnp.cross(mi, mj) ** 2)  # Cauchy-Binet: no cancellation
        lam1 = det / lam0
        theta = 0.5 * jnp.arctan2(2 * bb, aa - cc)
        c, sn = jnp.cos(theta), jnp.sin(theta)
        v = jnp.stack([jnp.stack([c, -sn]), jnp.stack([sn, c])])  # columns: principal axes
        w = jnp.asarray(_EDGE_SIGNS, dtype) * jnp.stack([s[i], s[j]])  # (4, 2) edge points
        es.append(jnp.sqrt(jnp.stack([lam0, lam1])))
        vs.append(v)
        ys.append((w - jnp.stack([p[i], p[j]])) @ v)
    e2d = jnp.repeat(jnp.stack(es), 4, axis=0)  # (12, 2)
    m2 = jax.vmap(_critical_normals)(e2d, jnp.concatenate(ys))  # (12, 4, 2)
    m2 = m2.reshape(3, 16, 2)
    edge_dirs = []
    for k in range(3):
        i, j = (k + 1) % 3, (k + 2) % 3
        n2 = m2[k] @ vs[k].T
        edge_dirs.append(jnp.zeros((16, 3), dtype).at[:, i].set(n2[:, 0]).at[:, j].set(n2[:, 1]))
    return jnp.concatenate([faces, vertex_dirs] + edge_dirs)


def _box_frame_problem(ell_pos, ell_mat, ell_size, box_pos, box_mat, box_size):
    p = box_mat.T @ (ell_pos - box_pos)  # ellipsoid centre in the box frame
    q = box_mat.T @ ell_mat  # ellipsoid axes in the box frame
    return p, q, ell_size, box_size


def collide(ell_pos, ell_mat, ell_size, box_pos, box_mat, box_size):
    """One ellipsoid–box pair: (dist, pos (3,), frame (3, 3)) in MJX's convention.

    Args:
      ell_pos, ell_mat, ell_size: the ellipsoid's centre (3,), rotation (3, 3) and semi-axes
        (3,), as in `d.geom_xpos`, `d.geom_xmat`, `m.geom_size`.
      box_pos, box_mat, box_size: the box's, with half-sizes.

    The dtype follows the inputs. jit- and vmap-able; no pose gives NaN or inf.
    """
    dtype = jnp.result_type(ell_pos, ell_mat, ell_size, box_pos, box_mat, box_size)
    args = [jnp.asarray(x, dtype) for x in (ell_pos, ell_mat, ell_size, box_pos, box_mat, box_size)]
    ell_pos, ell_mat, ell_size, box_pos, box_mat, box_size = args
    p, q, r, s = _box_frame_problem(*args)

    # Only which direction wins depends on the root finding: dist is stationary in n, so its
    # gradient is exact with n held fixed (envelope theorem), and the root finding is not
    # differentiated.
    dirs = jax.lax.stop_gradient(_candidates(p, q, r, s))
    gaps = _gap(dirs, p, q, r, s)
    gaps = jnp.where(jnp.isfinite(gaps), gaps, -jnp.inf)

    # Witnesses: the ellipsoid's support point along n, and the box's, dist further along n.
    qn = (dirs @ q) * r
    support = p + (qn * r / jnp.linalg.norm(qn, axis=-1, keepdims=True)) @ q.T
    box_witness = support + gaps[:, None] * dirs
    # Optimality residual: the box witness must lie on the box's support feature along -n
    # (b_i = -sign(n_i) s_i where n_i != 0, |b_i| <= s_i where n_i == 0; face and edge
    # candidates carry exact zeros). Among candidates whose gaps tie to rounding, the one
    # that satisfies it wins: without this, a neighbouring stratum's candidate that ties
    # to rounding could win with a direction sqrt(eps) off.
    size = jnp.sum(jnp.abs(p)) + jnp.max(r) + jnp.sum(s)
    residual = jnp.where(
        dirs == 0,
        jnp.maximum(jnp.abs(box_witness) - s, 0.0),
        jnp.abs(box_witness + jnp.sign(dirs) * s),
    ).max(axis=-1)
    tie = gaps >= jnp.max(gaps) - 16 * jnp.finfo(dtype).eps * size
    best = jnp.argmin(jnp.where(tie, residual, jnp.inf))
    n = dirs[best]
    dist = gaps[best]
    pos_local = support[best] + 0.5 * dist * n

    normal = box_mat @ n
    pos = box_pos + box_mat @ pos_local
    frame = mjx_math.make_frame(normal)
    return dist, pos, frame


def signed_distance_lower_bound(n, ell_pos, ell_mat, ell_size, box_pos, box_mat, box_size):
    """gap along unit direction(s) n (world frame, ellipsoid to box): a lower bound on dist.

    The exact signed distance is the maximum of this over all unit n; tests use it as an
    independent certificate (no direction may beat `collide`'s answer).
    """
    p, q, r, s = _box_frame_problem(ell_pos, ell_mat, ell_size, box_pos, box_mat, box_size)
    return _gap(n @ box_mat, p, q, r, s)


def ellipsoid_box(m, d, key, geom):
    """MJX collision function for (ELLIPSOID, BOX) geom pairs: geom[:, 0] is the ellipsoid."""
    del key
    return per_pair.over_pairs(collide, m, d, geom, margin=False)


ellipsoid_box.ncon = 1  # C MuJoCo reports one contact for a pair with an ellipsoid.

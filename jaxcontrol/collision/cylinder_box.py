"""Cylinder–box narrow phase: C MuJoCo 3.17's contacts (up to 4 per pair), solved exactly.

What C does (`mjc_Convex`, nativeccd, multiccd on by default; `mj_maxContact` gives 4):
GJK/EPA finds one contact, and then `multicontact` looks at the features EPA ended on. The
cylinder's features are its caps, each a 16-gon (rim points at angles -i·22.5°, i = 0..15,
seen from outside the cap), and a side line (the generator through EPA's rim point); the
box's are its faces, those adjacent to its support feature.

* face–face: the cap facing the box and a box face facing the cylinder, anti-parallel
  within `FACE_TOL` (cos ≈ 0.996, 5.1°) and both facing the contact direction by more than
  `EDGE_TOL` (0.0888): the box face is clipped by the cap's 16-gon prism (Sutherland–
  Hodgman), the points farther than the margin beyond the cap's plane are dropped, and if
  more than 4 remain, 4 are chosen by C's `polygonQuad` (a greedy walk that grows a
  quadrilateral's area; not always the largest one). Each point gives a contact: its
  projection on the cap's plane (along the cap normal) and that point moved onto the box
  face's plane along the face normal are the witnesses.
* otherwise, side–face: if the cylinder's axis is parallel to a facing box face within
  `EDGE_TOL`, the side line through the rim point nearest the box is clipped by that
  face's prism; up to 2 points (the farthest apart), each with its height above the face.
* otherwise, or if clipping leaves nothing: EPA's single contact.

Multi-point contacts carry their own dist and position and the box face's normal. C's
order of evaluation is kept exactly (the 16-gon's vertex order, the box faces' vertex
order, the clipping rules and tolerances, the greedy walk), so the same points come out,
but for two things decided inside EPA, where C's answer is not a function of the pose:

* `polygonQuad` compares areas with `<=`, and the 16-gon's symmetry makes exact ties
  common (a chord parallel to an edge), which C breaks by its rounding; here a tie
  (within rounding) is never a step, as in exact arithmetic, so where C's rounding went
  the other way another 4 of the same clipped polygon's points come out;
* where the normal is the cylinder's axis (a cap on a box edge or vertex; deep), C's side
  line goes through whichever rim point EPA's polytope ended on, and C may then report 2
  side-face contacts with a box face's normal; here: the single exact contact.

Where C uses EPA's (inexact) witnesses we use exact ones: the contact itself (signed
distance and normal: the maximum of gap(n) = min_cyl n·x - max_box n·v over a finite
candidate set of directions that contains the maximiser, as `hfield_cylinder`'s; its
witnesses: a point where the two support sets along the normal meet, `_witness`), and the
side line's rim point. The box's support feature (which faces are candidates) is read off
the exact normal: an axis whose component is within `sqrt(eps)` of 0 is a free one (EPA's
vertices may lie anywhere along it).

Conventions (MJX's): geom1 is the cylinder, geom2 the box; `frame[0]` is the unit normal
from the cylinder to the box; `dist < 0` is penetration; `pos` is midway between the
witnesses. Unused slots get `dist = max(margin, 0) + 1` (inactive) and slot 0's frame.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
from mujoco.mjx._src import math as mjx_math

from jaxcontrol.collision import hfield_cylinder as _hc
from jaxcontrol.collision import per_pair
from jaxcontrol.collision.ellipsoid_box import _safe_unit

__all__ = [
    "EDGE_TOL",
    "FACE_TOL",
    "NCON",
    "collide",
    "contact",
    "cylinder_box",
    "signed_distance_lower_bound",
]

#: Contacts per pair: C's `mj_maxContact` for CYLINDER-BOX (multiccd's 4-point cap).
NCON = 4
#: C's `mjFACE_TOL` and `mjEDGE_TOL` (engine_collision_gjk.h, double precision).
FACE_TOL = 0.996
EDGE_TOL = 0.0888
# C's clipping tolerances (absolute, as C's): a point is inside a clipping plane when its
# (unnormalised) plane value is > -_HALF_TOL; an edge is parallel to it when |pn·(Q-P)| <
# _PARALLEL_TOL; an intersection counts for t in (-_INTERSECT_TOL, 1 + _INTERSECT_TOL).
_HALF_TOL = 1e-10
_PARALLEL_TOL = 1e-10
_INTERSECT_TOL = 3e-7

_VERTEX_SIGNS = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))  # (8, 3)
_EDGES = np.array(
    [
        (i, j)
        for i, j in itertools.combinations(range(8), 2)
        if np.sum(_VERTEX_SIGNS[i] != _VERTEX_SIGNS[j]) == 1
    ]
)  # (12, 2)
# Box faces in C's index order (+x, -x, +y, -y, +z, -z): outward normals, and C's vertex
# order (`boxFace`) as sign patterns.
_FACE_NORMALS = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1.0]])
_BOX_FACES = np.array(
    [
        [[1, 1, 1], [1, 1, -1], [1, -1, -1], [1, -1, 1]],
        [[-1, 1, -1], [-1, 1, 1], [-1, -1, 1], [-1, -1, -1]],
        [[-1, 1, -1], [1, 1, -1], [1, 1, 1], [-1, 1, 1]],
        [[-1, -1, 1], [1, -1, 1], [1, -1, -1], [-1, -1, -1]],
        [[-1, 1, 1], [1, 1, 1], [1, -1, 1], [-1, -1, 1]],
        [[1, 1, -1], [-1, 1, -1], [-1, -1, -1], [1, -1, -1]],
    ],
    dtype=float,
)
_COS16 = np.cos(np.arange(16) * np.pi / 8)
_SIN16 = np.sin(np.arange(16) * np.pi / 8)
_MAXV_FACE = 32  # clipped polygon slots: 4 + 16 in exact arithmetic, room for duplicates
_MAXV_EDGE = 8


# ------------------------------------------------------------------------- exact contact


def _box_frame(cyl_pos, cyl_mat, box_pos, box_mat):
    """The cylinder's centre and rotation in the box's frame (box centre at the origin)."""
    return box_mat.T @ (cyl_pos - box_pos), box_mat.T @ cyl_mat


def _exact(p, q, radius, half, s):
    """The exact signed distance in the box frame: (dist, u, a).

    u is the unit normal from the box to the cylinder, a the cylinder's witness (box
    frame): a and a - dist·u are a witness pair (`_witness`).
    """
    dtype = p.dtype
    axis = q[:, 2]
    verts = jnp.asarray(_VERTEX_SIGNS, dtype) * s - p  # relative to the cylinder's centre
    faces = jnp.asarray(_FACE_NORMALS, dtype)
    caps = jnp.stack([axis, -axis])
    vertex = _hc._vertex_candidates(verts, axis, radius, half).reshape(-1, 3)
    edge = _hc._edge_candidates(verts, _EDGES, axis, radius, half).reshape(-1, 3)
    # only which direction wins depends on them (envelope theorem)
    dirs = jax.lax.stop_gradient(jnp.concatenate([faces, caps, vertex, edge]))
    gaps = _hc._gap(dirs, verts, axis, radius, half)
    gaps = jnp.where(jnp.isfinite(gaps), gaps, -jnp.inf)
    best = jnp.argmax(gaps)
    u, dist = dirs[best], gaps[best]
    return dist, u, _witness(p, q, radius, half, s, u, dist)


def _segment_distance(x, a, b):
    """Distance from 2-D points x (..., 2) to the segment a-b."""
    ab = b - a
    ab2 = jnp.sum(ab * ab)
    t = jnp.clip(jnp.sum((x - a) * ab, -1) / jnp.where(ab2 > 0, ab2, 1.0), 0.0, 1.0)
    return jnp.linalg.norm(x - a - t[..., None] * ab, axis=-1)


def _witness(p, q, radius, half, s, u, dist):
    """The cylinder's witness a (box frame): a point of S_C ∩ (S_B + dist·u), where S_C is
    the cylinder's support set towards the box (a rim point, a side segment or a cap disc)
    and S_B the box's towards the cylinder (a vertex, an edge or a face).

    The two lie in one plane normal to u and meet (u is optimal); a is the mean of the
    points known to lie in both: each one's vertices inside the other, and the crossings
    of their boundaries (the disc's centre stands for its vertices). Where the witnesses
    are unique (any point feature, or crossing segments) that is the point; where they
    are not (a side or cap on a face or edge) it is some point of the overlap, as C's.
    """
    dtype = p.dtype
    eps = jnp.finfo(dtype).eps
    tol_dir = 8 * jnp.sqrt(eps)
    tol = tol_dir * (radius + half + jnp.max(s))
    axis = q[:, 2]
    t1, t2 = mjx_math.make_frame(u)[1:]
    plane = lambda x: jnp.stack([x @ t1, x @ t2], -1)

    # the box's support set along u, moved by dist along u: 4 points in cyclic order
    # (a rectangle over the free axes, |u_k| <= tol_dir; repeated points for an edge or a
    # vertex)
    free = jnp.abs(u) <= tol_dir
    first = jnp.argmax(free)
    second = jnp.where(jnp.sum(free) == 2, 2 - jnp.argmax(free[::-1]), -1)
    k = jnp.arange(3)
    rect = []
    for s1, s2 in ((-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)):
        sign = jnp.where(free & (k == first), s1, jnp.where(free & (k == second), s2, jnp.sign(u)))
        rect.append(sign * s + dist * u)
    rect = plane(jnp.stack(rect))
    edges = jnp.stack([rect, jnp.roll(rect, -1, axis=0)], 1)  # (4, 2, 2)

    # the cylinder's support set along -u: a side segment, a cap disc or a rim point
    ua = u @ axis
    cap_sign = jnp.where(ua <= 0, 1.0, -1.0).astype(dtype)
    radial = -u - (-ua) * axis
    side = jnp.abs(ua) <= tol_dir
    disc = jnp.linalg.norm(radial) <= tol_dir
    rho = jnp.where(disc, 0.0, _safe_unit(radial, jnp.zeros(3, dtype)))
    rim = p + axis * (cap_sign * half) + radius * rho
    centre = plane(p + axis * (cap_sign * half))
    ends = plane(jnp.stack([p + radius * rho + half * axis, p + radius * rho - half * axis]))
    ends = jnp.where(side, ends, jnp.where(disc, centre, plane(rim)))  # (2, 2): K's vertices
    radius_k = jnp.where(disc & ~side, radius, 0.0)  # K = the segment `ends` grown by this

    def in_k(x):
        return _segment_distance(x, ends[0], ends[1]) <= radius_k + tol

    def in_rect(x):
        inside = jnp.stack(
            [
                (e[1, 0] - e[0, 0]) * (x[..., 1] - e[0, 1])
                - (e[1, 1] - e[0, 1]) * (x[..., 0] - e[0, 0])
                for e in edges
            ],
            -1,
        )
        lengths = jnp.linalg.norm(edges[:, 1] - edges[:, 0], axis=-1)
        area = jnp.abs(
            (rect[2, 0] - rect[0, 0]) * (rect[3, 1] - rect[1, 1])
            - (rect[2, 1] - rect[0, 1]) * (rect[3, 0] - rect[1, 0])
        )
        interior = (area > tol * tol) & (
            jnp.all(inside >= -tol * lengths, -1) | jnp.all(inside <= tol * lengths, -1)
        )
        near = jnp.min(jnp.stack([_segment_distance(x, e[0], e[1]) for e in edges], -1), -1)
        return interior | (near <= tol)

    # crossings of the rectangle's edges with K's boundary: the segment, or the circle
    e0, e1 = edges[:, 0], edges[:, 1]
    d = e1 - e0
    w = ends[1] - ends[0]
    den = d[:, 0] * w[1] - d[:, 1] * w[0]
    rel = ends[0] - e0
    ok_den = jnp.abs(den) > tol * tol
    sden = jnp.where(ok_den, den, 1.0)
    sa = (rel[:, 0] * w[1] - rel[:, 1] * w[0]) / sden
    sb = (rel[:, 0] * d[:, 1] - rel[:, 1] * d[:, 0]) / sden
    seg_x = e0 + sa[:, None] * d
    seg_ok = ok_den & (sa >= 0) & (sa <= 1) & (sb >= 0) & (sb <= 1) & (radius_k == 0)
    # |e0 + t d - c| = r
    f = e0 - ends[0]
    qa, qb, qc = jnp.sum(d * d, -1), jnp.sum(f * d, -1), jnp.sum(f * f, -1) - radius_k**2
    disc_ = qb * qb - qa * qc
    root = jnp.where(disc_ > 0, jnp.sqrt(jnp.where(disc_ > 0, disc_, 1.0)), 0.0)
    sqa = jnp.where(qa > 0, qa, 1.0)
    ts = jnp.stack([(-qb - root) / sqa, (-qb + root) / sqa], 1)  # (4, 2)
    circ_x = e0[:, None] + ts[..., None] * d[:, None]
    circ_ok = ((radius_k > 0) & (qa > 0) & (disc_ >= 0))[:, None] & (ts >= 0) & (ts <= 1)

    points = jnp.concatenate([rect, ends, seg_x, circ_x.reshape(-1, 2)])
    valid = jnp.concatenate([in_k(rect), in_rect(ends), seg_ok, circ_ok.reshape(-1)])
    mean = jnp.sum(jnp.where(valid[:, None], points, 0.0), 0) / jnp.maximum(jnp.sum(valid), 1)
    mean = jnp.where(jnp.any(valid), mean, jnp.mean(ends, 0))
    # back to 3-D, on the cylinder's support plane (the rim point's, for all three)
    return mean[0] * t1 + mean[1] * t2 + (rim @ u) * u


def signed_distance_lower_bound(n, cyl_pos, cyl_mat, cyl_size, box_pos, box_mat, box_size):
    """gap along unit direction(s) n (K, 3) (world frame, cylinder to box): a lower bound
    on the signed distance, whose maximum over n it is (tests use it as a certificate)."""
    p, q = _box_frame(cyl_pos, cyl_mat, box_pos, box_mat)
    verts = jnp.asarray(_VERTEX_SIGNS, p.dtype) * box_size - p
    return _hc._gap(-(n @ box_mat), verts, q[:, 2], cyl_size[0], cyl_size[1])


# ---------------------------------------------------------------------- C's multicontact


def _compact(points, keep, maxv):
    """The rows of points (N, 3) where keep, in order, in maxv slots; and their count."""
    slot = jnp.cumsum(keep) - 1
    target = jnp.where(keep & (slot < maxv), slot, maxv)  # maxv: out of range, dropped
    out = jnp.zeros((maxv, 3), points.dtype).at[target].set(points, mode="drop")
    return out, jnp.minimum(jnp.sum(keep), maxv)


def _clip(face1, face2, n, margin, maxv):
    """C's `polygonClip`: the polygon face2 clipped by the prism over the convex polygon
    face1 (K, 3) along n, then the points more than margin beyond face1's plane dropped.

    Returns (maxv, 3) points and their count. Edge by edge of face1, each polygon edge
    P→Q adds, in order: the crossing point if P and Q lie on different sides, then Q if
    Q is inside (C's Sutherland–Hodgman, with C's tolerances).
    """
    nxt = jnp.roll(face1, -1, axis=0)
    pn = jnp.cross(nxt - face1, (face1 + n) - face1)  # unnormalised, as C's
    pd = jnp.sum(pn * face1, -1)
    idx = jnp.arange(maxv)

    def clip_by_edge(e, state):
        poly, count = state
        valid = idx < count
        q_pts = poly[jnp.where(idx + 1 < count, idx + 1, 0)]
        in1 = (poly - face1[e]) @ pn[e] > -_HALF_TOL
        in2 = (q_pts - face1[e]) @ pn[e] > -_HALF_TOL
        dq = (q_pts - poly) @ pn[e]
        parallel = jnp.abs(dq) < _PARALLEL_TOL
        t = (pd[e] - poly @ pn[e]) / jnp.where(parallel, 1.0, dq)
        t_ok = ~parallel & (t > -_INTERSECT_TOL) & (t < 1 + _INTERSECT_TOL)
        cross = poly + jnp.clip(t, 0.0, 1.0)[:, None] * (q_pts - poly)
        cand = jnp.stack([cross, q_pts], 1).reshape(-1, 3)
        keep = jnp.stack([valid & (in1 != in2) & t_ok, valid & in2], 1).reshape(-1)
        return _compact(cand, keep, maxv)

    start = _compact(face2, jnp.ones(face2.shape[0], bool), maxv)
    poly, count = jax.lax.fori_loop(0, face1.shape[0], clip_by_edge, start)
    keep = (idx < count) & ((poly - face1[0]) @ n <= margin)
    return _compact(poly, keep, maxv)


def _area4(poly, a, b, c, d):
    return 0.5 * jnp.linalg.norm(jnp.cross(poly[a] - poly[c], poly[b] - poly[d]))


def _polygon_quad(poly, count):
    """C's `polygonQuad` on the first count (> 4) rows of poly: 4 indices.

    A greedy walk: for each start a, advance d, then c, then b while the area of (a, b,
    c, d) grows. An area within rounding of the current one is not growth (C compares
    with `<=`, so exact ties go by its rounding; here as in exact arithmetic).
    """
    poly = jax.lax.stop_gradient(poly)
    dtype = poly.dtype
    span = jnp.max(jnp.sum((poly - poly[0]) ** 2, -1) * (jnp.arange(poly.shape[0]) < count))
    tol = 64 * jnp.finfo(dtype).eps * span
    n = jnp.maximum(count, 1)
    inc = lambda i: jnp.where(i + 1 >= n, 0, i + 1)

    # phases: 0 try d, 1 try c, 2 try b, 3 end of this a; a failed try ends its loop: d's
    # ends this a, c's goes on to b's, b's back to d's
    next_phase = jnp.array([3, 2, 0, 0], jnp.int32)

    def body(state):
        a, b, c, d, m, res, phase = state
        d1, c1, b1 = inc(d), inc(c), inc(b)
        try_b = jnp.where(phase == 2, b1, b)
        try_c = jnp.where(phase == 1, c1, c)
        try_d = jnp.where(phase == 0, d1, d)
        m_next = _area4(poly, a, try_b, try_c, try_d)
        grow = (phase < 3) & (m_next > m + tol)
        b, c, d = jnp.where(grow, try_b, b), jnp.where(grow, try_c, c), jnp.where(grow, try_d, d)
        m = jnp.where(grow, m_next, m)
        res = jnp.where(grow, jnp.stack([a, b, c, d]), res)
        phase_next = jnp.where(grow, jnp.where(phase == 0, 1, phase), next_phase[phase])
        # end of a: C's nested clean-up, then the next a
        end = phase == 3
        b_eq = end & (b == a)
        b = jnp.where(b_eq, inc(b), b)
        c_eq = b_eq & (c == b)
        c = jnp.where(c_eq, inc(c), c)
        d = jnp.where(c_eq & (d == c), inc(d), d)
        a = jnp.where(end, a + 1, a)
        return a, b, c, d, m, res, phase_next

    def cond(state):
        return state[0] < n

    zero = jnp.zeros((), jnp.int32)
    init = (
        zero,
        zero + 1,
        zero + 2,
        zero + 3,
        _area4(poly, 0, 1, 2, 3),
        jnp.arange(4, dtype=jnp.int32),
        zero,
    )
    return jax.lax.while_loop(cond, body, init)[5]


def _farthest_pair(poly, count):
    """C's choice of 2 of count (> 2) points: the first pair (i < j) of greatest distance."""
    m = poly.shape[0]
    d2 = jnp.sum((poly[:, None] - poly[None]) ** 2, -1)
    i, j = np.triu_indices(m, 1)
    valid = j < count
    k = jnp.argmax(jnp.where(valid, d2[i, j], -1.0))
    return jnp.stack([jnp.asarray(i)[k], jnp.asarray(j)[k]])


def _face_face(p, q, radius, half, s, cap_sign, face, margin):
    """Cap against box face `face`: (4,) dist, (4, 3) pos, (4,) used (box frame)."""
    dtype = p.dtype
    axis = q[:, 2]
    cap_normal = cap_sign * axis
    center = p + axis * (cap_sign * half)
    col0, col1 = q[:, 0] * radius, q[:, 1] * (radius * cap_sign)
    cap = (
        col0 * jnp.asarray(_COS16, dtype)[:, None]
        - col1 * jnp.asarray(_SIN16, dtype)[:, None]
        + center
    )
    box_face = jnp.asarray(_BOX_FACES, dtype)[face] * s
    f = jnp.asarray(_FACE_NORMALS, dtype)[face]
    poly, count = _clip(cap, box_face, cap_normal, margin, _MAXV_FACE)
    pick = jnp.where(count > 4, _polygon_quad(poly, count), jnp.arange(4))
    pts = poly[pick]
    w1 = pts - ((pts - cap[0]) @ cap_normal)[:, None] * cap_normal
    dist = (w1 - pts) @ f
    pos = w1 - 0.5 * dist[:, None] * f
    return dist, pos, jnp.arange(4) < count


def _side_face(v, end, s, face, margin):
    """The side line v→end against box face `face`: (4,) dist, (4, 3) pos, (4,) used."""
    dtype = v.dtype
    box_face = jnp.asarray(_BOX_FACES, dtype)[face] * s
    f = jnp.asarray(_FACE_NORMALS, dtype)[face]
    poly, count = _clip(box_face, jnp.stack([v, end]), f, margin, _MAXV_EDGE)
    pick = jnp.where(count > 2, _farthest_pair(poly, count), jnp.arange(2))
    pts = poly[pick]
    height = (pts - box_face[0]) @ f
    pos = pts - 0.5 * height[:, None] * f
    pad = jnp.zeros(2, dtype)
    return (
        jnp.concatenate([height, pad]),
        jnp.concatenate([pos, jnp.zeros((2, 3), dtype)]),
        jnp.arange(4) < jnp.minimum(count, 2),
    )


# ---------------------------------------------------------------------------- the pair


def contact(cyl_pos, cyl_mat, cyl_size, box_pos, box_mat, box_size):
    """The exact single contact of one cylinder–box pair: (dist, pos (3,), normal (3,)).

    What EPA (`mjc_Convex` with multiccd disabled) approximates: the signed distance, the
    midpoint of the witness points and the unit normal from the cylinder to the box.
    """
    dtype = jnp.result_type(cyl_pos, cyl_mat, cyl_size, box_pos, box_mat, box_size)
    args = [jnp.asarray(x, dtype) for x in (cyl_pos, cyl_mat, cyl_size, box_pos, box_mat, box_size)]
    cyl_pos, cyl_mat, cyl_size, box_pos, box_mat, box_size = args
    p, q = _box_frame(cyl_pos, cyl_mat, box_pos, box_mat)
    dist, u, a = _exact(p, q, cyl_size[0], cyl_size[1], box_size)
    pos = a - 0.5 * dist * u
    return dist, box_pos + box_mat @ pos, -(box_mat @ u)


def collide(cyl_pos, cyl_mat, cyl_size, box_pos, box_mat, box_size, margin=0.0):
    """One cylinder–box pair: C's contacts in `NCON` slots, MJX's convention.

    Args:
      cyl_pos, cyl_mat, cyl_size: the cylinder's centre (3,), rotation (3, 3) (axis:
        column 2) and (radius, half-length, ...), as `d.geom_xpos`, `d.geom_xmat`,
        `m.geom_size`.
      box_pos, box_mat, box_size: the box's, with half-sizes.
      margin: the pair's margin (C reports contacts with dist < margin).

    Returns:
      dist (4,), pos (4, 3), frame (4, 3, 3). Slot 0 always holds a contact (the exact
      single one, or the first point of a multi-point contact); unused slots are inactive.

    The dtype follows the inputs. jit- and vmap-able; no pose gives NaN or inf.
    """
    dtype = jnp.result_type(cyl_pos, cyl_mat, cyl_size, box_pos, box_mat, box_size, margin)
    args = [
        jnp.asarray(x, dtype)
        for x in (cyl_pos, cyl_mat, cyl_size, box_pos, box_mat, box_size, margin)
    ]
    cyl_pos, cyl_mat, cyl_size, box_pos, box_mat, box_size, margin = args
    radius, half = cyl_size[0], cyl_size[1]
    eps = jnp.finfo(dtype).eps
    p, q = _box_frame(cyl_pos, cyl_mat, box_pos, box_mat)
    axis = q[:, 2]
    dist0, u, a = _exact(p, q, radius, half, box_size)
    u = jax.lax.stop_gradient(u)
    pos0 = a - 0.5 * dist0 * u

    # C's features. The cap facing the box (the cylinder's support along -u), and the box
    # faces adjacent to its support feature along u (the facing ones, but for components
    # of u within rounding of 0: EPA's vertices may lie on either side of those).
    cap_sign = jnp.where(axis @ u <= 0, 1.0, -1.0).astype(dtype)
    cap_normal = cap_sign * axis
    normals = jnp.asarray(_FACE_NORMALS, dtype)
    facing = normals @ u
    candidate = facing > jnp.sqrt(eps)
    # face-face: the most anti-parallel candidate within FACE_TOL, both facing by EDGE_TOL
    align = normals @ cap_normal
    ok = candidate & (facing > EDGE_TOL) & (cap_normal @ u < -EDGE_TOL) & (align < -FACE_TOL)
    face_face = jnp.any(ok)
    face = jnp.argmin(jnp.where(ok, align, jnp.inf))
    ff_dist, ff_pos, ff_used = _face_face(p, q, radius, half, box_size, cap_sign, face, margin)
    # side-face: the first candidate face parallel to the axis within EDGE_TOL
    parallel = candidate & (jnp.abs(normals @ axis) < EDGE_TOL)
    side = jnp.argmax(parallel)
    # the side line through the rim point nearest the box; where u is (nearly) the axis,
    # EPA's rim point is arbitrary: no side line then
    radial = -u - (-u @ axis) * axis
    has_rim = jnp.linalg.norm(radial) > jnp.sqrt(eps)
    v = p + axis * (cap_sign * half) + radius * _safe_unit(radial, jnp.zeros(3, dtype))
    sf_dist, sf_pos, sf_used = _side_face(
        v, v - axis * (2 * cap_sign * half), box_size, side, margin
    )

    touching = dist0 < margin
    use_ff = touching & face_face & ff_used[0]
    use_sf = touching & ~face_face & has_rim & jnp.any(parallel) & sf_used[0]
    multi = use_ff | use_sf
    dist = jnp.where(use_ff, ff_dist, sf_dist)
    pos = jnp.where(use_ff, ff_pos, sf_pos)
    used = jnp.where(use_ff, ff_used, sf_used) & multi
    face_normal = normals[jnp.where(use_ff, face, side)]
    normal = jnp.where(multi, -face_normal, -u)

    single = jnp.arange(NCON) == 0
    dist = jnp.where(multi, dist, jnp.where(single, dist0, 0.0))
    pos = jnp.where(multi, pos, pos0)
    used = used | (~multi & single)
    inactive = jnp.maximum(margin, 0.0) + 1.0
    dist = jnp.where(used, dist, inactive)
    pos = jnp.where(used[:, None], pos, pos[0])
    world_pos = box_pos + pos @ box_mat.T
    frame = mjx_math.make_frame(box_mat @ normal)
    return dist, world_pos, jnp.broadcast_to(frame, (NCON, 3, 3))


def cylinder_box(m, d, key, geom):
    """MJX collision function for (CYLINDER, BOX) pairs: geom[:, 0] is the cylinder.

    The margin is `geom_margin` summed over the pair (as MJX's own contact margin).
    """
    del key
    return per_pair.over_pairs(collide, m, d, geom)


cylinder_box.ncon = NCON

"""Height field–ellipsoid narrow phase: C MuJoCo's prisms, each collided exactly.

C MuJoCo (`mjc_ConvexHField`) treats a height field as triangular prisms: each grid cell
(c, r) splits along its diagonal from (c, r) to (c+1, r+1) into two triangles whose
corners sit at the elevations `hfield_data * size[2]`, extruded down to the base at
`-size[3]`. Every prism whose cell overlaps the other geom's bounding box is collided with
the geom as two convex bodies (nativeccd GJK/EPA), one contact per penetrating prism, up to
`mjMAXCONPAIR` = 50 per geom pair. We take the prisms of MJX's static sub-grid around the
geom (`key.subgrid_size` cells, enough to cover its bounding sphere; the window is moved
inside the grid near its border, so every prism is a real one), solve each prism–geom
problem exactly, and keep `NCON` = 4 of the contacts, as MJX does for its own height-field
pairs.

One prism–ellipsoid pair. For convex P (the prism) and E (the ellipsoid) the signed distance
is the maximum over unit n of gap(n) = min_E n·x - max_P n·v (n from P to E): the distance
when apart, minus the penetration depth when they overlap. The maximiser is the normal of
P ⊖ E at its boundary point nearest the origin, so it lies among finitely many candidates:
the 5 face normals; for each of the 9 edges, minus the normals of the ellipse that the
ellipsoid projects to along the edge, through the edge's projection; for each of the 6
vertices, minus the ellipsoid's normals through the vertex (E's support point along -n has
outward normal -n). `ellipsoid_box._critical_normals` finds such normals (every real root
of the point-to-ellipse(oid) equation, by Newton's method from each pole). Prisms of a
sub-grid share their vertices and edges, so each vertex's and each edge's normals are found
once and gathered per prism. The candidate with the largest gap gives dist (exact to
rounding, deep penetration included: gap is stationary at its maximum), its direction the
normal, and the ellipsoid's support point along -n the witness: `pos` is midway between it
and the prism's witness, dist behind it along n.

What we keep. C reports every penetrating prism; we report the deepest contact, then up to
3 more among the prisms within the margin (`dist < margin`), each the farthest from those
already taken (C's own rule when it thins flex contacts). When C has at most 4 contacts for
the pair, ours are the same set. Unused slots get `dist = margin + 1` (inactive). The normal
is the exact one of the prism's own problem, as C's: through a prism's vertical side wall
it is horizontal, through its base (a geom sunk below a thin prism) it points down (MJX's
own height-field colliders instead replace any normal without an upward component by the
prism's top normal; we do not).

Frames: all prisms are built and solved in the height field's frame, relative to the geom's
centre, and moved back to the world; `m.hfield_data` (traced) supplies the elevations, so a
new terrain in the Model (`model.replace(hfield_data=...)`) is used as is. Only the grid
shape and the sub-grid size are static. This module also holds what the height-field pairs
share (`hfield_cylinder` uses it): the sub-grid, the contact selection, MJX's plumbing.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from mujoco.mjx._src import math as mjx_math
from mujoco.mjx._src import mesh as mjx_mesh

from jaxcontrol.collision.ellipsoid_box import _critical_normals, _safe_unit

__all__ = [
    "NCON",
    "Subgrid",
    "collide",
    "collide_prism",
    "hfield_ellipsoid",
    "hfield_pair_function",
    "prism_contacts",
    "select_contacts",
    "signed_distance_lower_bound",
    "subgrid",
]

#: Contacts per height field–geom pair (MJX's own height-field pairs report 4).
NCON = 4


# ----------------------------------------------------------------------------- prisms


@functools.cache
def _prism_edges() -> np.ndarray:
    """The (9, 2) vertex pairs of a prism's edges, as `mesh.hfield_prism` lists them."""
    with jax.ensure_compile_time_eval():
        return np.asarray(mjx_mesh.hfield_prism(jnp.zeros((6, 3))).edge)


@functools.cache
def _topology(ncols: int, nrows: int):
    """Static index arrays of a sub-grid of ncols x nrows cells.

    Grid points are numbered j * (ncols + 1) + i (column i, row j), their top copies first,
    then their bottom copies. Returns:
      prism_verts: (P, 6) each prism's points in `mesh.hfield_prism`'s order (bottom p1,
        p3, p2, then top p1, p2, p3), cell by cell, row-major, the upper-left triangle
        (i, j), (i+1, j+1), (i, j+1) before the lower-right (i, j), (i+1, j), (i+1, j+1), as
        C MuJoCo splits a cell;
      edges: (E, 2) the distinct edges, as point pairs;
      prism_edges: (P, 9) each prism's edges, in `mesh.hfield_prism`'s order.
    """
    npts = (ncols + 1) * (nrows + 1)

    def point(i, j, top):
        return (0 if top else npts) + j * (ncols + 1) + i

    prism_verts = []
    for j in range(nrows):
        for i in range(ncols):
            for p1, p2, p3 in (
                ((i, j), (i + 1, j + 1), (i, j + 1)),
                ((i, j), (i + 1, j), (i + 1, j + 1)),
            ):
                bottom = [point(*p, False) for p in (p1, p3, p2)]
                prism_verts.append(bottom + [point(*p, True) for p in (p1, p2, p3)])
    edge_ids, edges, prism_edges = {}, [], []
    for verts in prism_verts:
        row = []
        for a, b in _prism_edges():
            pair = (verts[a], verts[b])
            key = tuple(sorted(pair))
            if key not in edge_ids:
                edge_ids[key] = len(edges)
                edges.append(pair)
            row.append(edge_ids[key])
        prism_edges.append(row)
    return np.array(prism_verts), np.array(edges), np.array(prism_edges)


class Subgrid:
    """The prisms of the sub-grid around a geom, in the height field's frame.

    Attributes:
      points: (2 * (columns + 1) * (rows + 1), 3) the grid points at their elevations, then
        the same at the base (-size[3]).
      prism_verts, edges, prism_edges: `_topology`'s static index arrays.
    """

    def __init__(self, points, topology):
        self.points = points
        self.prism_verts, self.edges, self.prism_edges = topology

    @property
    def verts(self):
        """(P, 6, 3) each prism's vertices in `mesh.hfield_prism`'s order."""
        return self.points[self.prism_verts]


def subgrid(data, size, center, rbound, subgrid_size) -> Subgrid:
    """The sub-grid of cells around a geom: MJX's window, moved inside the grid.

    Args:
      data: (ncol, nrow) elevations in [0, 1], `data[c, r] = hfield_data[adr + r*ncol + c]`
        (as `mujoco.mjx._src.mesh.hfield` lays them out).
      size: (4,) `hfield_size`: x and y half-extents, top elevation scale, base depth.
      center: (3,) the geom's centre in the height field's frame.
      rbound: the geom's bounding-sphere radius.
      subgrid_size: static (columns, rows) of cells, MJX's `FunctionKey.subgrid_size`.

    The window starts, as MJX's, at the cell of the bounding sphere's low corner; near the
    grid's border it is moved to lie inside the grid (it still covers every cell of MJX's
    window that exists), and it is at most the whole grid.
    """
    ncol, nrow = data.shape
    dtype = center.dtype
    size = jnp.asarray(size, dtype)
    ncols, nrows = min(int(subgrid_size[0]), ncol - 1), min(int(subgrid_size[1]), nrow - 1)
    dx = 2.0 * size[0] / (ncol - 1)
    dy = 2.0 * size[1] / (nrow - 1)
    cmin = jnp.floor((center[0] - rbound + size[0]) / (2.0 * size[0]) * (ncol - 1))
    rmin = jnp.floor((center[1] - rbound + size[1]) / (2.0 * size[1]) * (nrow - 1))
    cmin = jnp.clip(cmin, 0, ncol - 1 - ncols).astype(jnp.int32)
    rmin = jnp.clip(rmin, 0, nrow - 1 - nrows).astype(jnp.int32)
    ci = cmin + jnp.arange(ncols + 1)
    ri = rmin + jnp.arange(nrows + 1)
    x = jnp.broadcast_to(dx * ci - size[0], (nrows + 1, ncols + 1))  # C's expressions
    y = jnp.broadcast_to((dy * ri - size[1])[:, None], (nrows + 1, ncols + 1))
    z = data.astype(dtype)[ci[None, :], ri[:, None]] * size[2]
    top = jnp.stack([x, y, z], -1).reshape(-1, 3)
    bottom = top.at[:, 2].set(-size[3])
    return Subgrid(jnp.concatenate([top, bottom]), _topology(ncols, nrows))


def _face_normals(verts):
    """(P, 5, 3) face normals of prisms (MJX's `mesh.hfield_prism`), both orientations are
    used as candidates, so the winding does not matter."""
    return jax.vmap(lambda v: mjx_mesh.hfield_prism(v).face_normal)(verts)


def _edge_geometry(points, edges):
    """Unit direction (E, 3) and first point (E, 3) of each edge."""
    start = points[edges[:, 0]]
    z = jnp.zeros(3, points.dtype).at[2].set(1.0)
    return _safe_unit(points[edges[:, 1]] - start, z), start


def _single_prism(verts):
    """One prism as `_solve_*` takes a sub-grid: its points and its own topology."""
    return verts, np.arange(6)[None], _prism_edges(), np.arange(9)[None]


# ----------------------------------------------------------------------- ellipsoid–prism


def _sorted_axes(q, r):
    """Semi-axes in descending order, with their axes (columns of q) alike."""
    for i, j in ((0, 1), (1, 2), (0, 1)):  # sorting network
        swap = r[j] > r[i]
        r = r.at[i].set(jnp.where(swap, r[j], r[i])).at[j].set(jnp.where(swap, r[i], r[j]))
        qi, qj = q[:, i], q[:, j]
        q = q.at[:, i].set(jnp.where(swap, qj, qi)).at[:, j].set(jnp.where(swap, qi, qj))
    return q, r


def _gap(n, verts, q, r):
    """gap(n) = min over the ellipsoid of n·x - max over the prism of n·v.

    n: (..., K, 3) unit directions from the prism to the ellipsoid; verts: (..., 6, 3)
    relative to the ellipsoid's centre; q: its axes (columns); r: its semi-axes.
    """
    support = jnp.max(jnp.einsum("...ki,...vi->...kv", n, verts), axis=-1)
    return -jnp.linalg.norm((n @ q) * r, axis=-1) - support


def _vertex_candidates(points, q, r):
    """(N, 6, 3): minus the ellipsoid's normals through each point."""
    qs, rs = _sorted_axes(q, r)
    m = jax.vmap(_critical_normals, in_axes=(None, 0))(rs, points @ qs)
    return -(m @ qs.T)


def _edge_candidates(points, edges, q, r):
    """(E, 4, 3): minus the normals, through each edge, of the ellipse the ellipsoid
    projects to along the edge (onto the plane of p1, p2: {M w : |w| <= 1} with
    M = [p1, p2]^T Q diag(r), shape matrix M M^T)."""
    u, start = _edge_geometry(points, edges)
    p1, p2 = jax.vmap(mjx_math.orthogonals)(u)
    qr = q * r
    mi, mj = p1 @ qr, p2 @ qr  # rows of M, per edge
    aa, bb, cc = (jnp.sum(x * y, -1) for x, y in ((mi, mi), (mi, mj), (mj, mj)))
    lam0 = 0.5 * (aa + cc) + jnp.hypot(0.5 * (aa - cc), bb)
    lam1 = jnp.sum(jnp.cross(mi, mj) ** 2, -1) / lam0  # det / lam0: no cancellation
    theta = 0.5 * jnp.arctan2(2 * bb, aa - cc)
    c, s = jnp.cos(theta)[:, None], jnp.sin(theta)[:, None]
    d0, d1 = c * p1 + s * p2, -s * p1 + c * p2  # the ellipse's principal directions
    y = jnp.stack([jnp.sum(start * d0, -1), jnp.sum(start * d1, -1)], -1)
    e2 = jnp.sqrt(jnp.stack([lam0, lam1], -1))
    m2 = jax.vmap(_critical_normals)(e2, y)  # (E, 4, 2)
    return -(m2[..., :1] * d0[:, None] + m2[..., 1:] * d1[:, None])


def _solve_ellipsoid(points, prism_verts, edges, prism_edges, q, r):
    """Every prism against the ellipsoid (centre at the origin): (dist, pos, n), each (P,)."""
    verts = points[prism_verts]  # (P, 6, 3)
    faces = _face_normals(verts)
    dirs = jnp.concatenate(
        [
            faces,
            -faces,
            _vertex_candidates(points, q, r)[prism_verts].reshape(len(prism_verts), -1, 3),
            _edge_candidates(points, edges, q, r)[prism_edges].reshape(len(prism_verts), -1, 3),
        ],
        axis=1,
    )
    dirs = jax.lax.stop_gradient(dirs)  # only the choice depends on them (envelope theorem)
    gaps = _gap(dirs, verts, q, r)
    gaps = jnp.where(jnp.isfinite(gaps), gaps, -jnp.inf)
    best = jnp.argmax(gaps, axis=1)
    n = jnp.take_along_axis(dirs, best[:, None, None], 1)[:, 0]
    dist = jnp.take_along_axis(gaps, best[:, None], 1)[:, 0]
    qn = (n @ q) * r
    support = -(qn * r / jnp.linalg.norm(qn, axis=-1, keepdims=True)) @ q.T  # along -n
    return dist, support - 0.5 * dist[:, None] * n, n


def collide_prism(verts, ell_mat, ell_size):
    """One prism against one ellipsoid: (dist, pos (3,), normal (3,)).

    Args:
      verts: (6, 3) the prism's vertices in `mesh.hfield_prism`'s order, relative to the
        ellipsoid's centre (any frame).
      ell_mat: (3, 3) the ellipsoid's axes (columns) in that frame; ell_size: semi-axes.

    Returns:
      dist (< 0: penetration), pos midway between the surfaces (same frame and origin as
      verts), and the unit normal from the prism to the ellipsoid.
    """
    dtype = jnp.result_type(verts, ell_mat, ell_size)
    verts, ell_mat, ell_size = (jnp.asarray(x, dtype) for x in (verts, ell_mat, ell_size))
    dist, pos, n = _solve_ellipsoid(*_single_prism(verts), ell_mat, ell_size)
    return dist[0], pos[0], n[0]


def signed_distance_lower_bound(n, verts, ell_mat, ell_size):
    """gap along unit direction(s) n (prism to ellipsoid): a lower bound on dist.

    The exact signed distance is the maximum of this over all unit n; tests use it as a
    certificate that no direction beats `collide_prism`'s. n: (K, 3); verts: (6, 3).
    """
    return _gap(n, verts, ell_mat, ell_size)


# ------------------------------------------------------------------ contacts of a pair


def select_contacts(dist, pos, normal, margin, ncon=NCON):
    """`ncon` of a pair's per-prism contacts: the deepest, then the farthest-spread.

    Slot 0 holds the prism of least dist. Each further slot takes, among the prisms with
    `dist < margin` not yet taken, the one farthest from all taken (the greatest least
    squared distance between positions); a slot with none left gets `dist = margin + 1`
    (inactive) and slot 0's position and normal.

    Returns:
      dist (ncon,), pos (ncon, 3), normal (ncon, 3), and the prism index of each slot.
    """
    first = jnp.argmin(dist)
    eligible = dist < margin
    taken = jnp.zeros(dist.shape, bool).at[first].set(True)
    least = jnp.sum((pos - pos[first]) ** 2, -1)
    idx, used = [first], [jnp.asarray(True)]
    for _ in range(ncon - 1):
        score = jnp.where(eligible & ~taken, least, -1.0)
        k = jnp.argmax(score)
        ok = score[k] >= 0
        taken = taken.at[k].set(taken[k] | ok)
        least = jnp.where(ok, jnp.minimum(least, jnp.sum((pos - pos[k]) ** 2, -1)), least)
        idx.append(jnp.where(ok, k, first))
        used.append(ok)
    idx, used = jnp.stack(idx), jnp.stack(used)
    inactive = jnp.maximum(margin, 0.0) + 1.0
    return jnp.where(used, dist[idx], inactive), pos[idx], normal[idx], idx


def prism_contacts(solve, h_pos, h_mat, h_size, h_data, pos, mat, params, rbound, subgrid_size):
    """Every prism of the sub-grid against one geom, in the world frame.

    Args:
      solve: `fn(points, prism_verts, edges, prism_edges, mat, params)` -> (dist, pos,
        normal), each per prism, in the height field's frame relative to the geom's centre
        (points are relative to it too).
      h_pos, h_mat: the height field geom's pose; h_size: its `hfield_size` (4,); h_data:
        its elevations (ncol, nrow), as `subgrid` takes them.
      pos, mat, params: the other geom's centre, rotation and parameters for `solve`.
      rbound: its bounding-sphere radius; subgrid_size: static (columns, rows).

    Returns:
      dist (P,), pos (P, 3), normal (P, 3) from the height field to the geom, and the
      prisms' vertices (P, 6, 3) in the height field's frame.
    """
    dtype = jnp.result_type(h_pos, h_mat, pos, mat, params)
    h_pos, h_mat, pos, mat, params, h_size = (
        jnp.asarray(a, dtype) for a in (h_pos, h_mat, pos, mat, params, h_size)
    )
    center = h_mat.T @ (pos - h_pos)
    grid = subgrid(jnp.asarray(h_data).astype(dtype), h_size, center, rbound, subgrid_size)
    dist, cpos, normal = solve(
        grid.points - center,
        grid.prism_verts,
        grid.edges,
        grid.prism_edges,
        h_mat.T @ mat,
        params,
    )
    return dist, h_pos + (center + cpos) @ h_mat.T, normal @ h_mat.T, grid.verts


def collide(
    h_pos, h_mat, h_size, h_data, ell_pos, ell_mat, ell_size, rbound, subgrid_size, margin=0.0
):
    """One height field–ellipsoid pair: (dist (4,), pos (4, 3), frame (4, 3, 3)), MJX's
    convention (normal `frame[:, 0]` from the height field to the ellipsoid)."""
    dist, pos, normal, _ = prism_contacts(
        _solve_ellipsoid,
        h_pos,
        h_mat,
        h_size,
        h_data,
        ell_pos,
        ell_mat,
        ell_size,
        rbound,
        subgrid_size,
    )
    dist, pos, normal, _ = select_contacts(dist, pos, normal, margin)
    return dist, pos, jax.vmap(mjx_math.make_frame)(normal)


def hfield_pair_function(collide_one, ncon=NCON):
    """MJX's collision-function form for (HFIELD, X) pairs, around a one-pair `collide_one`
    with `collide`'s signature (the other geom's params are its `geom_size`)."""

    def fn(m, d, key, geom):
        g1, g2 = geom.T
        h = mjx_mesh.hfield(m, key.data_ids[0])  # the traced m.hfield_data, (ncol, nrow)
        dtype = d.geom_xpos.dtype
        margin = m.geom_margin[g1] + m.geom_margin[g2]

        def one(h_pos, h_mat, pos, mat, size, rbound, margin):
            return collide_one(
                h_pos,
                h_mat,
                jnp.asarray(h.size, dtype),
                h.data.astype(dtype),
                pos,
                mat,
                size,
                rbound,
                key.subgrid_size,
                margin,
            )

        dist, pos, frame = jax.vmap(one)(
            d.geom_xpos[g1],
            d.geom_xmat[g1],
            d.geom_xpos[g2],
            d.geom_xmat[g2],
            m.geom_size[g2],
            m.geom_rbound[g2],
            margin,
        )
        return dist.reshape(-1), pos.reshape(-1, 3), frame.reshape(-1, 3, 3)

    fn.ncon = ncon
    return fn


#: MJX collision function for (HFIELD, ELLIPSOID) pairs: geom[:, 0] is the height field.
hfield_ellipsoid = hfield_pair_function(collide)
hfield_ellipsoid.__name__ = hfield_ellipsoid.__qualname__ = "hfield_ellipsoid"

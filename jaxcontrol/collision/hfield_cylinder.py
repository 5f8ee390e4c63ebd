"""Height field–cylinder narrow phase: C MuJoCo's prisms, each collided exactly.

The height field is split into C MuJoCo's triangular prisms on MJX's sub-grid around the
cylinder, each prism–cylinder pair is solved exactly, and 4 contacts are kept, all as in
`hfield_ellipsoid` (which this module shares its sub-grid, selection and MJX plumbing with;
its docstring describes them and C's `mjc_ConvexHField`).

One prism–cylinder pair. With the cylinder's centre at the origin, axis a, radius R and
half-length H, its support is h(n) = R |n x a| + H |n·a|, and the signed distance is the
maximum over unit n of gap(n) = -h(-n) - max_P n·v (n from the prism to the cylinder). The
maximiser is the normal of P ⊖ C where that set's boundary is nearest the origin; the
boundary is made of sums of a prism feature (face, edge, vertex) and a cylinder feature (a
cap: a disc; the side; a rim: a circle), so the maximiser is among these candidates:

* prism face (with anything): the 5 face normals; cap (with anything): ±a;
* side + prism edge u: ±a x u; side + vertex v: ± the radial direction of v;
* rim + vertex: ± the direction from each rim's nearest and farthest point to v (the rim's
  points whose normal plane holds v);
* rim + edge: along u the rim projects to an ellipse with semi-axes R (along a x u) and
  R |a·u|, and the edge to a point: minus the ellipse's normals through that point
  (`ellipsoid_box._critical_normals`); and, for the flat ellipse of an edge (nearly)
  perpendicular to the axis, ± the directions from the ends of its major axis.

The prisms of a sub-grid share their vertices and edges, whose candidates are found once.
The best candidate gives dist (exact to rounding: gap is stationary at its maximum) and the
normal. The witness is the cylinder's support point along -n where that is one point (a
rim point); where it is a segment (side) or a disc (cap), the point of it nearest the
prism's witness (the centroid of the prism's support vertices, moved dist along n), so a
side or cap lying on a face gets a point of the overlap rather than an arbitrary one (C's
EPA returns some point of it). `pos` is midway between the two surfaces.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from mujoco.mjx._src import math as mjx_math

from jaxcontrol.collision import hfield_ellipsoid as _hfield
from jaxcontrol.collision.ellipsoid_box import _critical_normals, _safe_unit

__all__ = ["NCON", "collide", "collide_prism", "hfield_cylinder", "signed_distance_lower_bound"]

NCON = _hfield.NCON


def _norm(x):
    """|x| along the last axis, with a zero (not NaN) gradient where x = 0."""
    sq = jnp.sum(x * x, axis=-1)
    nonzero = sq > 0
    return jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, sq, 1.0)), 0.0)


def _cylinder_support(n, axis, radius, half):
    """max over the cylinder (centred at 0) of n·x, for (..., 3) directions n."""
    radial = _norm(jnp.cross(n, axis))  # |n x a|: exact near the axis
    return radius * radial + half * jnp.abs(n @ axis)


def _gap(n, verts, axis, radius, half):
    """gap(n) for (..., K, 3) directions and (..., 6, 3) prism vertices (cylinder at 0)."""
    support = jnp.max(jnp.einsum("...ki,...vi->...kv", n, verts), axis=-1)
    return -_cylinder_support(n, axis, radius, half) - support


def _vertex_candidates(points, axis, radius, half):
    """(N, 6, 3): side + vertex (radial) and rim + vertex directions, both signs."""
    b_any = mjx_math.orthogonals(axis)[0]  # some unit vector perpendicular to the axis
    along = points @ axis
    radial = _safe_unit(points - along[:, None] * axis, b_any)  # (N, 3)
    dirs = [radial]
    for cap in (-1.0, 1.0):
        for side in (-1.0, 1.0):  # each rim's nearest and farthest point
            dirs.append(_safe_unit(points - cap * half * axis - side * radius * radial, axis))
    dirs = jnp.stack(dirs, 1)
    return jnp.concatenate([dirs, -dirs], 1)


def _edge_candidates(points, edges, axis, radius, half):
    """(E, 16, 3): side + edge (a x u, both signs) and rim + edge directions."""
    dtype = points.dtype
    b_any = mjx_math.orthogonals(axis)[0]
    u, start = _hfield._edge_geometry(points, edges)  # (E, 3)
    b1 = _safe_unit(jnp.cross(axis, u), b_any)  # the rim's major axis seen along u
    p2 = jnp.cross(u, b1)  # and its minor axis, of length R |a·u|
    minor = jnp.maximum(radius * jnp.abs(u @ axis), radius * jnp.sqrt(jnp.finfo(dtype).eps))
    e2 = jnp.stack([jnp.full_like(minor, radius), minor], -1)
    # the edge's point relative to each rim's centre, in the ellipse's axes (b1, p2)
    rel = jnp.stack([start - cap * half * axis for cap in (-1.0, 1.0)])  # (2, E, 3)
    y = jnp.stack([jnp.sum(rel * b1, -1), jnp.sum(rel * p2, -1)], -1)
    m2 = jax.vmap(_critical_normals)(jnp.concatenate([e2, e2]), y.reshape(-1, 2))
    m2 = m2.reshape(2, -1, 4, 2)  # outward normals, per rim and edge
    dirs = [b1[:, None], -b1[:, None]]
    for k in range(2):
        dirs.append(-(m2[k, ..., :1] * b1[:, None] + m2[k, ..., 1:] * p2[:, None]))
        for side in (-1.0, 1.0):  # the ends of the major axis (a flat ellipse's tips)
            w = rel[k] - side * radius * b1
            w = _safe_unit(w - jnp.sum(w * u, -1, keepdims=True) * u, b1)
            dirs += [w[:, None], -w[:, None]]
    return jnp.concatenate(dirs, 1)


def _solve_cylinder(points, prism_verts, edges, prism_edges, mat, size):
    """Every prism against the cylinder (centre at the origin): (dist, pos, n), each (P,)."""
    axis, radius, half = mat[:, 2], size[0], size[1]
    nprism = len(prism_verts)
    verts = points[prism_verts]  # (P, 6, 3)
    faces = _hfield._face_normals(verts)
    caps = jnp.broadcast_to(jnp.stack([axis, -axis]), (nprism, 2, 3))
    vertex = _vertex_candidates(points, axis, radius, half)[prism_verts]
    edge = _edge_candidates(points, edges, axis, radius, half)[prism_edges]
    dirs = jnp.concatenate(
        [faces, -faces, caps, vertex.reshape(nprism, -1, 3), edge.reshape(nprism, -1, 3)], 1
    )
    dirs = jax.lax.stop_gradient(dirs)  # only the choice depends on them (envelope theorem)
    gaps = _gap(dirs, verts, axis, radius, half)
    gaps = jnp.where(jnp.isfinite(gaps), gaps, -jnp.inf)
    best = jnp.argmax(gaps, axis=1)
    n = jnp.take_along_axis(dirs, best[:, None, None], 1)[:, 0]
    dist = jnp.take_along_axis(gaps, best[:, None], 1)[:, 0]
    support = jax.vmap(_witness, in_axes=(0, 0, 0, None, None, None))(
        verts, n, dist, axis, radius, half
    )
    return dist, support - 0.5 * dist[:, None] * n, n


def _witness(verts, n, dist, axis, radius, half):
    """The cylinder's support point along -n; where that is a segment (side) or a disc
    (cap), its point nearest the prism's witness: the centroid of the prism's support
    vertices along n, moved dist along n (to where the cylinder's surface is)."""
    dtype = verts.dtype
    eps = jnp.finfo(dtype).eps
    scale = radius + half + jnp.max(jnp.abs(verts))
    heights = verts @ n
    on = heights >= jnp.max(heights) - jnp.sqrt(eps) * scale
    target = jnp.sum(jnp.where(on[:, None], verts, 0.0), 0) / jnp.sum(on) + dist * n
    tol = jnp.sqrt(eps)
    na = n @ axis
    along = jnp.where(jnp.abs(na) > tol, -half * jnp.sign(na), jnp.clip(target @ axis, -half, half))
    n_perp = n - na * axis
    t_perp = target - (target @ axis) * axis
    t_len = _norm(t_perp)
    t_clipped = t_perp * jnp.minimum(1.0, radius / jnp.where(t_len > 0, t_len, 1.0))
    lateral = jnp.where(_norm(n_perp) > tol, -radius * _safe_unit(n_perp, axis), t_clipped)
    return along * axis + lateral


def collide_prism(verts, cyl_mat, cyl_size):
    """One prism against one cylinder: (dist, pos (3,), normal (3,)).

    Args:
      verts: (6, 3) the prism's vertices in `mesh.hfield_prism`'s order, relative to the
        cylinder's centre (any frame).
      cyl_mat: (3, 3) the cylinder's rotation in that frame (its axis is column 2);
        cyl_size: (radius, half-length, ...) as `geom_size`.

    Returns:
      dist (< 0: penetration), pos midway between the surfaces (same frame and origin as
      verts), and the unit normal from the prism to the cylinder.
    """
    dtype = jnp.result_type(verts, cyl_mat, cyl_size)
    verts, cyl_mat, cyl_size = (jnp.asarray(x, dtype) for x in (verts, cyl_mat, cyl_size))
    dist, pos, n = _solve_cylinder(*_hfield._single_prism(verts), cyl_mat, cyl_size)
    return dist[0], pos[0], n[0]


def signed_distance_lower_bound(n, verts, cyl_mat, cyl_size):
    """gap along unit direction(s) n (K, 3) (prism to cylinder): a lower bound on dist."""
    return _gap(n, verts, cyl_mat[:, 2], cyl_size[0], cyl_size[1])


def collide(
    h_pos, h_mat, h_size, h_data, cyl_pos, cyl_mat, cyl_size, rbound, subgrid_size, margin=0.0
):
    """One height field–cylinder pair: (dist (4,), pos (4, 3), frame (4, 3, 3)), MJX's
    convention (normal `frame[:, 0]` from the height field to the cylinder)."""
    dist, pos, normal, _ = _hfield.prism_contacts(
        _solve_cylinder,
        h_pos,
        h_mat,
        h_size,
        h_data,
        cyl_pos,
        cyl_mat,
        cyl_size,
        rbound,
        subgrid_size,
    )
    dist, pos, normal, _ = _hfield.select_contacts(dist, pos, normal, margin)
    return dist, pos, jax.vmap(mjx_math.make_frame)(normal)


#: MJX collision function for (HFIELD, CYLINDER) pairs: geom[:, 0] is the height field.
hfield_cylinder = _hfield.hfield_pair_function(collide)
hfield_cylinder.__name__ = hfield_cylinder.__qualname__ = "hfield_cylinder"

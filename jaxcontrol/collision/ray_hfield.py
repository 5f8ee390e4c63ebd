"""Rays against height fields, which `mjx.ray` (and so MJX's rangefinders) skips.

`ray_hfield(m, d, pnt, vec, bodyexclude)` is `mjx.ray` with the height-field geoms added:
the nearest of MJX's answer and each height field's, -1 for a miss, as C's `mj_ray`.
`rangefinder_with_hfields(m, d, sensordata)` recomputes every rangefinder with it, as C's
`mj_sensorPos` does: the ray from the site along its z axis, ignoring the site's own body,
then the sensor's cutoff (`mjDATATYPE_REAL`: clipped to +-cutoff, a miss's -1 included;
`mjDATATYPE_POSITIVE`: capped at cutoff; none where cutoff <= 0).

One height field (C's `mj_rayHfield`, same answer to rounding). In the geom's frame the
solid is a base box, z in [-size[3], 0], and above it the terrain: each grid cell's two
triangles (split along the diagonal from (c, r) to (c+1, r+1)) at the elevations
`data * size[2]`, closed on the four outer sides by vertical walls up to the edge's
elevation profile. C takes the least non-negative ray parameter among: the base box; the
triangles of a window of cells, the bounding rectangle (padded by one cell) of the ray's
path through the top box z in [0, size[2]], and only if the ray meets that box; and the top
box's side walls where below the profile. Elevations above 1 (the escape task's zoomed
bumps reach ~1.06) stick out of the top box, and C finds them only within that window;
so do we. C tests every triangle of the window; we visit only the cells the ray crosses:
along the grid axis on which the ray moves faster (in cells), each column of the window
holds at most two of them, and columns are taken in order along the ray, 16 at a time in a
`lax.while_loop` that stops at the first block with a hit (a later column's hit is
farther). A ray across a whole 201 x 201 grid takes 13 iterations.

Static: which geoms are height fields, their grid shapes, and which sensors are
rangefinders (NumPy model fields, read at trace time). Traced: poses, `m.hfield_data`
(a new terrain in the Model is used as is), colours (C skips invisible geoms, as mjx.ray).
Like `mjx.ray`, cylinders are not hit (C's `mj_ray` hits them).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx
from mujoco.mjx._src import mesh as mjx_mesh
from mujoco.mjx._src.types import GeomType

__all__ = ["rangefinder_with_hfields", "ray_hfield", "ray_hfield_local", "ray_triangles"]

_COLUMNS_PER_STEP = 16  # grid columns tested per while-loop iteration


def _ray_box(half, pnt, vec):
    """C's `ray_box` in the box's frame: nearest x >= 0 (inf: none), and each face's x.

    Returns (x, all6), all6[2*i + (side+1)/2] the parameter where the ray meets face
    (axis i, side), inf where it does not (behind the origin, or outside the face).
    """
    inf = jnp.asarray(jnp.inf, pnt.dtype)
    faces = []
    for i in range(3):
        j, k = [a for a in range(3) if a != i]
        ok_axis = jnp.abs(vec[i]) > mujoco.mjMINVAL
        safe = jnp.where(ok_axis, vec[i], 1.0)
        for side in (-1.0, 1.0):
            sol = (side * half[i] - pnt[i]) / safe
            inside = (jnp.abs(pnt[j] + sol * vec[j]) <= half[j]) & (
                jnp.abs(pnt[k] + sol * vec[k]) <= half[k]
            )
            faces.append(jnp.where(ok_axis & (sol >= 0) & inside, sol, inf))
    all6 = jnp.stack(faces)
    return jnp.min(all6), all6


def ray_triangles(v0, v1, v2, pnt, vec, det_min=mujoco.mjMINVAL, x_min=0.0):
    """Möller-Trumbore for rays against triangles, all broadcast over leading axes.

    Returns (x, u, v): the ray parameter of each hit, inf for a miss (a
    determinant within det_min of 0, or x < x_min), and the hit's barycentric
    coordinates (weights of v1 and v2). The defaults are C's `mj_ray`'s.
    """
    e1, e2 = v1 - v0, v2 - v0
    p = jnp.cross(vec, e2)
    det = jnp.sum(e1 * p, -1)
    ok = jnp.abs(det) > det_min
    inv = 1.0 / jnp.where(ok, det, 1.0)
    s = pnt - v0
    u = jnp.sum(s * p, -1) * inv
    q = jnp.cross(s, e1)
    v = jnp.sum(vec * q, -1) * inv
    x = jnp.sum(e2 * q, -1) * inv
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (x >= x_min)
    return jnp.where(hit, x, jnp.inf), u, v


def ray_hfield_local(data, size, pnt, vec):
    """Distance along the ray to one height field (-1: none), all in the field's frame.

    Args:
      data: (ncol, nrow) elevations, `data[c, r] = hfield_data[adr + r*ncol + c]`.
      size: (4,) `hfield_size`.
      pnt, vec: the ray's origin and direction in the height field geom's frame.

    jit- and vmap-able; the grid shape is static.
    """
    dtype = pnt.dtype
    ncol, nrow = data.shape
    data = jnp.asarray(data).astype(dtype)
    size = jnp.asarray(size, dtype)
    inf = jnp.asarray(jnp.inf, dtype)
    dx = 2.0 * size[0] / (ncol - 1)
    dy = 2.0 * size[1] / (nrow - 1)

    # base box and top box
    x_base, _ = _ray_box(
        jnp.stack([size[0], size[1], 0.5 * size[3]]), pnt + jnp.stack([0, 0, 0.5 * size[3]]), vec
    )
    x_top, all6 = _ray_box(
        jnp.stack([size[0], size[1], 0.5 * size[2]]), pnt - jnp.stack([0, 0, 0.5 * size[2]]), vec
    )
    hit_top = jnp.isfinite(x_top)
    # the ray's segment inside the top box: [entry, exit], or [0, exit] from inside it
    far = jnp.max(jnp.where(jnp.isfinite(all6), all6, -inf))
    outside = far > x_top
    seg0 = jnp.where(outside, x_top, 0.0)
    seg1 = jnp.where(outside, far, x_top)
    seg1 = jnp.where(hit_top, seg1, 0.0)

    # C's window: the cells around the segment's projection, padded by one on each side;
    # C tests every triangle in it, wherever along the ray (t >= 0) the hit is (so also
    # terrain above the top box, elevations > 1, near where the ray leaves it)
    sx = (pnt[0] + jnp.stack([seg0, seg1]) * vec[0] + size[0]) / dx
    sy = (pnt[1] + jnp.stack([seg0, seg1]) * vec[1] + size[1]) / dy
    cmin = jnp.maximum(0, jnp.floor(jnp.min(sx)) - 1)
    cmax = jnp.minimum(ncol - 1, jnp.ceil(jnp.max(sx)) + 1)
    rmin = jnp.maximum(0, jnp.floor(jnp.min(sy)) - 1)
    rmax = jnp.minimum(nrow - 1, jnp.ceil(jnp.max(sy)) + 1)

    # grid coordinates; march along the axis on which the ray moves faster (in cells),
    # over the columns of the window that the ray (t >= 0) crosses, in order
    gp = jnp.stack([(pnt[0] + size[0]) / dx, (pnt[1] + size[1]) / dy])
    gv = jnp.stack([vec[0] / dx, vec[1] / dy])
    xmajor = jnp.abs(gv[0]) >= jnp.abs(gv[1])
    s_p, w_p = jnp.where(xmajor, gp[0], gp[1]), jnp.where(xmajor, gp[1], gp[0])
    s_v, w_v = jnp.where(xmajor, gv[0], gv[1]), jnp.where(xmajor, gv[1], gv[0])
    lo_major, hi_major = jnp.where(xmajor, cmin, rmin), jnp.where(xmajor, cmax, rmax)
    lo_minor, hi_minor = jnp.where(xmajor, rmin, cmin), jnp.where(xmajor, rmax, cmax)
    slope = jnp.where(s_v != 0, w_v / jnp.where(s_v != 0, s_v, 1.0), 0.0)
    forward = s_v >= 0
    start = jnp.floor(s_p)
    k0 = jnp.clip(start, lo_major, hi_major - 1)
    last = jnp.where(s_v > 0, hi_major - 1, jnp.where(s_v < 0, lo_major, k0))
    reach = jnp.where(  # does the ray reach the window along the major axis?
        s_v > 0,
        start < hi_major,
        jnp.where(s_v < 0, start >= lo_major, (start >= lo_major) & (start < hi_major)),
    )
    count = jnp.where(hit_top & reach, jnp.abs(last - k0) + 1, 0).astype(jnp.int32)
    k0 = k0.astype(jnp.int32)
    step = jnp.where(forward, 1, -1)

    def corner(c, r):
        return jnp.stack([dx * c - size[0], dy * r - size[1], data[c, r] * size[2]], -1)

    def block(q):
        """The nearest hit among the columns q*K ... q*K + K - 1 (inf: none)."""
        i = q * _COLUMNS_PER_STEP + jnp.arange(_COLUMNS_PER_STEP)
        k = k0 + step * i
        # the column's stretch of the ray (t >= 0): from the origin on in its own column
        lo = jnp.where(forward, jnp.maximum(k, s_p), k)
        hi = jnp.where(forward, k + 1, jnp.minimum(k + 1, s_p))
        lo, hi = jnp.where(s_v == 0, s_p, lo), jnp.where(s_v == 0, s_p, hi)
        w_lo = w_p + (lo - s_p) * slope
        w_hi = w_p + (hi - s_p) * slope
        j = jnp.floor(jnp.minimum(w_lo, w_hi)).astype(jnp.int32)
        j = jnp.stack([j, j + 1], -1)  # (K, 2): the (at most) two cells across
        inside = (i < count)[:, None] & (j >= lo_minor) & (j < hi_minor)
        k = jnp.broadcast_to(k[:, None], j.shape)
        c, r = jnp.where(xmajor, k, j), jnp.where(xmajor, j, k)
        c, r = jnp.clip(c, 0, ncol - 2), jnp.clip(r, 0, nrow - 2)
        p00, p11 = corner(c, r), corner(c + 1, r + 1)
        x_a, _, _ = ray_triangles(p00, corner(c + 1, r), p11, pnt, vec)
        x_b, _, _ = ray_triangles(p00, p11, corner(c, r + 1), pnt, vec)
        return jnp.min(jnp.where(inside, jnp.minimum(x_a, x_b), inf))

    def cond(state):
        q, best = state
        return (q * _COLUMNS_PER_STEP < count) & ~jnp.isfinite(best)

    def body(state):
        q, best = state
        return q + 1, jnp.minimum(best, block(q))

    _, x_tri = jax.lax.while_loop(cond, body, (jnp.asarray(0, jnp.int32), inf))

    # the top box's four sides, below the elevation profile along that edge
    x = jnp.minimum(x_base, x_tri)
    for i in range(4):
        at = all6[i]
        ok = hit_top & jnp.isfinite(at) & (at < x)
        z = (pnt[2] + at * vec[2]) / size[2]
        if i < 2:  # x = -+size[0]: the profile of column 0 or ncol - 1, along y
            y = (pnt[1] + at * vec[1] + size[1]) / dy
            y0 = jnp.clip(jnp.floor(jnp.where(ok, y, 0.0)), 0, nrow - 2)
            col = ncol - 1 if i == 1 else 0
            yi = y0.astype(jnp.int32)
            z0, z1 = data[col, yi], data[col, yi + 1]
        else:  # y = -+size[1]: the profile of row 0 or nrow - 1, along x
            y = (pnt[0] + at * vec[0] + size[0]) / dx
            y0 = jnp.clip(jnp.floor(jnp.where(ok, y, 0.0)), 0, ncol - 2)
            row = nrow - 1 if i == 3 else 0
            yi = y0.astype(jnp.int32)
            z0, z1 = data[yi, row], data[yi + 1, row]
        below = z < z0 * (y0 + 1 - y) + z1 * (y - y0)
        x = jnp.where(ok & below, at, x)

    return jnp.where(jnp.isfinite(x), x, -1.0)


def _static_geom_filter(m, geomgroup, flg_static, bodyexclude) -> np.ndarray:
    """mjx.ray's static geom filter (body exclusion, static geoms, groups)."""
    keep = flg_static | (m.body_weldid[m.geom_bodyid] != 0)
    for body in bodyexclude:
        keep = keep & (m.geom_bodyid != body)
    if len(geomgroup):
        groups = np.asarray(geomgroup, bool)
        keep = keep & groups[np.clip(m.geom_group, 0, mujoco.mjNGROUP - 1)]
    return np.asarray(keep)


def ray_hfield(m, d, pnt, vec, bodyexclude=-1, geomgroup=(), flg_static=True):
    """`mjx.ray` that also hits height-field geoms: (dist, geomid), (-1, -1) for a miss.

    Args:
      m, d: MJX model and data (positions computed).
      pnt, vec: the ray's origin and direction (world frame, vec need not be unit: dist is
        the parameter along it, as mj_ray's).
      bodyexclude: a body id, or a sequence of them, whose geoms are ignored (static).
      geomgroup, flg_static: as mjx.ray's.

    jit- and vmap-able (over pnt, vec, and the traced model and data fields). Unlike
    mjx.ray 3.17, it also works on a model without materials (see below). Where a height
    field and another geom are hit at the same distance, the lower geom id wins, as in C.
    """
    bodies = (
        list(bodyexclude) if isinstance(bodyexclude, (list, tuple, np.ndarray)) else [bodyexclude]
    )
    dtype = d.geom_xpos.dtype
    if m.mat_rgba.shape[0] == 0:
        # mjx.ray reads mat_rgba[geom_matid] even where geom_matid is -1, which fails on a
        # model without materials; one unused row fixes that (no geom refers to it).
        m = m.replace(mat_rgba=jnp.ones((1, 4), m.geom_rgba.dtype))
    dist, geomid = mjx.ray(m, d, pnt, vec, geomgroup, flg_static, bodies)
    pnt, vec = jnp.asarray(pnt, dtype), jnp.asarray(vec, dtype)
    keep = _static_geom_filter(m, geomgroup, flg_static, bodies)
    hfields = np.nonzero(keep & (np.asarray(m.geom_type) == GeomType.HFIELD))[0]
    if hfields.size == 0:
        return dist, geomid
    best = jnp.where(dist < 0, jnp.inf, dist).astype(dtype)
    geomid = jnp.asarray(geomid)
    for g in hfields:
        h = mjx_mesh.hfield(m, int(m.geom_dataid[g]))  # elevations from the traced Model
        mat = d.geom_xmat[g]
        x = ray_hfield_local(h.data, h.size, mat.T @ (pnt - d.geom_xpos[g]), mat.T @ vec)
        # C's (and mjx.ray's) visibility: no material and alpha 0, or a material of alpha 0
        matid = m.geom_matid[g]
        visible = jnp.where(matid < 0, m.geom_rgba[g, 3] != 0, m.mat_rgba[matid, 3] != 0)
        x = jnp.where(visible & (x >= 0), x, jnp.inf)
        closer = (x < best) | ((x == best) & (g < geomid))  # C: ties go to the lower id
        best = jnp.where(closer, x, best)
        geomid = jnp.where(closer, g, geomid)
    hit = jnp.isfinite(best)
    return jnp.where(hit, best, -1.0), jnp.where(hit, geomid, -1)


def _cutoff(value, cutoff: float, datatype: int):
    """C's `apply_cutoff` for one sensor value."""
    if cutoff <= 0:
        return value
    if datatype == mujoco.mjtDataType.mjDATATYPE_REAL:
        return jnp.clip(value, -cutoff, cutoff)
    if datatype == mujoco.mjtDataType.mjDATATYPE_POSITIVE:
        return jnp.minimum(value, cutoff)
    return value


def rangefinder_with_hfields(m, d, sensordata):
    """`sensordata` with every rangefinder recomputed by `ray_hfield` (height fields hit).

    Each rangefinder casts a ray from its site along the site's z axis, ignoring the geoms
    of the site's body, and reports the distance or -1, then its cutoff, as C MuJoCo's
    `mj_sensorPos`. Other sensors' values are returned untouched. Needs `d`'s positions
    (`site_xpos`, `site_xmat`, `geom_xpos`, `geom_xmat`: after `mjx.kinematics`).

    Raises:
      NotImplementedError: a rangefinder that is not a site's distance-only ray (camera
        rangefinders, or data beyond the distance).
    """
    sensor_type = np.asarray(m.sensor_type)
    ids = np.nonzero(sensor_type == mujoco.mjtSensor.mjSENS_RANGEFINDER)[0]
    if ids.size == 0:
        return sensordata
    objtype = np.asarray(m.sensor_objtype)[ids]
    dim = np.asarray(m.sensor_dim)[ids]
    if np.any(objtype != mujoco.mjtObj.mjOBJ_SITE) or np.any(dim != 1):
        raise NotImplementedError(
            "rangefinder_with_hfields handles site rangefinders that report the distance only"
        )
    sites = np.asarray(m.sensor_objid)[ids]
    site_body = np.asarray(m.site_bodyid)[sites]
    sensordata = jnp.asarray(sensordata)
    for body in np.unique(site_body):  # bodyexclude is static: one vmap per body
        group = ids[site_body == body]
        group_sites = np.asarray(m.sensor_objid)[group]
        pnt = d.site_xpos[group_sites]
        vec = d.site_xmat[group_sites][:, :, 2]
        dist, _ = jax.vmap(lambda p, v, b=int(body): ray_hfield(m, d, p, v, b))(pnt, vec)
        values = [
            _cutoff(dist[i], float(m.sensor_cutoff[s]), int(m.sensor_datatype[s]))
            for i, s in enumerate(group)
        ]
        adr = np.asarray(m.sensor_adr)[group]
        sensordata = sensordata.at[adr].set(jnp.stack(values).astype(sensordata.dtype))
    return sensordata

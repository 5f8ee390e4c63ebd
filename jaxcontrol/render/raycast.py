"""Pixels in pure JAX: one ray per pixel against the model's geoms, shaded like MuJoCo.

Why ray casting: the suite's scenes are a few dozen analytic primitives, so a
ray per pixel tested against every visible object is exact (no tessellation),
needs no OpenGL, no callbacks and no custom kernels, and is plain array code
that `jit` and `vmap` batch on CPU, GPU and TPU alike. Cost grows with pixels
x objects; at 84x84 and the suite's 5-35 objects that is cheap.

What is drawn (MuJoCo's default scene, as dm_control's `physics.render`):
  * geoms and sites of groups 0-2 and site-only spatial tendons, colours by
    MuJoCo's rgba/material rule (`scene.py`); planes one-sided (front face
    only), finite or infinite (size 0), with their 2D texture (the checker grid);
    height fields as C's `mj_ray` sees them (`collision.ray_hfield`: the
    terrain's triangles over a base box, from the environment's own
    `hfield_data`), each triangle flat-shaded; skins (the dog's body) posed by
    their bones and rasterised into the camera (`skin.py`), smooth-shaded and
    textured, casting no shadows;
  * lighting as OpenGL's fixed pipeline that MuJoCo uses: the headlight and
    each model light (directional or spot, with cutoff, exponent and
    attenuation), ambient + diffuse + Blinn-Phong specular with the material's
    specular, shininess and emission; hard shadows for lights that cast them
    (one shadow ray each); a reflective floor darkened by its reflectance
    (the reflected image itself is not drawn);
  * the skybox texture where no object is hit, and MuJoCo's near/far clipping.
Not drawn: haze, fog, the reflected image, meshes' smooth normals. The
fidelity against MuJoCo's own renderer is measured per task in docs/rendering.md.

`make_render(env, ...)` returns `render(data, model_fields) -> image`, a pure
function of one environment's MJX data (vmap it for a batch).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from jaxcontrol import physics as physics_lib
from jaxcontrol.collision import ray_hfield
from jaxcontrol.render import scene as scene_lib
from jaxcontrol.render import skin as skin_lib
from jaxcontrol.render.scene import (
    BOX,
    CAPSULE,
    CYLINDER,
    ELLIPSOID,
    HFIELD,
    MESH,
    OBJ_GEOM,
    OBJ_SITE,
    PLANE,
    SKIN,
    SPHERE,
)

EPS = 1e-6
SHADOW_OFFSET = 1e-3  # metres along the normal, so a surface does not shadow itself


# ----- ray-primitive intersection (local frames; arrays broadcast, last axis xyz) -----------


def _first_root(a, b, c):
    """Smallest root t > EPS of a t^2 + 2 b t + c = 0, inf if none."""
    disc = b * b - a * c
    root = jnp.sqrt(jnp.maximum(disc, 0.0))
    a = jnp.where(jnp.abs(a) < EPS, EPS, a)
    near, far = (-b - root) / a, (-b + root) / a
    t = jnp.where(near > EPS, near, jnp.where(far > EPS, far, jnp.inf))
    return jnp.where(disc >= 0, t, jnp.inf)


def _dot(u, v):
    return jnp.sum(u * v, axis=-1)


# Per-ray rotations written out as multiply-adds: XLA's CPU backend runs a
# batched 3x3 dot_general as one tiny matrix product per ray.
def _rotate(rot, v):
    """rot @ v over matching leading axes (rot (..., 3, 3), v (..., 3))."""
    return jnp.stack(
        [
            rot[..., i, 0] * v[..., 0] + rot[..., i, 1] * v[..., 1] + rot[..., i, 2] * v[..., 2]
            for i in range(3)
        ],
        axis=-1,
    )


def _unrotate(rot, v):
    """rot.T @ v: world to the frame whose axes are rot's columns."""
    return jnp.stack(
        [
            rot[..., 0, i] * v[..., 0] + rot[..., 1, i] * v[..., 1] + rot[..., 2, i] * v[..., 2]
            for i in range(3)
        ],
        axis=-1,
    )


def hit_sphere(size, o, d):
    return _first_root(_dot(d, d), _dot(o, d), _dot(o, o) - size[..., 0] ** 2)


def hit_ellipsoid(size, o, d):
    o, d = o / size, d / size
    return _first_root(_dot(d, d), _dot(o, d), _dot(o, o) - 1.0)


def _side(radius, half, o, d):
    """The round side of a z-axis cylinder, between z = -half and half."""
    a = d[..., 0] ** 2 + d[..., 1] ** 2
    b = o[..., 0] * d[..., 0] + o[..., 1] * d[..., 1]
    c = o[..., 0] ** 2 + o[..., 1] ** 2 - radius**2
    t = _first_root(a, b, c)
    return jnp.where(jnp.abs(o[..., 2] + t * d[..., 2]) <= half, t, jnp.inf)


def hit_capsule(size, o, d):
    radius, half = size[..., 0], size[..., 1]
    t = _side(radius, half, o, d)
    for sign in (1.0, -1.0):
        centre = o - sign * jnp.stack([0 * half, 0 * half, half], -1)
        t = jnp.minimum(
            t, _first_root(_dot(d, d), _dot(centre, d), _dot(centre, centre) - radius**2)
        )
    return t


def hit_cylinder(size, o, d):
    radius, half = size[..., 0], size[..., 1]
    t = _side(radius, half, o, d)
    dz = jnp.where(jnp.abs(d[..., 2]) < EPS, EPS, d[..., 2])
    for sign in (1.0, -1.0):
        tc = (sign * half - o[..., 2]) / dz
        x, y = o[..., 0] + tc * d[..., 0], o[..., 1] + tc * d[..., 1]
        t = jnp.minimum(t, jnp.where((tc > EPS) & (x * x + y * y <= radius**2), tc, jnp.inf))
    return t


def hit_box(size, o, d):
    half = size
    safe = jnp.where(jnp.abs(d) < EPS, jnp.where(d < 0, -EPS, EPS), d)
    t1, t2 = (-half - o) / safe, (half - o) / safe
    near = jnp.max(jnp.minimum(t1, t2), axis=-1)
    far = jnp.min(jnp.maximum(t1, t2), axis=-1)
    return jnp.where((near <= far) & (near > EPS), near, jnp.inf)


def hit_plane(size, o, d):
    sx, sy = size[..., 0], size[..., 1]
    front = (d[..., 2] < -EPS) & (o[..., 2] > 0)
    t = -o[..., 2] / jnp.where(front, d[..., 2], -1.0)
    x, y = o[..., 0] + t * d[..., 0], o[..., 1] + t * d[..., 1]
    inside = ((sx <= 0) | (jnp.abs(x) <= sx)) & ((sy <= 0) | (jnp.abs(y) <= sy))
    return jnp.where(front & inside & (t > EPS), t, jnp.inf)


def hit_mesh(triangles, o, d):
    """Nearest hit on a triangle soup (F, 3, 3) in the local frame (both faces)."""
    o, d = o[..., None, :], d[..., None, :]  # (..., 1, 3) against F triangles
    corners = (triangles[:, 0], triangles[:, 1], triangles[:, 2])
    t, _, _ = ray_hfield.ray_triangles(*corners, o, d, det_min=1e-12, x_min=EPS)
    best = jnp.argmin(t, axis=-1)
    return jnp.min(t, axis=-1), best


def _hfield_grid(hfield_data, hfield: tuple[int, int, int]):
    """One height field's elevations as `ray_hfield_local` takes them: (ncol, nrow)."""
    adr, nrow, ncol = hfield
    return hfield_data[adr : adr + nrow * ncol].reshape(nrow, ncol).T


def hit_hfield(grid, size, o, d):
    """Distance along each ray d (P, 3) from o (3,) or (P, 3) to a height field (inf: none)."""
    o = jnp.broadcast_to(o, d.shape)
    t = jax.vmap(ray_hfield.ray_hfield_local, (None, None, 0, 0))(grid, size, o, d)
    return jnp.where(t > EPS, t, jnp.inf)


def hfield_normal(grid, size, q):
    """Outward normal at local points q (P, 3) on a height field.

    The side walls and the base's bottom face have their box normals; on the
    terrain, the normal of the cell's triangle (cells split along the
    diagonal from (c, r) to (c + 1, r + 1), as the ray test).
    """
    ncol, nrow = grid.shape
    dx, dy = 2 * size[0] / (ncol - 1), 2 * size[1] / (nrow - 1)
    gx, gy = (q[:, 0] + size[0]) / dx, (q[:, 1] + size[1]) / dy
    c = jnp.clip(jnp.floor(gx), 0, ncol - 2).astype(jnp.int32)
    r = jnp.clip(jnp.floor(gy), 0, nrow - 2).astype(jnp.int32)
    z00, z11 = grid[c, r] * size[2], grid[c + 1, r + 1] * size[2]
    lower = gx - c >= gy - r  # the triangle (c, r), (c + 1, r), (c + 1, r + 1)
    z_side = jnp.where(lower, grid[c + 1, r], grid[c, r + 1]) * size[2]
    zero = jnp.zeros_like(z00)
    diagonal = jnp.stack([dx + zero, dy + zero, z11 - z00], -1)
    side = jnp.where(
        lower[:, None],
        jnp.stack([dx + zero, zero, z_side - z00], -1),
        jnp.stack([zero, dy + zero, z_side - z00], -1),
    )
    top = jnp.where(lower[:, None], jnp.cross(side, diagonal), jnp.cross(diagonal, side))
    tol = 1e-4 * jnp.maximum(size[0], size[1])
    unit = jnp.eye(3, dtype=q.dtype)
    normal = top
    normal = jnp.where((q[:, 2] <= -size[3] + tol)[:, None], -unit[2], normal)
    normal = jnp.where(
        (jnp.abs(q[:, 1]) >= size[1] - tol)[:, None], unit[1] * jnp.sign(q[:, 1:2]), normal
    )
    normal = jnp.where(
        (jnp.abs(q[:, 0]) >= size[0] - tol)[:, None], unit[0] * jnp.sign(q[:, :1]), normal
    )
    return normal / jnp.maximum(jnp.linalg.norm(normal, axis=-1, keepdims=True), EPS)


_HIT = {
    PLANE: hit_plane,
    SPHERE: hit_sphere,
    CAPSULE: hit_capsule,
    ELLIPSOID: hit_ellipsoid,
    CYLINDER: hit_cylinder,
    BOX: hit_box,
}


def local_normal(kind, size, q, face_normal=None):
    """Outward normal at local point q of a primitive of type `kind` (per pixel arrays)."""
    zero = jnp.zeros_like(q[..., 0])
    radius, half = size[..., 0], size[..., 1]
    along = jnp.clip(q[..., 2], -half, half)
    capsule = q - jnp.stack([zero, zero, along], -1)
    rho = jnp.sqrt(q[..., 0] ** 2 + q[..., 1] ** 2)
    on_cap = jnp.abs(jnp.abs(q[..., 2]) - half) < jnp.abs(rho - radius)
    cylinder = jnp.where(
        on_cap[..., None],
        jnp.stack([zero, zero, jnp.sign(q[..., 2])], -1),
        jnp.stack([q[..., 0], q[..., 1], zero], -1),
    )
    ratio = jnp.abs(q) / jnp.maximum(size, EPS)
    axis = jnp.argmax(ratio, axis=-1)
    box = jax.nn.one_hot(axis, 3, dtype=q.dtype) * jnp.sign(q)
    ellipsoid = q / jnp.maximum(size, EPS) ** 2
    plane = jnp.stack([zero, zero, zero + 1], -1)
    mesh = plane if face_normal is None else face_normal
    normal = jnp.select(
        [kind[..., None] == k for k in (PLANE, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX)],
        [plane, q, capsule, ellipsoid, cylinder, box],
        mesh,
    )
    return normal / jnp.maximum(jnp.linalg.norm(normal, axis=-1, keepdims=True), EPS)


# ----- the renderer ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class _Static:
    """Constants of one renderer (camera rays, object tables), closed over by `render`."""

    scene: scene_lib.Scene
    camera: int
    height: int
    width: int
    rays: np.ndarray  # (P, 3) unit directions in the camera frame
    groups: tuple  # ((type, object indices), ...) in concatenation order
    order: np.ndarray  # concatenated object index of each row of the stacked distances
    meshes: dict  # object index -> (F, 3, 3) triangles in the geom frame
    hfields: dict  # object index -> ((hfield_data address, nrow, ncol), (4,) hfield_size)
    skins: tuple  # ((object index, skin_lib.Skin), ...)
    fovy: float
    near: float
    far: float
    needs_com: bool


def camera_rays(fovy_deg: float, height: int, width: int) -> np.ndarray:
    """Unit ray directions through each pixel centre, in the camera frame (row 0 at the top).

    MuJoCo's camera looks down its -z axis with y up; fovy is the vertical
    field of view and the horizontal one follows the image's aspect ratio.
    """
    half = np.tan(np.deg2rad(fovy_deg) / 2)
    x = ((np.arange(width) + 0.5) / width * 2 - 1) * half * width / height
    y = (1 - (np.arange(height) + 0.5) / height * 2) * half
    xx, yy = np.meshgrid(x, y)
    rays = np.stack([xx, yy, -np.ones_like(xx)], -1).reshape(-1, 3)
    return rays / np.linalg.norm(rays, axis=-1, keepdims=True)


def _mesh_triangles(m: mujoco.MjModel, geom: int) -> np.ndarray:
    mesh = m.geom_dataid[geom]
    vert = m.mesh_vert[m.mesh_vertadr[mesh] : m.mesh_vertadr[mesh] + m.mesh_vertnum[mesh]]
    face = m.mesh_face[m.mesh_faceadr[mesh] : m.mesh_faceadr[mesh] + m.mesh_facenum[mesh]]
    return vert[face].astype(np.float32)


def _static(env, height, width, camera) -> _Static:
    m = env.mj_model
    scene = scene_lib.build(m)
    objects = scene.objects
    groups, order, meshes, hfields = [], [], {}, {}
    for kind in scene_lib.TYPES:
        (index,) = np.nonzero(objects.type == kind)
        if kind in (MESH, HFIELD):  # one group per object: each has its own shape
            for i in index:
                if kind == MESH:
                    meshes[int(i)] = _mesh_triangles(m, objects.ids[i])
                else:
                    h = m.geom_dataid[objects.ids[i]]
                    grid = (int(m.hfield_adr[h]), int(m.hfield_nrow[h]), int(m.hfield_ncol[h]))
                    hfields[int(i)] = (grid, m.hfield_size[h].astype(np.float32))
                groups.append((kind, np.array([i])))
                order.append(i)
        elif index.size:
            groups.append((kind, index))
            order.extend(index)
    modes = set(m.cam_mode.tolist()) | set(m.light_mode.tolist())
    com_modes = {
        int(mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM),
        int(mujoco.mjtCamLight.mjCAMLIGHT_TARGETBODYCOM),
    }
    return _Static(
        scene=scene,
        camera=camera,
        height=height,
        width=width,
        rays=camera_rays(float(m.cam_fovy[camera]), height, width),
        groups=tuple(groups),
        order=np.array(order, np.int32),
        meshes=meshes,
        hfields=hfields,
        skins=tuple(
            (int(i), skin_lib.build(m, int(objects.ids[i])))
            for i in np.nonzero(objects.type == SKIN)[0]
        ),
        fovy=float(m.cam_fovy[camera]),
        near=float(m.vis.map.znear * m.stat.extent),
        far=float(m.vis.map.zfar * m.stat.extent),
        needs_com=bool(modes & com_modes),
    )


def _poses(static: _Static, data: mjx.Data, fields: Mapping[str, jax.Array]):
    """World position (N, 3), rotation (N, 3, 3) and size (N, 3) of each object."""
    m, objects = static.scene.model, static.scene.objects
    geom = objects.kind == OBJ_GEOM
    site = objects.kind == OBJ_SITE
    geom_size = fields.get("geom_size", m.geom_size)
    site_size = fields.get("site_size", m.site_size)
    pos, mat, size = [], [], []
    if geom.any():
        ids = objects.ids[geom]
        pos.append(data.geom_xpos[ids])
        mat.append(data.geom_xmat[ids].reshape(-1, 3, 3))
        size.append(jnp.asarray(geom_size)[ids])
    if site.any():
        ids = objects.ids[site]
        pos.append(data.site_xpos[ids])
        mat.append(data.site_xmat[ids].reshape(-1, 3, 3))
        size.append(jnp.asarray(site_size)[ids])
    if len(objects.tendon_sites):
        a = data.site_xpos[objects.tendon_sites[:, 0]]
        b = data.site_xpos[objects.tendon_sites[:, 1]]
        axis = b - a
        length = jnp.linalg.norm(axis, axis=-1)
        z = axis / jnp.maximum(length, EPS)[:, None]
        helper = jnp.where(jnp.abs(z[:, :1]) < 0.9, jnp.array([1.0, 0, 0]), jnp.array([0, 1.0, 0]))
        x = jnp.cross(helper, z)
        x = x / jnp.linalg.norm(x, axis=-1, keepdims=True)
        y = jnp.cross(z, x)
        pos.append((a + b) / 2)
        mat.append(jnp.stack([x, y, z], -1))
        width = jnp.asarray(objects.tendon_width, a.dtype)
        size.append(jnp.stack([width, length / 2, 0 * width], -1))
    if static.skins:  # placeholders: a skin's vertices are in world coordinates
        count, dtype = len(static.skins), data.xpos.dtype
        pos.append(jnp.zeros((count, 3), dtype))
        mat.append(jnp.broadcast_to(jnp.eye(3, dtype=dtype), (count, 3, 3)))
        size.append(jnp.zeros((count, 3), dtype))
    return jnp.concatenate(pos), jnp.concatenate(mat), jnp.concatenate(size)


def _rgba(static: _Static, fields) -> jax.Array:
    """Objects' colours, with per-environment geom_rgba / site_rgba where given."""
    m, objects = static.scene.model, static.scene.objects
    rgba = jnp.asarray(objects.rgba)
    for name, kind, matid in (
        ("geom_rgba", OBJ_GEOM, m.geom_matid),
        ("site_rgba", OBJ_SITE, m.site_matid),
    ):
        if name in fields:
            (rows,) = np.nonzero(objects.kind == kind)
            ids = objects.ids[rows]
            given = fields[name][ids].astype(rgba.dtype)
            default = jnp.all(given == scene_lib.DEFAULT_RGBA, axis=-1) & (matid[ids] >= 0)
            material = jnp.asarray(m.mat_rgba[np.maximum(matid[ids], 0)])
            rgba = rgba.at[rows].set(jnp.where(default[:, None], material, given))
    return rgba


def _lights(m: mujoco.MjModel, data: mjx.Data):
    """World positions and directions of the model's lights, as `mj_camlight` computes them.

    MJX's `camlight` places only cameras. Modes: fixed (in its body's frame),
    track (body position + the offset at the reference pose, fixed direction),
    trackcom (the same about the subtree's centre of mass), and targetbody(com)
    (pointing at the target).
    """
    modes = mujoco.mjtCamLight
    pos, direction = [], []
    for i in range(m.nlight):
        body, mode = m.light_bodyid[i], m.light_mode[i]
        xmat = data.xmat[body].reshape(3, 3)
        p = data.xpos[body] + xmat @ m.light_pos[i]
        d = xmat @ m.light_dir[i]
        if mode == modes.mjCAMLIGHT_TRACK:
            p, d = data.xpos[body] + m.light_pos0[i], jnp.asarray(m.light_dir0[i])
        elif mode == modes.mjCAMLIGHT_TRACKCOM:
            p, d = data.subtree_com[body] + m.light_poscom0[i], jnp.asarray(m.light_dir0[i])
        elif mode in (modes.mjCAMLIGHT_TARGETBODY, modes.mjCAMLIGHT_TARGETBODYCOM):
            target = m.light_targetbodyid[i]
            if target >= 0:
                aim = data.xpos if mode == modes.mjCAMLIGHT_TARGETBODY else data.subtree_com
                d = aim[target] - p
        pos.append(p)
        direction.append(d / jnp.maximum(jnp.linalg.norm(d), EPS))
    return pos, direction


def _nearest(
    static: _Static, pos, mat, size, origin, direction, shared_origin: bool, hfield_data=None
):
    """Nearest hit per ray: (distance, object index, {mesh or height field: world normals}).

    origin is (3,) when `shared_origin` (camera rays), else (P, 3) like direction.
    hfield_data is the environment's (the model's, where it is None).
    """
    dists, normals = [], {}
    for kind, index in static.groups:
        rot = mat[index]  # (G, 3, 3), columns: the object's axes in the world
        if shared_origin:
            o = _unrotate(rot, origin[None] - pos[index])[:, None, :]
        else:
            o = _unrotate(rot[:, None], origin[None] - pos[index][:, None, :])
        d = jnp.einsum("gji,pj->gpi", rot, direction)  # one matrix product
        if kind == MESH:
            i = int(index[0])
            tri = jnp.asarray(static.meshes[i], pos.dtype)
            t, face = hit_mesh(tri, o[0], d[0])
            e1, e2 = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
            fn = jnp.cross(e1, e2)[face]
            fn = jnp.where(_dot(fn, d[0])[..., None] > 0, -fn, fn)
            normals[i] = _rotate(rot[0][None], fn)
            dists.append(t[None])
        elif kind == HFIELD:
            i = int(index[0])
            data = static.scene.model.hfield_data if hfield_data is None else hfield_data
            layout, hsize = static.hfields[i]
            grid = _hfield_grid(jnp.asarray(data, pos.dtype), layout)
            hsize = jnp.asarray(hsize, pos.dtype)
            t = hit_hfield(grid, hsize, o[0], d[0])
            q = o[0] + jnp.where(jnp.isfinite(t), t, 0.0)[:, None] * d[0]
            normals[i] = _rotate(rot[0][None], hfield_normal(grid, hsize, q))
            dists.append(t[None])
        else:
            dists.append(_HIT[kind](size[index][:, None, :], o, d))
    stacked = jnp.concatenate(dists)  # (N, P)
    row = jnp.argmin(stacked, axis=0)
    return jnp.min(stacked, axis=0), jnp.asarray(static.order)[row], normals


def _sky(static: _Static, direction) -> jax.Array:
    """The skybox's colour seen along each world direction (OpenGL cube-map lookup).

    MuJoCo's world z (up) is the cube map's +y face (its third face).
    """
    faces = static.scene.skybox
    if faces is None:
        return jnp.zeros_like(direction)
    gx, gy, gz = direction[..., 0], direction[..., 2], -direction[..., 1]
    ax, ay, az = jnp.abs(gx), jnp.abs(gy), jnp.abs(gz)
    major = jnp.argmax(jnp.stack([ax, ay, az], -1), axis=-1)
    ma = jnp.maximum(jnp.max(jnp.stack([ax, ay, az], -1), axis=-1), EPS)
    face = jnp.select(
        [(major == 0) & (gx > 0), major == 0, (major == 1) & (gy > 0), major == 1, gz > 0],
        [0, 1, 2, 3, 4],
        5,
    )
    sc = jnp.select(
        [face == 0, face == 1, face == 2, face == 3, face == 4], [-gz, gz, gx, gx, gx], -gx
    )
    tc = jnp.select([face == 2, face == 3], [gz, -gz], -gy)
    side = faces.shape[1]
    col = jnp.clip(((sc / ma + 1) / 2 * side).astype(jnp.int32), 0, side - 1)
    row = jnp.clip(((tc / ma + 1) / 2 * side).astype(jnp.int32), 0, side - 1)
    return jnp.asarray(faces, direction.dtype)[face, row, col]


def _texel(static: _Static, row, uv):
    """The material's 2D texture at texture coordinates uv (repeating), and whether it has one."""
    texture = jnp.asarray(static.scene.materials.texture)[row]
    side = static.scene.textures.shape[1]
    col, line = (
        jnp.clip(jnp.floor((x - jnp.floor(x)) * side).astype(jnp.int32), 0, side - 1)
        for x in (uv[:, 0], uv[:, 1])
    )
    texel = jnp.asarray(static.scene.textures, uv.dtype)[jnp.maximum(texture, 0), line, col]
    return texel, texture >= 0


def _plane_texture(static: _Static, row, q, plane_size):
    """The 2D texture's colour at local plane point q, and whether there is one.

    As MuJoCo maps a plane (measured against its renderer): u runs along x
    from the plane's -x edge, v along -y from its +y edge; with texuniform the
    texture repeats texrepeat times per 2 metres, else texrepeat times across
    the plane.
    """
    materials = static.scene.materials
    repeat = jnp.asarray(materials.texrepeat, q.dtype)[row]
    uniform = jnp.asarray(materials.texuniform)[row]
    span = 2 * jnp.maximum(plane_size[:, :2], EPS)
    scale = jnp.where(uniform[:, None], repeat / 2, repeat / span)
    u = (q[:, 0] + plane_size[:, 0]) * scale[:, 0]
    v = (plane_size[:, 1] - q[:, 1]) * scale[:, 1]
    return _texel(static, row, jnp.stack([u, v], -1))


def make_render(
    env,
    height: int = 84,
    width: int = 84,
    camera_id: int | str = 0,
    *,
    segmentation: bool = False,
    shadows: bool = True,
) -> Callable[[mjx.Data, Mapping[str, jax.Array]], jax.Array]:
    """A pure function `render(data, model_fields)` for one environment of `env`.

    Args:
      env: a jaxcontrol Env (or wrapper).
      height: image height in pixels.
      width: image width in pixels.
      camera_id: one of the model's cameras, by index or name (not -1: MuJoCo's
        free camera has no pose in the state).
      segmentation: return the object seen at each pixel instead of colours.
      shadows: cast a shadow ray toward each light that casts shadows.

    Returns:
      `render(data, model_fields)`: data is one environment's `mjx.Data` with
      kinematics matching its qpos (as any State's), model_fields its
      `State.model_fields`. It returns uint8 (height, width, 3), or with
      `segmentation` int32 (height, width, 2): the id and mjtObj type (geom 5,
      site 6, tendon 18) of what each pixel sees, -1 for the background, as
      MuJoCo's segmentation rendering.

    Raises:
      ValueError: an unknown camera (naming the valid ones) or bad sizes.
    """
    from jaxcontrol.render.cpu import camera_index, check_size  # no GL needed

    env = env.unwrapped
    check_size(height, width)
    camera = camera_index(env.mj_model, camera_id)
    if camera < 0:
        raise ValueError(
            "the JAX renderer draws the model's cameras (0 to "
            f"{env.mj_model.ncam - 1}), not MuJoCo's free camera (-1)"
        )
    static = _static(env, height, width, camera)

    def render(data: mjx.Data, model_fields: Mapping[str, jax.Array]) -> jax.Array:
        return _render(static, env, data, model_fields, segmentation, shadows)

    return render


def _render(static: _Static, env, data, fields, segmentation: bool, shadows: bool):
    m = static.scene.model
    physics = physics_lib.Physics.create(env.mjx_model, data, env.names, fields)
    data = physics.data
    if static.needs_com:
        data = mjx.com_pos(physics.model, data)
    data = mjx.camlight(physics.model, data)
    dtype = data.qpos.dtype
    cam_pos = data.cam_xpos[static.camera]
    cam_mat = data.cam_xmat[static.camera].reshape(3, 3)
    direction = _rotate(cam_mat[None], jnp.asarray(static.rays, dtype))  # (P, 3) world
    pos, mat, size = _poses(static, data, fields)
    shape = (static.height, static.width)
    hfield_data = physics.model.hfield_data if static.hfields else None
    dist, obj, mesh_normals = _nearest(
        static, pos, mat, size, cam_pos, direction, True, hfield_data
    )
    skin_uv = {}
    for i, skin in static.skins:
        vert, vert_normal = skin_lib.pose(skin, data.xpos, data.xmat)
        t, mesh_normals[i], skin_uv[i] = skin_lib.rasterize(
            skin, vert, vert_normal, cam_pos, cam_mat, static.rays, static.fovy, *shape
        )
        closer = t < dist
        dist, obj = jnp.where(closer, t, dist), jnp.where(closer, i, obj)
    depth = dist * _dot(direction, -cam_mat[:, 2])
    hit = jnp.isfinite(dist) & (depth >= static.near) & (depth <= static.far)
    objects = static.scene.objects
    if segmentation:
        ids = jnp.where(hit, jnp.asarray(objects.ids)[obj], -1)
        kinds = jnp.where(hit, jnp.asarray(objects.kind)[obj], -1)
        return jnp.stack([ids, kinds], -1).reshape(*shape, 2).astype(jnp.int32)

    t = jnp.where(hit, dist, 0.0)
    point = cam_pos + t[:, None] * direction
    rot = mat[obj]
    local = _unrotate(rot, point - pos[obj])
    kind = jnp.asarray(objects.type)[obj]
    face = None
    if mesh_normals:
        face = jnp.zeros_like(local)
        for i, n in mesh_normals.items():
            face = jnp.where((obj == i)[:, None], _unrotate(rot, n), face)
    normal = _rotate(rot, local_normal(kind, size[obj], local, face))
    normal = jnp.where(_dot(normal, direction)[:, None] > 0, -normal, normal)

    row = jnp.asarray(static.scene.material_row(objects.material))[obj]
    materials = static.scene.materials
    rgba = _rgba(static, fields)[obj]
    base = rgba[:, :3]
    if (materials.texture >= 0).any():
        texel, textured = _plane_texture(static, row, local, size[obj])
        base = jnp.where((textured & (kind == PLANE))[:, None], base * texel, base)
        for i, uv in skin_uv.items():
            texel, textured = _texel(static, row, uv)
            base = jnp.where((textured & (obj == i))[:, None], base * texel, base)
    spec = jnp.asarray(materials.specular, dtype)[row]
    shine = jnp.asarray(materials.shininess, dtype)[row]
    emission = jnp.asarray(materials.emission, dtype)[row]
    reflect = jnp.asarray(materials.reflectance, dtype)[row]
    exponent = shine * 128
    view = -direction

    def light(ambient, diffuse, specular, to_light, factor):
        ndotl = _dot(normal, to_light)
        half = to_light + view
        half = half / jnp.maximum(jnp.linalg.norm(half, axis=-1, keepdims=True), EPS)
        ndoth = jnp.maximum(_dot(normal, half), 0.0)
        lit = (ndotl > 0).astype(dtype)
        shade = (
            diffuse * jnp.maximum(ndotl, 0.0)[:, None] * base
            + specular * (lit * ndoth**exponent * spec)[:, None]
        )
        return ambient * base + factor[:, None] * shade

    colour = emission[:, None] * base
    head = m.vis.headlight
    if head.active:
        forward = -cam_mat[:, 2]
        colour += light(
            jnp.asarray(head.ambient, dtype),
            jnp.asarray(head.diffuse, dtype),
            jnp.asarray(head.specular, dtype),
            jnp.broadcast_to(-forward, point.shape),
            jnp.ones_like(t),
        )
    light_pos, light_dirs = _lights(m, data)
    for i in range(m.nlight):
        if not m.light_active[i]:
            continue
        directional = m.light_type[i] == scene_lib.LIGHT_DIRECTIONAL
        light_dir = light_dirs[i]
        if directional:
            to_light = jnp.broadcast_to(-light_dir, point.shape)
            reach = jnp.full_like(t, jnp.inf)
            factor = jnp.ones_like(t)
        else:
            offset = light_pos[i] - point
            reach = jnp.linalg.norm(offset, axis=-1)
            to_light = offset / jnp.maximum(reach, EPS)[:, None]
            a0, a1, a2 = m.light_attenuation[i]
            factor = 1.0 / (a0 + a1 * reach + a2 * reach**2)
            if m.light_type[i] == scene_lib.LIGHT_SPOT:
                cosine = _dot(-to_light, light_dir)
                inside = cosine >= np.cos(np.deg2rad(m.light_cutoff[i]))
                factor = factor * jnp.where(
                    inside, jnp.maximum(cosine, 0.0) ** m.light_exponent[i], 0
                )
        if shadows and m.light_castshadow[i]:
            start = point + SHADOW_OFFSET * normal
            blocked, _, _ = _nearest(static, pos, mat, size, start, to_light, False, hfield_data)
            factor = factor * (blocked >= reach).astype(dtype)
        colour += light(
            jnp.asarray(m.light_ambient[i], dtype),
            jnp.asarray(m.light_diffuse[i], dtype),
            jnp.asarray(m.light_specular[i], dtype),
            to_light,
            factor,
        )
    colour = jnp.clip(colour, 0.0, 1.0) * (1 - reflect)[:, None]
    colour = jnp.where(hit[:, None], colour, _sky(static, direction))
    image = jnp.round(jnp.clip(colour, 0.0, 1.0) * 255).astype(jnp.uint8)
    return image.reshape(*shape, 3)

"""Skins in the pure-JAX renderer: meshes that follow their bones, rasterised into the camera.

A MuJoCo skin (dm_control's dog body) is a triangle mesh whose vertices move
with weighted bones (linear blend skinning, as `mjv_updateSkin`): each bone
carries its vertices from the bind pose to its body's current pose, and a
vertex is the weighted sum of those positions. Normals are the area-weighted
mean of the faces' normals at each vertex, interpolated across each face
(smooth shading, as OpenGL draws MuJoCo's skins), and a texture is sampled at
the interpolated texture coordinates.

Rasterised, not ray cast: the dog's skin has 33,900 triangles. A ray per pixel
against each of them would be 2.4e8 tests for one 84x84 image, while each
triangle covers at most a few pixel centres. So each triangle is projected
into the image and only the pixel centres in a `window` x `window` square from
its projection's corner are tested, with the camera ray through each (exact
distance and barycentric coordinates); a depth buffer keeps the nearest.
`window_for` sizes the window from the image size. The `large_faces`
triangles whose projections are widest beyond the window (or that cross the
camera plane) are tested against every pixel's ray instead, so a skin seen from
close by stays whole as long as no more of its triangles than that are large.

Skins are drawn for camera rays only: they cast no shadows (the bone meshes
inside them do).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from jaxcontrol.collision import ray_hfield

EPS = 1e-9


@dataclasses.dataclass(frozen=True, eq=False)
class Skin:
    """One skin's constants (NumPy), read from the model."""

    vert: np.ndarray  # (V, 3) bind-pose vertices
    face: np.ndarray  # (F, 3) vertex indices
    texcoord: np.ndarray | None  # (V, 2), or None
    inflate: float
    bone_body: np.ndarray  # (B,) body of each bone
    bind_rot: np.ndarray  # (B, 3, 3) rotation of each bone's bind frame
    bind_pos: np.ndarray  # (B, 3)
    entry_bone: np.ndarray  # (E,) bone of each (bone, vertex, weight) entry
    entry_vert: np.ndarray  # (E,)
    entry_weight: np.ndarray  # (E,)


def build(m: mujoco.MjModel, s: int) -> Skin:
    """Skin `s` of the model (which skins are drawn is `scene.objects`'s choice)."""
    vadr, vnum = m.skin_vertadr[s], m.skin_vertnum[s]
    fadr, fnum = m.skin_faceadr[s], m.skin_facenum[s]
    badr, bnum = m.skin_boneadr[s], m.skin_bonenum[s]
    tadr = m.skin_texcoordadr[s]
    bones, verts, weights = [], [], []
    for b in range(bnum):
        adr, num = m.skin_bonevertadr[badr + b], m.skin_bonevertnum[badr + b]
        bones.append(np.full(num, b))
        verts.append(m.skin_bonevertid[adr : adr + num])
        weights.append(m.skin_bonevertweight[adr : adr + num])
    bind_rot = np.zeros((bnum, 9))
    for b in range(bnum):
        mujoco.mju_quat2Mat(bind_rot[b], m.skin_bonebindquat[badr + b])
    return Skin(
        vert=m.skin_vert[vadr : vadr + vnum].astype(np.float32),
        face=m.skin_face[fadr : fadr + fnum].astype(np.int32),
        texcoord=None if tadr < 0 else m.skin_texcoord[tadr : tadr + vnum].astype(np.float32),
        inflate=float(m.skin_inflate[s]),
        bone_body=m.skin_bonebodyid[badr : badr + bnum].astype(np.int32),
        bind_rot=bind_rot.reshape(bnum, 3, 3).astype(np.float32),
        bind_pos=m.skin_bonebindpos[badr : badr + bnum].astype(np.float32),
        entry_bone=np.concatenate(bones).astype(np.int32),
        entry_vert=np.concatenate(verts).astype(np.int32),
        entry_weight=np.concatenate(weights).astype(np.float32),
    )


def _vertex_normals(vert, face):
    """Unit vertex normals: the sum of the adjacent faces' (area-weighted) normals."""
    a, b, c = vert[face[:, 0]], vert[face[:, 1]], vert[face[:, 2]]
    n = jnp.cross(b - a, c - a)
    acc = jnp.zeros_like(vert)
    for k in range(3):
        acc = acc.at[face[:, k]].add(n)
    return acc / jnp.maximum(jnp.linalg.norm(acc, axis=-1, keepdims=True), EPS)


def pose(skin: Skin, xpos, xmat):
    """World vertices (V, 3) and unit normals (V, 3) of `skin` for body poses xpos, xmat.

    Bone b moves a bind-pose vertex v to xmat_b bind_rot_b^T (v - bind_pos_b) + xpos_b.
    """
    dtype = xpos.dtype
    body = skin.bone_body
    rot = jnp.einsum(
        "bij,bkj->bik", xmat[body].reshape(-1, 3, 3), jnp.asarray(skin.bind_rot, dtype)
    )
    shift = xpos[body] - jnp.einsum("bij,bj->bi", rot, jnp.asarray(skin.bind_pos, dtype))
    v = jnp.asarray(skin.vert, dtype)[skin.entry_vert]
    moved = jnp.einsum("eij,ej->ei", rot[skin.entry_bone], v) + shift[skin.entry_bone]
    weighted = moved * jnp.asarray(skin.entry_weight, dtype)[:, None]
    vert = jax.ops.segment_sum(weighted, skin.entry_vert, num_segments=len(skin.vert))
    normal = _vertex_normals(vert, skin.face)
    if skin.inflate:
        vert = vert + skin.inflate * normal
    return vert, normal


LARGE_FACES = 64  # triangles per skin tested against every pixel


def window_for(height: int, width: int) -> int:
    """Pixels tested per triangle and axis: 4 at 84x84, more for larger images."""
    return int(np.ceil(4 * max(height, width) / 84))


def _ray_triangle(origin, direction, a, b, c):
    """Distance along unit rays to triangles (inf: miss) and barycentric u, v (broadcast)."""
    return ray_hfield.ray_triangles(a, b, c, origin, direction, det_min=1e-12, x_min=1e-6)


def rasterize(
    skin: Skin,
    vert,
    normal,
    cam_pos,
    cam_mat,
    rays,
    fovy_deg,
    height,
    width,
    window=None,
    large_faces=LARGE_FACES,
):
    """Nearest skin hit per pixel: distance (P,) (inf: none), world normal (P, 3), uv (P, 2).

    rays are the (P, 3) unit pixel directions in the camera frame (row-major
    from the top left), as `raycast.camera_rays` makes them. window defaults
    to `window_for(height, width)`.
    """
    dtype = vert.dtype
    window = window_for(height, width) if window is None else window
    half = np.tan(np.deg2rad(fovy_deg) / 2)
    local = (vert - cam_pos) @ cam_mat  # camera frame; the camera looks down -z
    depth = -local[:, 2]
    safe = jnp.where(depth > EPS, depth, 1.0)
    col = (local[:, 0] / safe / (half * width / height) + 1) / 2 * width - 0.5
    row = (1 - local[:, 1] / safe / half) / 2 * height - 0.5
    face = jnp.asarray(skin.face)
    in_front = jnp.all(depth[face] > EPS, axis=-1)
    c0 = jnp.ceil(jnp.min(col[face], axis=-1)).astype(jnp.int32)
    r0 = jnp.ceil(jnp.min(row[face], axis=-1)).astype(jnp.int32)
    offsets = np.stack(np.meshgrid(np.arange(window), np.arange(window)), -1).reshape(-1, 2)
    cols = c0[:, None] + offsets[None, :, 0]  # (F, W^2)
    rows = r0[:, None] + offsets[None, :, 1]
    inside = in_front[:, None] & (cols >= 0) & (cols < width) & (rows >= 0) & (rows < height)
    pixel = jnp.where(inside, rows * width + cols, height * width)  # the last slot: nowhere
    world_rays = jnp.asarray(rays, dtype) @ cam_mat.T
    direction = world_rays[jnp.minimum(pixel, height * width - 1)]
    a, b, c = (vert[face[:, k]][:, None, :] for k in range(3))
    t, _, _ = _ray_triangle(cam_pos, direction, a, b, c)
    t = jnp.where(inside, t, jnp.inf)
    ids = jnp.broadcast_to(jnp.arange(len(skin.face))[:, None], pixel.shape)
    large_faces = min(large_faces, len(skin.face))
    if large_faces:  # the largest projections, and faces crossing the camera plane: every ray
        span = jnp.maximum(jnp.max(col[face], axis=-1) - c0, jnp.max(row[face], axis=-1) - r0)
        crossing = jnp.any(depth[face] > EPS, axis=-1) & ~in_front
        score = jnp.where(crossing, jnp.inf, jnp.where(in_front & (span >= window), span, -1.0))
        chosen_score, chosen = jax.lax.top_k(score, large_faces)  # (L,)
        tri_large = [vert[face[chosen, k]][:, None, :] for k in range(3)]
        t_large, _, _ = _ray_triangle(cam_pos, world_rays[None], *tri_large)  # (L, P)
        t_large = jnp.where((chosen_score >= 0)[:, None], t_large, jnp.inf)
        every = jnp.broadcast_to(np.arange(height * width), t_large.shape)
        pixel = jnp.concatenate([pixel.reshape(-1), every.reshape(-1)])
        t = jnp.concatenate([t.reshape(-1), t_large.reshape(-1)])
        ids = jnp.concatenate(
            [ids.reshape(-1), jnp.broadcast_to(chosen[:, None], t_large.shape).reshape(-1)]
        )
    zbuf = jnp.full(height * width + 1, jnp.inf, dtype).at[pixel].min(t)
    winner = jnp.full(height * width + 1, -1, jnp.int32)
    winner = winner.at[pixel].max(jnp.where(jnp.isfinite(t) & (t <= zbuf[pixel]), ids, -1))
    zbuf, winner = zbuf[:-1], winner[:-1]
    # the winning face's barycentric coordinates at each pixel, for normals and texture
    tri = face[jnp.maximum(winner, 0)]
    _, u, v = _ray_triangle(cam_pos, world_rays, *(vert[tri[:, k]] for k in range(3)))
    weights = jnp.stack([1 - u - v, u, v], -1)[..., None]
    pixel_normal = jnp.sum(normal[tri] * weights, axis=1)
    pixel_normal = pixel_normal / jnp.maximum(
        jnp.linalg.norm(pixel_normal, axis=-1, keepdims=True), EPS
    )
    if skin.texcoord is None:
        uv = jnp.zeros((height * width, 2), dtype)
    else:
        uv = jnp.sum(jnp.asarray(skin.texcoord, dtype)[tri] * weights, axis=1)
    return zbuf, pixel_normal, uv

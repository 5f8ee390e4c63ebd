"""What the pure-JAX renderer draws, read once from an MjModel (NumPy constants).

MuJoCo's default scene (`mjv_defaultOption`, as dm_control's `physics.render`
uses it) shows geoms and sites of groups 0, 1 and 2 and spatial tendons;
geoms of groups 3-5 and anything whose colour is fully transparent are left
out. A geom's colour is its `rgba`, or its material's where the geom keeps the
default rgba (0.5, 0.5, 0.5, 1) (MuJoCo's rule). `Scene` lists those objects
per geom type, with their materials, plus the lights, the headlight, the
skybox and the 2D textures (the floors' checker grids).
"""

from __future__ import annotations

import dataclasses
import itertools

import mujoco
import numpy as np

VISIBLE_GROUPS = 3  # mjv_defaultOption: geom and site groups 0-2 are shown
DEFAULT_RGBA = np.array([0.5, 0.5, 0.5, 1.0], np.float32)

PLANE = int(mujoco.mjtGeom.mjGEOM_PLANE)
SPHERE = int(mujoco.mjtGeom.mjGEOM_SPHERE)
CAPSULE = int(mujoco.mjtGeom.mjGEOM_CAPSULE)
ELLIPSOID = int(mujoco.mjtGeom.mjGEOM_ELLIPSOID)
CYLINDER = int(mujoco.mjtGeom.mjGEOM_CYLINDER)
BOX = int(mujoco.mjtGeom.mjGEOM_BOX)
MESH = int(mujoco.mjtGeom.mjGEOM_MESH)
HFIELD = int(mujoco.mjtGeom.mjGEOM_HFIELD)
TYPES = (PLANE, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH, HFIELD)

OBJ_GEOM = int(mujoco.mjtObj.mjOBJ_GEOM)
OBJ_SITE = int(mujoco.mjtObj.mjOBJ_SITE)
OBJ_TENDON = int(mujoco.mjtObj.mjOBJ_TENDON)
OBJ_SKIN = int(mujoco.mjtObj.mjOBJ_SKIN)
SKIN = -1  # Objects.type of a skin (not an mjtGeom): drawn by `skin.py`

LIGHT_SPOT = int(mujoco.mjtLightType.mjLIGHT_SPOT)
LIGHT_DIRECTIONAL = int(mujoco.mjtLightType.mjLIGHT_DIRECTIONAL)
TEX_2D = int(mujoco.mjtTexture.mjTEXTURE_2D)
TEX_SKYBOX = int(mujoco.mjtTexture.mjTEXTURE_SKYBOX)
ROLE_RGB = int(mujoco.mjtTextureRole.mjTEXROLE_RGB)


@dataclasses.dataclass(frozen=True, eq=False)
class Objects:
    """The visible objects, in drawing order: geoms, sites, tendon segments, then skins.

    Attributes (one row per object, NumPy):
      kind: mjtObj of the object (geom, site, tendon or skin), for segmentation.
      ids: the object's id within its kind.
      type: mjtGeom of its shape (tendon segments are capsules; skins SKIN).
      rgba: colour (material's where MuJoCo's rule says so).
      material: material id, -1 for none.
      tendon_sites: for tendon segments, the two site ids the segment joins.
    """

    kind: np.ndarray
    ids: np.ndarray
    type: np.ndarray
    rgba: np.ndarray
    material: np.ndarray
    tendon_sites: np.ndarray
    tendon_width: np.ndarray

    def __len__(self) -> int:
        return len(self.kind)


@dataclasses.dataclass(frozen=True, eq=False)
class Materials:
    """Per material, plus a last row for objects without one (MuJoCo's defaults)."""

    specular: np.ndarray
    shininess: np.ndarray
    emission: np.ndarray
    reflectance: np.ndarray
    texrepeat: np.ndarray
    texuniform: np.ndarray
    texture: np.ndarray  # row in Scene.textures, or -1


@dataclasses.dataclass(frozen=True, eq=False)
class Scene:
    """Static scene description of one model (see the module docstring)."""

    model: mujoco.MjModel
    objects: Objects
    materials: Materials
    textures: np.ndarray  # (ntex2d, S, S, 3) float32, the 2D textures resampled to S x S
    skybox: np.ndarray | None  # (6, S, S, 3) float32, OpenGL cube-face order

    def material_row(self, material: np.ndarray) -> np.ndarray:
        """Row of `materials` for material ids (-1: the defaults' row)."""
        return np.where(material >= 0, material, self.model.nmat)


def _effective_rgba(rgba: np.ndarray, matid: np.ndarray, mat_rgba: np.ndarray) -> np.ndarray:
    use_material = (matid >= 0) & np.all(rgba == DEFAULT_RGBA, axis=1)
    out = rgba.copy()
    out[use_material] = mat_rgba[matid[use_material]]
    return out


def _spatial_tendon_segments(m: mujoco.MjModel):
    """(tendon id, site a, site b) for each straight segment of site-only spatial tendons.

    Tendons that wrap around geoms, pulleys or joints are not drawn (none in
    the suite's models), and a tendon's colour is its rgba or its material's.
    """
    rows = []
    for t in range(m.ntendon):
        adr, num = m.tendon_adr[t], m.tendon_num[t]
        types = m.wrap_type[adr : adr + num]
        if num < 2 or np.any(types != mujoco.mjtWrap.mjWRAP_SITE):
            continue
        if m.tendon_group[t] >= VISIBLE_GROUPS:
            continue
        sites = m.wrap_objid[adr : adr + num]
        rows += [(t, a, b) for a, b in itertools.pairwise(sites)]
    return rows


def objects(m: mujoco.MjModel) -> Objects:
    """The visible geoms, sites, spatial tendon segments and skins of `m`."""
    geom_rgba = _effective_rgba(m.geom_rgba, m.geom_matid, m.mat_rgba)
    site_rgba = _effective_rgba(m.site_rgba, m.site_matid, m.mat_rgba)
    geoms = [
        g
        for g in range(m.ngeom)
        if m.geom_group[g] < VISIBLE_GROUPS and geom_rgba[g, 3] > 0 and m.geom_type[g] in TYPES
    ]
    sites = [s for s in range(m.nsite) if m.site_group[s] < VISIBLE_GROUPS and site_rgba[s, 3] > 0]
    segments = _spatial_tendon_segments(m)
    tendon_rgba = _effective_rgba(m.tendon_rgba, m.tendon_matid, m.mat_rgba)
    segments = [row for row in segments if tendon_rgba[row[0], 3] > 0]
    skins_rgba = _effective_rgba(m.skin_rgba, m.skin_matid, m.mat_rgba)
    skins = [s for s in range(m.nskin) if m.skin_group[s] < VISIBLE_GROUPS and skins_rgba[s, 3] > 0]
    count = len(geoms) + len(sites) + len(segments) + len(skins)
    return Objects(
        kind=np.array(
            [OBJ_GEOM] * len(geoms)
            + [OBJ_SITE] * len(sites)
            + [OBJ_TENDON] * len(segments)
            + [OBJ_SKIN] * len(skins),
            np.int32,
        ),
        ids=np.array(geoms + sites + [t for t, _, _ in segments] + skins, np.int32),
        type=np.array(
            [m.geom_type[g] for g in geoms]
            + [m.site_type[s] for s in sites]
            + [CAPSULE] * len(segments)
            + [SKIN] * len(skins),
            np.int32,
        ),
        rgba=np.concatenate(
            [
                geom_rgba[geoms],
                site_rgba[sites],
                tendon_rgba[[t for t, _, _ in segments]],
                skins_rgba[skins],
            ]
        ).reshape(count, 4),
        material=np.array(
            [m.geom_matid[g] for g in geoms]
            + [m.site_matid[s] for s in sites]
            + [m.tendon_matid[t] for t, _, _ in segments]
            + [m.skin_matid[s] for s in skins],
            np.int32,
        ),
        tendon_sites=np.array([(a, b) for _, a, b in segments], np.int32).reshape(-1, 2),
        tendon_width=np.array([m.tendon_width[t] for t, _, _ in segments]).reshape(-1),
    )


def _texture(m: mujoco.MjModel, t: int) -> np.ndarray:
    h, w, c = m.tex_height[t], m.tex_width[t], m.tex_nchannel[t]
    data = m.tex_data[m.tex_adr[t] : m.tex_adr[t] + h * w * c].reshape(h, w, c)
    rgb = data[..., :3] if c >= 3 else np.repeat(data[..., :1], 3, axis=-1)
    return rgb.astype(np.float32) / 255.0


def _resample(image: np.ndarray, size: int) -> np.ndarray:
    """Area-average resampling to size x size, a fixed mipmap level.

    MuJoCo's OpenGL textures are mipmapped, so at 84x84 a floor's distant
    checks and the skybox's one-texel stars blur into their surroundings;
    averaged texels come closer to that than the full-resolution ones.
    """

    def matrix(n):  # (size, n): row i averages input [i n / size, (i + 1) n / size)
        edges = np.arange(size + 1) * n / size
        lo, hi = edges[:-1, None], edges[1:, None]
        cells = np.arange(n)[None]
        overlap = np.clip(np.minimum(hi, cells + 1) - np.maximum(lo, cells), 0, None)
        return overlap / overlap.sum(axis=1, keepdims=True)

    rows, cols = matrix(image.shape[0]), matrix(image.shape[1])
    half = np.tensordot(rows, image, axes=(1, 0))  # (size, w, c)
    return np.einsum("iwc,jw->ijc", half, cols, optimize=True).astype(np.float32)


def build(m: mujoco.MjModel, texture_size: int = 64) -> Scene:
    """The renderer's static description of `m`."""
    textured = {}
    texture_index = np.full(m.nmat, -1, np.int32)
    for mat in range(m.nmat):
        t = m.mat_texid[mat, ROLE_RGB]
        if t >= 0 and m.tex_type[t] == TEX_2D:
            texture_index[mat] = textured.setdefault(int(t), len(textured))
    textures = np.zeros((max(1, len(textured)), texture_size, texture_size, 3), np.float32)
    for t, row in textured.items():
        textures[row] = _resample(_texture(m, t), texture_size)
    skybox = None
    sky = [t for t in range(m.ntex) if m.tex_type[t] == TEX_SKYBOX]
    if sky:
        faces = _texture(m, sky[0])
        side = faces.shape[1]
        faces = faces.reshape(6, side, side, 3)
        skybox = np.stack([_resample(f, min(side, texture_size)) for f in faces])

    def column(values, default):
        return np.concatenate([np.asarray(values, np.float32), [default]]).astype(np.float32)

    materials = Materials(
        specular=column(m.mat_specular, 0.5),
        shininess=column(m.mat_shininess, 0.5),
        emission=column(m.mat_emission, 0.0),
        reflectance=column(m.mat_reflectance, 0.0),
        texrepeat=column(m.mat_texrepeat.reshape(-1, 2), [1.0, 1.0]),
        texuniform=np.concatenate([m.mat_texuniform.astype(bool), [False]]),
        texture=np.concatenate([texture_index, [-1]]).astype(np.int32),
    )
    return Scene(model=m, objects=objects(m), materials=materials, textures=textures, skybox=skybox)

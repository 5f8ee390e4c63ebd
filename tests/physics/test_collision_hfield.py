"""jaxcontrol.collision's height-field pairs and rays against C MuJoCo 3.17.

HFIELD-ELLIPSOID and HFIELD-CYLINDER (`hfield_ellipsoid`, `hfield_cylinder`) collide C's
prisms (`mjc_ConvexHField`) one by one, exactly; `ray_hfield` adds height fields to
`mjx.ray` and to the rangefinders. The references:

* contacts: C MuJoCo's own, from `mj_collision`, one per penetrating prism, with EPA run to
  `ccd_tolerance=1e-12`, `ccd_iterations=1000` (at the defaults, 1e-6 and 35, C's own depth
  and normal are off by up to ~1e-4: tests/physics/test_collision.py). Every C contact is a prism
  of our sub-grid, so the penetrating prisms must be the same set with the same depths:
  to `TOL` = 1e-9 (measured worst 1.2e-11, median 3e-13, sizes 0.1-1; prisms within TOL
  of touching may count on either side). C's normal is EPA's and less exact than its depth
  (an error e in the normal costs only ~e^2 in depth; measured against ours: median 3e-7
  for the ellipsoid, 8e-14 for the cylinder, worst 3e-5), so normals are held to 1e-5
  median and 1e-3 worst, and the certificates bound ours independently of C: the gap along
  C's normal and along random directions never beats ours. Positions where both witnesses
  are unique (an ellipsoid's always, a cylinder's on a rim; a side or cap on a face touches
  along a segment or a disc and C picks some point of it): measured median 2e-8, worst
  1.4e-6; held to 1e-6 and 2e-5.
* hand-worked answers on planar terrain (tilted plane, tilted height field): the signed
  distance to the plane, its normal, the touching point, to 1e-12 / 1e-9.
* rays: C's `mj_ray` (`mj_rayHfield`) and rangefinder `sensordata`, to 1e-10 (measured
  3e-13 on rays up to 80 long).
* dm_control's quadruped escape model (our `mjcf.quadruped` builder) on terrains of the
  escape task's recipe and random poses: MJX's whole collision after `register()` against
  C, and the rangefinders; one compiled function for all terrains (the terrain is the
  traced `Model.hfield_data`).
* dynamics: `mjx.step` against C's `mj_step`, an ellipsoid and a cylinder dropped onto
  bumpy terrain.

Float64 work runs inside `reference.precision(True)` blocks (each switch of precision
clears JAX's compiled code, so every fixture does all its float64 work in one block);
float32 is checked against float64.
"""

from __future__ import annotations

import functools
import os

os.environ.setdefault("MUJOCO_GL", "disable")

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from mujoco import mjx
from mujoco.mjx._src import collision_driver
from mujoco.mjx._src.types import GeomType
from scipy import ndimage
from scipy.spatial.transform import Rotation

import jaxcontrol.collision as jcoll
from jaxcontrol import reference
from jaxcontrol.collision import hfield_cylinder as hc
from jaxcontrol.collision import hfield_ellipsoid as he
from jaxcontrol.collision import ray_hfield as rh
from jaxcontrol.mjcf import quadruped

HE = (GeomType.HFIELD, GeomType.ELLIPSOID)
HC = (GeomType.HFIELD, GeomType.CYLINDER)
KINDS = ("ellipsoid", "cylinder")
NROW, NCOL = 6, 7
HSIZE = np.array([1.0, 0.8, 0.3, 0.1])
# the height field geom's pose: moved and tilted, so that frames are exercised
HPOS = np.array([0.1, -0.05, 0.02])
HMAT = Rotation.from_euler("xyz", [0.2, -0.1, 0.3]).as_matrix()
GEOMS = {
    "ellipsoid": (mujoco.mjtGeom.mjGEOM_ELLIPSOID, np.array([0.2, 0.12, 0.08])),
    "cylinder": (mujoco.mjtGeom.mjGEOM_CYLINDER, np.array([0.1, 0.18, 0.0])),
}
SOLVE = {"ellipsoid": he._solve_ellipsoid, "cylinder": hc._solve_cylinder}
COLLIDE = {"ellipsoid": he.collide, "cylinder": hc.collide}
TOL = 1e-9  # |ours - C| on depths (measured 3e-12), and the sign band when counting
CHUNK = 256  # batches are padded to this: one compile per function


def _quat(mat):
    x, y, z, w = Rotation.from_matrix(mat).as_quat()
    return np.array([w, x, y, z])


def _random_quat(rng):
    return Rotation.random(random_state=rng).as_quat()[[3, 0, 1, 2]]


def _bumpy(rng):
    """(NROW, NCOL) elevations in C's layout, hfield_data[r * NCOL + c]."""
    return rng.uniform(0.0, 1.0, (NROW, NCOL))


class _C:
    """C MuJoCo: the height field and one geom on a free joint, optionally rangefinders on
    a mocap body; elevations written in place (as dm_control's escape task does: no
    normalisation)."""

    def __init__(self, kind, data, rangefinders=()):
        spec = mujoco.MjSpec()
        spec.option.ccd_tolerance, spec.option.ccd_iterations = 1e-12, 1000
        spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_GRAVITY)
        spec.add_hfield(name="h", nrow=NROW, ncol=NCOL, size=HSIZE, userdata=[0.0] * NROW * NCOL)
        spec.worldbody.add_geom(
            type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname="h", pos=HPOS, quat=_quat(HMAT)
        )
        gtype, size = GEOMS[kind]
        body = spec.worldbody.add_body(name="geom")
        body.add_freejoint()
        body.add_geom(type=gtype, size=size)
        if rangefinders:
            probe = spec.worldbody.add_body(name="probe", mocap=True)
            for i, (zaxis, cutoff) in enumerate(rangefinders):
                site = probe.add_site(name=f"rf{i}", pos=0.05 * np.asarray(zaxis, float))
                site.alt.type = mujoco.mjtOrientation.mjORIENTATION_ZAXIS
                site.alt.zaxis = zaxis
                sensor = spec.add_sensor(
                    name=f"rf{i}",
                    type=mujoco.mjtSensor.mjSENS_RANGEFINDER,
                    objtype=mujoco.mjtObj.mjOBJ_SITE,
                    objname=f"rf{i}",
                    cutoff=cutoff,
                )
                sensor.intprm[0] = 1  # the distance only, MJCF's default
            spec.add_sensor(  # a sensor of another type, to be left alone
                name="where",
                type=mujoco.mjtSensor.mjSENS_FRAMEPOS,
                objtype=mujoco.mjtObj.mjOBJ_SITE,
                objname="rf0",
            )
        self.m = spec.compile()
        self.m.hfield_data[:] = np.ravel(data)
        self.d = mujoco.MjData(self.m)
        self.kind = kind
        (key,) = [k for k in collision_driver._geom_groups(self.m) if k.types[0] == 1]
        self.subgrid = tuple(int(s) for s in key.subgrid_size)
        self.rbound = float(self.m.geom_rbound[1])

    def set(self, pos, quat):
        self.d.qpos[:7] = np.concatenate([pos, quat])
        mujoco.mj_kinematics(self.m, self.d)

    def contacts(self, pos, quat):
        """C's contacts (dist, pos, normal) and our inputs (the two geoms' poses)."""
        self.set(pos, quat)
        mujoco.mj_collision(self.m, self.d)
        c, d = self.d.contact, self.d
        inputs = (d.geom_xpos[0], d.geom_xmat[0].reshape(3, 3), d.geom_xpos[1])
        inputs += (d.geom_xmat[1].reshape(3, 3),)
        return (np.array(c.dist), np.array(c.pos), np.array(c.frame)[:, :3]), [
            a.copy() for a in inputs
        ]

    def surface_below(self, x, y):
        """The height field's world point straight below (x, y), or None."""
        self.set(np.array([0.0, 0.0, 50.0]), np.array([1.0, 0, 0, 0]))
        geomid = np.zeros(1, np.int32)
        dist = mujoco.mj_ray(
            self.m, self.d, np.array([x, y, 10.0]), np.array([0, 0, -1.0]), None, 1, 1, geomid
        )
        return None if dist < 0 else np.array([x, y, 10.0 - dist])

    @property
    def hdata(self):
        return self.m.hfield_data.reshape(NROW, NCOL).T  # (ncol, nrow), as mesh.hfield


@functools.cache
def _batched(kind, what, subgrid, rbound):
    """jit(vmap over poses) of every prism's answer (`what="prisms"`) or of the pair's 4
    contacts (`"four"`), called on batches padded to CHUNK."""
    size = GEOMS[kind][1]

    def one(h_pos, h_mat, h_data, pos, mat):
        if what == "prisms":
            solve = SOLVE[kind]
            return he.prism_contacts(
                solve, h_pos, h_mat, HSIZE, h_data, pos, mat, size, rbound, subgrid
            )
        return COLLIDE[kind](h_pos, h_mat, HSIZE, h_data, pos, mat, size, rbound, subgrid)

    jitted = jax.jit(jax.vmap(one, in_axes=(0, 0, None, 0, 0)))

    def call(x, h_data):
        n, outs = len(x[0]), []
        for start in range(0, n, CHUNK):
            chunk = [a[start : start + CHUNK] for a in x]
            k = len(chunk[0])
            chunk = [np.concatenate([a, np.repeat(a[:1], CHUNK - k, 0)]) for a in chunk]
            out = jitted(chunk[0], chunk[1], h_data, chunk[2], chunk[3])
            outs.append([np.asarray(o)[:k] for o in out])
        return [np.concatenate(z) for z in zip(*outs)]

    return call


def _run(c, poses):
    """C's contacts, and ours per prism and as the 4 reported, for the poses (float64)."""
    refs, inputs = zip(*(c.contacts(pos, quat) for pos, quat in poses))
    x = [np.stack(z) for z in zip(*inputs)]
    with reference.precision(True):
        prisms = _batched(c.kind, "prisms", c.subgrid, c.rbound)(x, c.hdata)
        four = _batched(c.kind, "four", c.subgrid, c.rbound)(x, c.hdata)
    assert prisms[0].dtype == np.float64
    return list(refs), x, prisms, four


def _poses(c, rng, n):
    """n random poses over the field and a little beyond its border, and n centred over grid
    vertices, cell edges and diagonals (straddling prism boundaries), from well apart to
    deep (the centre from -0.5 to 1.5 semi-axes above the surface); labels alike."""
    half = GEOMS[c.kind][1][:2].max()
    spacing = 2 * HSIZE[:2] / (np.array([NCOL, NROW]) - 1)
    poses, labels = [], []
    for i in range(2 * n):
        if i < n:
            local = rng.uniform(-1.1, 1.1, 2) * HSIZE[:2]
        else:  # a vertex, the middle of a cell edge, or of a diagonal
            frac = [(0, 0), (0.5, 0), (0, 0.5), (0.5, 0.5)][i % 4]
            cell = np.array([rng.integers(1, NCOL - 2), rng.integers(1, NROW - 2)])
            local = (cell + frac) * spacing - HSIZE[:2]
        xy = HPOS + HMAT @ np.array([*local, 0.0])
        below = c.surface_below(*xy[:2])
        base = below if below is not None else np.array([xy[0], xy[1], HPOS[2]])
        poses.append((base + [0, 0, rng.uniform(-0.5, 1.5) * half], _random_quat(rng)))
        labels.append("random" if i < n else "straddle")
    return poses, labels


def _touching(x, prisms, rng, n):
    """Poses moved along the deepest prism's normal to +-1e-7 or +-1e-4 of touching."""
    dist, _, normal, _ = prisms
    poses = []
    for k in rng.choice(len(dist), n, replace=False):
        i = np.argmin(dist[k])
        shift = (-dist[k, i] + rng.choice([1e-7, -1e-7, 1e-4, -1e-4])) * normal[k, i]
        poses.append((x[2][k] + shift, _quat(x[3][k])))
    return poses


def _battery(kind, seed, n):
    c = _C(kind, _bumpy(np.random.default_rng(seed)))
    rng = np.random.default_rng(seed + 1)
    with reference.precision(True):
        poses, labels = _poses(c, rng, n)
        refs, x, prisms, four = _run(c, poses)
        touch = _touching(x, prisms, rng, 40)
        refs2, x2, prisms2, four2 = _run(c, touch)
    return {
        "kind": kind,
        "c": c,
        "refs": refs + refs2,
        "x": [np.concatenate(z) for z in zip(x, x2)],
        "prisms": [np.concatenate(z) for z in zip(prisms, prisms2)],
        "four": [np.concatenate(z) for z in zip(four, four2)],
        "labels": np.array(labels + ["touching"] * len(touch)),
    }


@pytest.fixture(scope="module", params=KINDS)
def battery(request):
    """Per kind: 200 random and straddling poses over a bumpy field, 40 near touching."""
    return _battery(request.param, {"ellipsoid": 11, "cylinder": 12}[request.param], 100)


def _match(dist, normal, c_dist, c_normal):
    """Our prism for each C contact: equal depth (within TOL), the nearest normal of ties."""
    idx = []
    for cd, cn in zip(c_dist, c_normal):
        cand = np.nonzero(np.abs(dist - cd) <= TOL)[0]
        assert cand.size, (cd, np.sort(dist)[:8])
        idx.append(cand[np.argmin(np.linalg.norm(normal[cand] - cn, axis=1))])
    return np.array(idx, int)


def _gap(kind, n, verts, mat, size):
    """NumPy float64 gap(n) = min over the geom of n·x - max over the prism of n·v, for
    directions n (..., 3) from the prism to the geom (centred at 0), verts (6, 3)."""
    support = np.max(n @ verts.T, axis=-1)
    if kind == "ellipsoid":
        return -np.linalg.norm((n @ mat) * size, axis=-1) - support
    axis = mat[:, 2]
    own = size[0] * np.linalg.norm(np.cross(n, axis), axis=-1) + size[1] * np.abs(n @ axis)
    return -own - support


# ------------------------------------------------------------------------------ model


def test_put_model_accepts_escape_model(monkeypatch):
    """dm_control's quadruped escape model needs both pairs; register() supplies them."""
    m = quadruped.make_model(floor_size=40, terrain=True, rangefinders=True)
    pairs = {
        (int(m.geom_type[g1]), int(m.geom_type[g2])) for g1, g2, _ in collision_driver.geom_pairs(m)
    }
    assert {(int(a), int(b)) for a, b in (HE, HC)} <= pairs
    for own in (GeomType.SPHERE, GeomType.CAPSULE):  # toes and legs: MJX's own pairs
        assert (int(GeomType.HFIELD), int(own)) in pairs
        assert (GeomType.HFIELD, own) in collision_driver._COLLISION_FUNC
    for pair in (HE, HC):
        monkeypatch.delitem(collision_driver._COLLISION_FUNC, pair, raising=False)
    with pytest.raises(NotImplementedError, match="HFIELD"):
        mjx.put_model(m)
    added = jcoll.register()
    assert HE in added and HC in added
    assert collision_driver._COLLISION_FUNC[HE] is he.hfield_ellipsoid
    assert collision_driver._COLLISION_FUNC[HC] is hc.hfield_cylinder
    assert he.hfield_ellipsoid.ncon == hc.hfield_cylinder.ncon == 4
    mx = mjx.put_model(m)
    groups = {k.types: len(v) for k, v in collision_driver._geom_groups(mx).items()}
    assert groups[(1, 4)] == 1 and groups[(1, 5)] == 2  # the torso, the two eyes
    assert mx.nhfield == 1


# ------------------------------------------------------------------------------ hand-worked


def _planar(rng):
    """Elevations (C's layout) of one plane, data = a + b c + e r, and the plane's unit
    normal and a point of it in the height field's frame. a, b, e are multiples of 2^-10:
    the elevations are exact in hfield_data's float32."""
    a, b, e = 0.3125, rng.integers(-40, 41) / 1024, rng.integers(-50, 51) / 1024
    rows, cols = np.mgrid[0:NROW, 0:NCOL]
    dx, dy = 2 * HSIZE[:2] / (np.array([NCOL, NROW]) - 1)
    slope = HSIZE[2] * np.array([b / dx, e / dy])  # dz/dx, dz/dy
    normal = np.array([-slope[0], -slope[1], 1.0]) / np.hypot(1, np.hypot(*slope))
    return a + b * cols + e * rows, normal, np.array([-HSIZE[0], -HSIZE[1], a * HSIZE[2]])


def _support(kind, mat, size, n):
    """The geom's support point along unit n, relative to its centre."""
    if kind == "ellipsoid":
        v = mat.T @ n
        return mat @ (size**2 * v / np.linalg.norm(size * v))
    axis = mat[:, 2]
    radial = n - (n @ axis) * axis
    return size[1] * np.sign(n @ axis) * axis + size[0] * radial / np.linalg.norm(radial)


@pytest.mark.parametrize("kind", KINDS)
def test_hand_worked_planar_terrain(kind):
    """On a tilted plane of prisms (in a tilted height field), the least dist over prisms is
    the geom's signed distance to the plane: apart or touching anywhere (over a grid vertex,
    a cell edge, a diagonal: the nearest prism is exact), and penetrating shallowly inside a
    triangle (pushing out of that prism sideways costs more). Its normal is the plane's, its
    pos the touching point moved by half the distance along it."""
    rng = np.random.default_rng(5)
    size = GEOMS[kind][1]
    data, normal, origin = _planar(rng)
    c = _C(kind, data)
    spacing = 2 * HSIZE[:2] / (np.array([NCOL, NROW]) - 1)
    cases = []
    for where, frac in (
        ("vertex", (0, 0)),
        ("edge", (0.5, 0)),
        ("edge", (0, 0.5)),
        ("diagonal", (0.5, 0.5)),
        ("inside", (0.25, 0.6)),  # the upper-left triangle, away from its sides
        ("inside", (0.7, 0.3)),  # the lower-right one
    ):
        for delta in (0.05, 1e-6, 0.0, -1e-6, -1e-3):
            if delta < 0 and where != "inside":
                continue
            cell = np.array([rng.integers(1, NCOL - 2), rng.integers(1, NROW - 2)])
            xy = (cell + frac) * spacing - HSIZE[:2]
            point = np.array([*xy, origin[2] - (xy - origin[:2]) @ normal[:2] / normal[2]])
            mat = Rotation.random(random_state=rng).as_matrix()  # in the field's frame
            center = point + delta * normal - _support(kind, mat, size, -normal)
            touch = HPOS + HMAT @ (point + delta / 2 * normal)
            cases.append((HPOS + HMAT @ center, _quat(HMAT @ mat), delta, touch))
    refs, _, prisms, four = _run(c, [case[:2] for case in cases])
    world_normal = HMAT @ normal
    for k, (_, _, delta, touch) in enumerate(cases):
        dist = prisms[0][k]
        assert abs(dist.min() - delta) < 1e-12, (k, dist.min(), delta)
        assert four[0][k, 0] == pytest.approx(dist.min(), abs=1e-14)  # slot 0: the deepest
        ties = np.abs(dist - delta) < 1e-12  # on a shared edge or vertex, several prisms
        assert np.min(np.linalg.norm(prisms[2][k][ties] - world_normal, axis=1)) < 1e-9, k
        assert np.min(np.linalg.norm(prisms[1][k][ties] - touch, axis=1)) < 1e-9, k
        if delta < 0:  # C reports contacts
            assert np.min(refs[k][0]) == pytest.approx(delta, abs=TOL)


# ------------------------------------------------------------------------------ against C


def _check_prisms_match_c(b):
    prisms, refs = b["prisms"], b["refs"]
    nerr, perr = [], []
    for k, (cd, cp, cn) in enumerate(refs):
        dist, pos, normal, _ = (a[k] for a in prisms)
        sure, band = np.sum(dist < -TOL), np.sum(np.abs(dist) <= TOL)
        assert sure <= len(cd) <= sure + band, (k, b["labels"][k], sure, band, cd)
        np.testing.assert_allclose(np.sort(cd)[:sure], np.sort(dist)[:sure], rtol=0, atol=TOL)
        if not len(cd):
            continue
        idx = _match(dist, normal, cd, cn)
        nerr.append(np.linalg.norm(normal[idx] - cn, axis=1))
        unique = np.ones(len(idx), bool)
        if b["kind"] == "cylinder":  # on a rim: one support point
            na = np.abs(normal[idx] @ b["x"][3][k][:, 2])
            unique = (na > 0.05) & (na < 0.95)
        perr.append(np.linalg.norm(pos[idx] - cp, axis=1)[unique])
    nerr, perr = np.concatenate(nerr), np.concatenate(perr)
    assert np.median(nerr) < 1e-5 and nerr.max() < 1e-3, (np.median(nerr), nerr.max())
    assert np.median(perr) < 1e-6 and perr.max() < 2e-5, (np.median(perr), perr.max())
    return nerr, perr


def test_prisms_match_c(battery):
    """Per pose: the penetrating prisms are C's contacts (same count, same depths), the
    normals agree within C's EPA error, the positions where both are unique."""
    nerr, perr = _check_prisms_match_c(battery)
    assert len(nerr) > 300 and len(perr) > 100
    counts = np.array([len(r[0]) for r in battery["refs"]])
    assert (counts == 0).sum() > 20 and (counts > 4).sum() > 5  # apart, and many contacts
    assert set(battery["labels"][counts > 0]) == {"random", "straddle", "touching"}


def test_global_optimality_certificates(battery):
    """gap(n) <= signed distance for every n, in NumPy: no direction beats ours, neither
    C's normal for the same prism nor 64 random ones; and ours is the gap along our own."""
    kind = battery["kind"]
    size = GEOMS[kind][1]
    hp, hm, gp, gm = battery["x"]
    dist, _, normal, verts = battery["prisms"]
    rng = np.random.default_rng(3)
    for k, (cd, _, cn) in enumerate(battery["refs"]):
        center = hm[k].T @ (gp[k] - hp[k])
        mat = hm[k].T @ gm[k]
        local = verts[k] - center
        for i in range(len(local)):
            own = _gap(kind, normal[k, i] @ hm[k], local[i], mat, size)
            assert abs(own - dist[k, i]) < 1e-13
            dirs = rng.normal(size=(64, 3))
            dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
            assert np.all(_gap(kind, dirs, local[i], mat, size) <= dist[k, i] + 1e-13)
        if len(cd):
            for i, n_c in zip(_match(dist[k], normal[k], cd, cn), cn):
                assert _gap(kind, n_c @ hm[k], local[i], mat, size) <= dist[k, i] + 1e-13


def test_selected_contacts(battery):
    """The 4 reported: the deepest first; C's whole set when C has at most 4; else 4 of
    C's; unused slots inactive (dist = margin + 1 = 1); the frames orthonormal."""
    dist4, _, frame4 = battery["four"]
    dist = battery["prisms"][0]
    for k, (cd, _, _) in enumerate(battery["refs"]):
        assert dist4[k, 0] == pytest.approx(dist[k].min(), abs=1e-14)  # another XLA program
        active = dist4[k][dist4[k] < 0]
        assert np.all(dist4[k][1:][dist4[k][1:] >= 0] == 1.0)
        if np.sum(np.abs(dist[k]) <= TOL) == 0 and len(cd) <= 4:
            np.testing.assert_allclose(np.sort(active), np.sort(cd), rtol=0, atol=TOL)
        elif len(cd) > 4:
            assert len(active) == 4 and all(np.min(np.abs(cd - a)) <= TOL for a in active)
    np.testing.assert_allclose(
        np.einsum("kcij,kcil->kcjl", frame4, frame4),
        np.broadcast_to(np.eye(3), frame4.shape),
        atol=1e-12,
    )


def test_jit_vmap_batch_matches_single_calls(battery):
    """The batched answers (vmap over poses) equal one-pose calls of the pair's function."""
    c, x = battery["c"], battery["x"]
    size = GEOMS[c.kind][1]
    collide = COLLIDE[c.kind]
    with reference.precision(True):
        one = jax.jit(
            lambda hp, hm, p, m: collide(hp, hm, HSIZE, c.hdata, p, m, size, c.rbound, c.subgrid)
        )
        for k in (0, 7, 150, len(x[0]) - 1):
            out = one(*(a[k] for a in x))
            for a, b in zip(out, battery["four"]):
                np.testing.assert_allclose(np.asarray(a), b[k], rtol=0, atol=1e-14)


def test_gradient_of_depth_is_the_normal(battery):
    """d dist / d (geom position) is the contact normal (envelope theorem: the chosen
    direction is held fixed), and the gradients with respect to the geom's rotation and
    the elevations are finite."""
    c, x = battery["c"], battery["x"]
    size = GEOMS[c.kind][1]
    collide = COLLIDE[c.kind]

    def deepest(hp, hm, p, m, h_data):
        return collide(hp, hm, HSIZE, h_data, p, m, size, c.rbound, c.subgrid)[0][0]

    ks = np.arange(0, len(x[0]), 8)
    with reference.precision(True):
        grad = jax.jit(jax.vmap(jax.grad(deepest, argnums=(2, 3, 4)), in_axes=(0, 0, 0, 0, None)))
        gp, gm, gh = (np.asarray(a) for a in grad(*(a[ks] for a in x), c.hdata))
    np.testing.assert_allclose(gp, battery["four"][2][ks, 0, 0], rtol=0, atol=1e-12)
    assert np.isfinite(gm).all() and np.isfinite(gh).all()
    assert np.abs(gh).sum() > 0  # the terrain moves the contact


@pytest.mark.full
@pytest.mark.parametrize("kind", KINDS)
def test_prisms_match_c_large_battery(kind):
    """test_prisms_match_c's checks on 4 more terrains, 440 poses each."""
    for seed in range(100, 108, 2):
        _check_prisms_match_c(_battery(kind, seed, 200))


# ------------------------------------------------------------------------------ float32


def test_float32_agrees_with_float64(battery):
    """float32 runs, stays finite, and its deepest contact agrees with float64's to float32
    precision (positions of order 1)."""
    c = battery["c"]
    x32 = [a.astype(np.float32) for a in battery["x"]]
    with reference.precision(False):
        fn = jax.jit(
            jax.vmap(
                lambda hp, hm, p, m: COLLIDE[c.kind](
                    hp,
                    hm,
                    HSIZE.astype(np.float32),
                    c.hdata.astype(np.float32),
                    p,
                    m,
                    GEOMS[c.kind][1].astype(np.float32),
                    c.rbound,
                    c.subgrid,
                )
            )
        )
        d32, p32, f32 = (np.asarray(a) for a in fn(*x32))
    assert d32.dtype == np.float32
    assert np.isfinite(d32).all() and np.isfinite(p32).all() and np.isfinite(f32).all()
    d64, _, f64 = battery["four"]
    np.testing.assert_allclose(d32[:, 0], d64[:, 0], rtol=0, atol=5e-6)
    assert np.median(np.linalg.norm(f32[:, 0, 0] - f64[:, 0, 0], axis=1)) < 1e-4


def _degenerate_poses():
    """Centred on a grid vertex of a flat top (over, at, below the base), lying along a
    grid edge and the diagonal, far off the grid, at its corner."""
    dx, dy = 2 * HSIZE[:2] / (np.array([NCOL, NROW]) - 1)
    vx, vy, top = 3 * dx - HSIZE[0], 2 * dy - HSIZE[1], 0.5 * HSIZE[2]
    eye = np.eye(3)
    lie = Rotation.from_euler("x", 90, degrees=True).as_matrix()

    def turn(angle):
        return Rotation.from_euler("z", angle).as_matrix() @ lie

    return [
        (np.array([vx, vy, top + 0.3]), eye),
        (np.array([vx, vy, top]), eye),
        (np.array([vx, vy, -0.4]), eye),
        (np.array([vx, vy + dy / 2, top + 0.05]), lie),
        (np.array([vx + dx / 2, vy, top]), turn(np.pi / 2)),
        (np.array([vx + dx / 2, vy + dy / 2, top]), turn(np.arctan2(dy, dx))),
        (np.array([50.0, 30.0, 0.2]), eye),
        (np.array([HSIZE[0], HSIZE[1], top]), eye),
    ]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_degenerate_poses_finite(dtype):
    """No NaN or inf in float32 or float64, in the answers and their gradients with
    respect to the pose; upright over a vertex of a flat top, the depth is known: C's
    per-prism answer, which may push out sideways (a cylinder's radius)."""
    hdata = np.full((NCOL, NROW), 0.5, dtype)
    poses = _degenerate_poses()
    p, m = (np.stack(z).astype(dtype) for z in zip(*poses))
    for kind, size in (*((k, GEOMS[k][1]) for k in KINDS), ("ellipsoid", np.full(3, 0.1))):
        rbound = float(np.hypot(size[0], size[1]) if kind == "cylinder" else size.max())
        with reference.precision(dtype == np.float64):

            def one(p, m, kind=kind, size=size, rbound=rbound):
                zero, eye = np.zeros(3, dtype), np.eye(3, dtype=dtype)
                return COLLIDE[kind](
                    zero, eye, HSIZE.astype(dtype), hdata, p, m, size.astype(dtype), rbound, (3, 3)
                )

            def with_grad(p, m, one=one):
                total = jax.grad(lambda p, m: jnp.sum(jnp.minimum(one(p, m)[0], 1.0)), (0, 1))
                return (*one(p, m), *total(p, m))

            out = [np.asarray(a) for a in jax.jit(jax.vmap(with_grad))(p, m)]
        for a in out:
            assert a.dtype == dtype and np.isfinite(a).all(), (kind, dtype)
        want = -min(size[0], size[1]) if kind == "cylinder" else -size[2]
        assert out[0][1, 0] == pytest.approx(want, abs=1e-6), (kind, out[0][1])


# ------------------------------------------------------------------------------ rays


def test_rays_match_c():
    """4000 rays against a tilted bumpy height field and an ellipsoid: from above, below
    the base, inside the terrain, beside its walls; steep, shallow, vertical, down, at the
    ellipsoid; elevations up to 1.25, above the top box. dist and geom id as C's mj_ray;
    the height field's alone as mj_rayHfield."""
    jcoll.register()
    rng = np.random.default_rng(9)
    c = _C("ellipsoid", 1.25 * _bumpy(rng))  # some elevations stick out of the top box
    c.set(np.array([0.3, 0.2, 0.5]), _random_quat(rng))
    n = 4000
    pnt = rng.uniform(-1.4, 1.4, (n, 3)) * [1, 1, 0.3] + [0, 0, 0.15]
    vec = rng.normal(size=(n, 3))
    kind = rng.integers(0, 5, n)
    vec[kind == 1] *= [0.05, 0.05, 1]  # steep
    vec[kind == 2] *= [1, 1, 0.02]  # shallow
    vec[kind == 3, :2] = 0  # vertical
    vec[kind == 4] = -np.abs(vec[kind == 4]) * [0.3, 0.3, 1] - [0, 0, 0.2]  # down
    at = rng.random(n) < 0.1  # at the ellipsoid
    vec[at] = c.d.geom_xpos[1] + rng.normal(size=(at.sum(), 3)) * 0.1 - pnt[at]
    geomid = np.zeros(1, np.int32)
    ref, ref_id, only = np.zeros(n), np.zeros(n, int), np.zeros(n)
    for i in range(n):
        ref[i] = mujoco.mj_ray(c.m, c.d, pnt[i], vec[i], None, 1, -1, geomid)
        ref_id[i] = geomid[0]
        only[i] = mujoco.mj_rayHfield(c.m, c.d, 0, pnt[i], vec[i], None)
    with reference.precision(True):
        mx, dx = mjx.put_model(c.m), mjx.put_data(c.m, c.d)
        dist, gid = jax.jit(jax.vmap(lambda p, v: rh.ray_hfield(mx, dx, p, v)))(pnt, vec)
        hmat = c.d.geom_xmat[0].reshape(3, 3)
        local = jax.vmap(lambda p, v: rh.ray_hfield_local(c.hdata, HSIZE, p, v))
        own = np.asarray(jax.jit(local)((pnt - c.d.geom_xpos[0]) @ hmat, vec @ hmat))
    dist, gid = np.asarray(dist), np.asarray(gid)
    assert dist.dtype == np.float64
    np.testing.assert_array_equal(dist < 0, ref < 0)
    np.testing.assert_allclose(dist, ref, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(gid, ref_id)
    assert (ref_id == 0).sum() > 1000 and (ref_id == 1).sum() > 20 and (ref < 0).sum() > 500
    np.testing.assert_array_equal(own < 0, only < 0)
    np.testing.assert_allclose(own, only, rtol=0, atol=1e-10)
    # some start inside the solid (below its surface or in the base) and leave it
    hm_local = (pnt - c.d.geom_xpos[0]) @ hmat
    assert ((only >= 0) & (hm_local[:, 2] < 0) & (np.abs(hm_local[:, 0]) < HSIZE[0])).sum() > 50


def _kinematics_only(m, d):
    """A copy of d's state with positions only: no contacts (`mjx.put_data` lays C's
    contacts into MJX's slots, and C may have more than MJX keeps)."""
    dk = mujoco.MjData(m)
    dk.qpos[:], dk.mocap_pos[:], dk.mocap_quat[:] = d.qpos, d.mocap_pos, d.mocap_quat
    mujoco.mj_kinematics(m, dk)
    return dk


def test_rangefinders_match_c():
    """12 rangefinders on a mocap body, 6 with a cutoff (C clips a miss's -1 to -cutoff
    too), at 6 poses: `rangefinder_with_hfields` (vmapped over poses, one compile) equals C's
    sensordata; the other sensor's slots are left as they came in."""
    jcoll.register()
    rng = np.random.default_rng(4)
    dirs = [(0, 0, -1), (0.3, 0, -1), (0, -0.5, -1), (1, 0.2, -0.1), (0, 1, 0.05), (0, 0, 1)]
    c = _C("ellipsoid", _bumpy(rng), rangefinders=[(d, cut) for d in dirs for cut in (0, 0.4)])
    m, d = c.m, c.d
    ids = np.nonzero(m.sensor_type == mujoco.mjtSensor.mjSENS_RANGEFINDER)[0]
    assert len(ids) == 12 and m.nsensor == 13
    adr = m.sensor_adr[ids]
    ref, states = [], []
    for _ in range(6):
        d.mocap_pos[0] = [*rng.uniform(-1.2, 1.2, 2), rng.uniform(0.05, 0.6)]
        d.mocap_quat[0] = _quat(Rotation.from_euler("xyz", rng.normal(size=3) * 0.4).as_matrix())
        d.qpos[:7] = [*rng.uniform(-0.8, 0.8, 2), 0.45, 1, 0, 0, 0]
        mujoco.mj_forward(m, d)
        ref.append(d.sensordata.copy())
        states.append(_kinematics_only(m, d))
    ref = np.array(ref)
    with reference.precision(True):
        mx = mjx.put_model(m)
        dx = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *(mjx.put_data(m, s) for s in states))
        garbage = jnp.full((6, m.nsensordata), 7.0)
        fn = jax.jit(jax.vmap(lambda dx, sd: rh.rangefinder_with_hfields(mx, dx, sd)))
        out = np.asarray(fn(dx, garbage))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out[:, adr], ref[:, adr], rtol=0, atol=1e-10)
    other = np.setdiff1d(np.arange(m.nsensordata), adr)
    assert np.all(out[:, other] == 7.0)
    rf = ref[:, adr]
    assert (rf == -1).sum() >= 3 and (rf == -0.4).sum() >= 3 and (rf == 0.4).sum() >= 3
    assert ((rf > 0) & (rf < 0.4)).sum() >= 3 and (rf > 0.4).sum() >= 3
    # float32, as the environments run: to float32 precision
    with reference.precision(False):
        mx = mjx.put_model(m)
        dx = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *(mjx.put_data(m, s) for s in states))
        fn = jax.jit(jax.vmap(lambda dx: rh.rangefinder_with_hfields(mx, dx, dx.sensordata)))
        out32 = np.asarray(fn(dx))
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32[:, adr], ref[:, adr], rtol=0, atol=2e-6)


# ------------------------------------------------------------------------------ escape


def _escape_terrain(rng, m):
    """dm_control's `Escape.initialize_episode` terrain: a bowl times zoomed bumps."""
    res = int(m.hfield_nrow[0])
    row_grid, col_grid = np.ogrid[-1 : 1 : res * 1j, -1 : 1 : res * 1j]
    radius = np.clip(np.sqrt(col_grid**2 + row_grid**2), 0.04, 1)
    bowl = 0.5 - np.cos(2 * np.pi * radius) / 2
    bump_res = int(2 * m.hfield_size[0, 0] / 2)
    bumps = rng.uniform(0.15, 1, (bump_res, bump_res))
    return (bowl * ndimage.zoom(bumps, res / float(bump_res))).ravel()


@pytest.fixture(scope="module")
def escape():
    """C and ours on the escape model: 2 terrains x 3 poses, the torso and eyes near the
    ground; ours is one compiled function (MJX's collision after register(), then the
    rangefinders), vmapped over poses, called with each terrain's Model."""
    jcoll.register()
    m = quadruped.make_model(floor_size=40, terrain=True, rangefinders=True)
    m.opt.ccd_tolerance, m.opt.ccd_iterations = 1e-12, 1000
    d = mujoco.MjData(m)
    rng = np.random.default_rng(21)
    terrains = [_escape_terrain(rng, m) for _ in range(2)]
    geomid = np.zeros(1, np.int32)
    refs, states = [], []
    for terrain in terrains:
        m.hfield_data[:] = terrain
        for _ in range(3):
            x, y = rng.uniform(-4, 4, 2)
            d.qpos[:] = 0
            d.qpos[:3] = x, y, 30.0
            d.qpos[3:7] = _random_quat(rng)
            d.qpos[7:] = rng.uniform(-0.4, 0.4, m.nq - 7)
            mujoco.mj_kinematics(m, d)
            down = np.array([0, 0, -1.0])
            ground = 10 - mujoco.mj_ray(m, d, np.array([x, y, 10.0]), down, None, 1, 1, geomid)
            d.qpos[2] = ground + rng.uniform(-0.05, 0.15)
            mujoco.mj_forward(m, d)
            contacts = {
                g2: [(c.dist, c.frame[:3].copy()) for c in d.contact if tuple(c.geom) == (1, g2)]
                for g2 in (2, 3, 4)  # the eyes, the torso
            }
            refs.append((contacts, d.sensordata.copy()))
            states.append(_kinematics_only(m, d))

    def ours(mx, dx):
        contact = mjx.collision(mx, dx)._impl.contact
        sensordata = rh.rangefinder_with_hfields(mx, dx, dx.sensordata)
        return contact.dist, contact.frame, contact.geom, sensordata

    with reference.precision(True):
        mx = mjx.put_model(m)
        dxs = [mjx.put_data(m, s) for s in states]
        batches = [jax.tree_util.tree_map(lambda *a: jnp.stack(a), *dxs[i : i + 3]) for i in (0, 3)]
        compiled = jax.jit(jax.vmap(ours, in_axes=(None, 0))).lower(mx, batches[0]).compile()
        models = [mx.replace(hfield_data=jnp.asarray(t, mx.hfield_data.dtype)) for t in terrains]
        outs = [[np.asarray(a) for a in compiled(models[i], batches[i])] for i in (0, 1)]
        swapped = [np.asarray(a) for a in compiled(models[1], batches[0])]
    return {
        "m": m,
        "refs": refs,
        "out": [np.concatenate(z) for z in zip(*outs)],
        "first": outs[0],
        "swapped": swapped,
    }


def test_escape_contacts_match_c(escape):
    """Torso (ellipsoid) and eyes (cylinders) on escape terrain, through MJX's collision:
    each pair's deepest contact is C's (depth, normal), and its active contacts are C's
    (all of them when C has at most 4)."""
    dist, frame, geom, _ = escape["out"]
    assert dist.dtype == np.float64
    seen = 0
    for k, (contacts, _) in enumerate(escape["refs"]):
        for g2, cs in contacts.items():
            mask = (geom[k, :, 0] == 1) & (geom[k, :, 1] == g2)
            assert mask.sum() == 4
            ours, normals = dist[k][mask], frame[k][mask][:, 0]
            active = ours[ours < 0]
            if not cs:
                assert ours.min() > -TOL, (k, g2, ours)
                continue
            cd = np.array([c[0] for c in cs])
            i, j = np.argmin(ours), np.argmin(cd)
            assert abs(ours[i] - cd[j]) <= TOL, (k, g2, ours[i], cd[j])
            assert np.linalg.norm(normals[i] - cs[j][1]) < 1e-3
            assert len(active) == min(len(cs), 4), (k, g2, active, cd)
            assert all(np.min(np.abs(cd - a)) <= TOL for a in active)
            seen += 1
    assert seen >= 8


def test_escape_rangefinders_match_c(escape):
    """The 20 rangefinders (their torso excluded) see terrain, legs and floor as C's do, to
    1e-10; the other sensors' slots are what came in."""
    m = escape["m"]
    sensordata = escape["out"][3]
    ids = np.nonzero(m.sensor_type == mujoco.mjtSensor.mjSENS_RANGEFINDER)[0]
    adr = m.sensor_adr[ids]
    ref = np.array([r[1] for r in escape["refs"]])
    np.testing.assert_allclose(sensordata[:, adr], ref[:, adr], rtol=0, atol=1e-10)
    assert (ref[:, adr] >= 0).sum() > 20
    other = np.setdiff1d(np.arange(m.nsensordata), adr)
    assert np.all(sensordata[:, other] == 0)  # put_data of positions only: zeros came in


def test_escape_terrain_is_traced(escape):
    """A new hfield_data in the Model changes the answers of the same compiled function."""
    first, swapped = escape["first"], escape["swapped"]
    assert not np.array_equal(first[0], swapped[0])  # contacts
    assert not np.array_equal(first[3], swapped[3])  # rangefinders


# ------------------------------------------------------------------------------ dynamics


def test_mjx_step_matches_c():
    """MJX (float64, after register()) against C's mj_step: an ellipsoid and a cylinder
    dropped onto bumpy terrain, 400 steps of 2 ms (they land, bounce and settle, with up to
    4 contacts each in C). The qpos stay within 1e-4 (measured 6e-6 for the ellipsoid, 3e-7
    for the cylinder)."""
    jcoll.register()
    n_side = 9
    spec = mujoco.MjSpec()
    spec.option.ccd_tolerance, spec.option.ccd_iterations = 1e-12, 1000
    spec.add_hfield(
        name="h", nrow=n_side, ncol=n_side, size=(1.2, 1.2, 0.15, 0.1), userdata=[0.0] * n_side**2
    )
    spec.worldbody.add_geom(
        type=mujoco.mjtGeom.mjGEOM_HFIELD, hfieldname="h", contype=1, conaffinity=2
    )
    for i, kind in enumerate(KINDS):
        body = spec.worldbody.add_body(pos=[-0.4 + 0.8 * i, 0.1, 0.35], euler=[0.3, 0.2 * i, 0.5])
        body.add_freejoint()
        gtype, size = GEOMS[kind]
        body.add_geom(type=gtype, size=0.6 * size, density=500, contype=2, conaffinity=1)
    m = spec.compile()
    m.hfield_data[:] = np.random.default_rng(0).uniform(0, 1, n_side**2)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    n = 400
    q_c, touching = [], []
    d_c = mujoco.MjData(m)
    d_c.qpos[:] = d.qpos
    for _ in range(n):
        mujoco.mj_step(m, d_c)
        q_c.append(d_c.qpos.copy())
        touching.append([int(np.sum(d_c.contact.geom[:, 1] == g)) for g in (1, 2)])
    q_c, touching = np.array(q_c), np.array(touching)
    with reference.precision(True):
        mx, dx = mjx.put_model(m), mjx.put_data(m, d)
        c = dx._impl.contact  # put_data's int32 ids; mjx.step gives int64 under x64
        dx = dx.tree_replace(
            {
                f"_impl.contact.{f}": getattr(c, f).astype(jnp.int64)
                for f in ("geom", "geom1", "geom2")
            }
        )

        def body(dx, _):
            dx = mjx.step(mx, dx)
            return dx, dx.qpos

        _, qpos = jax.jit(lambda dx: jax.lax.scan(body, dx, None, length=n))(dx)
        qpos = np.asarray(qpos)
    assert touching[-1].min() >= 1 and touching.max() >= 2  # landed, several prisms at once
    err = np.abs(qpos - q_c)
    assert err[:, :7].max() < 1e-4 and err[:, 7:].max() < 1e-4, (err[:, :7].max(), err[:, 7:].max())

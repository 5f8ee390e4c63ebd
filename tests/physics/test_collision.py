"""jaxcontrol.collision: our MJX narrow phases against C MuJoCo and hand-worked answers.

The reference for ELLIPSOID-BOX is C MuJoCo 3.17's own contact (`mjc_Convex`: nativeccd
GJK/EPA, one contact per pair) on the same poses, read from `d.contact` after
`mj_collision`. C's protocol here:

* penetrating poses: margin 0, `ccd_tolerance=1e-12`, `ccd_iterations=1000`. EPA stops when
  its bounds on the depth are within `ccd_tolerance`; at the defaults (1e-6, 35) it stops
  on the iteration cap with errors up to ~4e-4 in dist and 0.15 in the normal.
* separated poses (C reports nothing at margin 0): margin = the centre distance (at least
  the separation; C's answer does not depend on it), `ccd_tolerance=1e-6`. That answer is
  GJK's distance (it equals `mj_geomDistance`), and GJK gets *worse* below ~1e-7: for an
  ellipsoid against a box vertex it then stalls up to 1e-4 away.

Every C tolerance below is C's own error measured at test time, on poses whose answer is
known in closed form (`_calibration`): sphere-shaped ellipsoids against a box face, edge,
vertex, touching, or with their centre inside (distance to the box minus the radius), and
general ellipsoids placed touching or at a gap from a face, edge or vertex (exact: the gap
along the chosen normal bounds the signed distance from below, the two touching points
from above). Ours is asserted exact on those (dist 1e-12 relative), and against C within
4x C's calibrated error, worst and median, per feature (face/edge/vertex, of the contact
normal in the box frame) and regime (separated/touching/penetrating): C's accuracy differs
by orders of magnitude between them (measured: penetrating face 2e-12, edge 2e-11, vertex
4e-4 at worst; separated 2e-7; touching 6e-6, relative to size). Where a symmetric pose
has tied normals, C and we may pick different ones. Independently of C's accuracy, the
exact gap along C's normal and along 256 random directions may never beat ours (a global
optimality certificate), and our witness points satisfy the optimality conditions.
"""

from __future__ import annotations

import copy
import os

os.environ.setdefault("MUJOCO_GL", "disable")

import batching
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from mujoco import mjx
from mujoco.mjx._src import collision_driver
from mujoco.mjx._src.types import GeomType
from scipy.spatial.transform import Rotation

import jaxcontrol.collision as jcoll
from jaxcontrol import reference
from jaxcontrol.collision import ellipsoid_box as eb

EB = (GeomType.ELLIPSOID, GeomType.BOX)
PEN = {"tol": 1e-12, "iters": 1000}  # C settings for penetrating poses (EPA)
SEP = {"tol": 1e-6, "iters": 1000}  # C settings for separated poses (GJK)
FEATURES = ("face", "edge", "vertex")
# C is calibrated and compared per feature and regime: GJK decides the separated ones, EPA
# the penetrating ones, and within _TOUCH * size of touching either may.
REGIMES = ("separated", "touching", "penetrating")
_TOUCH = 1e-5


def _regime(dist, scale):
    return np.array(REGIMES)[
        np.where(dist > _TOUCH * scale, 0, np.where(dist < -_TOUCH * scale, 2, 1))
    ]


# ------------------------------------------------------------------------------ helpers


def _quat(mat):
    x, y, z, w = Rotation.from_matrix(mat).as_quat()
    return np.array([w, x, y, z])


def _rot(rng):
    return Rotation.random(random_state=rng).as_matrix()


class _C:
    """C MuJoCo with one ellipsoid and one box on free joints; sizes edited in place."""

    def __init__(self):
        spec = mujoco.MjSpec()
        spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_GRAVITY)
        for name, gtype in (
            ("ellipsoid", mujoco.mjtGeom.mjGEOM_ELLIPSOID),
            ("box", mujoco.mjtGeom.mjGEOM_BOX),
        ):
            body = spec.worldbody.add_body(name=name)
            body.add_freejoint()
            body.add_geom(type=gtype, size=[1, 1, 1])
        self.m = spec.compile()
        self.d = mujoco.MjData(self.m)
        # The narrow phase reads sizes and poses only; the broad phase bounds are made huge
        # (test_c_harness checks this equals freshly compiled models).
        self.m.geom_rbound[:] = 1e9
        self.m.geom_aabb[:, 3:] = 1e9

    def __call__(self, pose, margin, tol, iters):
        r, s, epos, emat, bpos, bmat = pose
        m, d = self.m, self.d
        m.opt.ccd_tolerance, m.opt.ccd_iterations = tol, iters
        m.geom_size[0], m.geom_size[1] = r, s
        m.geom_margin[:] = 0.5 * margin
        d.qpos[:] = np.concatenate([epos, _quat(emat), bpos, _quat(bmat)])
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        inputs = (
            d.geom_xpos[0].copy(),
            d.geom_xmat[0].reshape(3, 3).copy(),
            np.asarray(r, float),
            d.geom_xpos[1].copy(),
            d.geom_xmat[1].reshape(3, 3).copy(),
            np.asarray(s, float),
        )
        contacts = [(c.dist, c.pos.copy(), c.frame[:3].copy(), tuple(c.geom)) for c in d.contact]
        return inputs, contacts

    def reference(self, pose):
        """C's contact(s): EPA at margin 0 if C sees penetration, else GJK within a margin."""
        inputs, contacts = self(pose, 0.0, **PEN)
        if not contacts:
            margin = np.linalg.norm(pose[2] - pose[4]) + 1e-9
            inputs, contacts = self(pose, margin, **SEP)
        return inputs, contacts


def _support(center, mat, r, n):
    v = mat.T @ n
    return center + mat @ (r * r * v / np.linalg.norm(r * v))


def _constructed(rng, feature, delta, r=None, s=None):
    """General ellipsoid `delta` >= 0 from a box face/edge/vertex: the exact answer.

    The ellipsoid's support point along n = -u is put at w + delta*u, with w on the box
    feature and u in the box's normal cone at w. gap(n) = delta bounds the signed distance
    from below and the two points |w - support| = delta from above, so it is exact.
    """
    r = rng.uniform(0.05, 0.5, 3) if r is None else r
    s = rng.uniform(0.05, 0.5, 3) if s is None else s
    sg = rng.choice([-1.0, 1.0], 3)
    k = rng.integers(3)
    if feature == "vertex":
        w, u = sg * s, sg * np.abs(rng.normal(size=3))
    elif feature == "edge":
        w, u = sg * s, sg * np.abs(rng.normal(size=3))
        w[k], u[k] = rng.uniform(-1, 1) * s[k], 0.0
    else:
        w, u = rng.uniform(-1, 1, 3) * s, np.zeros(3)
        w[k], u[k] = sg[k] * s[k], sg[k]
    u /= np.linalg.norm(u)
    emat = _rot(rng)
    center = w + delta * u - _support(np.zeros(3), emat, r, -u)
    g, t = _rot(rng), rng.uniform(-1, 1, 3)
    pose = (r, s, g @ center + t, g @ emat, t, g)
    return pose, (delta, g @ (w + 0.5 * delta * u) + t, -(g @ u))


def _sphere(rng, where, gap=None):
    """Sphere-shaped ellipsoid vs box: signed distance = distance(centre, box) - radius
    (centre outside), or -(radius + depth of the centre) through the nearest face. `gap`
    sets the signed distance of an outside centre."""
    rad, s = rng.uniform(0.05, 0.5), rng.uniform(0.05, 0.5, 3)
    sg = rng.choice([-1.0, 1.0], 3)
    p = rng.uniform(-1, 1, 3) * s
    k = rng.integers(3)
    off = abs(rng.uniform(-0.9, 1.5)) * rad if gap is None else rad + gap
    if where == "face":
        p[k] = sg[k] * (s[k] + off)
    elif where in ("edge", "vertex"):
        idx = [i for i in range(3) if i != k] if where == "edge" else [0, 1, 2]
        dirn = np.zeros(3)
        dirn[idx] = sg[idx] * np.abs(rng.normal(size=len(idx)))
        p[idx] = sg[idx] * s[idx]
        p = p + off * dirn / np.linalg.norm(dirn)
    q = np.abs(p) - s
    if (q < 0).all():  # centre inside: out through the nearest face
        i = int(np.argmax(q))
        n = np.zeros(3)
        n[i] = -np.sign(p[i])
        sd = q[i] - rad
    else:
        v = np.clip(p, -s, s) - p
        n, sd = v / np.linalg.norm(v), np.linalg.norm(v) - rad
    pos = p + rad * n + 0.5 * sd * n
    g, t = _rot(rng), rng.uniform(-1, 1, 3)
    return (np.full(3, rad), s, g @ p + t, g @ _rot(rng), t, g), (sd, g @ pos + t, g @ n)


_SYMMETRIC = ("face-on", "edge/vertex-on", "near-coincident", "on-axis")  # may have tied normals
_DEGENERATE = (
    "face-on",
    "edge/vertex-on",
    "near-coincident",
    "sphere-like",
    "spheroid",
    "tiny axis",
    "big ellipsoid",
    "big box",
    "thin plate",
    "on-axis",
    "tiny ellipsoid",
)


def _battery(rng):
    """~3000 poses, with family labels: random, touching/shallow, deep, far, degenerate."""
    poses = []
    for _ in range(700):  # random: both signs
        r, s = rng.uniform(0.05, 0.5, 3), rng.uniform(0.05, 0.5, 3)
        t = rng.uniform(-1, 1, 3)
        poses.append((r, s, t + rng.uniform(-0.7, 0.7, 3), _rot(rng), t, _rot(rng)))
    for i in range(600):  # touching / shallow, from every feature
        scale = 0.5
        delta = [0.0, 1e-9, -1e-9, 1e-5, -1e-5, 1e-2, -1e-2, -5e-2][i % 8] * scale
        poses.append(_constructed(rng, FEATURES[i % 3], delta)[0])
    for _ in range(400):  # deep: the ellipsoid's centre inside the box
        r, s = rng.uniform(0.05, 0.5, 3), rng.uniform(0.05, 0.5, 3)
        t = rng.uniform(-1, 1, 3)
        g = _rot(rng)
        poses.append((r, s, t + g @ (rng.uniform(-1, 1, 3) * s), _rot(rng), t, g))
    for _ in range(200):  # far apart
        r, s = rng.uniform(0.05, 0.5, 3), rng.uniform(0.05, 0.5, 3)
        poses.append((r, s, rng.normal(size=3) * 2, _rot(rng), np.zeros(3), _rot(rng)))
    eye = np.eye(3)
    axis_rots = [eye, eye[[1, 0, 2]] * [[1], [-1], [1]], eye[[2, 1, 0]] * [[1], [1], [-1]]]
    for i in range(1100):  # degenerate
        kind = i % 11
        r, s = rng.uniform(0.05, 0.5, 3), rng.uniform(0.05, 0.5, 3)
        emat, bmat = _rot(rng), _rot(rng)
        p = rng.uniform(-0.7, 0.7, 3)
        if kind == 0:  # face-on, axes aligned, centre on a box axis
            emat, bmat = axis_rots[rng.integers(3)], eye
            p = np.zeros(3)
            p[rng.integers(3)] = rng.choice([-1, 1]) * rng.uniform(0, 0.9)
        elif kind == 1:  # edge-on / vertex-on, axes aligned, centre on a diagonal
            emat, bmat = axis_rots[rng.integers(3)], eye
            sg = rng.choice([-1.0, 1.0], 3)
            if rng.random() < 0.5:
                sg[rng.integers(3)] = 0.0
            p = sg * (s + rng.uniform(-0.3, 0.6) * r.min())
        elif kind == 2:  # nearly coincident centres (C misses exactly coincident ones)
            p = rng.normal(size=3) * 1e-3
            if rng.random() < 0.5:
                emat, bmat = eye, eye
        elif kind == 3:  # sphere-like
            r[:] = r[0] * (1 + rng.choice([0.0, 1e-12, 1e-6]) * rng.uniform(-1, 1, 3))
        elif kind == 4:  # spheroid
            r[1] = r[0]
        elif kind == 5:  # one tiny axis
            r[rng.integers(3)] *= rng.choice([1e-3, 1e-5])
        elif kind == 6:  # ellipsoid much bigger than the box
            r, p = r * 20, p * 20
        elif kind == 7:  # box much bigger than the ellipsoid
            s = s * 20
            p = rng.uniform(-1, 1, 3) * (s + r.max())
        elif kind == 8:  # thin plate
            s[rng.integers(3)] *= rng.choice([1e-3, 1e-5])
        elif kind == 9:  # centre on a box axis or plane, box unrotated
            bmat = eye
            p[rng.choice(3, 2, replace=False)] = 0.0
        elif kind == 10:  # tiny ellipsoid against a box edge region
            r = r * 1e-3
            p = rng.choice([-1.0, 1.0], 3) * s * rng.uniform(0.9, 1.01, 3)
            bmat = eye
        t = rng.uniform(-1, 1, 3)
        poses.append((r, s, t + bmat @ p, emat, t, bmat))
    labels = ["random"] * 700 + ["touching"] * 600 + ["deep"] * 400 + ["far"] * 200
    labels += [_DEGENERATE[i % 11] for i in range(1100)]
    return poses, np.array(labels)


_stack, _padded = batching.stack, batching.padded


_collide = _padded(eb.collide)
_gap_one = _padded(eb.signed_distance_lower_bound)
_gap_many = _padded(jax.vmap(eb.signed_distance_lower_bound, in_axes=(0,) + (None,) * 6))


def _ours64(x):
    with reference.precision(True):
        out = _collide(*x)
        assert out[0].dtype == np.float64
        return out


def _gap64(n, x):
    with reference.precision(True):
        return (_gap_many if n.ndim == 3 else _gap_one)(n, *x)[0]


def _scale(x):
    return np.maximum(x[2].max(1), x[5].max(1))


def _feature(x, normal):
    """face/edge/vertex: how many box-frame components of the normal are nonzero."""
    nb = np.einsum("kji,kj->ki", x[4], normal)
    return np.array(FEATURES)[(np.abs(nb) > 1e-9).sum(1) - 1]


def _certify(x, dist, pos, normal):
    """Optimality residuals (relative to scale) of our witness points, in the box frame.

    a = pos - dist/2 n must lie on the ellipsoid with outward normal n; b = pos + dist/2 n
    on the box surface with -n in the box's normal cone there.
    """
    scale = _scale(x)
    bmat = x[4]
    p = np.einsum("kji,kj->ki", bmat, x[0] - x[3])
    q = np.einsum("kji,kjl->kil", bmat, x[1])
    n = np.einsum("kji,kj->ki", bmat, normal)
    c = np.einsum("kji,kj->ki", bmat, pos - x[3])
    a, b = c - 0.5 * dist[:, None] * n, c + 0.5 * dist[:, None] * n
    y = np.einsum("kji,kj->ki", q, a - p)  # ellipsoid frame
    on_ellipsoid = np.abs(np.linalg.norm(y / x[2], axis=1) - 1) * x[2].min(1) / scale
    grad = np.einsum("kij,kj->ki", q, y / x[2] ** 2)
    grad /= np.linalg.norm(grad, axis=1, keepdims=True)
    normal_is_ellipsoid_normal = np.linalg.norm(grad - n, axis=1)
    s = x[5]
    on_box = np.abs((np.abs(b) - s).max(1)) / scale
    tol = 1e-9 * scale[:, None]
    face_active = np.abs(b) >= s - tol  # coordinates where b is on a face of the box
    # -n in the normal cone at b: n_i = 0 off the active faces, sign(n_i) = -sign(b_i) on them
    cone = np.where(face_active, np.maximum(n * np.sign(b), 0.0), np.abs(n)).max(1)
    return on_ellipsoid, normal_is_ellipsoid_normal, on_box, cone


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def cref():
    return _C()


@pytest.fixture(scope="module")
def calibration(cref):
    return _calibration(cref)


def _calibration(cref):
    """Closed-form poses: exact answers, C's contacts and ours (float64)."""
    rng = np.random.default_rng(20261122)
    cases = []
    for feature in FEATURES:  # separations from touching to 0.3, log-uniform
        deltas = np.concatenate([[0.0] * 20, 10 ** rng.uniform(-12, np.log10(0.3), 380)])
        cases += [(f"{feature}-sep", _constructed(rng, feature, dl)) for dl in deltas]
    for where in ("face", "edge", "vertex", "inside"):
        cases += [(f"sphere-{where}", _sphere(rng, where)) for _ in range(400)]
    for where in ("face", "edge", "vertex"):  # touching, from either side
        gaps = rng.choice([-1.0, 1.0], 100) * 10 ** rng.uniform(-12, -5, 100) * 0.05
        cases += [(f"sphere-{where}-touching", _sphere(rng, where, g)) for g in gaps]
    labels = np.array([c[0] for c in cases])
    poses, exact = zip(*[c[1] for c in cases])
    refs = [cref.reference(p) for p in poses]
    x = _stack([ref[0] for ref in refs])
    exact = [np.array(z) for z in zip(*exact)]
    return {
        "labels": labels,
        "x": x,
        "exact": exact,
        "c": [ref[1] for ref in refs],
        "ours": _ours64(x),
    }


def _c_arrays(contacts):
    first = [
        c[0] if c else (np.nan, np.full(3, np.nan), np.full(3, np.nan), (-1, -1)) for c in contacts
    ]
    return (
        np.array([f[0] for f in first]),
        np.array([f[1] for f in first]),
        np.array([f[2] for f in first]),
    )


@pytest.fixture(scope="module")
def c_accuracy(calibration):
    return _c_accuracy(calibration)


def _c_accuracy(calibration):
    """C's error against the exact answers (worst and median, relative to size), per
    feature and regime."""
    x, (sd, pos, normal) = calibration["x"], calibration["exact"]
    cd, cp, cn = _c_arrays(calibration["c"])
    scale = _scale(x)
    feature = _feature(x, normal)
    acc = {}
    regime = _regime(sd, scale)
    for f in FEATURES:
        for reg in REGIMES:
            mask = (feature == f) & (regime == reg)
            nerr = np.linalg.norm(cn - normal, axis=1)
            clear = mask & (np.abs(sd) >= 1e-2 * scale)
            acc[f, reg] = {
                "n": int(mask.sum()),
                "dist": np.max(np.abs(cd - sd)[mask] / scale[mask]),
                "dist_median": np.median(np.abs(cd - sd)[mask] / scale[mask]),
                # C's normal is normalize(x1 - x2): its error is a convergence part plus
                # C's witness error over |dist|, which grows without bound at touching
                "normal": np.max(nerr[clear], initial=0.0),
                "normal_x_dist": np.max((nerr * np.abs(sd) / scale)[mask]),
                "pos": np.max(np.linalg.norm(cp - pos, axis=1)[mask] / scale[mask]),
                "pos_median": np.median(np.linalg.norm(cp - pos, axis=1)[mask] / scale[mask]),
            }
    return acc


@pytest.fixture(scope="module")
def battery(cref):
    rng = np.random.default_rng(7)
    poses, labels = _battery(rng)
    refs = [cref.reference(p) for p in poses]
    x = _stack([ref[0] for ref in refs])
    return {"x": x, "labels": labels, "c": [ref[1] for ref in refs], "ours": _ours64(x)}


# ------------------------------------------------------------------------------ register


def test_register_adds_only_missing_pairs_idempotently(monkeypatch):
    table = collision_driver._COLLISION_FUNC
    for pair, fn in jcoll._PAIRS.items():
        assert table.get(pair, fn) is fn, f"MJX has its own {pair} now: re-validate"
        monkeypatch.delitem(table, pair, raising=False)  # the table as MJX 3.17 ships it
    before = dict(table)
    assert jcoll.register() == jcoll.PAIRS
    assert all(table[pair] is fn for pair, fn in jcoll._PAIRS.items())
    assert table[EB].ncon == 1
    assert {k: v for k, v in table.items() if k not in jcoll._PAIRS} == before
    assert all(table[k] is v for k, v in before.items())
    assert jcoll.register() == ()  # idempotent
    assert jcoll.register() == () and table[EB] is eb.ellipsoid_box


def test_register_never_overrides_mjx(monkeypatch):
    def mjx_own(m, d, key, geom):
        raise AssertionError

    monkeypatch.setitem(collision_driver._COLLISION_FUNC, EB, mjx_own)
    assert jcoll.register() == ()
    assert collision_driver._COLLISION_FUNC[EB] is mjx_own


def test_register_refuses_other_mjx_version(monkeypatch):
    monkeypatch.setattr(jcoll, "_installed_mjx_version", lambda: "3.18.0")
    with pytest.raises(
        RuntimeError, match=r"pinned to mujoco-mjx 3\.17\.0.*3\.18\.0.*re-validated"
    ):
        jcoll.register()
    assert jcoll.PINNED_MJX_VERSION == "3.17.0"
    import importlib.metadata

    assert importlib.metadata.version("mujoco-mjx") == jcoll.PINNED_MJX_VERSION


@pytest.mark.parametrize("name", ["fish", "swimmer6", "swimmer15"])
def test_put_model_accepts_fish_and_swimmer(name, monkeypatch):
    from dm_control.suite import fish, swimmer

    xml, assets = (
        fish.get_model_and_assets()
        if name == "fish"
        else swimmer.get_model_and_assets(int(name[7:]))
    )
    m = mujoco.MjModel.from_xml_string(xml, assets)
    m.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_ENERGY)
    pairs = {
        (int(m.geom_type[g1]), int(m.geom_type[g2])) for g1, g2, _ in collision_driver.geom_pairs(m)
    }
    assert (int(EB[0]), int(EB[1])) in pairs
    monkeypatch.delitem(collision_driver._COLLISION_FUNC, EB, raising=False)
    with pytest.raises(NotImplementedError, match="ELLIPSOID, .*BOX"):
        mjx.put_model(m)
    jcoll.register()
    mx = mjx.put_model(m)
    assert mx.ngeom == m.ngeom


# ------------------------------------------------------------------------------ exactness


def test_closed_form_cases_exact(calibration):
    """Ours equals the hand-worked answers in float64: dist to 1e-12 (relative to size);
    normal and pos to 1e-10, as a sphere whose centre nearly touches a vertex has a normal
    conditioned like size / (centre-vertex distance)."""
    x, (sd, pos, normal) = calibration["x"], calibration["exact"]
    dist, opos, frame = calibration["ours"]
    scale = _scale(x)
    for label in np.unique(calibration["labels"]):
        mask = calibration["labels"] == label
        assert np.max(np.abs(dist - sd)[mask] / scale[mask]) < 1e-12, label
        assert np.max(np.linalg.norm(frame[:, 0] - normal, axis=1)[mask]) < 1e-10, label
        assert np.max(np.linalg.norm(opos - pos, axis=1)[mask] / scale[mask]) < 1e-10, label
    assert ((sd > 0) & (calibration["labels"] == "sphere-vertex")).any()
    assert ((sd < 0) & (calibration["labels"] == "sphere-vertex")).any()
    np.testing.assert_allclose(
        np.einsum("kij,kil->kjl", frame, frame), np.tile(np.eye(3), (len(sd), 1, 1)), atol=1e-12
    )


def test_hand_worked_cases():
    """An ellipsoid resting on a box face; coincident centres; a spheroid beside an edge."""
    eye, zero = np.eye(3), np.zeros(3)
    r, s = np.array([0.3, 0.2, 0.1]), np.array([0.5, 0.4, 0.3])
    poses, expect = [], []
    for delta in (0.2, 1e-3, 0.0, -0.01, -0.05):  # axes aligned, resting on the top face
        c = np.array([0.1, 0.05, s[2] + r[2] + delta])
        poses.append((c, eye, r, zero, eye, s))
        expect.append((delta, [0.1, 0.05, s[2] + delta / 2], [0, 0, -1]))
    # coincident centres, aligned axes: dist = -min_k (r_k + s_k), out along that axis
    # (||r*n|| + s.|n| >= sum_i (r_i + s_i) n_i^2 >= min_k (r_k + s_k) on the unit sphere)
    for perm in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        k = int(np.argmin(r[perm] + s))
        poses.append((zero, eye, r[perm], zero, eye, s))
        expect.append((-(r[perm] + s)[k], None, k))
    # spheroid, round in x-y, beside a box edge along z: a circle against a point
    rr, u = np.array([0.2, 0.2, 0.35]), np.array([3.0, 4.0, 0.0]) / 5
    edge = np.array([s[0], s[1], 0.1])
    for gap in (0.1, 0.0, -0.01, -0.05):
        poses.append((edge + (rr[0] + gap) * u, eye, rr, zero, eye, s))
        expect.append((gap, edge + 0.5 * gap * u, -u))
    dist, pos, frame = _ours64(_stack(poses))
    for i, (d_exact, p_exact, n_exact) in enumerate(expect):
        assert abs(dist[i] - d_exact) < 1e-15, i
        if p_exact is None:  # the sign of the normal is a tie
            assert abs(abs(frame[i, 0, n_exact]) - 1) < 1e-15, i
        else:
            np.testing.assert_allclose(pos[i], p_exact, atol=1e-15, err_msg=str(i))
            np.testing.assert_allclose(frame[i, 0], n_exact, atol=1e-15, err_msg=str(i))


def test_c_misses_coincident_centres(cref):
    """A C divergence we do not copy: with the centres within ~1e-9, C reports no contact."""
    r, s = np.array([0.3, 0.2, 0.1]), np.array([0.5, 0.4, 0.3])
    eye = np.eye(3)
    pose = (r, s, np.zeros(3), eye, np.zeros(3), eye)
    for settings in (PEN, {"tol": 1e-6, "iters": 35}):
        x, contacts = cref(pose, 0.0, **settings)
        assert contacts == []
    assert abs(_ours64(_stack([x]))[0][0] + (r + s).min()) < 1e-15
    x, contacts = cref((r, s, np.array([1e-3, 0, 0]), eye, np.zeros(3), eye), 0.0, **PEN)
    assert len(contacts) == 1


# ------------------------------------------------------------------------------ against C


def test_c_harness_matches_fresh_models(cref):
    """Editing sizes in place gives the contacts of freshly compiled models."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        pose = _constructed(rng, FEATURES[rng.integers(3)], -0.02)[0]
        spec = mujoco.MjSpec()
        spec.option.ccd_tolerance, spec.option.ccd_iterations = PEN["tol"], PEN["iters"]
        for size, gtype in (
            (pose[0], mujoco.mjtGeom.mjGEOM_ELLIPSOID),
            (pose[1], mujoco.mjtGeom.mjGEOM_BOX),
        ):
            body = spec.worldbody.add_body()
            body.add_freejoint()
            body.add_geom(type=gtype, size=size)
        m = spec.compile()
        d = mujoco.MjData(m)
        d.qpos[:] = np.concatenate([pose[2], _quat(pose[3]), pose[4], _quat(pose[5])])
        mujoco.mj_forward(m, d)
        _, contacts = cref(pose, 0.0, **PEN)
        assert d.ncon == len(contacts) == 1
        assert d.contact[0].dist == contacts[0][0]
        np.testing.assert_array_equal(d.contact[0].frame[:3], contacts[0][2])


def test_matches_c_mujoco(battery, c_accuracy):
    """~3000 poses: one contact like C, and dist/normal/pos within 4x C's calibrated error
    (worst and median), per feature and regime."""
    x, contacts = battery["x"], battery["c"]
    dist, pos, frame = battery["ours"]
    assert all(len(c) == 1 and c[0][3] == (0, 1) for c in contacts)  # C: one contact per pair
    assert eb.ellipsoid_box.ncon == 1
    cd, cp, cn = _c_arrays(contacts)
    scale = _scale(x)
    feature = _feature(x, frame[:, 0])
    g_c = _gap64(cn, x)  # the exact gap along C's normal
    regime = _regime(dist, scale)
    for (f, reg), acc in c_accuracy.items():
        mask = (feature == f) & (regime == reg)
        assert mask.sum() >= 20 and acc["n"] >= 20, (f, reg)  # both sets cover every class
        tol_d = 4 * acc["dist"] + 1e-13
        err = np.abs(dist - cd)[mask] / scale[mask]
        assert err.max() <= tol_d, (f, reg, err.max(), tol_d)
        # typical agreement too: C's worst case in a class can be a rare failure of its own
        assert np.median(err) <= 4 * acc["dist_median"] + 1e-15, (f, reg, np.median(err), acc)
        # where the pose is symmetric, C and we may pick different ones of tied normals
        tie = np.isin(battery["labels"], _SYMMETRIC) & (np.abs(dist - g_c) <= tol_d * scale)
        nerr = np.linalg.norm(frame[:, 0] - cn, axis=1)[mask & ~tie]
        rel = np.abs(dist[mask & ~tie]) / scale[mask & ~tie]
        rel = np.maximum(rel, 1e-300)
        # C's normal: a convergence part and its witness error over |dist| (calibrated), and,
        # as C's dist is EPA's face distance |dist| cos(tilt), a tilt of sqrt(2 tol_d / rel)
        # costs no more than tol_d (flat contacts, where the calibration's spheres are exact)
        tol_n = 4 * (acc["normal"] + acc["normal_x_dist"] / rel) + np.sqrt(2 * tol_d / rel)
        assert np.all(nerr <= tol_n), (f, reg, np.max(nerr / tol_n), acc)
        perr = np.linalg.norm(pos - cp, axis=1)[mask & ~tie] / scale[mask & ~tie]
        assert perr.max() <= 4 * acc["pos"] + 1e-12, (f, reg, perr.max(), acc["pos"])
        assert np.median(perr) <= 4 * acc["pos_median"] + 1e-15, (f, reg, np.median(perr), acc)
    assert set(battery["labels"][dist < -0.1]) >= {"deep", "random"}  # some deep ones


def test_global_optimality_certificates(battery):
    """Independent of C's accuracy: no direction beats ours, and the witnesses are optimal."""
    x = battery["x"]
    dist, pos, frame = battery["ours"]
    scale = _scale(x)
    cn = _c_arrays(battery["c"])[2]
    # gap(n) <= signed distance for every n: C's normal and 256 random directions
    assert np.all(_gap64(cn, x) <= dist + 1e-12 * scale)
    rng = np.random.default_rng(11)
    dirs = rng.normal(size=(len(dist), 256, 3))
    dirs /= np.linalg.norm(dirs, axis=2, keepdims=True)
    g = _gap64(dirs, x)
    assert np.all(g <= (dist + 1e-12 * scale)[:, None])
    # dist is the gap along our own normal
    np.testing.assert_allclose(_gap64(frame[:, 0], x), dist, rtol=0, atol=1e-13 * scale.max())
    on_ellipsoid, ell_normal, on_box, cone = _certify(x, dist, pos, frame[:, 0])
    assert on_ellipsoid.max() < 1e-12
    # the gradient y/r^2 amplifies rounding by (r_max/r_min)^2: checked on rounder ones
    rounder = x[2].max(1) / x[2].min(1) < 100
    assert ell_normal[rounder].max() < 1e-9 and rounder.mean() > 0.9
    # the support point moves with the normal like r_max/r_min (flat ellipsoids)
    aspect = x[2].max(1) / x[2].min(1)
    assert np.all(on_box < 1e-12 * np.maximum(aspect, 1.0))
    assert cone.max() < 1e-9


# ------------------------------------------------------------------------------ float32


def test_float32_agrees_with_float64_and_x64_switches(battery):
    """float32 runs, stays finite, and agrees with float64 to float32 precision; float64 via
    `jax.enable_x64` works in a process that ran float32 (this one, before and after)."""
    x = battery["x"]
    dist = battery["ours"][0]
    x32 = [a.astype(np.float32) for a in x]
    d32, p32, f32 = _collide(*x32)
    assert d32.dtype == p32.dtype == f32.dtype == np.float32
    assert np.isfinite(d32).all() and np.isfinite(p32).all() and np.isfinite(f32).all()
    # float32 rounds the inputs too: positions relative to their magnitude
    scale = _scale(x) + np.linalg.norm(x[0], axis=1) + np.linalg.norm(x[3], axis=1)
    eps32 = np.finfo(np.float32).eps
    assert np.max(np.abs(d32 - dist) / scale) < 16 * eps32
    # the float32 normal is (near-)optimal in exact arithmetic; ties may flip it
    n32 = f32[:, 0].astype(np.float64)
    n32 /= np.linalg.norm(n32, axis=1, keepdims=True)
    assert np.max((dist - _gap64(n32, x)) / scale) < 16 * eps32
    np.testing.assert_allclose(np.linalg.norm(f32[:, 0], axis=1), 1, atol=4 * eps32)
    # pos is the witness midpoint of its own normal (evaluated in float64); the support point
    # of a flat ellipsoid moves with the normal like r_max/r_min, so rounder ones only
    _, _, on_box, _ = _certify(x, d32.astype(float), p32.astype(float), n32)
    rounder = x[2].max(1) / x[2].min(1) < 100
    assert on_box[rounder].max() < 64 * eps32
    # float64 again after float32 in the same process
    again = _ours64(x)
    np.testing.assert_array_equal(again[0], dist)


def test_degenerate_poses_finite():
    """No NaN or inf, in float32 and float64, for the worst poses we can think of."""
    eye = np.eye(3)
    r, s = np.array([0.3, 0.2, 0.1]), np.array([0.5, 0.4, 0.3])
    rot45 = Rotation.from_euler("z", 45, degrees=True).as_matrix()
    poses = [
        (r, s, np.zeros(3), eye, np.zeros(3), eye),  # coincident, aligned
        (np.full(3, 0.2), s, np.zeros(3), eye, np.zeros(3), eye),  # sphere at the centre
        (np.full(3, 0.2), np.full(3, 0.2), np.zeros(3), eye, np.zeros(3), eye),  # cube + sphere
        (np.full(3, 0.2), s, s.copy(), eye, np.zeros(3), eye),  # sphere centred on a vertex
        (r, s, np.array([s[0], s[1], 0.0]), eye, np.zeros(3), eye),  # on an edge
        (r, s, np.array([0, 0, s[2]]), eye, np.zeros(3), eye),  # on a face centre
        (r, s, np.zeros(3), rot45, np.zeros(3), eye),
        (np.array([1e-6, 0.2, 0.2]), s, np.zeros(3), eye, np.zeros(3), eye),
        (r, np.array([0.5, 0.4, 1e-7]), np.array([0, 0, 0.1]), eye, np.zeros(3), eye),
        (r * 1e3, s, np.zeros(3), eye, np.zeros(3), eye),
        (r, s * 1e3, np.zeros(3), eye, np.zeros(3), eye),
        (r, s, np.array([1e3, 0, 0]), eye, np.zeros(3), eye),
        (np.full(3, 0.2), np.full(3, 0.2), np.array([0.4, 0.4, 0.4]), eye, np.zeros(3), eye),
    ]
    x = _stack([(p[2], p[3], p[0], p[4], p[5], p[1]) for p in poses])
    for dtype in (np.float32, np.float64):
        with reference.precision(dtype == np.float64):
            out = _collide(*[a.astype(dtype) for a in x])
            for a in out:
                assert a.dtype == dtype
                assert np.isfinite(np.asarray(a)).all()
            frames = np.asarray(out[2], np.float64)
            np.testing.assert_allclose(
                np.einsum("kij,kil->kjl", frames, frames),
                np.tile(np.eye(3), (len(poses), 1, 1)),
                atol=1e-5 if dtype == np.float32 else 1e-12,
            )


# ------------------------------------------------------------------------------ end to end

_TABLE_XML = """
<mujoco>
  <option timestep="0.002" ccd_tolerance="{tol}" ccd_iterations="{iters}"/>
  <worldbody>
    <geom name="table" type="box" size="0.6 0.3 0.05" euler="0 3 0" contype="1" conaffinity="2"/>
    <body name="dropped" pos="-0.3 0.02 0.2" euler="20 10 30">
      <freejoint/>
      <geom type="ellipsoid" size="0.06 0.04 0.03" density="500" contype="2" conaffinity="1"/>
    </body>
    <body name="resting" pos="0.3 0 0.09" euler="-15 5 60">
      <freejoint/>
      <geom type="ellipsoid" size="0.07 0.05 0.035" density="500" contype="2" conaffinity="1"/>
    </body>
  </worldbody>
</mujoco>
"""


def _table(tol, iters):
    """One ellipsoid falling onto a tilted box, one already resting (settled in C); the
    ellipsoids do not collide with each other (only ELLIPSOID-BOX pairs)."""
    m = mujoco.MjModel.from_xml_string(_TABLE_XML.format(tol=tol, iters=iters))
    d = mujoco.MjData(m)
    for _ in range(1500):  # let the second one settle (the first lands meanwhile)
        mujoco.mj_step(m, d)
    rest = d.qpos[7:].copy()
    mujoco.mj_resetData(m, d)
    d.qpos[7:] = rest
    mujoco.mj_forward(m, d)
    return m, d


def _c_rollout(m, d, n):
    d = copy.copy(d)
    qpos, touching = [], []
    for _ in range(n):
        mujoco.mj_step(m, d)
        qpos.append(d.qpos.copy())
        touching.append(sorted(int(c.geom[0]) for c in d.contact[: d.ncon] if c.dist < 0))
    return np.array(qpos), touching


def test_mjx_step_matches_c():
    """MJX (float64, after register()) vs C mj_step: an ellipsoid dropped onto a tilted box,
    and one resting on it, 300 steps of 2 ms. With C's ccd_tolerance at 1e-12 the qpos stay
    within 1e-5 (measured: 6e-7 dropped, 2e-6 resting); C at its defaults (1e-6, 35
    iterations) moves 1e-4 (dropped) and 1e-3 (resting) away from C at 1e-12 by its own
    contact error alone, which this also checks."""
    jcoll.register()
    n = 300
    m, d = _table(1e-12, 1000)
    with reference.precision(True):
        mx, dx = mjx.put_model(m), mjx.put_data(m, d)

        def body(dx, _):
            dx = mjx.step(mx, dx)
            return dx, (dx.qpos, dx._impl.contact.dist)

        # put_data keeps int32 contact geom ids; mjx.step returns int64 under x64
        c = dx._impl.contact
        dx = dx.tree_replace(
            {
                f"_impl.contact.{f}": getattr(c, f).astype(jnp.int64)
                for f in ("geom", "geom1", "geom2")
            }
        )
        _, (qpos, dist) = jax.jit(lambda dx: jax.lax.scan(body, dx, None, length=n))(dx)
        qpos = np.asarray(qpos)
    q_c, touching = _c_rollout(m, d, n)
    assert all(t == [2] for t in touching[:50])  # only the resting one touches at first
    assert sum(t == [1, 2] for t in touching) > 100  # then both
    assert np.asarray(dist).shape == (n, 2) and np.all(np.asarray(dist)[-1] < 0)
    drop, rest = np.abs(qpos - q_c)[:, :7].max(), np.abs(qpos - q_c)[:, 7:].max()
    assert drop < 1e-5 and rest < 1e-5, (drop, rest)
    # C at its default ccd settings (same start) differs from C at tight ones by far more
    m_default, d_default = _table(1e-6, 35)
    d_default.qpos[:] = d.qpos
    q_default, _ = _c_rollout(m_default, d_default, n)
    assert np.abs(q_default - q_c)[:, :7].max() > 10 * drop
    assert np.abs(q_default - q_c)[:, 7:].max() > 10 * rest

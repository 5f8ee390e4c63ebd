"""jaxcontrol.collision.cylinder_box against C MuJoCo 3.17's own CYLINDER-BOX contacts.

C's routine (`mjc_Convex`, nativeccd; multiccd on by default, `mj_maxContact` = 4): GJK/EPA
for one contact, then `multicontact` on the features EPA ended on: a cap (a 16-gon)
anti-parallel to a box face within 5.1° gives the face clipped by the cap, up to 4 of its
points (C's greedy `polygonQuad`); else the side line parallel to a box face within 5.1°
gives that line clipped by the face, up to 2 points; else EPA's one contact (the module
docstring has the details). The reference is C's `d.contact` after `mj_collision`:

* penetrating poses: margin 0, `ccd_tolerance=1e-12`, 1000 iterations;
* separated poses (nothing at margin 0): margin = the centres' distance, tolerance 1e-6
  (GJK's distance gets worse below); C then reports the same multi-point contacts, with
  positive dists, or GJK's single one.

On ~3000 poses (random; a cap on a face and a side on a face, tilted from 0 to 0.2 rad
across the 5.1° thresholds, overhanging edges; axis-aligned; deep; far; tiny, huge, thin),
and 3 more such batteries in the `full` tier (12000 poses in all):

* the number of contacts is C's on every pose but where C's depends on where its EPA
  stopped (`_c_arbitrary`: the normal along the cylinder's axis, where C's side line goes
  through any rim point; or a side line's clip that changes if its rim point turns by
  1e-3 rad): 9 of 12000 poses;
* face-face points are exact functions of the geometry in C too: held to 1e-11 (relative
  to size; measured 6e-15); side-face points lie on the side line through EPA's rim point
  in C: held to how far the points move when that rim point turns by 1e-3 rad (measured
  1e-3 relative, 2e-4 typically); single contacts: EPA's (GJK's when separated) dist and
  normal, measured 2e-11 and 1.5e-5 (1.4e-8 and 4e-4), held to 1e-4 and 1e-3; positions
  where the witnesses are unique (measured 2.7e-6 and 2.4e-5); where they are not (a side
  or cap on a face or edge: a segment or a disc of them) C's must lie on the two support
  sets;
* C's `polygonQuad` compares areas with `<=`, and the 16-gon's symmetry makes exact ties
  common (~12% of the 4-point contacts), which C breaks by its rounding (ours: a tie is
  never a step): where the 4 points differ, both ours and C's must be outcomes of the
  greedy walk with the ties taken either way (`_reference_quads`); for caps under ~1 mm
  C's absolute clipping tolerances make the clipped polygon itself rounding's
  (`_fuzzy_clip`: 2 of 12000 poses);
* independently of C: `_reference`, a NumPy transcription of C's multicontact (from C's
  algorithm, in the world frame; it shares only the exact single contact with the JAX
  code), gives our contacts on every pose; the exact contact is globally optimal (the gap
  along C's normal and along 256 random directions never beats it) and its witnesses lie
  on both support sets.

Also: float32 against float64, degenerate poses, gradients, hand-worked answers, and
dm_control's dog-fetch model (`compat.put_model` takes it; its target against a scapula's
box: MJX's collision-function form against C's contacts and, in the `full` tier, one
`mjx.step` against C's `mj_step`).
"""

from __future__ import annotations

import copy
import itertools
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
from jaxcontrol.collision import cylinder_box as cb
from jaxcontrol.mjcf import compat, dog

CB = (GeomType.CYLINDER, GeomType.BOX)
PEN = {"tol": 1e-12, "iters": 1000}  # C settings for penetrating poses (EPA)
SEP = {"tol": 1e-6, "iters": 1000}  # and for separated ones (GJK)
# C's mjFACE_TOL and mjEDGE_TOL (engine_collision_gjk.h); test_c_thresholds measures them
FACE_TOL, EDGE_TOL = 0.996, 0.0888


# ------------------------------------------------------------------------------ helpers


def _quat(mat):
    x, y, z, w = Rotation.from_matrix(mat).as_quat()
    return np.array([w, x, y, z])


def _rot(rng):
    return Rotation.random(random_state=rng).as_matrix()


def _small(rng, angle):
    """A rotation by `angle` about a random axis."""
    axis = rng.normal(size=3)
    return Rotation.from_rotvec(axis / np.linalg.norm(axis) * angle).as_matrix()


class _C:
    """C MuJoCo with one cylinder and one box on free joints; sizes edited in place."""

    def __init__(self):
        spec = mujoco.MjSpec()
        spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_GRAVITY)
        for name, gtype in (
            ("cylinder", mujoco.mjtGeom.mjGEOM_CYLINDER),
            ("box", mujoco.mjtGeom.mjGEOM_BOX),
        ):
            body = spec.worldbody.add_body(name=name)
            body.add_freejoint()
            body.add_geom(type=gtype, size=[1, 1, 1])
        self.m = spec.compile()
        self.d = mujoco.MjData(self.m)
        # the narrow phase reads sizes and poses only; the broad phase never culls
        self.m.geom_rbound[:] = 1e9
        self.m.geom_aabb[:, 3:] = 1e9

    def __call__(self, pose, margin, tol, iters, multiccd=True):
        r, h, s, cpos, cmat, bpos, bmat = pose
        m, d = self.m, self.d
        m.opt.ccd_tolerance, m.opt.ccd_iterations = tol, iters
        flag = int(mujoco.mjtDisableBit.mjDSBL_MULTICCD)
        m.opt.disableflags = (m.opt.disableflags & ~flag) | (0 if multiccd else flag)
        m.geom_size[0], m.geom_size[1] = (r, h, 0.0), s
        m.geom_margin[:] = 0.5 * margin
        d.qpos[:] = np.concatenate([cpos, _quat(cmat), bpos, _quat(bmat)])
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        inputs = (
            d.geom_xpos[0].copy(),
            d.geom_xmat[0].reshape(3, 3).copy(),
            np.array([r, h, 0.0]),
            d.geom_xpos[1].copy(),
            d.geom_xmat[1].reshape(3, 3).copy(),
            np.asarray(s, float),
            float(margin),
        )
        contacts = [(c.dist, c.pos.copy(), c.frame[:3].copy()) for c in d.contact]
        assert all(tuple(c.geom) == (0, 1) for c in d.contact)
        return inputs, contacts

    def reference(self, pose):
        """C's contacts: EPA at margin 0 if C sees penetration, else within a margin."""
        inputs, contacts = self(pose, 0.0, **PEN)
        if not contacts:
            inputs, contacts = self(pose, np.linalg.norm(pose[3] - pose[5]) + 1e-9, **SEP)
        return inputs, contacts


def _cap_on(rng, r, h, s, tilt, depth):
    """A cap facing a box face: its axis within `tilt` of the face normal, its centre over
    the face (or overhanging an edge), `depth` into it along the normal (< 0: a gap)."""
    k, sg = rng.integers(3), rng.choice([-1.0, 1.0])
    normal = np.zeros(3)
    normal[k] = sg
    spin = Rotation.from_rotvec(normal * rng.uniform(0, 2 * np.pi)).as_matrix()
    base = Rotation.align_vectors([normal], [[0, 0, rng.choice([-1.0, 1.0])]])[0].as_matrix()
    cmat = _small(rng, tilt) @ spin @ base
    c = rng.uniform(-1.1, 1.1, 3) * (s + 0.5 * r)
    c[k] = sg * (s[k] + h - depth)
    return c, cmat


def _side_on(rng, r, h, s, tilt, depth):
    """The side of the cylinder on a box face: its axis within `tilt` of the face's plane."""
    k, sg = rng.integers(3), rng.choice([-1.0, 1.0])
    normal = np.zeros(3)
    normal[k] = sg
    axis = np.zeros(3)
    axis[(k + 1) % 3] = 1.0
    axis = Rotation.from_rotvec(normal * rng.uniform(0, 2 * np.pi)).as_matrix() @ axis
    x = normal
    cmat = _small(rng, tilt) @ np.stack([x, np.cross(axis, x), axis], 1)
    c = rng.uniform(-1.1, 1.1, 3) * (s + 0.5 * h)
    c[k] = sg * (s[k] + r - depth)
    return c, cmat


_EYE = np.eye(3)
_AXIS_ROTS = [  # the cylinder's axis along z, x, y (spin 0)
    _EYE,
    Rotation.from_euler("y", 90, degrees=True).as_matrix(),
    Rotation.from_euler("x", -90, degrees=True).as_matrix(),
]


def _battery(rng):
    """~3000 poses (r, h, s, cpos, cmat, bpos, bmat), with family labels."""
    poses, labels = [], []

    def add(label, r, h, s, c, cmat, bmat=None):
        bmat = _rot(rng) if bmat is None else bmat
        t = rng.uniform(-1, 1, 3)
        poses.append((r, h, s, t + bmat @ c, bmat @ cmat, t, bmat))
        labels.append(label)

    def sizes():
        return rng.uniform(0.05, 0.5), rng.uniform(0.05, 0.5), rng.uniform(0.05, 0.5, 3)

    for _ in range(600):
        r, h, s = sizes()
        add("random", r, h, s, rng.uniform(-0.8, 0.8, 3), _rot(rng))
    for i in range(1400):  # cap on a face / side on a face; tilts across the thresholds
        r, h, s = sizes()
        tilt = 0.0 if i % 7 == 0 else 10 ** rng.uniform(-7, np.log10(0.2))
        depth = rng.choice([1.0, 1.0, 1.0, -0.3]) * rng.uniform(0, 0.3) * min(r, h, s.min())
        make = _cap_on if i % 2 == 0 else _side_on
        add("cap-on" if i % 2 == 0 else "side-on", r, h, s, *make(rng, r, h, s, tilt, depth))
    for i in range(300):  # both axis-aligned, spin 0: exact ties everywhere
        r, h, s = sizes()
        cmat = _AXIS_ROTS[i % 3]
        k = rng.integers(3)
        c = rng.uniform(-1.0, 1.0, 3) * s
        ext = np.abs(cmat[:, 2]) * h + np.sqrt(np.maximum(0, 1 - cmat[:, 2] ** 2)) * r
        c[k] = rng.choice([-1.0, 1.0]) * (s[k] + ext[k] - rng.uniform(-0.1, 0.3) * ext[k])
        add("aligned", r, h, s, c, cmat, _EYE if i % 2 else None)
    for _ in range(200):  # deep: the cylinder's centre inside the box
        r, h, s = sizes()
        add("deep", r, h, s, rng.uniform(-1, 1, 3) * s, _rot(rng))
    for _ in range(100):
        r, h, s = sizes()
        add("far", r, h, s, rng.normal(size=3) * 2, _rot(rng))
    for i in range(400):
        r, h, s = sizes()
        kind = ("tiny cylinder", "huge box", "thin disc", "needle", "thin plate")[i % 5]
        if kind == "tiny cylinder":
            r, h = r * 1e-3, h * 1e-3
            c = rng.uniform(-1.02, 1.02, 3) * s
        elif kind == "huge box":
            s = s * 30
            c = rng.uniform(-1, 1, 3) * s
            c[rng.integers(3)] = rng.choice([-1, 1]) * (s.max() + 0.5 * r)
            c = np.clip(c, -s - 0.5 * r, s + 0.5 * r)
        elif kind == "thin disc":  # like dog-fetch's target
            h = r * 0.04
            c = rng.uniform(-1.0, 1.0, 3) * (s + r)
        elif kind == "needle":
            r = h * 1e-3
            c = rng.uniform(-1.0, 1.0, 3) * (s + h)
        else:
            s[rng.integers(3)] *= 1e-3
            c = rng.uniform(-1.0, 1.0, 3) * (s + r)
        if i % 2:
            make = _cap_on if i % 4 == 1 else _side_on
            c, cmat = make(rng, r, h, s, 0.0 if i % 8 < 4 else 1e-3, 0.2 * min(r, h, s.min()))
        else:
            cmat = _rot(rng)
        add(kind, r, h, s, c, cmat)
    return poses, np.array(labels)


_stack, _padded = batching.stack, batching.padded


_collide = _padded(cb.collide)
_contact = _padded(cb.contact)
_gap_many = _padded(cb.signed_distance_lower_bound)  # (K, 3) directions per pose


def _scale(x):
    return np.maximum(x[2][:, :2].max(1), x[5].max(1))


def _ours_list(out, i, margin):
    """Our contacts of pose i: those with dist < margin (C reports those)."""
    dist, pos, frame = out
    return [(dist[i, k], pos[i, k], frame[i, k, 0]) for k in range(cb.NCON) if dist[i, k] < margin]


# ------------------------------------------------------------ C's multicontact in NumPy

_BOX_FACES = np.array(  # C's boxFace: face index -> its vertices' sign patterns, in order
    [
        [[1, 1, 1], [1, 1, -1], [1, -1, -1], [1, -1, 1]],
        [[-1, 1, -1], [-1, 1, 1], [-1, -1, 1], [-1, -1, -1]],
        [[-1, 1, -1], [1, 1, -1], [1, 1, 1], [-1, 1, 1]],
        [[-1, -1, 1], [1, -1, 1], [1, -1, -1], [-1, -1, -1]],
        [[-1, 1, 1], [1, 1, 1], [1, -1, 1], [-1, -1, 1]],
        [[1, 1, -1], [-1, 1, -1], [-1, -1, -1], [1, -1, -1]],
    ],
    float,
)


def _ref_clip(face1, face2, n, margin):
    """C's polygonClip (Sutherland–Hodgman with C's tolerances), then the margin prune."""
    k = len(face1)
    pn = [np.cross(face1[(i + 1) % k] - face1[i], (face1[i] + n) - face1[i]) for i in range(k)]
    poly = list(face2)
    for e in range(k):
        out = []
        for i in range(len(poly)):
            p, q = poly[i], poly[(i + 1) % len(poly)]
            in1 = np.dot(p - face1[e], pn[e]) > -1e-10
            in2 = np.dot(q - face1[e], pn[e]) > -1e-10
            if in1 and in2:
                out.append(q)
            elif in1 or in2:
                dq = np.dot(pn[e], q - p)
                t = np.inf if abs(dq) < 1e-10 else np.dot(pn[e], face1[e] - p) / dq
                if -3e-7 < t < 1 + 3e-7:
                    out.append(p + np.clip(t, 0, 1) * (q - p))
                if in2:
                    out.append(q)
        poly = out
    return [p for p in poly if np.dot(p - face1[0], n) <= margin]


def _area4(poly, a, b, c, d):
    return 0.5 * np.linalg.norm(np.cross(poly[a] - poly[c], poly[b] - poly[d]))


def _reference_quads(poly, rel=1e-9):
    """Every quadrilateral C's polygonQuad can pick on poly when areas within rel of equal
    go either way (C compares them with `<=`, exact ties go by its rounding): sorted index
    tuples (an index may repeat: the walk can pass a = b, and C then reports a point twice).

    The walk: for each a, advance d while the area grows, after each step advancing c,
    then b, while it grows; then C's clean-up (b == a etc.) and the next a.
    """
    n = len(poly)
    span = max(np.sum((p - poly[0]) ** 2) for p in poly)
    tol = rel * span
    found, seen = set(), set()
    stack = [(0, 1, 2, 3, 0, (0, 1, 2, 3))]
    while stack:
        state = stack.pop()
        if state in seen:
            continue
        seen.add(state)
        a, b, c, d, phase, best = state
        if a == n:
            found.add(tuple(sorted(best)))
            continue
        if phase == 3:
            if b == a:
                b = (b + 1) % n
                if c == b:
                    c = (c + 1) % n
                    if d == c:
                        d = (d + 1) % n
            stack.append((a + 1, b, c, d, 0, best))
            continue
        m = _area4(poly, *best)
        quad = [(a, b, c, (d + 1) % n), (a, b, (c + 1) % n, d), (a, (b + 1) % n, c, d)][phase]
        m_next = _area4(poly, *quad)
        if m_next >= m - tol:  # grows (or may, by rounding)
            stack.append((*quad, 1 if phase == 0 else phase, quad))
        if m_next <= m + tol:  # does not (or may not)
            stack.append((a, b, c, d, (3, 2, 0)[phase], best))
    return found


def _reference(x, i, dist, normal, x1, rim_shift=0.0):
    """C's multicontact for pose i from the exact single contact (dist, normal from the
    cylinder to the box, x1 the cylinder's witness), in the world frame.

    Returns (mode, contacts(quad) -> [(dist, pos, normal)], quads): quads is the set of
    polygonQuad's possible picks (None where all points are kept). `rim_shift` turns the
    side line's rim point about the axis (C's comes from EPA, a little off).
    """
    cpos, cmat, (r, h, _), bpos, bmat, s, margin = (a[i] for a in x)
    single = ("single", lambda q: [(dist, x1 + 0.5 * dist * normal, normal)], None)
    if dist >= margin:
        return "none", lambda q: [], None
    u, axis = -normal, cmat[:, 2]
    cap_sign = 1.0 if axis @ u <= 0 else -1.0  # the cylinder's support along the normal
    cap_normal = cap_sign * axis
    faces = np.array([bmat[:, k // 2] * (1.0 if k % 2 == 0 else -1.0) for k in range(6)])
    facing = faces @ u
    candidate = facing > 1.5e-8  # faces at the box's support feature along u
    aligned = candidate & (facing > EDGE_TOL) & (cap_normal @ u < -EDGE_TOL)
    aligned &= faces @ cap_normal < -FACE_TOL
    if aligned.any():
        j = int(np.argmin(np.where(aligned, faces @ cap_normal, np.inf)))
        ang = np.arange(16) * np.pi / 8
        cap = (
            np.cos(ang)[:, None] * (cmat[:, 0] * r)
            - np.sin(ang)[:, None] * (cmat[:, 1] * r * cap_sign)
            + cpos
            + axis * cap_sign * h
        )
        box_face = _BOX_FACES[j] * s @ bmat.T + bpos
        poly = _ref_clip(cap, box_face, cap_normal, margin)
        if not poly:
            return single

        def contacts(quad):
            out = []
            for p in (poly[k] for k in (range(len(poly)) if quad is None else quad)):
                w1 = p - np.dot(p - cap[0], cap_normal) * cap_normal
                dd = np.dot(w1 - p, faces[j])
                out.append((dd, w1 - 0.5 * dd * faces[j], -faces[j]))
            return out

        quads = _reference_quads(poly) if len(poly) > 4 else None
        return "face-face", contacts, quads
    radial = -u - (-u @ axis) * axis
    parallel = candidate & (np.abs(faces @ axis) < EDGE_TOL)
    if not parallel.any() or np.linalg.norm(radial) <= 1.5e-8:
        return single
    k = int(np.argmax(parallel))
    radial = Rotation.from_rotvec(axis * rim_shift).as_matrix() @ radial
    v = cpos + axis * cap_sign * h + r * radial / np.linalg.norm(radial)
    box_face = _BOX_FACES[k] * s @ bmat.T + bpos
    pts = _ref_clip(box_face, [v, v - axis * 2 * cap_sign * h], faces[k], margin)
    if not pts:
        return single
    if len(pts) > 2:
        d2 = [
            (np.sum((pts[b] - pts[a]) ** 2), a, b)
            for a, b in itertools.combinations(range(len(pts)), 2)
        ]
        best = max(d2, key=lambda t: t[0])  # the first of the greatest, as C's strict `>`
        pts = [pts[best[1]], pts[best[2]]]
    out = []
    for p in pts:
        height = np.dot(p - box_face[0], faces[k])
        out.append((height, p - 0.5 * height * faces[k], -faces[k]))
    return "side-face", lambda q: out, None


def _match(a, b):
    """Greatest position distance between contacts a and their nearest in b (same count)."""
    pa, pb = np.array([c[1] for c in a]), np.array([c[1] for c in b])
    dd = np.linalg.norm(pa[:, None] - pb[None], axis=2)
    return dd.min(1).max(), dd.argmin(1)


def _normal_tol(contacts):
    """C's multi-point normals are normalize(x1 - x2), |x1 - x2| = |dist|: rounding of the
    positions over |dist| (large where the dist is tiny), or 1e-11."""
    return max(1e-11 + 4e-16 * (1 + np.abs(c[1]).max()) / max(abs(c[0]), 1e-300) for c in contacts)


def _same(a, b, tol):
    """a and b are the same contacts (any order): positions and dists within tol
    (absolute), normals within _normal_tol."""
    if len(a) != len(b):
        return False
    if not a:
        return True
    err, j = _match(a, b)
    return (
        err <= tol
        and max(abs(a[i][0] - b[j[i]][0]) for i in range(len(a))) <= tol
        and max(np.linalg.norm(a[i][2] - b[j[i]][2]) for i in range(len(a))) <= _normal_tol(a)
    )


# ------------------------------------------------------------------------ fixed cases


def _threshold_cases():
    """(pose, C's count): a cap tilted on a face either side of 5.126°, a short side
    either side of 5.095°."""
    s = np.array([0.5, 0.4, 0.3])
    cases = []
    for deg, n in ((5.125, 4), (5.127, 1)):
        cmat = Rotation.from_euler("x", deg, degrees=True).as_matrix()
        cases.append(((0.1, 0.1, s, np.array([0, 0, 0.39]), cmat, np.zeros(3), _EYE), n))
    for deg, n in ((5.0945, 2), (5.0947, 1)):
        cmat = Rotation.from_euler("x", 90 + deg, degrees=True).as_matrix()
        cases.append(((0.1, 0.02, s, np.array([0, 0, 0.38]), cmat, np.zeros(3), _EYE), n))
    return cases


def _hand_worked_cases():
    """(pose, contacts): (a) a cap over a box corner: the bottom cap's 16-gon (at +i·22.5°
    from x) clipped to the face's quadrant, 4 points (no choice to make); (b) a side
    overhanging a face: its line y in [0.1, 0.5] clipped at 0.4; (c) a cap tilted 10°
    (past 5.1°) about a diagonal (no box face parallel to the axis): its lowest rim point;
    (d) a box standing on a vertex, 0.02 into the bottom cap's centre: that vertex; (e) a
    side along x, 0.01 into the box's edge at (y, z) = (0.4, 0.3) at 45°: C clips it
    against the first facing face (+y before +z), so dist is the depth along +y, cos 45°
    times the true one, and the normal is -y."""
    s, down = np.array([0.5, 0.4, 0.3]), np.array([0, 0, -1.0])
    rad = np.radians
    cases = []
    c = np.array([0.55, 0.45, 0.39])  # (a) over the corner (0.5, 0.4): local x, y <= -0.05
    t = (0.1 * np.cos(rad(225)) + 0.05) / (0.1 * (np.cos(rad(225)) - np.cos(rad(247.5))))
    yy = np.sin(rad(225)) * 0.1 + t * 0.1 * (np.sin(rad(247.5)) - np.sin(rad(225)))
    pts = [
        (-0.05, -0.05),
        (0.1 * np.cos(rad(225)), 0.1 * np.sin(rad(225))),
        (-0.05, yy),
        (yy, -0.05),
    ]
    contacts = [(-0.01, c + [px, py, -0.095], down) for px, py in pts]
    cases.append(((0.1, 0.1, s, c, _EYE, np.zeros(3), _EYE), contacts))
    side = Rotation.from_euler("x", 90, degrees=True).as_matrix()  # (b)
    contacts = [(-0.01, np.array([0, y, 0.295]), down) for y in (0.1, 0.4)]
    cases.append(((0.1, 0.2, s, np.array([0.0, 0.3, 0.39]), side, np.zeros(3), _EYE), contacts))
    tilt = Rotation.from_rotvec(rad(10) * np.array([1.0, 1.0, 0]) / np.sqrt(2)).as_matrix()  # (c)
    slope = -_EYE[2] + tilt[2, 2] * tilt[:, 2]  # -z along the cap's plane
    low = -0.1 * tilt[:, 2] + 0.1 * slope / np.linalg.norm(slope)
    centre = np.array([0.1, 0.05, 0.29]) - low
    cases.append(
        (
            (0.1, 0.1, s, centre, tilt, np.zeros(3), _EYE),
            [(-0.01, np.array([0.1, 0.05, 0.295]), down)],
        )
    )
    up = Rotation.align_vectors([[0, 0, 1]], [[1, 1, 1]])[0].as_matrix()  # (d)
    vertex = up @ s
    pose = (0.2, 0.1, s, vertex + [0, 0, 0.08], _EYE, np.zeros(3), up)
    cases.append((pose, [(-0.02, vertex - [0, 0, 0.01], down)]))
    along_x = Rotation.from_euler("y", 90, degrees=True).as_matrix()  # (e)
    diag = np.array([0.0, 1.0, 1.0]) / np.sqrt(2)
    centre = np.array([0.1, 0.4, 0.3]) + 0.09 * diag
    rim = centre - 0.1 * diag  # the deepest line, x in [-0.1, 0.3]
    depth = rim[1] - 0.4
    contacts = [
        (depth, np.array([x, rim[1] - 0.5 * depth, rim[2]]), np.array([0, -1.0, 0]))
        for x in (-0.1, 0.3)
    ]
    cases.append(((0.1, 0.2, s, centre, along_x, np.zeros(3), _EYE), contacts))
    return cases


_DEGENERATE = [  # (r, h, s, cylinder centre, cylinder rotation); the box at the origin
    (0.1, 0.1, (0.5, 0.4, 0.3), (0, 0, 0), _EYE),  # coincident centres, aligned
    (0.1, 0.1, (0.1, 0.1, 0.1), (0, 0, 0), _AXIS_ROTS[1]),  # a cube, coincident
    (0.1, 0.1, (0.5, 0.4, 0.3), (0.5, 0.4, 0.3), _EYE),  # the centre on a vertex
    (0.1, 0.1, (0.5, 0.4, 0.3), (0.5, 0.4, 0.0), _EYE),  # on an edge
    (0.1, 0.1, (0.5, 0.4, 0.3), (0, 0, 0.4), _EYE),  # exactly touching, cap on face
    (0.1, 0.1, (0.5, 0.4, 0.3), (0, 0, 0.4), _AXIS_ROTS[2]),  # touching, side on face
    (1e-6, 0.1, (0.5, 0.4, 0.3), (0, 0, 0.35), _EYE),  # a needle into a face
    (0.1, 1e-7, (0.5, 0.4, 0.3), (0, 0, 0.3), _EYE),  # a flat disc on a face
    (0.1, 0.1, (0.5, 0.4, 1e-7), (0, 0, 0.1), _EYE),  # on a flat plate
    (100.0, 100.0, (0.5, 0.4, 0.3), (0, 0, 0), _EYE),  # a huge cylinder around the box
    (0.1, 0.1, (500.0, 400.0, 300.0), (0, 0, 300.05), _EYE),  # a huge box
    (0.1, 0.1, (0.5, 0.4, 0.3), (1e3, 0, 0), _EYE),  # far apart
    (
        0.1,
        0.1,
        (0.1, 0.1, 0.1),
        (0.2, 0.2, 0.2),
        Rotation.from_euler("z", 45, degrees=True).as_matrix(),
    ),
]


def _degenerate_inputs():
    return [
        (np.array(c, float), m, np.array([r, h, 0.0]), np.zeros(3), _EYE, np.array(s), 0.0)
        for r, h, s, c, m in _DEGENERATE
    ]


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def cref():
    return _C()


@pytest.fixture(scope="module")
def battery(cref):
    """The battery and the fixed cases: C's contacts, ours in float32 and float64 (one
    padded batch each: one compile per dtype, and all float64 work in one block, as each
    switch of precision drops JAX's compiled code)."""
    rng = np.random.default_rng(11)
    poses, labels = _battery(rng)
    refs = [cref.reference(p) for p in poses]
    fixed = [cref(pose, 0.0, **PEN)[0] for pose, _ in _threshold_cases() + _hand_worked_cases()]
    x = _stack([ref[0] for ref in refs])
    x_all = _stack([ref[0] for ref in refs] + fixed + _degenerate_inputs())
    n, nf = len(poses), len(fixed)
    out32 = _collide(*[a.astype(np.float32) for a in x_all])
    n32 = out32[2][:n, 0, 0].astype(np.float64)
    n32 /= np.linalg.norm(n32, axis=1, keepdims=True)
    with reference.precision(True):
        out64 = _collide(*x_all)
        single = _contact(*x[:6])
        # directions for the certificates: 256 random ones, C's normal, ours, float32's
        cn = np.array([c[0][2] if c else m for (_, c), m in zip(refs, single[2])])
        dirs = np.random.default_rng(5).normal(size=(n, 256, 3))
        dirs /= np.linalg.norm(dirs, axis=2, keepdims=True)
        dirs = np.concatenate([dirs, cn[:, None], n32[:, None], single[2][:, None]], 1)
        gaps = _gap_many(dirs, *x[:6])[0]
    # the exact contact's cylinder witness: pos - dist/2 normal
    x1 = single[1] - 0.5 * single[0][:, None] * single[2]
    refs_np = [_reference(x, i, single[0][i], single[2][i], x1[i]) for i in range(n)]
    return {
        "x": x,
        "labels": labels,
        "c": [ref[1] for ref in refs],
        "ours": [a[:n] for a in out64],
        "ours32": [a[:n] for a in out32],
        "fixed": (fixed, [a[n : n + nf] for a in out64]),
        "degenerate": ([a[n + nf :] for a in out32], [a[n + nf :] for a in out64]),
        "single": single,
        "gaps": gaps,
        "reference": refs_np,
    }


# ------------------------------------------------------------------------------ register


def test_register_adds_cylinder_box(monkeypatch):
    table = collision_driver._COLLISION_FUNC
    assert CB in jcoll.PAIRS and jcoll._PAIRS[CB] is cb.cylinder_box
    monkeypatch.delitem(table, CB, raising=False)
    assert CB in jcoll.register()
    assert table[CB] is cb.cylinder_box and table[CB].ncon == cb.NCON == 4


def test_c_max_contact_is_ncon():
    """C's own bound for the pair, with and without a margin, is our ncon."""
    m = dog.make_model(remove_ball=False)
    target = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "target")
    hand = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "hand_L_collision")
    for has_margin in (-1, 0, 1):
        assert mujoco.mj_maxContact(m, target, hand, has_margin) == cb.NCON


def test_put_model_accepts_dog_fetch(monkeypatch):
    """dm_control's dog with fetch's ball and target: the target (a cylinder) meets 11
    boxes; MJX alone refuses the model, `compat.put_model` takes it, unchanged."""
    m = dog.make_model(remove_ball=False)
    names = {
        (m.geom(g1).name, m.geom(g2).name)
        for g1, g2, _ in collision_driver.geom_pairs(m)
        if (m.geom_type[g1], m.geom_type[g2]) == (5, 6)
    }
    assert {a for a, _ in names} == {"target"} and len(names) == 11
    monkeypatch.delitem(collision_driver._COLLISION_FUNC, CB, raising=False)
    with pytest.raises(NotImplementedError, match="CYLINDER, .*BOX"):
        mjx.put_model(m)
    mx = compat.put_model(m)
    assert mx.ngeom == m.ngeom
    size = np.asarray(mx.geom_size)
    np.testing.assert_array_equal(size, m.geom_size.astype(size.dtype))


# ------------------------------------------------------------------------------ against C


def test_c_thresholds(battery, cref):
    """C's face and edge alignment thresholds are mjFACE_TOL = 0.996 (5.126°) and
    mjEDGE_TOL = 0.0888 (5.095°), and ours follow them: a cap tilted on a face gives 4
    contacts up to 5.125° and 1 from 5.127°; a short side tilted on a face 2 up to 5.0945°
    and 1 from 5.0947°."""
    assert (cb.FACE_TOL, cb.EDGE_TOL) == (FACE_TOL, EDGE_TOL)
    dist = battery["fixed"][1][0]
    for k, (pose, n) in enumerate(_threshold_cases()):
        assert len(cref(pose, 0.0, **PEN)[1]) == n
        assert np.sum(dist[k] < 0) == n


def _c_arbitrary(battery, i):
    """Where C's count depends on EPA's rim point: the normal is the cylinder's axis (a
    cap on a box edge or vertex, or deep: EPA's rim point is anywhere on the rim), or the
    side line's clip changes when its rim point turns by 1e-3 rad (C's is that far off)."""
    x, normal = battery["x"], battery["single"][2]
    u, axis = -normal[i], x[1][i][:, 2]
    if np.linalg.norm(u - (u @ axis) * axis) < 1e-6:
        return True
    return len({len(_shifted(battery, i, shift)) for shift in (-1e-3, 0.0, 1e-3)}) > 1


def _fuzzy_clip(x, i):
    """C's clipping tolerances are absolute (a point within 1e-10 / |pn| of a clipping line,
    |pn| = the 16-gon's edge, 0.39 r, counts as inside): for a cap under ~1 mm that is
    over 1e-4 of its radius, and the clipped polygon (which points, duplicates) depends
    on rounding below it."""
    return 1e-10 / (0.39 * x[2][i][0]) ** 2 > 1e-4


def _shifted(battery, i, shift):
    dist, pos, normal = battery["single"]
    x1 = pos[i] - 0.5 * dist[i] * normal[i]
    return _reference(battery["x"], i, dist[i], normal[i], x1, shift)[1](None)


def test_matches_c(battery):
    """The number of contacts is C's on every pose but where C's depends on where EPA
    stopped (`_c_arbitrary`: 9 of 12000 poses over 4 batteries), and each contact matches
    C's (the module docstring's tolerances), per kind of contact."""
    x, labels, contacts = battery["x"], battery["labels"], battery["c"]
    scale = _scale(x)
    margin = x[6]
    kinds, worst = {}, {}
    for i, c in enumerate(contacts):
        ours = _ours_list(battery["ours"], i, margin[i])
        mode, make, quads = battery["reference"][i]
        if len(ours) != len(c):
            assert _c_arbitrary(battery, i), (i, labels[i], mode, len(ours), len(c))
            kinds["C arbitrary"] = kinds.get("C arbitrary", 0) + 1
            continue
        kinds[mode, len(c)] = kinds.get((mode, len(c)), 0) + 1
        if not c:
            continue
        err, j = _match(c, ours)
        derr = max(abs(c[k][0] - ours[j[k]][0]) for k in range(len(c)))
        nerr = max(np.linalg.norm(c[k][2] - ours[j[k]][2]) for k in range(len(c)))
        if mode == "face-face" and quads is not None and err > 1e-11 * scale[i]:
            # a tie in polygonQuad that C's rounding took the other way
            picks = [make(q) for q in quads]
            c_ok = any(_same(c, pick, 1e-11 * scale[i]) for pick in picks)
            if c_ok and any(_same(ours, pick, 1e-11 * scale[i]) for pick in picks):
                kinds["quad tie"] = kinds.get("quad tie", 0) + 1
            else:  # else the clipped polygon itself is C's rounding's
                assert _fuzzy_clip(x, i), i
                kinds["fuzzy clip"] = kinds.get("fuzzy clip", 0) + 1
            continue
        if mode == "face-face":  # exact in C too
            tol = (1e-11 * scale[i],) * 2 + (_normal_tol(c),)
        elif mode == "side-face":  # C's line is EPA's rim point's: within a turn of 1e-3
            moved = [_match(_shifted(battery, i, sh), ours) for sh in (-1e-3, 1e-3)]
            moved = max(m[0] for m in moved) + 1e-9 * scale[i]
            tol = (moved, moved, _normal_tol(c))
        else:  # EPA's (GJK's) dist and normal; C's witness may be another of a set
            tol = (np.inf, 1e-4 * scale[i], 1e-3)
            if err > 1e-5 * scale[i]:
                _assert_witnesses_optimal(x, i, c[0], 1e-6 * scale[i], 1e-5 * scale[i])
        key = mode if mode != "single" or margin[i] == 0 else "single (separated)"
        worst[key] = np.maximum(worst.get(key, 0), [err / scale[i], derr / scale[i], nerr])
        assert err <= tol[0] and derr <= tol[1] and nerr <= tol[2], (i, labels[i], mode, tol)
    # every kind of contact is well represented
    assert kinds["face-face", 4] > 300 and kinds["side-face", 2] > 300
    assert kinds["single", 1] > 300 and kinds.get("quad tie", 0) > 10
    assert kinds.get(("face-face", 1), 0) + kinds.get(("face-face", 2), 0) > 0
    assert kinds.get(("side-face", 1), 0) > 0 and kinds.get("C arbitrary", 0) <= 10
    assert kinds.get("fuzzy clip", 0) <= 10
    print(kinds, {k: v.tolist() for k, v in worst.items()})


def _assert_witnesses_optimal(x, i, contact, plane_tol, extent_tol):
    """A single contact's witnesses pos -/+ dist/2 n lie on the cylinder's and the box's
    support sets along n and -n: on their support planes (within plane_tol) and within the
    shapes (within extent_tol)."""
    cpos, cmat, (r, h, _), bpos, bmat, s, _ = (a[i] for a in x)
    dist, pos, n = contact
    a, b = pos - 0.5 * dist * n, pos + 0.5 * dist * n
    ln = cmat.T @ n
    cyl_support = r * np.hypot(ln[0], ln[1]) + h * abs(ln[2]) + n @ cpos
    box_support = np.abs(bmat.T @ n) @ s - n @ bpos  # max over the box of -n·b
    assert abs(n @ a - cyl_support) <= plane_tol, i
    assert abs(-n @ b - box_support) <= plane_tol, i
    la, lb = cmat.T @ (a - cpos), bmat.T @ (b - bpos)
    assert np.hypot(la[0], la[1]) <= r + extent_tol and abs(la[2]) <= h + extent_tol, i
    assert np.all(np.abs(lb) <= s + extent_tol), i


def test_reference_matches_ours(battery):
    """Our JAX contacts are the NumPy transcription's on every pose (to 1e-11 relative),
    polygonQuad's ties resolved as in exact arithmetic (never a step)."""
    x, margin = battery["x"], battery["x"][6]
    scale = _scale(x)
    fuzzy = 0
    for i, (mode, make, quads) in enumerate(battery["reference"]):
        ours = _ours_list(battery["ours"], i, margin[i])
        if quads is None:
            same = _same(ours, make(None), 1e-11 * scale[i])
        else:
            same = any(_same(ours, make(q), 1e-11 * scale[i]) for q in quads)
        if not same and mode == "face-face" and _fuzzy_clip(x, i):
            fuzzy += 1  # clipped in another frame (box, world): other rounding
            continue
        assert same, (i, mode)
    assert fuzzy <= 10


def test_global_optimality_certificates(battery):
    """Independent of C: no direction beats our exact contact's distance (C's normal, 256
    random ones), and it is the gap along its own normal."""
    x = battery["x"]
    dist = battery["single"][0]
    scale = _scale(x)
    g = battery["gaps"]
    assert np.all(g[:, :-2] <= (dist + 1e-12 * scale)[:, None])  # random ones, C's normal
    np.testing.assert_allclose(g[:, -1], dist, rtol=0, atol=1e-13 * scale.max())
    assert battery["labels"][dist < -0.1].size > 50  # some deep ones
    # and its witnesses lie on the two support sets: to 3e-7 across the normal (a cap or
    # side within 1.2e-7 rad of flat counts as flat; measured 1.1e-7) and 1e-5 along it
    # (a normal of an edge candidate tying to rounding with a face's may put a rim point
    # just past that face's edge; measured 6.7e-6); exact ones elsewhere
    for i in range(len(dist)):
        contact = [a[i] for a in battery["single"]]
        _assert_witnesses_optimal(x, i, contact, 3e-7 * scale[i], 1e-5 * scale[i])


# ------------------------------------------------------------------------------ exactness


def test_hand_worked_cases(battery, cref):
    """Exact answers (`_hand_worked_cases`), C's and ours: C's to 1e-11 where it is exact
    too, to 1e-6 where its point comes from EPA ((c), (d): EPA's witness; (e): the line
    through EPA's rim point); ours to 1e-14."""
    out = battery["fixed"][1]
    k0 = len(_threshold_cases())
    for k, (pose, expect) in enumerate(_hand_worked_cases()):
        contacts = cref(pose, 0.0, **PEN)[1]
        if k in (2, 3):  # EPA's single contact
            assert len(contacts) == 1 and _match(contacts, expect)[0] < 1e-6, (k, contacts)
            assert abs(contacts[0][0] - expect[0][0]) < 1e-11, (k, contacts)
            assert np.linalg.norm(contacts[0][2] - expect[0][2]) < 1e-9, (k, contacts)
        else:
            assert _same(contacts, expect, 1e-6 if k == 4 else 1e-11), (k, contacts, expect)
        ours = _ours_list(out, k0 + k, 0.0)
        assert _same(ours, expect, 1e-14), (k, ours, expect)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_degenerate_poses_finite(battery, dtype):
    """No NaN or inf for the worst poses we can think of (`_DEGENERATE`); orthonormal
    frames; each slot a contact or inactive."""
    dist, pos, frame = battery["degenerate"][dtype == np.float64]
    for a in (dist, pos, frame):
        assert a.dtype == dtype and np.isfinite(a).all()
    eye = np.tile(np.eye(3), (len(_DEGENERATE), cb.NCON, 1, 1))
    atol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.einsum("bkij,bkil->bkjl", frame, frame), eye, atol=atol)
    assert np.all((dist[:, 1:] <= 1e-6) | (dist[:, 1:] == 1.0))  # a contact or inactive
    assert dist[0, 0] == pytest.approx(-0.4, abs=1e-6)  # out through the top: h + s_z
    assert dist[-2, 0] == pytest.approx(1e3 - 0.6, rel=1e-6)


def test_float32_agrees_with_float64(battery):
    """float32 gives the same number of contacts as float64 (but where float64's is within
    float32's rounding of a threshold: at most 0.5%; measured none), the same distances
    (to 8 eps32 relative), near-optimal normals, and the same points (multi-point: to 1e3
    eps32, measured 8e2; single: witnesses on the support sets within float32's flatness
    tolerance, 8 sqrt(eps32))."""
    x = battery["x"]
    out32 = battery["ours32"]
    assert all(a.dtype == np.float32 and np.isfinite(a).all() for a in out32)
    out32 = [a.astype(np.float64) for a in out32]
    eps = np.finfo(np.float32).eps
    scale = _scale(x) + np.linalg.norm(x[0], axis=1) + np.linalg.norm(x[3], axis=1)
    g32 = battery["gaps"][:, -2]  # the gap (float64) along float32's single normal
    mismatched = 0
    for i, (mode, _, _) in enumerate(battery["reference"]):
        ours = _ours_list(battery["ours"], i, x[6][i])
        ours32 = _ours_list(out32, i, np.float32(x[6][i]))
        if len(ours) != len(ours32):
            mismatched += 1
            continue
        if not ours:
            continue
        err, j = _match(ours, ours32)
        derr = max(abs(ours[k][0] - ours32[j[k]][0]) for k in range(len(ours)))
        assert derr < 8 * eps * scale[i], (i, derr / scale[i] / eps)
        if mode == "single":
            d, p, n = ours32[0]
            n = n / np.linalg.norm(n)
            assert battery["single"][0][i] - g32[i] < 16 * eps * scale[i]  # near-optimal
            tol = 4 * 8 * np.sqrt(eps) * scale[i]
            _assert_witnesses_optimal(x, i, (d, p, n), tol, tol)
        else:
            assert err < 1e3 * eps * scale[i], (i, mode, err / scale[i] / eps)
    assert mismatched <= 0.005 * len(x[0])


def test_gradients(battery):
    """float32 gradients with respect to the cylinder's position: finite for every pose
    (the degenerate ones, the fixed cases, 300 of the battery), and for single contacts
    the depth's is minus the normal (envelope theorem: dist is the gap along a normal that
    is optimal)."""

    def outputs(cpos, cmat, size, bpos, bmat, s, margin):
        dist, pos, _ = cb.collide(cpos, cmat, size, bpos, bmat, s, margin)
        active = dist < margin
        return jnp.stack([dist[0], jnp.sum(jnp.where(active[:, None], pos, 0.0))])

    x = battery["x"]
    fixed = battery["fixed"][0]
    inputs = _stack([tuple(a[i] for a in x) for i in range(300)] + fixed + _degenerate_inputs())
    jac = jax.jit(jax.vmap(jax.jacrev(outputs)))(*[a.astype(np.float32) for a in inputs])
    jac = np.asarray(jac)
    assert jac.dtype == np.float32 and np.isfinite(jac).all()
    single = [i for i in range(300) if battery["reference"][i][0] == "single"]
    assert len(single) > 50
    normal = battery["ours"][2][single, 0, 0]
    np.testing.assert_allclose(jac[single, 0], -normal, atol=1e-3)


# ------------------------------------------------------------------------------ dog-fetch


def _dog_state(corner_y=0.002, tight=True):
    """dm_control's dog (fetch's model) with its left scapula's box 1 mm into the side of
    fetch's target, and nothing else touching: the scapula's joints at their ends turn the
    box out; the whole dog is turned so the box's -z face faces the target's axis, its
    lowest corner at (0.099, corner_y, 0.001) (the target is a disc of radius 0.1 and
    half-height 0.004 on the floor at the origin). C: 2 side-face contacts. `tight`: C's
    EPA to 1e-12 (at the model's 1e-6 and 35 iterations C's rim point is ~1e-3 rad off,
    which moves the clipped line's end by 2.5e-4 here)."""
    m = dog.make_model(remove_ball=False)
    if tight:
        m.opt.ccd_tolerance, m.opt.ccd_iterations = PEN["tol"], PEN["iters"]
    d = mujoco.MjData(m)
    for name, end in (("scapula_L_supinate", 1), ("scapula_L_abduct", 0), ("scapula_L_extend", 1)):
        j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
        d.qpos[m.jnt_qposadr[j]] = m.jnt_range[j][end]
    mujoco.mj_kinematics(m, d)
    box = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "Scapula_L_collision")
    rb, size = d.geom_xmat[box].reshape(3, 3), m.geom_size[box]
    face = -rb[:, 2]
    turn = Rotation.align_vectors([[-1, 0, 0]], [face])[0]
    turn = Rotation.from_rotvec([1.5 * np.pi, 0, 0]) * turn
    rot = turn.as_matrix()
    corners = [
        rot @ (d.geom_xpos[box] + rb @ (np.array([sx, sy, -1.0]) * size))
        for sx in (-1, 1)
        for sy in (-1, 1)
    ]
    low = min(corners, key=lambda c: c[2])
    d.qpos[:3] = rot @ d.qpos[:3] + np.array([0.099, corner_y, 0.001]) - low
    x, y, z, w = (turn * Rotation.from_quat(d.qpos[[4, 5, 6, 3]])).as_quat()
    d.qpos[3:7] = [w, x, y, z]
    mujoco.mj_forward(m, d)
    return m, d


def test_dog_fetch_contacts_match_c():
    """MJX's collision-function form on the dog's 11 target-box pairs (float64): the
    scapula's 2 contacts are C's (to 1e-5: C's side line is through EPA's rim point, here
    7e-6 rad off, and the line's lower end is where it crosses a slanted edge of the box's
    face: measured 1.7e-6), the other pairs have none."""
    jcoll.register()
    m, d = _dog_state()
    target = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "target")
    scapula = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "Scapula_L_collision")
    contacts = [(c.dist, c.pos.copy(), c.frame[:3].copy()) for c in d.contact]
    assert [tuple(c.geom) for c in d.contact] == [(target, scapula)] * 2
    pairs = np.array(
        [
            (g1, g2)
            for g1, g2, _ in collision_driver.geom_pairs(m)
            if g1 == target and m.geom_type[g2] == 6
        ]
    )
    with reference.precision(True):
        mx, dx = compat.put_model(m), compat.put_data(m, d)
        dist, pos, frame = jax.jit(cb.cylinder_box, static_argnums=2)(
            mx, dx, None, jnp.asarray(pairs)
        )
        dist, pos, frame = (
            np.asarray(a).reshape(len(pairs), cb.NCON, *a.shape[1:]) for a in (dist, pos, frame)
        )
    k = int(np.where(pairs[:, 1] == scapula)[0][0])
    ours = _ours_list((dist, pos, frame), k, 0.0)
    assert _same(ours, contacts, 1e-5), (ours, contacts)
    assert np.all(np.delete(dist, k, axis=0) >= 0)


@pytest.mark.full
def test_dog_fetch_mjx_step_matches_c():
    """One `mjx.step` (float64) of the dog with the target touching its scapula's box
    against C's `mj_step` (EPA to 1e-12): qpos to 1e-7 and qvel to 1e-5 (measured 1.1e-8
    and 2.2e-6: C's contact points are EPA's, 1.7e-6 off). The same dog 0.5 m away from
    the target matches to 1e-12 (measured 6e-15): all of that is the contact; and C at the
    model's own ccd settings (1e-6, 35 iterations) is 600 times farther from C at 1e-12
    (6e-6 and 1.3e-3). Compiling the dog's step takes minutes."""
    m, d = _dog_state()
    d_away = _dog_state(corner_y=0.5)[1]
    assert d.ncon == 2 and d_away.ncon == 0
    with reference.precision(True):
        mx = compat.put_model(m)
        step = jax.jit(mjx.step)
        out = [step(mx, compat.put_data(m, data)) for data in (d, d_away)]
        ncon = int(np.sum(np.asarray(out[0]._impl.contact.dist) < 0))
        out = [(np.asarray(o.qpos), np.asarray(o.qvel)) for o in out]
    ref = []
    for model, data in ((m, d), (m, d_away)):
        data = copy.copy(data)
        mujoco.mj_step(model, data)
        ref.append((data.qpos, data.qvel))
    assert ncon == 2
    (qpos, qvel), (qpos_away, qvel_away) = out
    np.testing.assert_allclose(qpos, ref[0][0], rtol=0, atol=1e-7)
    np.testing.assert_allclose(qvel, ref[0][1], rtol=0, atol=1e-5)
    np.testing.assert_allclose(qpos_away, ref[1][0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(qvel_away, ref[1][1], rtol=0, atol=1e-12)
    m_default, d_default = _dog_state(tight=False)
    mujoco.mj_step(m_default, d_default)
    assert np.abs(d_default.qvel - ref[0][1]).max() > 100 * np.abs(qvel - ref[0][1]).max()


@pytest.mark.full
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_c_more_seeds(cref, seed):
    """The same checks on 3 more batteries of ~3000 poses."""
    rng = np.random.default_rng(seed)
    poses, labels = _battery(rng)
    refs = [cref.reference(p) for p in poses]
    x = _stack([ref[0] for ref in refs])
    with reference.precision(True):
        ours = _collide(*x)
        single = _contact(*x[:6])
    x1 = single[1] - 0.5 * single[0][:, None] * single[2]
    more = {
        "x": x,
        "labels": labels,
        "c": [ref[1] for ref in refs],
        "ours": ours,
        "single": single,
        "reference": [
            _reference(x, i, single[0][i], single[2][i], x1[i]) for i in range(len(poses))
        ],
    }
    test_matches_c(more)
    test_reference_matches_ours(more)

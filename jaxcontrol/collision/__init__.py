"""Narrow-phase collision functions that MJX lacks: our one module of MJX extensions.

MJX chooses a collision function per geom-type pair from the table
`mujoco.mjx._src.collision_driver._COLLISION_FUNC`, and `mjx.put_model` refuses a model with
a colliding pair the table lacks (`NotImplementedError: (mjGEOM_ELLIPSOID, mjGEOM_BOX)
collisions not implemented.` for dm_control's fish and swimmer). `register()` adds ours to
that table for the pairs MJX lacks, and only those: an MJX function is never replaced, so if
a later MJX gains a pair, its own function wins. The table is private MJX API, so this module
is pinned to one mujoco-mjx version (`PINNED_MJX_VERSION`); `register()` refuses any other.

Design: one file per pair, named `<type1>_<type2>.py` in MJX's key order (geom1 has the
lower `mjtGeom` value), each exporting a function in MJX's collision-function form

    fn(m: mjx.Model, d: mjx.Data, key: FunctionKey, geom: int array [npair, 2])
        -> (dist [npair*ncon], pos [npair*ncon, 3], frame [npair*ncon, 3, 3]),  fn.ncon = int

(normal `frame[:, 0]` from geom1 to geom2, `dist < 0` penetration, `pos` midway between the
surfaces), plus a single-pair pure function that the tests compare with C MuJoCo.

Our pairs (C MuJoCo 3.17's routine for the same pair, which is the reference):

    pair               module             ncon  C MuJoCo
    ELLIPSOID-BOX      ellipsoid_box      1     mjc_Convex (nativeccd GJK/EPA), 1 contact
    CYLINDER-BOX       cylinder_box       4     mjc_Convex: GJK/EPA, then multiccd: <= 4
    HFIELD-ELLIPSOID   hfield_ellipsoid   4     mjc_ConvexHField: GJK/EPA per prism, <= 50
    HFIELD-CYLINDER    hfield_cylinder    4     mjc_ConvexHField: GJK/EPA per prism, <= 50

The height-field pairs solve each of C's prisms exactly and keep the deepest contact plus 3
spread ones (C keeps one per penetrating prism; MJX's own height-field pairs keep 4).
CYLINDER-BOX is C's multi-contact rule itself (a cap on a face: the face clipped by the
cap's 16-gon, 4 of its points; a side on a face: 2; else 1) on the exact contact.
Rays: `mjx.ray` skips height fields; `ray_hfield` (not a pair: `ray_hfield.ray_hfield` and
`ray_hfield.rangefinder_with_hfields`) adds them, as C's `mj_ray` / `mj_sensorPos`.

The other pairs MJX 3.17 lacks slot in beside them: ELLIPSOID-MESH, CYLINDER-MESH. Adding
one:
1. write `ellipsoid_mesh.py` (say) with `ellipsoid_mesh(m, d, key, geom)` and its `ncon`
   (what C's `mj_maxContact` gives for the pair; hfield pairs also get `key.subgrid_size`);
2. add one line to `_PAIRS` below;
3. add its tests beside tests/physics/test_collision.py: against C MuJoCo's contacts (tight
   `opt.ccd_tolerance`) and hand-worked cases.
"""

from __future__ import annotations

import functools
import importlib.metadata

from mujoco.mjx._src import collision_driver
from mujoco.mjx._src.types import GeomType

from jaxcontrol.collision import cylinder_box as _cylinder_box
from jaxcontrol.collision import ellipsoid_box as _ellipsoid_box  # the module stays an attribute
from jaxcontrol.collision import hfield_cylinder as _hfield_cylinder
from jaxcontrol.collision import hfield_ellipsoid as _hfield_ellipsoid

__all__ = ["PAIRS", "PINNED_MJX_VERSION", "register"]

#: The mujoco-mjx release these functions were validated against (tests/physics/test_collision.py,
#: tests/physics/test_collision_hfield.py, tests/physics/test_collision_cylinder_box.py).
PINNED_MJX_VERSION = "3.17.0"

# (geom1 type, geom2 type) in MJX's order (lower type first) -> our collision function.
_PAIRS = {
    (GeomType.ELLIPSOID, GeomType.BOX): _ellipsoid_box.ellipsoid_box,
    (GeomType.CYLINDER, GeomType.BOX): _cylinder_box.cylinder_box,
    (GeomType.HFIELD, GeomType.ELLIPSOID): _hfield_ellipsoid.hfield_ellipsoid,
    (GeomType.HFIELD, GeomType.CYLINDER): _hfield_cylinder.hfield_cylinder,
}

#: The geom-type pairs this module provides.
PAIRS = tuple(_PAIRS)


@functools.cache
def _installed_mjx_version() -> str:
    return importlib.metadata.version("mujoco-mjx")


def _check_version() -> None:
    installed = _installed_mjx_version()
    if installed != PINNED_MJX_VERSION:
        raise RuntimeError(
            f"jaxcontrol.collision is pinned to mujoco-mjx {PINNED_MJX_VERSION}, but "
            f"mujoco-mjx {installed} is installed. It patches MJX's private collision table "
            "(mujoco.mjx._src.collision_driver._COLLISION_FUNC), so the extension must be "
            "re-validated against this MJX release (run tests/physics/test_collision.py, check which "
            "pairs MJX now implements itself) before PINNED_MJX_VERSION is raised."
        )


def register() -> tuple[tuple[GeomType, GeomType], ...]:
    """Adds our collision functions to MJX's table for the pairs MJX lacks.

    Idempotent and cheap (a version check and a few dict look-ups); call it before
    `mjx.put_model`. MJX's own functions are never replaced.

    Returns:
      The pairs this call added (empty when all were already present).

    Raises:
      RuntimeError: the installed mujoco-mjx is not `PINNED_MJX_VERSION`.
    """
    _check_version()
    table = collision_driver._COLLISION_FUNC
    added = []
    for pair, fn in _PAIRS.items():
        if pair not in table:
            table[pair] = fn
            added.append(pair)
    return tuple(added)

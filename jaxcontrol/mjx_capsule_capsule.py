"""C MuJoCo's capsule–capsule contacts in MJX: an opt-in fix.

MJX 3.17 solves two capsules' nearest points with a 1e-6 regularisation, so segments
that cross keep their points about 1e-6 apart and take the normal between them; C solves
exactly and, where the points coincide, takes the cross product of the axes. It also keeps
one contact for parallel capsules where C keeps up to two. In hopper-hop the nose and calf
cross in the hopper's plane: C's normal leaves the plane, MJX's lies in it, and 6.5% of
the hard states miss dm_control by up to 5.2 of scale (docs/parity.md).

The fix gives MJX's collision table `jaxcontrol.collision.capsule_capsule`, which is C's
routine step for step. Unlike the plane–capsule frame's fix it never reproduces MJX's
bits (the regularisation moves every nearest point a little), so it touches every model
with a capsule pair that can collide (`touching`). Off unless
`JAXCONTROL_MJX_CAPSULE_CAPSULE=1` is set before jaxcontrol is imported, or `install()`
runs before any environment is built (it gives each capsule pair two contact slots, so
states made before it have another shape): PARITY.md's records stay under stock MJX's
capsules until they are measured again (docs/design/capsule-contacts.md says why).
Pinned to mujoco-mjx 3.17.0: `needed()` checks that MJX still regularises.
"""

from __future__ import annotations

import inspect

import mujoco
from mujoco.mjx._src import collision_driver
from mujoco.mjx._src import math as mjx_math
from mujoco.mjx._src.types import GeomType

from jaxcontrol.collision import capsule_capsule as _narrow_phase
from jaxcontrol.mjx_capsule_frame import colliding_pairs

CAPSULE_CAPSULE = "capsule_capsule_exact"
ENABLE_ENV = "JAXCONTROL_MJX_CAPSULE_CAPSULE"  # "1" before import: install the fix
_PAIR = (GeomType.CAPSULE, GeomType.CAPSULE)
_STOCK = collision_driver._COLLISION_FUNC[_PAIR]
_REGULARISED = "/ (denom + 1e-6)"  # what the fix expects in MJX's nearest-point solve


def needed() -> bool:
    """Whether the installed MJX still regularises the segments' nearest points."""
    return _REGULARISED in inspect.getsource(mjx_math.closest_segment_to_segment_points)


def install() -> None:
    """Gives MJX's collision table C's capsule–capsule for functions traced from now on."""
    collision_driver._COLLISION_FUNC[_PAIR] = _narrow_phase.capsule_capsule


def uninstall() -> None:
    """Gives MJX's collision table its own capsule–capsule back."""
    collision_driver._COLLISION_FUNC[_PAIR] = _STOCK


def applied() -> tuple[str, ...]:
    """The fix's name while it is installed, else ()."""
    installed = collision_driver._COLLISION_FUNC[_PAIR] is _narrow_phase.capsule_capsule
    return (CAPSULE_CAPSULE,) if installed else ()


def touching(mj_model: mujoco.MjModel) -> tuple[str, ...]:
    """The fix's name if it is installed and `mj_model` has capsules that can collide."""
    capsule = mujoco.mjtGeom.mjGEOM_CAPSULE
    return applied() if applied() and colliding_pairs(mj_model, capsule, capsule) else ()

"""jaxcontrol's changes to stock MJX, together: which are in effect, which touch a model.

Three fixes, each in its own module, each bringing MJX to C MuJoCo's reading:

  * `mjx_line_search` (`ELLIPTIC_LINE_SEARCH`): on by default, off with
    `JAXCONTROL_STOCK_MJX=1`; elliptic-cone models only.
  * `mjx_capsule_frame` (`PLANE_CAPSULE_FRAME`): off by default, on with
    `JAXCONTROL_MJX_CAPSULE_FRAME=1`; steep capsules on planes under pyramidal cones.
  * `mjx_capsule_capsule` (`CAPSULE_CAPSULE`): off by default, on with
    `JAXCONTROL_MJX_CAPSULE_CAPSULE=1`; C's capsule–capsule contacts (exact nearest
    points, C's normal where segments cross, two contacts for parallel capsules).

`applied()` names those in effect and `touching(mj_model)` those that can change a
model's physics; parity records and soak parts store the latter, so a measurement
under one physics never mixes with one under another. `stock()` runs stock MJX for
what is traced inside it, `installed(fix)` one opt-in fix.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import jax
import mujoco

from jaxcontrol import mjx_capsule_capsule, mjx_capsule_frame, mjx_line_search

ELLIPTIC_LINE_SEARCH = mjx_line_search.ELLIPTIC_LINE_SEARCH
PLANE_CAPSULE_FRAME = mjx_capsule_frame.PLANE_CAPSULE_FRAME
CAPSULE_CAPSULE = mjx_capsule_capsule.CAPSULE_CAPSULE
STOCK_ENV = mjx_line_search.STOCK_ENV  # "1": no line-search fix
_FIXES = (mjx_line_search, mjx_capsule_frame, mjx_capsule_capsule)


def applied() -> tuple[str, ...]:
    """The fixes in effect for functions traced from now on."""
    return tuple(name for fix in _FIXES for name in fix.applied())


def touching(mj_model: mujoco.MjModel) -> tuple[str, ...]:
    """The fixes in effect that can change `mj_model`'s physics."""
    return tuple(name for fix in _FIXES for name in fix.touching(mj_model))


@contextlib.contextmanager
def stock() -> Iterator[None]:
    """Stock MJX for what is traced inside (tests and benchmarks that measure MJX
    itself). JAX's compiled code is released on entry and exit: an inner jit traced
    under one setting would otherwise be reused under the other."""
    before = [bool(fix.applied()) for fix in _FIXES]
    jax.clear_caches()
    for fix in _FIXES:
        fix.uninstall()
    try:
        yield
    finally:
        for fix, was in zip(_FIXES, before):
            if was:
                fix.install()
        jax.clear_caches()


@contextlib.contextmanager
def installed(fix) -> Iterator[None]:
    """One opt-in fix (`mjx_capsule_frame`, `mjx_capsule_capsule`) in place for what is
    traced inside, and as it was after; JAX's compiled code is released on entry and exit,
    as in `stock()`."""
    was = bool(fix.applied())
    jax.clear_caches()
    fix.install()
    try:
        yield
    finally:
        if not was:
            fix.uninstall()
        jax.clear_caches()

"""Planar stacker: the manipulator's arm with 1 to 4 boxes to stack on a target.

dm_control's stacker model is the manipulator's arena, arm and hand (with
stiffer contacts: every geom's `solref` is (0.01, 1) where the manipulator's is
(0.005, 1)), four boxes, of which its builder keeps the first `n_boxes`, and a
ghost box marking the target.
"""

from __future__ import annotations

import operator

import mujoco

from jaxcontrol.mjcf import common, manipulator

BOX_X = (0.5, 0.4, 0.3, 0.2)  # each box's x position (and its slide's ref)
MAX_BOXES = len(BOX_X)
BOX_HALF_SIZE = 0.022
_BOX = mujoco.mjtGeom.mjGEOM_BOX
_SOLREF = (0.01, 1)


def _check_n_boxes(n_boxes) -> int:
    """`n_boxes` as an int; dm_control's builder keeps boxes 0 to n_boxes - 1 of 4."""
    try:
        n = operator.index(n_boxes)
    except TypeError:
        n = None
    if n is None or isinstance(n_boxes, bool) or not 1 <= n <= MAX_BOXES:
        raise ValueError(f"n_boxes must be an integer in [1, {MAX_BOXES}], got {n_boxes!r}")
    return n


def make_spec(n_boxes: int) -> mujoco.MjSpec:
    """Returns the stacker spec with `n_boxes` boxes (1 to 4)."""
    n_boxes = _check_n_boxes(n_boxes)
    spec = manipulator.make_arm_spec("planar stacker")
    world = spec.worldbody
    size = (BOX_HALF_SIZE,) * 3
    for b in range(n_boxes):
        manipulator.add_prop(world, f"box{b}", (BOX_X[b], 0, 0.4), _BOX, size)
    manipulator.add_ghost(world, "target", (0, 0.001, BOX_HALF_SIZE), _BOX, size)
    for geom in spec.geoms:  # stacker's default geom class
        geom.solref = _SOLREF
    return spec


def make_model(n_boxes: int = 2) -> mujoco.MjModel:
    """Returns the compiled stacker model with `n_boxes` boxes."""
    return common.compile_spec(make_spec(n_boxes))

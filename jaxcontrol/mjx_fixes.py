"""Fixes to stock MJX that jaxcontrol applies when it is imported.

**Elliptic-cone line search** (`ELLIPTIC_LINE_SEARCH`; mujoco-mjx 3.17.0,
`mujoco.mjx._src.solver._LSPoint.create`). For each elliptic contact the line
search takes the tangential force at step `alpha` as `sqrt(tsqr)`, with
`tsqr = uu + alpha * (2 uv + alpha vv)`. That is `|u + alpha v|^2` expanded, and
when the step brings a contact's tangential residual to zero (a contact that
sticks, reached by Newton's full step) float32 rounding can leave it a tiny
negative number. C MuJoCo (`engine_solver.c`) tests `tsqr <= 0` first and takes no
tangential force there; MJX takes the square root of every row and masks zones by
multiplying, so the negative row gives NaN, `0 * NaN` makes the point's cost NaN,
no bracket moves, and the solver stops at its warm start: the constraint forces
of that physics step are never solved. In stacker's float32 soaks boxes were
then flung at up to 2,453 (|qvel|; C MuJoCo's 1e7-step soaks stay under 123):
BENCHMARKS.md, "MJX's elliptic line search". The fix gives the solver module a
`jax.numpy` whose `sqrt` reads a negative input as zero, which is C's reading; NaN
still propagates. Every other `sqrt` in that module takes a non-negative input,
where the result is the same bits.

Set `JAXCONTROL_STOCK_MJX=1` before importing jaxcontrol to run stock MJX (to
measure it, or to compare with another MJX user). `applied()` names the fixes in
effect; parity records and soak parts store it, so a measurement under one physics
never mixes with one under another.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import mujoco
from mujoco.mjx._src import solver

ELLIPTIC_LINE_SEARCH = "elliptic_line_search_sqrt"
STOCK_ENV = "JAXCONTROL_STOCK_MJX"
# What the fix expects to find in MJX's line-search point (and what it repairs).
_UNGUARDED_SQRT = "t = jp.sqrt(tsqr)"

_STOCK_NUMPY = solver.jp


class _NonNegativeSqrt:
    """`jax.numpy`, except that `sqrt` reads a negative input as 0 (as C MuJoCo's
    `tsqr <= 0` test does); NaN stays NaN."""

    def __getattr__(self, name: str):
        return getattr(jnp, name)

    @staticmethod
    def sqrt(x):
        return jnp.sqrt(jnp.maximum(x, 0))


def needed() -> bool:
    """Whether the installed MJX's line search still takes the unguarded square root."""
    return _UNGUARDED_SQRT in inspect.getsource(solver._LSPoint.create)


def apply() -> tuple[str, ...]:
    """Applies the fixes unless `JAXCONTROL_STOCK_MJX` is set; returns `applied()`.
    Call before anything traces MJX's solver (jaxcontrol's import does)."""
    if os.environ.get(STOCK_ENV, "") not in ("", "0") or not needed():
        solver.jp = _STOCK_NUMPY
    else:
        solver.jp = _NonNegativeSqrt()
    return applied()


def applied() -> tuple[str, ...]:
    """The fixes in effect for functions traced from now on."""
    return (ELLIPTIC_LINE_SEARCH,) if isinstance(solver.jp, _NonNegativeSqrt) else ()


def touching(mj_model: mujoco.MjModel) -> tuple[str, ...]:
    """The fixes in effect that can change `mj_model`'s physics (elliptic cones only)."""
    elliptic = mj_model.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    return applied() if elliptic else ()  # the one fix is the elliptic line search's


@contextlib.contextmanager
def stock() -> Iterator[None]:
    """Stock MJX for what is traced inside (tests and benchmarks that measure MJX
    itself). JAX's compiled code is released on entry and exit: an inner jit traced
    under one setting would otherwise be reused under the other."""
    before = solver.jp
    jax.clear_caches()
    solver.jp = _STOCK_NUMPY
    try:
        yield
    finally:
        solver.jp = before
        jax.clear_caches()

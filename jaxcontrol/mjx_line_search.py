"""jaxcontrol's fix to stock MJX's elliptic-cone line search: the mechanism.

`jaxcontrol.import_setup` decides at import whether to apply it (it does unless
`JAXCONTROL_STOCK_MJX=1` or the installed MJX no longer needs it); this module
says what the fix changes and offers it to tests and benchmarks.

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
docs/design/elliptic-line-search.md. The fix gives the solver module a
`jax.numpy` whose `sqrt` reads a negative input as zero, which is C's reading; NaN
still propagates. Every other `sqrt` in that module takes a non-negative input,
where the result is the same bits.

`applied()` names this fix while it is in effect; `jaxcontrol.mjx_fixes` gathers it
with the other fix to MJX (`mjx_capsule_frame`) for parity records and soak parts,
so a measurement under one physics never mixes with one under another. `stock()`
runs MJX without this fix for what is traced inside it.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import mujoco
from mujoco.mjx._src import solver

ELLIPTIC_LINE_SEARCH = "elliptic_line_search_sqrt"
STOCK_ENV = "JAXCONTROL_STOCK_MJX"  # set (not "0") before import: stock MJX
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


def install() -> None:
    """Gives MJX's solver the fixed `sqrt` for functions traced from now on."""
    solver.jp = _NonNegativeSqrt()


def uninstall() -> None:
    """Gives MJX's solver stock `jax.numpy` back for functions traced from now on."""
    solver.jp = _STOCK_NUMPY


def applied() -> tuple[str, ...]:
    """The fixes in effect for functions traced from now on."""
    return (ELLIPTIC_LINE_SEARCH,) if isinstance(solver.jp, _NonNegativeSqrt) else ()


def touching(mj_model: mujoco.MjModel) -> tuple[str, ...]:
    """This fix's name if it is in effect and `mj_model` has elliptic cones, else ()."""
    elliptic = mj_model.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    return applied() if elliptic else ()


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

"""Everything `import jaxcontrol` sets up besides defining its own names.

`jaxcontrol/__init__.py` calls `apply_before_imports()` as its first statement,
before it imports JAX's backends, MuJoCo or MJX, and `apply_after_imports()` as
its last, once `jaxcontrol.ALL_TASKS` and `jaxcontrol.load` exist. Each piece is
one function below, run in the order listed. None of them touches `jax.config`,
and the import prints nothing: tests/test_import_setup.py checks both in a fresh
process.

1. **XLA's CPU fusion emitters off** (`set_xla_cpu_flags`).
   What: appends `--xla_cpu_use_fusion_emitters=false` to `XLA_FLAGS`.
   Why: XLA's CPU fusion emitters (jax >= 0.7) compile MJX's kinematic chains
   into fused kernels that recompute each parent's pose for every child; one
   vmapped `mjx.kinematics` of swimmer15's 16-body chain took 1.1 s for 12
   environments with them, 1.4 ms without (jax-ml/jax#33761,
   google-deepmind/mujoco#2957). The flag touches only the CPU backend.
   When: XLA reads `XLA_FLAGS` once, when JAX starts its first backend, so this
   runs first; if JAX started before jaxcontrol was imported it only warns. It is
   never added from jaxlib 0.11 on, whose XLA no longer knows the flag and aborts
   the process on an unknown one (pyproject.toml pins jax < 0.10 for reasons of
   its own: docs/design/jax-pin.md).
   Off: name the setting in `XLA_FLAGS` yourself
   (`XLA_FLAGS=--xla_cpu_use_fusion_emitters=true`); the user's setting wins.
   Evidence: docs/design/xla-cpu-flags.md.

2. **A headless `MUJOCO_GL`** (`choose_mujoco_gl`).
   What: where `MUJOCO_GL` is unset on Linux and no display (`DISPLAY`,
   `WAYLAND_DISPLAY`) exists, sets it to `egl` (an NVIDIA device and libEGL
   present) or `osmesa` (libOSMesa present): `jaxcontrol.render.gl.headless_default`.
   Why: MuJoCo's Linux default, glfw, needs a display, and MuJoCo reads
   `MUJOCO_GL` once, when `mujoco` is first imported; so this runs before MuJoCo
   loads, and does nothing if `mujoco` was imported first.
   Off: set `MUJOCO_GL` yourself (any value, `disable` included); it is never
   changed. Evidence: docs/rendering.md, "Headless machines".

3. **MJX imported without its Warp chatter** (`import_mjx_quietly`).
   What: imports `mujoco.mjx` with stdout captured and writes back every line
   except "Failed to import warp: No module named 'warp'" and its `mujoco_warp`
   twin (logged at debug level instead, on this module's logger).
   Why: `import mujoco.mjx` (3.17) tries its optional Warp backend and prints
   those lines when the optional `warp` package is absent; jaxcontrol never uses
   Warp. Any other line (warp installed but broken, say) still shows.
   Off: import `mujoco.mjx` before jaxcontrol; then nothing is captured.

4. **MJX's elliptic line search as C MuJoCo reads it** (`fix_mjx_line_search`).
   What: `jaxcontrol.mjx_line_search.install()`: MJX's solver module gets a
   `jax.numpy` whose `sqrt` reads a negative input as zero.
   Why: in float32 a contact's squared tangential force can round below zero;
   stock MJX then takes the square root of a negative number, the line search's
   cost turns NaN and that physics step's constraints are left unsolved (boxes
   flung in stacker). C MuJoCo tests `tsqr <= 0` first. It must be in place
   before anything traces MJX's solver. Only models with elliptic cones (finger,
   manipulator, stacker) are affected. It steps aside by itself when an MJX
   release no longer takes the unguarded square root (`mjx_line_search.needed`).
   Off: `JAXCONTROL_STOCK_MJX=1` before importing jaxcontrol (stock MJX for the
   process), or `jaxcontrol.mjx_line_search.stock()` around what you trace.
   Evidence: docs/design/elliptic-line-search.md.

   Two more fixes are off by default (`fix_mjx_capsules`): C's contact frame for steep
   capsules on planes (`jaxcontrol.mjx_capsule_frame`, `JAXCONTROL_MJX_CAPSULE_FRAME=1`)
   and C's capsule–capsule contacts (`jaxcontrol.mjx_capsule_capsule`,
   `JAXCONTROL_MJX_CAPSULE_CAPSULE=1`); set before importing jaxcontrol, they are
   installed here. Evidence: docs/design/capsule-contacts.md.

5. **Gymnasium ids** (`register_gymnasium_ids`).
   What: registers `jaxcontrol/DOMAIN-TASK-v0` for every task with Gymnasium, at
   once if `gymnasium` is already imported, else from a one-shot `sys.meta_path`
   finder just after `gymnasium`'s own import finishes
   (`jaxcontrol.wrappers.gymnasium_registration`).
   Why: `gymnasium.make("jaxcontrol/cartpole-swingup-v0")` works after
   `import jaxcontrol` while `import jaxcontrol` never imports Gymnasium (nor
   fails without it) and costs microseconds. It runs last because registering
   reads `jaxcontrol.ALL_TASKS`.
   Off: nothing to turn off (it registers names only); the finder removes itself
   once it has run. Evidence: docs/wrappers.md.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import logging
import os
import re
import sys
import warnings

log = logging.getLogger(__name__)


def apply_before_imports() -> None:
    """Pieces 1-4, in order: before JAX starts a backend, MuJoCo loads or MJX is traced."""
    set_xla_cpu_flags(stacklevel=4)  # the warning names the line that imported jaxcontrol
    choose_mujoco_gl()
    import_mjx_quietly()
    fix_mjx_line_search()
    fix_mjx_capsules()


def apply_after_imports() -> None:
    """Piece 5, once jaxcontrol's own names (`ALL_TASKS`, `load`) exist."""
    register_gymnasium_ids()


# 1. XLA's CPU fusion emitters off.

FUSION_EMITTERS_FLAG = "--xla_cpu_use_fusion_emitters=false"
# The first jaxlib whose XLA rejects the flag (an unknown XLA flag is fatal).
FIRST_JAXLIB_WITHOUT_FLAG = (0, 11)


def set_xla_cpu_flags(*, stacklevel: int = 2) -> bool:
    """Adds `FUSION_EMITTERS_FLAG` to `XLA_FLAGS` if JAX has no backend yet, the
    installed XLA knows the flag and the user named no setting of it.

    Returns whether the flag is in effect for this process. `stacklevel` is that of
    the warning given when JAX started too early (2: this function's caller).
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if not xla_knows_flag():
        return False
    if "xla_cpu_use_fusion_emitters" in flags:
        return FUSION_EMITTERS_FLAG in flags.split()
    if jax_backends_started():
        warnings.warn(
            "JAX started its backends before jaxcontrol was imported, so XLA's CPU fusion "
            f"emitters stay on; deep kinematic chains (swimmer15) then run up to 100x slower "
            f"on CPU. Import jaxcontrol first, or set XLA_FLAGS={FUSION_EMITTERS_FLAG}.",
            stacklevel=stacklevel,
        )
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {FUSION_EMITTERS_FLAG}".strip()
    return True


def xla_knows_flag(version: str | None = None) -> bool:
    """Whether the installed jaxlib's XLA (or that of jaxlib `version`) accepts the flag."""
    if version is None:
        try:
            version = importlib.metadata.version("jaxlib")
        except importlib.metadata.PackageNotFoundError:
            return False
    release = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    return release < FIRST_JAXLIB_WITHOUT_FLAG


def jax_backends_started() -> bool:
    """Whether JAX has started a backend in this process (then `XLA_FLAGS` was read)."""
    try:
        from jax._src import xla_bridge  # pylint: disable=import-outside-toplevel
    except ImportError:  # JAX moved it: assume not started
        return False
    return bool(getattr(xla_bridge, "_backends", {}))


# 2. A headless MUJOCO_GL.


def choose_mujoco_gl() -> str | None:
    """Sets `MUJOCO_GL` to the headless default if it is unset and MuJoCo is not
    imported yet; returns the value set, or None where nothing was set."""
    if "MUJOCO_GL" in os.environ or "mujoco" in sys.modules:
        return None
    from jaxcontrol.render import gl  # pylint: disable=import-outside-toplevel

    default = gl.headless_default()
    if default is not None:
        os.environ["MUJOCO_GL"] = default
    return default


# 3. MJX imported without its Warp chatter.

# "Failed to import warp: No module named 'warp'" (and mujoco_warp's twin), when warp is absent.
_MISSING_OPTIONAL = re.compile(
    r"^Failed to import (warp|mujoco_warp): No module named '(warp|mujoco_warp)(\.[\w.]+)?'$"
)


def import_mjx_quietly() -> None:
    """Imports `mujoco.mjx` once, without its lines about the missing optional Warp backend."""
    if "mujoco.mjx" in sys.modules:
        return  # already imported (and already printed) before jaxcontrol
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured):
            import mujoco.mjx  # noqa: F401  # pylint: disable=import-outside-toplevel
    finally:
        passed = without_missing_warp_lines(captured.getvalue())
        if passed:
            sys.stdout.write(passed)


def without_missing_warp_lines(text: str) -> str:
    """`text` without the missing-Warp lines, which go to the debug log."""
    kept = []
    for line in text.splitlines(keepends=True):
        if _MISSING_OPTIONAL.match(line.rstrip("\n")):
            log.debug("mujoco.mjx: %s", line.rstrip("\n"))
        else:
            kept.append(line)
    return "".join(kept)


# 4. MJX's elliptic line search as C MuJoCo reads it.


def stock_mjx_requested() -> bool:
    """Whether `JAXCONTROL_STOCK_MJX` asks for stock MJX (set, and not "0")."""
    from jaxcontrol import mjx_line_search  # pylint: disable=import-outside-toplevel

    return os.environ.get(mjx_line_search.STOCK_ENV, "") not in ("", "0")


def fix_mjx_line_search() -> tuple[str, ...]:
    """Installs the line-search fix unless stock MJX is requested or MJX no longer
    needs it; returns the fixes in effect (`mjx_line_search.applied()`)."""
    from jaxcontrol import mjx_line_search  # pylint: disable=import-outside-toplevel

    if stock_mjx_requested() or not mjx_line_search.needed():
        mjx_line_search.uninstall()
    else:
        mjx_line_search.install()
    return mjx_line_search.applied()


def fix_mjx_capsules() -> tuple[str, ...]:
    """Installs each opt-in capsule fix whose variable is "1" (`JAXCONTROL_MJX_CAPSULE_FRAME`:
    C's plane–capsule frame; `JAXCONTROL_MJX_CAPSULE_CAPSULE`: C's capsule pairs) while MJX
    still needs it, and leaves MJX's own otherwise; returns the names of those in effect."""
    from jaxcontrol import (  # pylint: disable=import-outside-toplevel
        mjx_capsule_capsule,
        mjx_capsule_frame,
    )

    in_effect = ()
    for fix in (mjx_capsule_frame, mjx_capsule_capsule):
        if os.environ.get(fix.ENABLE_ENV, "") == "1" and fix.needed():
            fix.install()
        else:
            fix.uninstall()
        in_effect += fix.applied()
    return in_effect


# 5. Gymnasium ids.


def register_gymnasium_ids() -> None:
    """Registers `jaxcontrol/DOMAIN-TASK-v0` now if Gymnasium is imported, else when it is."""
    from jaxcontrol.wrappers import gymnasium_registration  # pylint: disable=import-outside-toplevel

    gymnasium_registration.install()

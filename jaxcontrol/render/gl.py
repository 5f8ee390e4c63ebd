"""Which OpenGL backend MuJoCo's renderer uses, and what to install when none works.

MuJoCo picks its backend from the `MUJOCO_GL` environment variable once, when
`mujoco` is first imported (so set it before `import jaxcontrol`):

  * `egl`: headless GPU rendering (NVIDIA driver, or `apt-get install libegl1`);
  * `osmesa`: headless software rendering on any CPU (`apt-get install libosmesa6`);
  * `glfw` (MuJoCo's default on Linux): needs a display (`DISPLAY`);
  * `disable`: no rendering at all.

Where `MUJOCO_GL` is unset on a Linux machine without a display, where glfw
cannot work, `import jaxcontrol` sets it to egl (an NVIDIA device and libEGL
present) or osmesa (libOSMesa present) first: `headless_default` here, applied by
`jaxcontrol.import_setup.choose_mujoco_gl`. A value the user set is never
changed. This module imports MuJoCo only inside its functions, so that the
import-time set-up can use it before MuJoCo loads.

Only `jaxcontrol.render.cpu` (images and videos through `mujoco.Renderer`) needs
OpenGL; the pure-JAX renderer behind `jaxcontrol.wrappers.Pixels` needs none.
"""

from __future__ import annotations

import ctypes.util
import functools
import os
import sys

INSTALL = (
    "set MUJOCO_GL before importing jaxcontrol or mujoco: MUJOCO_GL=egl on a GPU machine "
    "(NVIDIA driver, or `apt-get install libegl1`), MUJOCO_GL=osmesa on a CPU machine "
    "(`apt-get install libosmesa6`)"
)


class RenderingUnavailable(RuntimeError):
    """No OpenGL backend works in this process; the message says what to install."""


def backend() -> str:
    """`MUJOCO_GL` as MuJoCo read it ('' when unset: glfw on Linux)."""
    return os.environ.get("MUJOCO_GL", "").strip().lower()


def headless_default() -> str | None:
    """A working `MUJOCO_GL` for a machine without a display, or None.

    egl where an NVIDIA device and libEGL exist, else osmesa where libOSMesa
    exists.
    """
    if sys.platform != "linux" or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    if os.path.exists("/dev/nvidia0") and ctypes.util.find_library("EGL"):
        return "egl"
    if ctypes.util.find_library("OSMesa"):
        return "osmesa"
    return None


def _missing_library() -> str:
    name = backend()
    if name in ("disable", "disabled", "off", "false", "0"):
        return f"MUJOCO_GL={name} turns rendering off"
    if name == "osmesa" and not ctypes.util.find_library("OSMesa"):
        return "MUJOCO_GL=osmesa but libOSMesa is not installed (apt-get install libosmesa6)"
    if name == "egl" and not ctypes.util.find_library("EGL"):
        return "MUJOCO_GL=egl but libEGL is not installed (apt-get install libegl1)"
    if name in ("", "glfw") and sys.platform == "linux" and not os.environ.get("DISPLAY"):
        return (
            f"MUJOCO_GL={name or '(unset)'} means glfw, which needs a display, and DISPLAY is unset"
        )
    return f"MUJOCO_GL={name or '(unset)'}: MuJoCo has no OpenGL context"


@functools.cache
def unavailable_reason() -> str | None:
    """Why OpenGL rendering cannot work in this process, or None if it works.

    Creates (and frees) one tiny context to be sure; the answer is cached.
    """
    import mujoco  # pylint: disable=import-outside-toplevel

    if getattr(mujoco, "GLContext", None) is None or getattr(mujoco, "Renderer", None) is None:
        return f"{_missing_library()}; {INSTALL}"
    try:
        context = mujoco.GLContext(1, 1)
        context.make_current()
        context.free()
    except Exception as e:  # noqa: BLE001 - each backend raises its own kinds
        return f"{_missing_library()} ({type(e).__name__}: {e}); {INSTALL}"
    return None


def require() -> None:
    """Raises `RenderingUnavailable` (naming what to install) unless OpenGL works."""
    reason = unavailable_reason()
    if reason is not None:
        raise RenderingUnavailable(f"cannot render with MuJoCo's OpenGL renderer: {reason}")

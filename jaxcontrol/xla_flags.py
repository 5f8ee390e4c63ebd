"""XLA settings that jaxcontrol applies before JAX starts its CPU backend.

XLA's CPU fusion emitters (jax >= 0.7) compile MJX's kinematic chains into
fused kernels that recompute each parent's pose for every child: on this
project's pinned jax 0.10.2, one vmapped `mjx.kinematics` of swimmer15's
16-body chain takes 1.1 s for 12 environments with them, 1.4 ms without
(jax-ml/jax#33761, google-deepmind/mujoco#2957). jaxcontrol turns them off,
unless `XLA_FLAGS` already names the setting; the flag touches only the CPU
backend. BENCHMARKS.md has the measurements behind this default. jaxlib 0.11.2's
XLA (on the GPU machine) no longer knows the flag and aborts the process on it,
so from jaxlib 0.11 on it is never added.
"""

from __future__ import annotations

import importlib.metadata
import os
import warnings

FUSION_EMITTERS_FLAG = "--xla_cpu_use_fusion_emitters=false"
# The first jaxlib whose XLA rejects the flag (an unknown XLA flag is fatal).
FIRST_JAXLIB_WITHOUT_FLAG = (0, 11)


def apply() -> bool:
    """Adds our CPU flag to `XLA_FLAGS` if JAX has no backend yet and the user set none.

    Returns whether the flag is in effect for this process.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if not xla_knows_flag():
        return False
    if "xla_cpu_use_fusion_emitters" in flags:
        return FUSION_EMITTERS_FLAG in flags.split()
    if _backends_started():
        warnings.warn(
            "JAX started its backends before jaxcontrol was imported, so XLA's CPU fusion "
            f"emitters stay on; deep kinematic chains (swimmer15) then run up to 100x slower "
            f"on CPU. Import jaxcontrol first, or set XLA_FLAGS={FUSION_EMITTERS_FLAG}.",
            stacklevel=3,
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


def _backends_started() -> bool:
    try:
        from jax._src import xla_bridge
    except ImportError:  # JAX moved it: assume not started
        return False
    return bool(getattr(xla_bridge, "_backends", {}))

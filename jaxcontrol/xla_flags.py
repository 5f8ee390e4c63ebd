"""XLA settings that jaxcontrol applies before JAX starts its CPU backend.

XLA's CPU fusion emitters (jax >= 0.7) compile MJX's kinematic chains into
fused kernels that recompute each parent's pose for every child: on this
project's pinned jax 0.10.2, one vmapped `mjx.kinematics` of swimmer15's
16-body chain takes 1.1 s for 12 environments with them, 1.4 ms without
(jax-ml/jax#33761, google-deepmind/mujoco#2957). jaxcontrol turns them off,
unless `XLA_FLAGS` already names the setting; the flag touches only the CPU
backend. BENCHMARKS.md has the measurements behind this default.
"""

from __future__ import annotations

import os
import warnings

FUSION_EMITTERS_FLAG = "--xla_cpu_use_fusion_emitters=false"


def apply() -> bool:
    """Adds our CPU flag to `XLA_FLAGS` if JAX has no backend yet and the user set none.

    Returns whether the flag is in effect for this process.
    """
    flags = os.environ.get("XLA_FLAGS", "")
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


def _backends_started() -> bool:
    try:
        from jax._src import xla_bridge
    except ImportError:  # JAX moved it: assume not started
        return False
    return bool(getattr(xla_bridge, "_backends", {}))

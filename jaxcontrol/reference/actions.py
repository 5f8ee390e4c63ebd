"""The range that random and open-loop actions are drawn from."""

from __future__ import annotations

import mujoco
import numpy as np


def action_bounds(spec) -> tuple[np.ndarray, np.ndarray]:
    """The spec's bounds, with an unbounded actuator's (+-mjMAXVAL, as LQR's motors)
    taken as [-1, 1], as dm_control's own suite tests draw them."""
    low = np.where(np.abs(spec.minimum) >= mujoco.mjMAXVAL, -1.0, spec.minimum)
    high = np.where(np.abs(spec.maximum) >= mujoco.mjMAXVAL, 1.0, spec.maximum)
    return low, high

"""The one-step parity target, and the differences that miss it."""

from __future__ import annotations

ONE_STEP_TARGET = {"float64": 1e-9, "float32": 1e-4}  # float32: relative to scale


RAW_STATE_KEYS = ("qpos", "qvel")


def one_step_tolerance(dtype: str, raw: dict[str, float], key: str | None = None) -> float:
    """The one-step target: `ONE_STEP_TARGET[dtype]` (float32's relative to each
    quantity's scale), or 10x raw MJX's own error against C MuJoCo on the same
    states (its qpos and qvel), whichever is larger. For a quantity `key` that
    raw MJX measured too (an observation), 10x raw MJX's error in that quantity
    if larger still.

    Raw MJX's float32 error is its own along long chains: swimmer15's 15
    substeps of a 16-body chain put stock `mjx.step`'s velocities 3.6e-4 of
    scale from C MuJoCo's, and ours exactly as far. Its contact forces differ
    from C's where its contacts do (height fields), and so do force sensors.
    """
    state = max((raw[k] for k in RAW_STATE_KEYS if k in raw), default=0.0)
    tolerance = max(ONE_STEP_TARGET[dtype], 10 * state)
    if key is not None and key not in RAW_STATE_KEYS and key in raw:
        tolerance = max(tolerance, 10 * raw[key])
    return tolerance


def one_step_misses(
    dtype: str, differences: dict[str, float], raw: dict[str, float]
) -> dict[str, tuple[float, float]]:
    """{quantity: (difference, tolerance)} for each difference over its tolerance."""
    misses = {}
    for key, worst in differences.items():
        tolerance = one_step_tolerance(dtype, raw, key)
        if not worst <= tolerance:  # NaN misses too
            misses[key] = (worst, tolerance)
    return misses

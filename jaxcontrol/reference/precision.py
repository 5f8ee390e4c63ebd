"""Float64 or float32 for a comparison with C MuJoCo or dm_control."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import jax


@contextlib.contextmanager
def precision(x64: bool) -> Iterator[None]:
    """`jax.enable_x64(x64)`, releasing JAX's compiled code when the mode changes.

    JAX 0.10 can reuse an inner jit's lowering from the other mode after a
    switch, which then fails to lower ("operand type mismatch: expected
    tensor<3x3xf64> ... provided tensor<3x3xf32>": `jnp.tril` of a NumPy
    constant, as in MJX's RK4). Clearing the caches on entry and exit lets one
    process run float32 and float64 parity one after the other.
    """
    switch = bool(jax.config.jax_enable_x64) != x64
    if switch:
        jax.clear_caches()
    try:
        with jax.enable_x64(x64):
            yield
    finally:
        if switch:
            jax.clear_caches()

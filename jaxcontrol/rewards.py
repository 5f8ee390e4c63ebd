"""Soft, differentiable "is x within bounds?" rewards in pure JAX.

This module provides :func:`tolerance`, the shaped-reward primitive that the
Control Suite tasks are built on, with the same numerical semantics as
``dm_control.utils.rewards.tolerance``:

* inside the closed interval ``bounds`` the reward is exactly 1;
* outside it, the reward is a sigmoid-shaped function of the distance to the
  nearest bound, measured in units of ``margin``, and equals
  ``value_at_margin`` at a distance of exactly ``margin``;
* with ``margin == 0`` the reward is a hard 0/1 indicator of ``bounds``.

The shape parameters (``bounds``, ``margin``, ``sigmoid``,
``value_at_margin``) are ordinary Python values that are validated and turned
into constants when the function is traced; only ``x`` is a JAX value. All
functions are elementwise, ``jit``/``vmap``/``grad`` friendly, and return the
floating dtype of ``x`` (integer or boolean ``x`` is promoted to JAX's default
float dtype: float32, or float64 when x64 is enabled).

Numerical notes: the per-sigmoid scale constants are computed in float64 on
the host and then cast to the dtype of ``x``. Branches are written so that the
side of every ``jnp.where`` that is *not* selected is still finite, which
keeps both forward values and gradients free of NaN for finite inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp

__all__ = ["SIGMOIDS", "sigmoids", "tolerance"]

# Output of `tolerance` at a distance of `margin` from the bounds, by default.
_DEFAULT_VALUE_AT_MARGIN = 0.1

# Sigmoids whose `value_at_1` may be exactly 0 (they have compact support).
_COMPACT_SIGMOIDS = ("cosine", "linear", "quadratic")
_COMPACT_NAMES = ", ".join(repr(name) for name in _COMPACT_SIGMOIDS)


def _sech(y: jax.Array) -> jax.Array:
    """Overflow-free hyperbolic secant, ``1 / cosh(y)``.

    Written as ``2 e^{-|y|} / (1 + e^{-2|y|})`` so that neither the value nor its
    gradient overflows (``cosh`` itself reaches ``inf`` for moderate ``y``).

    Args:
        y: Floating array.

    Returns:
        ``sech(y)`` elementwise, in ``(0, 1]`` (0 only through underflow).
    """
    e = jnp.exp(-jnp.abs(y))
    return 2.0 * e / (1.0 + e * e)


def _scaled(x: jax.Array, scale: float) -> jax.Array:
    """Returns ``x * scale`` with `scale` clipped to the largest finite value.

    The scale constants are computed in float64 and can exceed the range of a
    narrower `x` dtype for extreme ``value_at_1`` (e.g. ``1 / value_at_1`` for
    ``value_at_1 < 3e-39`` in float32, or the infinite scale of
    ``'tanh_squared'`` when ``1 - value_at_1`` rounds to 1). Clipping keeps
    ``0 * scale == 0`` instead of NaN.

    Args:
        x: Floating array.
        scale: Non-negative Python float, possibly huge or infinite.

    Returns:
        ``x * scale`` in the dtype of `x`.
    """
    return x * min(scale, float(jnp.finfo(x.dtype).max))


def _gaussian(x: jax.Array, value_at_1: float) -> jax.Array:
    """Bell curve ``exp(-(s x)^2 / 2)`` with ``s`` chosen so ``f(1) = value_at_1``."""
    scale = math.sqrt(-2.0 * math.log(value_at_1))
    return jnp.exp(-0.5 * jnp.square(_scaled(x, scale)))


def _hyperbolic(x: jax.Array, value_at_1: float) -> jax.Array:
    """Hyperbolic secant ``sech(s x)`` with ``f(1) = value_at_1``."""
    scale = math.acosh(1.0 / value_at_1)
    return _sech(_scaled(x, scale))


def _long_tail(x: jax.Array, value_at_1: float) -> jax.Array:
    """Cauchy-like tail ``1 / ((s x)^2 + 1)`` with ``f(1) = value_at_1``."""
    scale = math.sqrt(1.0 / value_at_1 - 1.0)
    return 1.0 / (jnp.square(_scaled(x, scale)) + 1.0)


def _reciprocal(x: jax.Array, value_at_1: float) -> jax.Array:
    """Reciprocal decay ``1 / (s |x| + 1)`` with ``f(1) = value_at_1``."""
    scale = 1.0 / value_at_1 - 1.0
    return 1.0 / (_scaled(jnp.abs(x), scale) + 1.0)


def _cosine(x: jax.Array, value_at_1: float) -> jax.Array:
    """Raised cosine on ``|s x| < 1``, zero outside, with ``f(1) = value_at_1``."""
    scale = math.acos(2.0 * value_at_1 - 1.0) / math.pi
    scaled = _scaled(x, scale)
    inside = jnp.abs(scaled) < 1.0
    # Feed cos() only in-support arguments so that an infinite `scaled` in the
    # discarded branch cannot produce a NaN value or gradient.
    safe = jnp.where(inside, scaled, 0.0)
    return jnp.where(inside, 0.5 * (1.0 + jnp.cos(jnp.pi * safe)), 0.0)


def _linear(x: jax.Array, value_at_1: float) -> jax.Array:
    """Ramp ``1 - s x`` on ``|s x| < 1``, zero outside, with ``f(1) = value_at_1``.

    Like dm_control, the ramp is ``1 - s x`` rather than ``1 - s |x|``, so it is
    not symmetric: for ``-1 < s x < 0`` it exceeds 1. ``tolerance`` only ever
    evaluates it at non-negative distances.
    """
    scale = 1.0 - value_at_1
    scaled = _scaled(x, scale)
    inside = jnp.abs(scaled) < 1.0
    safe = jnp.where(inside, scaled, 0.0)
    return jnp.where(inside, 1.0 - safe, 0.0)


def _quadratic(x: jax.Array, value_at_1: float) -> jax.Array:
    """Parabola ``1 - (s x)^2`` on ``|s x| < 1``, else 0; ``f(1) = value_at_1``."""
    scale = math.sqrt(1.0 - value_at_1)
    scaled = _scaled(x, scale)
    inside = jnp.abs(scaled) < 1.0
    safe = jnp.where(inside, scaled, 0.0)
    return jnp.where(inside, 1.0 - jnp.square(safe), 0.0)


def _tanh_squared(x: jax.Array, value_at_1: float) -> jax.Array:
    """``1 - tanh(s x)^2`` (= ``sech(s x)^2``) with ``f(1) = value_at_1``."""
    # math.atanh(1.0) raises; sqrt(1 - v) rounds to 1 for v < ~1e-16, where the
    # curve degenerates to a spike at 0 (infinite scale), as with numpy.
    root = math.sqrt(1.0 - value_at_1)
    scale = math.inf if root >= 1.0 else math.atanh(root)
    return jnp.square(_sech(_scaled(x, scale)))


#: The available sigmoid shapes, by name.
SIGMOIDS: Mapping[str, Callable[[jax.Array, float], jax.Array]] = {
    "gaussian": _gaussian,
    "hyperbolic": _hyperbolic,
    "long_tail": _long_tail,
    "reciprocal": _reciprocal,
    "cosine": _cosine,
    "linear": _linear,
    "quadratic": _quadratic,
    "tanh_squared": _tanh_squared,
}


def _check_sigmoid_name(sigmoid: str) -> None:
    """Raises ValueError naming the valid choices if `sigmoid` is unknown."""
    if not isinstance(sigmoid, str) or sigmoid not in SIGMOIDS:
        raise ValueError(
            f"Unknown sigmoid type {sigmoid!r}; valid choices are: "
            f"{', '.join(repr(name) for name in SIGMOIDS)}."
        )


def _static_float(value: object, name: str) -> float:
    """Converts a static (trace-time) scalar argument to a Python float.

    Args:
        value: The argument; must be a concrete real scalar, not a traced value.
        name: The argument's name, for the error message.

    Returns:
        ``float(value)``.

    Raises:
        TypeError: If `value` is traced or is not convertible to a float.
    """
    if isinstance(value, jax.core.Tracer):
        raise TypeError(
            f"`{name}` must be a static Python float, not a traced JAX value "
            f"(got {value!r}); only `x` may be traced."
        )
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as e:
        raise TypeError(f"`{name}` must be a real scalar, got {value!r}.") from e


def _check_value_at_1(value_at_1: float, sigmoid: str, name: str) -> None:
    """Raises ValueError if `value_at_1` is outside the range `sigmoid` allows."""
    if sigmoid in _COMPACT_SIGMOIDS:
        if not 0.0 <= value_at_1 < 1.0:
            raise ValueError(
                f"`{name}` must satisfy 0 <= {name} < 1 for the {sigmoid!r} "
                f"sigmoid (0 is allowed only for {_COMPACT_NAMES}), "
                f"got {value_at_1}."
            )
    elif not 0.0 < value_at_1 < 1.0:
        raise ValueError(
            f"`{name}` must be strictly between 0 and 1 for the {sigmoid!r} "
            f"sigmoid, got {value_at_1}."
        )


def _as_float_array(x: jax.typing.ArrayLike) -> jax.Array:
    """Returns `x` as a JAX array with a floating dtype (default float if not)."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    return x


def sigmoids(x: jax.typing.ArrayLike, value_at_1: float, sigmoid: str) -> jax.Array:
    """Evaluates a named sigmoid-like bump: 1 at ``x == 0``, decaying with ``|x|``.

    Each shape is scaled so that its value at ``x == 1`` is ``value_at_1``.

    Args:
        x: Array (or scalar) of evaluation points; may be traced.
        value_at_1: Static float, the output at ``x == 1``. Must be in ``(0, 1)``;
            the compactly supported shapes ``'cosine'``, ``'linear'`` and
            ``'quadratic'`` also accept 0 (support ends exactly at ``x == 1``).
        sigmoid: Static name of the shape, one of ``'gaussian'``, ``'hyperbolic'``,
            ``'long_tail'``, ``'reciprocal'``, ``'cosine'``, ``'linear'``,
            ``'quadratic'``, ``'tanh_squared'``.

    Returns:
        Array with the shape of `x` and its floating dtype, values in ``[0, 1]``
        for ``x >= 0`` (see ``_linear`` for its behaviour at negative ``x``).

    Raises:
        ValueError: If `sigmoid` is unknown or `value_at_1` is out of range.
        TypeError: If `value_at_1` is traced or not a real scalar.
    """
    _check_sigmoid_name(sigmoid)
    value_at_1 = _static_float(value_at_1, "value_at_1")
    _check_value_at_1(value_at_1, sigmoid, "value_at_1")
    x = _as_float_array(x)
    return SIGMOIDS[sigmoid](x, value_at_1).astype(x.dtype)


def tolerance(
    x: jax.typing.ArrayLike,
    bounds: tuple[float, float] = (0.0, 0.0),
    margin: float = 0.0,
    sigmoid: str = "gaussian",
    value_at_margin: float = _DEFAULT_VALUE_AT_MARGIN,
) -> jax.Array:
    """Soft indicator of ``bounds[0] <= x <= bounds[1]``, elementwise.

    Args:
        x: Array (or scalar) to score; may be traced.
        bounds: Static ``(lower, upper)`` floats, inclusive. Either may be
            infinite (half-open or unbounded target) and they may be equal (an exact
            target value).
        margin: Static non-negative float setting how fast the output decays
            outside `bounds`. With 0, the output is exactly 0 outside the bounds;
            otherwise it is ``sigmoids(distance / margin, value_at_margin, sigmoid)``
            where ``distance`` is the distance to the nearest bound.
        sigmoid: Static name of the decay shape; see :func:`sigmoids`.
        value_at_margin: Static float, the output at a distance of exactly
            `margin` from the bounds. Ignored (not validated) when ``margin == 0``,
            as in dm_control.

    Returns:
        Array of the shape of `x` and its floating dtype (JAX's default float for
        integer/boolean `x`), with values in ``[0, 1]``; exactly 1 inside `bounds`.

    Raises:
        ValueError: If ``bounds[0] > bounds[1]``, `margin` is negative (or NaN),
            `sigmoid` is unknown, or `value_at_margin` is out of the range allowed
            for `sigmoid` (see :func:`sigmoids`). Raised when the call is traced.
        TypeError: If a static argument is traced or is not a real scalar.
    """
    try:
        lower, upper = bounds
    except (TypeError, ValueError) as e:
        raise ValueError(f"`bounds` must be a (lower, upper) pair, got {bounds!r}.") from e
    lower = _static_float(lower, "bounds[0]")
    upper = _static_float(upper, "bounds[1]")
    if not lower <= upper:
        raise ValueError(f"Lower bound must be <= upper bound, got bounds=({lower}, {upper}).")
    margin = _static_float(margin, "margin")
    if not margin >= 0.0:
        raise ValueError(f"`margin` must be non-negative, got {margin}.")
    _check_sigmoid_name(sigmoid)

    x = _as_float_array(x)
    in_bounds = jnp.logical_and(lower <= x, x <= upper)
    if margin == 0.0:
        return jnp.where(in_bounds, jnp.ones_like(x), jnp.zeros_like(x))

    value_at_margin = _static_float(value_at_margin, "value_at_margin")
    _check_value_at_1(value_at_margin, sigmoid, "value_at_margin")

    distance = jnp.where(x < lower, lower - x, x - upper)
    # Inside the bounds the sigmoid is discarded; evaluate it at 0 there so the
    # discarded branch is finite (e.g. `x - inf` with an infinite upper bound).
    distance = jnp.where(in_bounds, 0.0, distance)
    value = SIGMOIDS[sigmoid](distance / margin, value_at_margin)
    return jnp.where(in_bounds, 1.0, value).astype(x.dtype)

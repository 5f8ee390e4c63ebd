"""Parity and robustness tests for `jaxcontrol.rewards` against dm_control."""

from __future__ import annotations

import functools
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_control.utils import rewards as dm_rewards
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxcontrol import reference, rewards

SIGMOIDS = (
    "gaussian",
    "hyperbolic",
    "long_tail",
    "reciprocal",
    "cosine",
    "linear",
    "quadratic",
    "tanh_squared",
)
COMPACT = ("cosine", "linear", "quadratic")  # allow value_at_margin == 0

# Ours runs in float32, dm_control in float64 on the same (float32-exact)
# inputs, so all disagreement is float32 rounding inside the computation.
RTOL = 1e-6
ATOL = 1e-6

N_RANDOM_X = 32  # fixed array length: eager JAX reuses its compiled kernels


def _f32(**kwargs) -> st.SearchStrategy[float]:
    """Finite float32-representable floats, without subnormals."""
    for key in ("min_value", "max_value"):
        if key in kwargs:  # hypothesis wants float32-exact limits
            kwargs[key] = float(np.float32(kwargs[key]))
    return st.floats(
        width=32,
        allow_nan=False,
        allow_infinity=False,
        allow_subnormal=False,
        **kwargs,
    )


def _round32(values) -> np.ndarray:
    """Rounds to float32 and drops non-finite entries (for derived points)."""
    v = np.asarray(values, dtype=np.float64).astype(np.float32)
    return v[np.isfinite(v)]


@st.composite
def _configs(draw):
    """A random (sigmoid, bounds, margin, value_at_margin) configuration."""
    sigmoid = draw(st.sampled_from(SIGMOIDS))
    a = draw(_f32(min_value=-1e3, max_value=1e3))
    b = draw(st.one_of(st.just(a), _f32(min_value=-1e3, max_value=1e3)))
    lower, upper = min(a, b), max(a, b)
    if draw(st.integers(0, 5)) == 0:
        lower = -math.inf
    if draw(st.integers(0, 5)) == 0:
        upper = math.inf
    margin = draw(st.one_of(st.just(0.0), _f32(min_value=1e-4, max_value=1e4)))
    # Above 1e-30: XLA's CPU float32 flushes subnormals to zero, so a distance
    # within ~1e-38 of a bound counts as 0 in ours, which only a sigmoid scale near
    # 1/value_at_margin > 1e30 could turn into a visible difference (hypothesis
    # found value_at_margin = 1.2e-38 with x = 1.2e-38: ours 1.0, dm_control's 2/3).
    positive = _f32(min_value=1e-30, max_value=1.0, exclude_max=True)
    value_strategy = st.one_of(st.just(0.0), positive) if sigmoid in COMPACT else positive
    value_at_margin = draw(value_strategy)
    return sigmoid, (lower, upper), margin, value_at_margin


def _points(draw_xs: np.ndarray, bounds, margin) -> np.ndarray:
    """Random points plus the interesting ones: bounds and margin multiples."""
    lower, upper = bounds
    special = []
    for bound, sign in ((lower, -1.0), (upper, 1.0)):
        if math.isfinite(bound):
            special += [bound] + [bound + sign * k * margin for k in (0.25, 0.5, 1.0, 2.0, 10.0)]
    special = _round32(special)
    # Keep a fixed total length so every example reuses the same kernels.
    pad = np.zeros(12 - special.size, dtype=np.float32)
    return np.concatenate([draw_xs.astype(np.float32), special, pad])


_xs = hnp.arrays(np.float32, N_RANDOM_X, elements=_f32(min_value=-1e6, max_value=1e6))


@settings(max_examples=400, deadline=None)
@given(config=_configs(), xs=_xs)
def test_tolerance_matches_dm_control(config, xs):
    sigmoid, bounds, margin, value_at_margin = config
    x = _points(xs, bounds, margin)
    kwargs = {
        "bounds": bounds,
        "margin": margin,
        "sigmoid": sigmoid,
        "value_at_margin": value_at_margin,
    }
    ours = np.asarray(rewards.tolerance(jnp.asarray(x), **kwargs))
    with np.errstate(all="ignore"):  # dm_control's cosh/arctanh overflow
        expected = dm_rewards.tolerance(x.astype(np.float64), **kwargs)
    assert ours.dtype == np.float32
    assert not np.isnan(ours).any()
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


@settings(max_examples=200, deadline=None)
@given(
    sigmoid=st.sampled_from(SIGMOIDS),
    data=st.data(),
    xs=hnp.arrays(np.float32, N_RANDOM_X, elements=_f32(min_value=-1e3, max_value=1e3)),
)
def test_sigmoids_match_dm_control(sigmoid, data, xs):
    # Below ~1e-16, dm_control's tanh_squared scale is arctanh(1) = inf and it
    # returns NaN at x == 0 (0 * inf); stay above that.
    lo = 0.0 if sigmoid in COMPACT else 1e-12
    value_at_1 = data.draw(
        _f32(min_value=lo, max_value=1.0, exclude_max=True).filter(
            lambda v: v > 0.0 or sigmoid in COMPACT
        )
    )
    ours = np.asarray(rewards.sigmoids(jnp.asarray(xs), value_at_1, sigmoid))
    with np.errstate(all="ignore"):
        expected = dm_rewards._sigmoids(xs.astype(np.float64), value_at_1, sigmoid)
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)


# ----------------------------------------------------------------------------
# Hand-worked values.


@pytest.mark.parametrize("sigmoid", SIGMOIDS)
@pytest.mark.parametrize("value_at_margin", [0.1, 0.5, 0.9])
def test_value_at_margin_is_hit_exactly(sigmoid, value_at_margin):
    bounds, margin = (-1.0, 2.0), 0.5
    x = jnp.array([-1.5, 2.5])  # distance == margin on both sides
    out = rewards.tolerance(x, bounds, margin, sigmoid, value_at_margin)
    np.testing.assert_allclose(out, value_at_margin, rtol=1e-6)


@pytest.mark.parametrize("sigmoid", SIGMOIDS)
def test_inside_bounds_is_exactly_one(sigmoid):
    x = jnp.array([-1.0, -0.5, 0.0, 1.0, 2.0])  # includes both bounds
    out = rewards.tolerance(x, (-1.0, 2.0), 0.7, sigmoid, 0.3)
    np.testing.assert_array_equal(out, np.ones(5, np.float32))
    # Exact target: only that point scores 1, and it scores exactly 1.
    out = rewards.tolerance(jnp.array([0.25, 0.3]), (0.25, 0.25), 1.0, sigmoid, 0.3)
    assert out[0] == 1.0 and out[1] < 1.0


@pytest.mark.parametrize("sigmoid", SIGMOIDS)
def test_monotone_decreasing_outside(sigmoid):
    d = jnp.linspace(0.0, 5.0, 101)
    out = np.asarray(rewards.tolerance(1.0 + d, (0.0, 1.0), 1.0, sigmoid, 0.2))
    assert np.all(np.diff(out) <= 0.0)
    assert np.all((out >= 0.0) & (out <= 1.0))


def test_hand_worked_values():
    tol = rewards.tolerance
    # gaussian: exp(-0.5 (d * sqrt(-2 ln v))^2) = v ** (d^2).
    assert float(tol(3.0, (0.0, 1.0), 2.0, "gaussian", 0.1)) == pytest.approx(0.1, rel=1e-6)
    assert float(tol(2.0, (0.0, 1.0), 2.0, "gaussian", 0.1)) == pytest.approx(0.1**0.25, rel=1e-6)
    # linear: 1 - d (1 - v); half the margin with v = 0 is 0.5, v = 0.5 is 0.75.
    assert float(tol(2.0, (0.0, 1.0), 2.0, "linear", 0.0)) == pytest.approx(0.5)
    assert float(tol(-1.0, (0.0, 1.0), 2.0, "linear", 0.5)) == pytest.approx(0.75)
    # linear/quadratic/cosine with v = 0 reach 0 at the margin and stay there.
    for name in COMPACT:
        out = tol(jnp.array([3.0, 4.0, 100.0]), (0.0, 1.0), 2.0, name, 0.0)
        np.testing.assert_array_equal(out, np.zeros(3, np.float32))
    # quadratic: 1 - (d sqrt(1 - v))^2; cosine with v=0: (1 + cos(pi d)) / 2.
    assert float(tol(2.0, (0.0, 1.0), 2.0, "quadratic", 0.0)) == pytest.approx(0.75)
    assert float(tol(2.0, (0.0, 1.0), 2.0, "cosine", 0.0)) == pytest.approx(0.5)
    # long_tail and reciprocal with v = 0.5 have scale 1.
    assert float(tol(3.0, (0.0, 1.0), 1.0, "long_tail", 0.5)) == pytest.approx(1 / 5)
    assert float(tol(3.0, (0.0, 1.0), 1.0, "reciprocal", 0.5)) == pytest.approx(1 / 3)
    # hyperbolic: sech(d * acosh(1 / v)); tanh_squared: 1 - tanh(d * s)^2.
    assert float(tol(1.5, (0.0, 1.0), 1.0, "hyperbolic", 0.1)) == pytest.approx(
        1 / math.cosh(0.5 * math.acosh(10.0)), rel=1e-6
    )
    s = math.atanh(math.sqrt(0.9))
    assert float(tol(1.5, (0.0, 1.0), 1.0, "tanh_squared", 0.1)) == (
        pytest.approx(1 - math.tanh(0.5 * s) ** 2, rel=1e-6)
    )


def test_zero_margin_is_hard_indicator():
    x = jnp.array([-1e-3, 0.0, 0.5, 1.0, 1.0 + 1e-6, -1e9, 1e9])
    out = rewards.tolerance(x, (0.0, 1.0), margin=0.0)
    np.testing.assert_array_equal(out, [0, 1, 1, 1, 0, 0, 0])
    assert out.dtype == jnp.float32
    # Default arguments: exactly-zero target with a hard edge.
    np.testing.assert_array_equal(rewards.tolerance(jnp.array([0.0, 1e-7, -1e-7])), [1, 0, 0])


def test_infinite_bounds():
    x = jnp.array([-1e30, -1.0, 0.0, 1.0, 1e30])
    np.testing.assert_array_equal(rewards.tolerance(x, (-math.inf, math.inf), 1.0), np.ones(5))
    out = rewards.tolerance(x, (0.0, math.inf), 1.0, "linear", 0.0)
    np.testing.assert_array_equal(out, [0, 0, 1, 1, 1])
    out = rewards.tolerance(x, (-math.inf, 0.0), 2.0, "linear", 0.0)
    np.testing.assert_array_equal(out, [1, 1, 1, 0.5, 0])


# ----------------------------------------------------------------------------
# Argument checking: trace-time errors, for the same arguments as dm_control.

_BAD_ARGUMENTS = [
    ({"bounds": (1.0, 0.0)}, r"Lower bound must be <= upper bound"),
    ({"bounds": (0.0, 1.0), "margin": -0.1}, r"`margin` must be non-negative"),
    ({"margin": 1.0, "sigmoid": "gaussian", "value_at_margin": 0.0}, r"strictly between 0 and 1"),
    ({"margin": 1.0, "sigmoid": "hyperbolic", "value_at_margin": 1.0}, r"strictly between 0 and 1"),
    ({"margin": 1.0, "sigmoid": "long_tail", "value_at_margin": -0.5}, r"strictly between 0 and 1"),
    ({"margin": 1.0, "sigmoid": "reciprocal", "value_at_margin": 1.5}, r"strictly between 0 and 1"),
    (
        {"margin": 1.0, "sigmoid": "tanh_squared", "value_at_margin": 0.0},
        r"strictly between 0 and 1",
    ),
    (
        {"margin": 1.0, "sigmoid": "linear", "value_at_margin": 1.0},
        r"0 <= value_at_margin < 1 .*'cosine', 'linear', 'quadratic'",
    ),
    ({"margin": 1.0, "sigmoid": "cosine", "value_at_margin": -1e-9}, r"0 <= value_at_margin < 1"),
    ({"margin": 1.0, "sigmoid": "quadratic", "value_at_margin": 2.0}, r"0 <= value_at_margin < 1"),
    (
        {"margin": 1.0, "sigmoid": "sigmoid"},
        (
            r"Unknown sigmoid type 'sigmoid'; valid choices are: 'gaussian', "
            r"'hyperbolic', 'long_tail', 'reciprocal', 'cosine', 'linear', "
            r"'quadratic', 'tanh_squared'"
        ),
    ),
]


@pytest.mark.parametrize("kwargs,message", _BAD_ARGUMENTS)
def test_bad_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        rewards.tolerance(jnp.zeros(3), **kwargs)
    # Raised while tracing, before anything runs.
    with pytest.raises(ValueError, match=message):
        jax.jit(functools.partial(rewards.tolerance, **kwargs)).lower(jnp.zeros(3))
    # dm_control rejects the same arguments.
    with pytest.raises(ValueError):
        dm_rewards.tolerance(np.full(3, 5.0), **kwargs)


def test_nan_margin_and_bounds_are_rejected():
    with pytest.raises(ValueError, match="margin"):
        rewards.tolerance(1.0, (0.0, 1.0), margin=math.nan)
    with pytest.raises(ValueError, match="Lower bound"):
        rewards.tolerance(1.0, (math.nan, 1.0))


def test_unknown_sigmoid_rejected_even_with_zero_margin():
    # dm_control ignores `sigmoid` when margin == 0; we still catch typos.
    with pytest.raises(ValueError, match="valid choices are: 'gaussian'"):
        rewards.tolerance(1.0, (0.0, 1.0), margin=0.0, sigmoid="gausian")


def test_value_at_margin_ignored_with_zero_margin():
    # As in dm_control: value_at_margin is not validated when margin == 0.
    out = rewards.tolerance(jnp.array([0.5, 2.0]), (0.0, 1.0), 0.0, "gaussian", 0.0)
    np.testing.assert_array_equal(out, [1.0, 0.0])


@pytest.mark.parametrize(
    "value,sigmoid,message",
    [
        (0.0, "gaussian", "strictly between 0 and 1"),
        (1.0, "linear", "0 <= value_at_1 < 1"),
        (
            0.5,
            "logistic",
            (
                "valid choices are: 'gaussian', 'hyperbolic', "
                "'long_tail', 'reciprocal', 'cosine', 'linear', "
                "'quadratic', 'tanh_squared'"
            ),
        ),
    ],
)
def test_sigmoids_bad_arguments(value, sigmoid, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        rewards.sigmoids(jnp.zeros(2), value, sigmoid)


@pytest.mark.parametrize("name", ["margin", "value_at_margin", "bounds"])
def test_traced_static_argument_is_a_clear_error(name):
    def f(x, p):
        kwargs = {"bounds": (0.0, 1.0), "margin": 1.0, "value_at_margin": 0.1}
        kwargs[name] = (p, 1.0) if name == "bounds" else p
        return rewards.tolerance(x, **kwargs)

    with pytest.raises(TypeError, match="must be a static Python float"):
        jax.jit(f)(0.5, 0.2)


# ----------------------------------------------------------------------------
# Transformations, dtypes and numerical robustness.


@pytest.mark.parametrize("sigmoid", SIGMOIDS)
def test_jit_and_vmap_agree_with_eager(sigmoid):
    f = functools.partial(
        rewards.tolerance, bounds=(-0.5, 0.5), margin=2.0, sigmoid=sigmoid, value_at_margin=0.2
    )
    x = jnp.linspace(-6.0, 6.0, 48).reshape(4, 12)
    eager = f(x)
    np.testing.assert_allclose(jax.jit(f)(x), eager, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(jax.vmap(f)(x), eager, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.vmap(f)))(x), eager, rtol=1e-6, atol=1e-7)
    assert eager.shape == (4, 12)


@pytest.mark.parametrize("sigmoid", SIGMOIDS)
def test_gradients_are_finite(sigmoid):
    for bounds in [
        (0.0, 1.0),
        (0.0, math.inf),
        (-math.inf, 0.0),
        (-math.inf, math.inf),
        (2.0, 2.0),
    ]:
        f = functools.partial(
            rewards.tolerance, bounds=bounds, margin=0.5, sigmoid=sigmoid, value_at_margin=0.1
        )
        x = jnp.concatenate([jnp.linspace(-1e3, 1e3, 101), jnp.array([0.0, 1.0, 2.0, -0.5, 1.5])])
        grads = jax.vmap(jax.grad(f))(x)
        assert np.all(np.isfinite(grads)), (bounds, grads)


_EXTREMES = np.array(
    [
        0.0,
        -0.0,
        1e-45,
        -1e-45,
        1e-38,
        -1e-38,
        1e-7,
        -1e-7,
        1.0,
        -1.0,
        1e20,
        -1e20,
        3.4e38,
        -3.4e38,
        np.finfo(np.float32).max,
        -np.finfo(np.float32).max,
    ],
    dtype=np.float32,
)


@pytest.mark.parametrize("sigmoid", SIGMOIDS)
def test_no_nan_for_huge_or_tiny_x(sigmoid):
    for bounds in [
        (0.0, 0.0),
        (-1.0, 1.0),
        (0.0, math.inf),
        (-math.inf, 0.0),
        (1e30, 1e30),
        (-3e38, 3e38),
    ]:
        for margin in [1e-30, 1e-3, 1.0, 1e30]:
            for value in [1e-30, 0.1, 0.999999]:
                out = np.asarray(rewards.tolerance(_EXTREMES, bounds, margin, sigmoid, value))
                assert np.all(np.isfinite(out)), (bounds, margin, value, out)
                assert np.all((out >= 0.0) & (out <= 1.0))
        out = np.asarray(rewards.sigmoids(_EXTREMES, 1e-300, sigmoid))
        assert np.all(np.isfinite(out)), out


def test_dtypes():
    assert rewards.tolerance(0.5, (0.0, 1.0)).dtype == jnp.float32
    assert rewards.tolerance(jnp.arange(3), (0.0, 1.0)).dtype == jnp.float32
    x16 = jnp.array([0.5, 1.5], dtype=jnp.bfloat16)
    assert rewards.tolerance(x16, (0.0, 1.0), 1.0).dtype == jnp.bfloat16


@pytest.mark.parametrize("sigmoid", SIGMOIDS)
def test_float64_under_x64(sigmoid):
    x = np.linspace(-7.0, 9.0, 97)
    kwargs = {"bounds": (-1.0, 2.0), "margin": 1.3, "sigmoid": sigmoid, "value_at_margin": 0.15}
    with reference.precision(True):
        ours = rewards.tolerance(jnp.asarray(x, dtype=jnp.float64), **kwargs)
        jitted = jax.jit(functools.partial(rewards.tolerance, **kwargs))(
            jnp.asarray(x, dtype=jnp.float64)
        )
        from_int = rewards.tolerance(jnp.arange(3), (0.0, 1.0), 1.0)
        assert ours.dtype == jnp.float64
        assert jitted.dtype == jnp.float64
        assert from_int.dtype == jnp.float64
        np.testing.assert_allclose(ours, dm_rewards.tolerance(x, **kwargs), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(jitted, ours, rtol=1e-12, atol=1e-14)
    assert rewards.tolerance(jnp.arange(3), (0.0, 1.0)).dtype == jnp.float32

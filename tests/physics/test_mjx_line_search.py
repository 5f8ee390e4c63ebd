"""jaxcontrol's fix to stock MJX's elliptic-cone line search (`jaxcontrol.mjx_line_search`,
installed by `jaxcontrol.import_setup.fix_mjx_line_search`)."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from mujoco import mjx
from mujoco.mjx._src import solver

import jaxcontrol
from jaxcontrol import import_setup, mjx_fixes, mjx_line_search, reference

# A box resting on the floor: four elliptic contacts (condim 3) in MJX's constraint rows.
_BOX_ON_FLOOR = """
<mujoco>
  <option cone="elliptic"/>
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <body pos="0 0 0.0999">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_the_fix_is_in_effect_for_the_pinned_mjx():
    """mujoco-mjx 3.17's line search still takes the unguarded square root, so
    jaxcontrol's import applies the fix. When an MJX upgrade fixes it upstream,
    `needed` turns False and the fix steps aside (then drop it)."""
    assert mujoco.__version__ == "3.17.0"
    assert mjx_line_search.needed()
    assert mjx_line_search.applied() == (mjx_line_search.ELLIPTIC_LINE_SEARCH,)
    with mjx_line_search.stock():
        assert mjx_line_search.applied() == ()
    assert mjx_line_search.applied() == (mjx_line_search.ELLIPTIC_LINE_SEARCH,)


def test_stock_mjx_is_one_environment_variable_away():
    code = "import jaxcontrol.mjx_line_search as m; print(m.applied())"
    env = {**os.environ, mjx_line_search.STOCK_ENV: "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "()"


def test_the_fixed_sqrt_reads_negatives_as_zero_and_keeps_every_other_bit():
    sqrt = mjx_line_search._NonNegativeSqrt.sqrt
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.exponential(size=1000).astype(np.float32) * 10.0 ** rng.integers(-30, 30, 1000),
        np.array([0.0, np.inf, np.finfo(np.float32).tiny / 4, np.finfo(np.float32).max]),
    ]).astype(np.float32)  # fmt: skip
    assert np.array_equal(
        np.asarray(sqrt(x)).view(np.uint32), np.asarray(jnp.sqrt(x)).view(np.uint32)
    )
    assert np.asarray(sqrt(np.float32(-1.8e-23))) == 0.0
    assert np.isnan(np.asarray(sqrt(np.float32(np.nan))))  # divergence still shows


def _line_search_point(tsqr_negative: bool):
    """MJX's line-search point at alpha = 1 + 1 ulp for the box on the floor, where
    contact 0's tangential terms are what float32 rounding gave in stacker's
    flinging state (`tsqr` a tiny negative) or the exact zero they stand for."""
    m = mujoco.MjModel.from_xml_string(_BOX_ON_FLOOR)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    mx, dx = mjx.put_model(m), mjx.put_data(m, d)
    dx = jax.jit(mjx.forward)(mx, dx)
    ctx = solver.Context.create(mx, dx)
    ncon = int((dx._impl.contact.dim > 1).sum())
    assert ncon == 4
    nefc = dx._impl.efc_J.shape[0]
    uu, uv, vv = (np.zeros(ncon, np.float32) for _ in range(3))
    if tsqr_negative:  # tsqr = uu + alpha * (2 uv + alpha vv) = -1e-22 in float32
        uu[0], uv[0] = 1e-15, -5e-16
    alpha = np.nextafter(np.float32(1), np.float32(2))
    return solver._LSPoint.create(
        mx, dx, ctx, jnp.float32(alpha), jnp.zeros(nefc), jnp.zeros((nefc, 3)), jnp.zeros(3),
        jnp.asarray(uu), jnp.zeros(ncon), jnp.asarray(uv), jnp.asarray(vv),
    )  # fmt: skip


def test_stock_mjx_line_search_point_is_nan_where_tsqr_rounds_negative():
    """The bug itself: C MuJoCo reads `tsqr <= 0` as no tangential force, stock MJX
    takes its square root, and the point's cost turns NaN. If this fails on a new
    MJX, upstream has fixed it: drop `mjx_line_search`."""
    with reference.precision(False), mjx_line_search.stock():
        point = _line_search_point(tsqr_negative=True)
    assert np.isnan(float(point.cost))


def test_fixed_line_search_point_reads_negative_tsqr_as_c_mujoco_does():
    with reference.precision(False):
        fixed = _line_search_point(tsqr_negative=True)
        zero = _line_search_point(tsqr_negative=False)
        with mjx_line_search.stock():
            stock_zero = _line_search_point(tsqr_negative=False)
    for field in ("cost", "deriv_0", "deriv_1"):
        got, want = float(getattr(fixed, field)), float(getattr(zero, field))
        assert np.isfinite(got) and got == want, field
        assert float(getattr(stock_zero, field)) == want, field  # no change where stock is right


def test_jaxcontrol_applies_the_fix_before_any_env_is_built():
    env = jaxcontrol.load("finger", "spin")
    assert env.mj_model.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
    assert mjx_line_search.applied() == (mjx_line_search.ELLIPTIC_LINE_SEARCH,)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_touching_names_the_fix_only_for_elliptic_models(cone):
    m = mujoco.MjModel.from_xml_string(_BOX_ON_FLOOR.replace('"elliptic"', f'"{cone}"'))
    want = (mjx_line_search.ELLIPTIC_LINE_SEARCH,) if cone == "elliptic" else ()
    assert mjx_line_search.touching(m) == want
    with mjx_line_search.stock():
        assert mjx_line_search.touching(m) == ()


def test_the_import_decides_by_the_environment_variable(monkeypatch):
    """`fix_mjx_line_search` is what `import jaxcontrol` runs: "0" or unset fixes."""
    try:
        for value, want in (("1", ()), ("0", (mjx_line_search.ELLIPTIC_LINE_SEARCH,))):
            monkeypatch.setenv(mjx_line_search.STOCK_ENV, value)
            assert import_setup.fix_mjx_line_search() == want
            assert import_setup.stock_mjx_requested() is (want == ())
    finally:
        monkeypatch.delenv(mjx_line_search.STOCK_ENV)
        import_setup.fix_mjx_line_search()
    assert mjx_line_search.applied() == (mjx_line_search.ELLIPTIC_LINE_SEARCH,)


def test_mjx_fixes_gathers_the_line_search_with_the_other_fixes():
    """`jaxcontrol.mjx_fixes` (what records store) names this fix where it applies, and
    its `stock()` turns every fix off and back on."""
    assert mjx_fixes.applied()[0] == mjx_line_search.ELLIPTIC_LINE_SEARCH
    elliptic = mujoco.MjModel.from_xml_string(_BOX_ON_FLOOR)
    assert mjx_fixes.touching(elliptic) == (mjx_fixes.ELLIPTIC_LINE_SEARCH,)
    with mjx_fixes.stock():
        assert mjx_fixes.applied() == () and mjx_fixes.touching(elliptic) == ()
    assert mjx_fixes.applied()[0] == mjx_line_search.ELLIPTIC_LINE_SEARCH

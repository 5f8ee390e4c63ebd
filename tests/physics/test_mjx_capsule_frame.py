"""C MuJoCo's plane–capsule contact frame in MJX (`jaxcontrol.mjx_capsule_frame`, opt-in)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from mujoco import mjx
from mujoco.mjx._src import collision_primitive
from mujoco.mjx._src.collision_types import GeomInfo

import jaxcontrol
from jaxcontrol import mjx_capsule_frame, mjx_fixes

# A capsule free above a floor; pyramidal cones (MuJoCo's default).
_CAPSULE_ON_FLOOR = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body>
      <freejoint/>
      <geom type="capsule" size="0.05 0.2" friction="0.8"/>
    </body>
  </worldbody>
</mujoco>
"""


def _tilted(angle_from_plane: float, heading: float) -> np.ndarray:
    """qpos of the capsule: its axis `angle_from_plane` above the floor, turned `heading`
    about the vertical, its lower end 1 cm into the floor."""
    axis = np.array(
        [
            np.cos(angle_from_plane) * np.cos(heading),
            np.cos(angle_from_plane) * np.sin(heading),
            np.sin(angle_from_plane),
        ]
    )
    quat = np.zeros(4)
    mujoco.mju_quatZ2Vec(quat, axis)
    centre_height = 0.2 * np.sin(angle_from_plane) + 0.05 - 0.01
    return np.concatenate([[0.0, 0.0, centre_height], quat])


def _pyramid(frame: np.ndarray, mu: float = 0.8) -> np.ndarray:
    """The four edges of a contact's friction pyramid, as a sorted set of rows."""
    n, t1, t2 = np.asarray(frame).reshape(3, 3)
    edges = np.array([n + mu * t1, n - mu * t1, n + mu * t2, n - mu * t2])
    return edges[np.lexsort(np.round(edges, 9).T)]


def _c_frame(m, qpos) -> np.ndarray:
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_forward(m, d)
    assert d.ncon >= 1
    return d.contact[0].frame.copy()


def _info(m, d, geom: int) -> GeomInfo:
    rotation = d.geom_xmat[geom].reshape(3, 3)
    return GeomInfo(*(jnp.asarray(x) for x in (d.geom_xpos[geom], rotation, m.geom_size[geom])))


def _mjx_frame(m, qpos, fn) -> np.ndarray:
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_kinematics(m, d)
    _, _, frame = fn(_info(m, d, 0), _info(m, d, 1))
    return np.asarray(frame[0])


def _stock_pair(plane, cap):
    # MJX's own plane–capsule, one pair (its `collider` wrapper takes whole models).
    n, axis = plane.mat[:, 2], cap.mat[:, 2]
    b, b_norm = collision_primitive.math.normalize_with_norm(axis - n * jnp.dot(n, axis))
    y, z = jnp.array([0.0, 1.0, 0.0]), jnp.array([0.0, 0.0, 1.0])
    b = jnp.where(b_norm < 0.5, jnp.where((-0.5 < n[1]) & (n[1] < 0.5), y, z), b)
    return None, None, jnp.array([[n, b, jnp.cross(n, b)]])


def _ours_pair(plane, cap):
    n = plane.mat[:, 2]
    b = mjx_capsule_frame.tangent(n, cap.mat[:, 2])
    return None, None, jnp.array([[n, b, jnp.cross(n, b)]])


def test_the_fix_is_off_by_default_and_still_needed_by_the_pinned_mjx():
    assert mujoco.__version__ == "3.17.0"
    assert mjx_capsule_frame.needed()
    assert mjx_capsule_frame.applied() == ()
    assert mjx_fixes.PLANE_CAPSULE_FRAME not in mjx_fixes.applied()


def test_the_stock_copy_here_is_mjxs_own_rule():
    """The test's stock tangent is MJX 3.17's (its source holds the 0.5 threshold)."""
    import inspect

    assert "b = jp.where(b_norm < 0.5, jp.where((-0.5 < n[1]) & (n[1] < 0.5), y, z), b)" in (
        inspect.getsource(collision_primitive)
    )


@pytest.mark.parametrize("angle", [0.0, 0.3, 0.9, 1.1, 1.3, 1.5, np.pi / 2])
@pytest.mark.parametrize("heading", [0.0, 0.4, np.pi / 2, 2.2])
def test_ours_gives_cs_friction_pyramid_at_every_tilt(angle, heading):
    """Ours spans C's pyramid everywhere; MJX's differs once the capsule is steeper than
    60° off the axes (so this test can fail), and ours is MJX's bits wherever MJX's
    pyramid is C's."""
    m = mujoco.MjModel.from_xml_string(_CAPSULE_ON_FLOOR)
    qpos = _tilted(angle, heading)
    c = _pyramid(_c_frame(m, qpos))
    ours = _mjx_frame(m, qpos, _ours_pair)
    stock = _mjx_frame(m, qpos, _stock_pair)
    np.testing.assert_allclose(_pyramid(ours), c, atol=1e-6)
    stock_is_c = np.allclose(_pyramid(stock), c, atol=1e-6)
    on_axes = np.isclose(np.sin(2 * heading), 0, atol=1e-9) or np.isclose(angle, np.pi / 2)
    assert stock_is_c == (angle < np.arccos(0.5) - 1e-9 or on_axes)
    if stock_is_c:
        np.testing.assert_array_equal(ours, stock)


def test_with_the_fix_mjx_accelerates_a_steep_capsule_as_c_does():
    """A capsule 70° off the floor, sliding fast (friction on the pyramid's face): MJX's forward with the fix gives C's
    acceleration (float32 rounding); stock MJX's rotated pyramid gives another."""
    m = mujoco.MjModel.from_xml_string(_CAPSULE_ON_FLOOR)
    d = mujoco.MjData(m)
    d.qpos[:] = _tilted(np.deg2rad(70), 0.6)
    d.qvel[:] = [2.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    mujoco.mj_forward(m, d)

    def mjx_qacc():
        return np.asarray(jax.jit(mjx.forward)(mjx.put_model(m), mjx.put_data(m, d)).qacc)

    with mjx_fixes.stock():
        stock = mjx_qacc()
    with mjx_fixes.installed(mjx_capsule_frame):
        fixed = mjx_qacc()
    scale = np.abs(d.qacc).max()
    assert np.abs(fixed - d.qacc).max() < 1e-4 * scale
    assert np.abs(stock - d.qacc).max() > 1e-2 * scale


@pytest.mark.parametrize(
    "domain, task_name, changes",
    [
        ("humanoid", "walk", True),
        ("quadruped", "walk", True),
        ("walker", "walk", False),  # planar: C's pyramid is MJX's
        ("hopper", "hop", False),
        ("reacher", "easy", False),  # turns about the normal; capsules lie flat
        ("ball_in_cup", "catch", False),  # slides only
        ("finger", "spin", False),  # elliptic cones are isotropic
        ("fish", "swim", False),  # constraints off
    ],
)
def test_touching_names_the_fix_only_where_a_pyramid_can_turn(domain, task_name, changes):
    model = jaxcontrol.load(domain, task_name).mj_model
    assert mjx_capsule_frame.can_change(model) is changes
    assert mjx_capsule_frame.touching(model) == ()  # not installed
    mjx_capsule_frame.install()
    try:
        want = (mjx_capsule_frame.PLANE_CAPSULE_FRAME,) if changes else ()
        assert mjx_capsule_frame.touching(model) == want
        assert mjx_fixes.PLANE_CAPSULE_FRAME in mjx_fixes.applied()
        with mjx_fixes.stock():
            assert mjx_fixes.touching(model) == ()
        assert mjx_capsule_frame.applied() == (mjx_capsule_frame.PLANE_CAPSULE_FRAME,)
    finally:
        mjx_capsule_frame.uninstall()

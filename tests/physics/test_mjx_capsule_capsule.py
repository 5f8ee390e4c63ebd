"""C MuJoCo's capsule–capsule contacts in MJX (`jaxcontrol.mjx_capsule_capsule`, opt-in)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from mujoco import mjx

import jaxcontrol
from jaxcontrol import mjx_capsule_capsule, mjx_fixes
from jaxcontrol.collision import capsule_capsule

# Two free capsules, no gravity: contacts only where we place them.
_TWO_CAPSULES = """
<mujoco>
  <option><flag gravity="disable"/></option>
  <worldbody>
    <body><freejoint/><geom type="capsule" size="0.05 0.2"/></body>
    <body><freejoint/><geom type="capsule" size="0.04 0.15"/></body>
  </worldbody>
</mujoco>
"""


def _unit(q):
    return q / np.linalg.norm(q)


def _poses(kind: str, rng: np.random.Generator):
    """qpos of the two capsules: `general` (any), `parallel` (equal or opposite axes,
    beside or end to end) or `crossing` (both in the x–z plane, as hopper's)."""
    q1 = _unit(rng.normal(size=4))
    if kind == "general":
        return np.concatenate([[0, 0, 0], q1, rng.normal(size=3) * 0.08, _unit(rng.normal(size=4))])
    if kind == "parallel":
        axis = np.zeros(3)
        mujoco.mju_rotVecQuat(axis, np.array([0.0, 0.0, 1.0]), q1)
        along = axis * rng.choice([0.0, rng.uniform(0.3, 0.42)]) * rng.choice([-1, 1])
        return np.concatenate(
            [[0, 0, 0], q1, along + rng.normal(size=3) * 0.05, q1 * rng.choice([-1, 1])]
        )
    a1, a2 = rng.uniform(0, np.pi, 2)
    q1 = np.array([np.cos(a1 / 2), 0, np.sin(a1 / 2), 0])
    q2 = np.array([np.cos(a2 / 2), 0, np.sin(a2 / 2), 0])
    return np.concatenate([[0, 0, 0], q1, [rng.normal() * 0.05, 0, rng.normal() * 0.05], q2])


@pytest.mark.parametrize("x64, atol", [(True, 1e-12), (False, 2e-5)], ids=["float64", "float32"])
@pytest.mark.parametrize("kind", ["general", "parallel", "crossing"])
def test_the_narrow_phase_gives_cs_contacts(kind, x64, atol):
    """Every contact C MuJoCo reports (count, order, depth, point, normal), in float64 to
    rounding, and in float32 (crossing and parallel decided within float32's rounding)."""
    m = mujoco.MjModel.from_xml_string(_TWO_CAPSULES)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(["general", "parallel", "crossing"].index(kind))
    collide = jax.jit(capsule_capsule.collide)
    reported = 0
    dtype = jnp.float64 if x64 else jnp.float32
    with jax.enable_x64(x64):
        for _ in range(60):
            d.qpos[:] = _poses(kind, rng)
            mujoco.mj_forward(m, d)
            geoms = [(d.geom_xpos[g], d.geom_xmat[g].reshape(3, 3), m.geom_size[g]) for g in (0, 1)]
            args = [jnp.asarray(x, dtype) for g in geoms for x in g]
            dist, pos, frame = (np.asarray(x) for x in collide(*args, 0.0))
            active = np.nonzero(dist <= 0)[0]
            assert len(active) == d.ncon
            for i, slot in enumerate(active):
                contact = d.contact[i]
                assert abs(dist[slot] - contact.dist) < atol
                np.testing.assert_allclose(pos[slot], contact.pos, atol=atol)
                np.testing.assert_allclose(frame[slot][0], contact.frame[:3], atol=atol)
            reported += d.ncon
    assert reported >= 25  # the poses touch often enough to test something


def test_crossing_capsules_get_cs_normal_out_of_their_plane_where_mjx_keeps_it_in():
    """Two segments crossing in the x–z plane: C's normal is the axes' cross product (y);
    stock MJX's nearest points stay ~1e-6 apart and give a normal in the plane."""
    m = mujoco.MjModel.from_xml_string(_TWO_CAPSULES)
    d = mujoco.MjData(m)
    d.qpos[:] = np.concatenate([[0, 0, 0], [1, 0, 0, 0], [0.02, 0, 0.01], _unit([1, 0, 1, 0])])
    mujoco.mj_forward(m, d)
    assert d.ncon == 1 and abs(d.contact[0].frame[1]) == pytest.approx(1.0)

    def normal():
        contact = jax.jit(mjx.forward)(mjx.put_model(m), mjx.put_data(m, d))._impl.contact
        return np.asarray(contact.frame)[np.argmin(np.asarray(contact.dist))][0]

    with mjx_fixes.stock():
        stock = normal()
    with mjx_fixes.installed(mjx_capsule_capsule):
        fixed = normal()
    assert abs(stock[1]) < 1e-3  # in the plane
    np.testing.assert_allclose(fixed, d.contact[0].frame[:3], atol=1e-6)


def test_the_fix_is_off_by_default_names_itself_when_on_and_touches_capsule_pairs():
    assert mjx_capsule_capsule.needed() and mjx_capsule_capsule.applied() == ()
    hopper = jaxcontrol.load("hopper", "hop").mj_model
    point_mass = jaxcontrol.load("point_mass", "easy").mj_model
    assert mjx_capsule_capsule.touching(hopper) == ()
    mjx_capsule_capsule.install()
    try:
        assert mjx_capsule_capsule.touching(hopper) == (mjx_capsule_capsule.CAPSULE_CAPSULE,)
        assert mjx_capsule_capsule.touching(point_mass) == ()  # no capsule pair
        assert mjx_fixes.CAPSULE_CAPSULE in mjx_fixes.touching(hopper)
        with mjx_fixes.stock():
            assert mjx_fixes.touching(hopper) == ()
    finally:
        mjx_capsule_capsule.uninstall()

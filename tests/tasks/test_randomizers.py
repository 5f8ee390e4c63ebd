"""Distribution tests for `jaxcontrol.randomizers` against dm_control's."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from dm_control import mujoco as dm_mujoco
from dm_control.suite.utils import randomizers as dm_randomizers
from mujoco import mjx
from scipy import stats

from jaxcontrol import randomizers, reference

N_SAMPLES = 2000
P_MIN = 1e-3

# One joint of every kind the randomiser distinguishes, out of id order by kind
# and with the free joint not at qpos address 0, plus a twin of the first hinge
# (same type and range) to check that joints get independent subkeys.
XML = """
<mujoco model="joint_zoo">
  <compiler angle="degree"/>
  <worldbody>
    <body name="chain">
      <joint name="hinge_limited" type="hinge" axis="0 0 1" range="-30 45"/>
      <geom size="0.1"/>
      <body name="b1">
        <joint name="hinge_unlimited" type="hinge" axis="0 1 0"
               limited="false"/>
        <geom size="0.1"/>
        <body name="b2">
          <joint name="slide_limited" type="slide" axis="1 0 0"
                 range="-0.2 0.5"/>
          <geom size="0.1"/>
          <body name="b3">
            <joint name="slide_unlimited" type="slide" axis="0 0 1"
                   limited="false" ref="0.3"/>
            <geom size="0.1"/>
            <body name="b4">
              <joint name="ball_limited" type="ball" range="0 60"/>
              <geom size="0.1"/>
              <body name="b5">
                <joint name="ball_unlimited" type="ball"/>
                <geom size="0.1"/>
                <body name="b6">
                  <joint name="hinge_twin" type="hinge" axis="1 0 0"
                         range="-30 45"/>
                  <geom size="0.1"/>
                </body>
              </body>
            </body>
          </body>
        </body>
      </body>
    </body>
    <body name="floater" pos="0.5 -0.25 1.5">
      <freejoint name="free"/>
      <geom size="0.1"/>
    </body>
  </worldbody>
</mujoco>
"""


@functools.cache
def _model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(XML)


def _slice(name: str) -> slice:
    """The qpos slice of a joint, by name."""
    model = _model()
    j = model.joint(name).id
    adr = int(model.jnt_qposadr[j])
    width = {int(mujoco.mjtJoint.mjJNT_FREE): 7, int(mujoco.mjtJoint.mjJNT_BALL): 4}.get(
        int(model.jnt_type[j]), 1
    )
    return slice(adr, adr + width)


def _ours(keys: jax.Array, dtype=jnp.float32) -> np.ndarray:
    model = _model()
    qpos0 = jnp.asarray(model.qpos0, dtype=dtype)
    draw = jax.jit(
        jax.vmap(lambda k: randomizers.randomize_limited_and_rotational_joints(model, k, qpos0))
    )
    return np.asarray(draw(keys))


@functools.cache
def _our_samples() -> np.ndarray:
    return _ours(jax.random.split(jax.random.key(0), N_SAMPLES))


@functools.cache
def _dm_samples() -> np.ndarray:
    physics = dm_mujoco.Physics.from_xml_string(XML)
    random = np.random.RandomState(12345)
    out = np.empty((N_SAMPLES, physics.model.nq))
    for i in range(N_SAMPLES):
        physics.reset()
        dm_randomizers.randomize_limited_and_rotational_joints(physics, random)
        out[i] = physics.data.qpos
    return out


def test_model_has_every_joint_kind():
    model = _model()
    assert model.njnt == 8 and model.nq == 5 + 8 + 7
    assert model.jnt_limited[model.joint("ball_limited").id]
    assert not model.jnt_limited[model.joint("hinge_unlimited").id]
    assert _slice("free").start > 0


def test_untouched_coordinates_match_qpos0():
    qpos0 = _model().qpos0
    fixed = [
        _slice("slide_unlimited").start,
        *range(_slice("free").start, _slice("free").start + 3),
    ]
    for samples in (_our_samples(), _dm_samples()):
        np.testing.assert_allclose(
            samples[:, fixed], np.broadcast_to(qpos0[fixed], (N_SAMPLES, 4)), rtol=1e-6
        )
    assert qpos0[_slice("slide_unlimited").start] == pytest.approx(0.3)


def test_marginals_match_dm_control():
    ours, ref = _our_samples(), _dm_samples()
    assert ours.shape == ref.shape == (N_SAMPLES, _model().nq)
    qpos0 = _model().qpos0
    checked = 0
    for i in range(ref.shape[1]):
        if np.all(ref[:, i] == qpos0[i]):  # not randomised by dm_control
            continue
        result = stats.ks_2samp(ours[:, i].astype(np.float64), ref[:, i])
        assert result.pvalue > P_MIN, (i, result)
        checked += 1
    # 3 hinges + 1 slide + 2 * 4 ball + 4 free-quaternion coordinates.
    assert checked == 16


def _unit_norm(samples: np.ndarray, name: str) -> np.ndarray:
    quat = samples[:, _slice(name)][:, -4:].astype(np.float64)
    np.testing.assert_allclose(np.linalg.norm(quat, axis=1), 1.0, atol=1e-6)
    return quat


def test_quaternions_are_unit_norm():
    for name in ("ball_limited", "ball_unlimited", "free"):
        _unit_norm(_our_samples(), name)


def test_ranges_are_respected():
    samples, model = _our_samples(), _model()
    for name in ("hinge_limited", "slide_limited", "hinge_twin"):
        lo, hi = np.float32(model.joint(name).range)
        values = samples[:, _slice(name).start]
        assert np.all((values >= lo) & (values <= hi)), name
        # Spread over the whole range, not a corner of it.
        assert values.min() < lo + 0.02 * (hi - lo)
        assert values.max() > hi - 0.02 * (hi - lo)
    hinge = samples[:, _slice("hinge_unlimited").start]
    assert np.all(np.abs(hinge) <= np.float32(np.pi))
    assert hinge.min() < -3.0 and hinge.max() > 3.0

    # Limited ball: rotation angle within the 60 degree limit, and uniform.
    limit = model.joint("ball_limited").range[1]
    assert limit == pytest.approx(np.deg2rad(60.0))
    w = _unit_norm(samples, "ball_limited")[:, 0]
    angle = 2.0 * np.arccos(np.clip(w, -1.0, 1.0))
    assert np.all(angle <= limit + 1e-3)
    assert stats.kstest(angle / limit, "uniform").pvalue > P_MIN

    # Free joint's quaternion: dm_control's non-negative (uniform-draw) quirk.
    assert np.all(_unit_norm(samples, "free") >= 0.0)
    # Unlimited ball: full sphere, so every sign occurs.
    ball = _unit_norm(samples, "ball_unlimited")
    assert np.all(ball.min(axis=0) < -0.9) and np.all(ball.max(axis=0) > 0.9)


def test_joints_use_independent_subkeys():
    samples = _our_samples()
    a = samples[:, _slice("hinge_limited").start]
    b = samples[:, _slice("hinge_twin").start]
    assert not np.any(a == b)
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.1
    # Within the limited-ball draw, the angle and axis keys are independent too.
    quat = _unit_norm(samples, "ball_limited")
    angle = 2.0 * np.arccos(np.clip(quat[:, 0], -1.0, 1.0))
    ok = angle > 1e-2  # the axis is recoverable
    axis_x = np.abs(quat[ok, 1]) / np.sin(angle[ok] / 2)
    assert abs(np.corrcoef(angle[ok], axis_x)[0, 1]) < 0.1


def test_same_key_same_draw_different_key_different_draw():
    key = jax.random.key(7)
    model, qpos0 = _model(), jnp.asarray(_model().qpos0, jnp.float32)
    f = functools.partial(randomizers.randomize_limited_and_rotational_joints, model)
    first = np.asarray(f(key, qpos0))
    np.testing.assert_array_equal(first, np.asarray(f(key, qpos0)))
    jitted = jax.jit(f)
    np.testing.assert_array_equal(jitted(key, qpos0), jitted(key, qpos0))
    # Same random bits under jit; XLA may fuse the arithmetic differently.
    np.testing.assert_allclose(jitted(key, qpos0), first, rtol=1e-6, atol=1e-7)
    other = np.asarray(f(jax.random.key(8), qpos0))
    randomised = ~np.isclose(_dm_samples()[0], model.qpos0)
    randomised |= ~np.isclose(_dm_samples()[1], model.qpos0)
    assert randomised.sum() == 16
    assert np.all(first[randomised] != other[randomised])
    # Raw uint32 keys work as well as typed ones.
    raw = np.asarray(f(jax.random.PRNGKey(7), qpos0))
    np.testing.assert_array_equal(
        raw, np.asarray(f(jax.random.wrap_key_data(jax.random.PRNGKey(7)), qpos0))
    )
    assert np.all(raw[randomised] != other[randomised])
    # Batch draws under vmap are distinct (up to float32 birthday collisions).
    batch = _our_samples()
    assert len(np.unique(batch[:, _slice("hinge_limited").start])) > (N_SAMPLES - 5)


def test_traced_qpos_and_dtype():
    model = _model()
    qpos = jnp.asarray(model.qpos0, jnp.float32) + 0.0
    keys = jax.random.split(jax.random.key(3), 5)
    qpos_batch = (
        jnp.tile(qpos, (5, 1)).at[:, _slice("slide_unlimited")].set(jnp.arange(5.0)[:, None])
    )
    f = functools.partial(randomizers.randomize_limited_and_rotational_joints, model)
    out = jax.jit(jax.vmap(f))(keys, qpos_batch)
    assert out.shape == (5, model.nq) and out.dtype == jnp.float32
    np.testing.assert_array_equal(out[:, _slice("slide_unlimited").start], np.arange(5.0))
    with reference.precision(True):
        out64 = _ours(jax.random.split(jax.random.key(1), 4), dtype=jnp.float64)
        assert out64.dtype == np.float64
        np.testing.assert_allclose(
            np.linalg.norm(out64[:, _slice("ball_unlimited")], axis=1), 1.0, rtol=1e-12
        )


def test_bad_qpos_shape():
    with pytest.raises(ValueError, match=r"qpos must have shape \(nq,\)"):
        randomizers.randomize_limited_and_rotational_joints(
            _model(), jax.random.key(0), jnp.zeros(3)
        )


def test_model_without_joints_is_identity():
    model = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><geom size='1'/></worldbody></mujoco>"
    )
    out = randomizers.randomize_limited_and_rotational_joints(
        model, jax.random.key(0), jnp.zeros(0)
    )
    assert out.shape == (0,)


def test_random_limited_quaternion_matches_dm_control():
    limit = 2.0
    ours = np.asarray(
        jax.vmap(lambda k: randomizers.random_limited_quaternion(k, limit))(
            jax.random.split(jax.random.key(11), N_SAMPLES)
        )
    )
    random = np.random.RandomState(5)
    ref = np.stack(
        [dm_randomizers.random_limited_quaternion(random, limit) for _ in range(N_SAMPLES)]
    )
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-6)
    for i in range(4):
        assert stats.ks_2samp(ours[:, i], ref[:, i]).pvalue > P_MIN, i
    # Zero limit: the identity rotation, as mju_axisAngle2Quat gives.
    ident = randomizers.random_limited_quaternion(jax.random.key(0), 0.0)
    np.testing.assert_allclose(ident, [1.0, 0.0, 0.0, 0.0], atol=1e-7)
    # Deterministic in the key; the limit may be traced.
    key = jax.random.key(4)
    np.testing.assert_array_equal(
        randomizers.random_limited_quaternion(key, 1.0),
        randomizers.random_limited_quaternion(key, 1.0),
    )
    np.testing.assert_allclose(
        randomizers.random_limited_quaternion(key, 1.0),
        jax.jit(randomizers.random_limited_quaternion)(key, 1.0),
        atol=1e-7,
    )


def _humanoid_physics():
    from jaxcontrol import mjcf
    from jaxcontrol import physics as physics_lib
    from jaxcontrol.mjcf import compat

    mj_model = compat.to_mjx_compatible(mjcf.build("humanoid"))
    data = mjx.put_data(mj_model, mujoco.MjData(mj_model))
    return physics_lib.Physics(compat.put_model(mj_model), data, physics_lib.Names(mj_model))


def test_resample_while_penetrating_returns_non_penetrating_draws():
    from jaxcontrol import physics as physics_lib

    physics = _humanoid_physics()

    def draw(p, key):
        return p.with_data(
            qpos=randomizers.randomize_limited_and_rotational_joints(p.mj_model, key, p.data.qpos)
        )

    @jax.jit
    @jax.vmap
    def sample(key):
        found = randomizers.resample_while_penetrating(physics, key, draw)
        return found.data.qpos, physics_lib.contact_count(found)

    qpos, counts = sample(jax.random.split(jax.random.key(0), 16))
    assert np.all(np.asarray(counts) == 0)
    assert len({row.tobytes() for row in np.asarray(qpos)}) == 16


def test_resample_while_penetrating_carries_state_and_stops_at_the_cap():
    """Each attempt starts from the last one's state; a hopeless draw stops at the cap."""
    physics = _humanoid_physics()
    sunk = physics.data.qpos.at[2].set(0.0)  # torso in the floor: always penetrating

    def draw(p, key):
        del key
        return p.with_data(qpos=sunk, qvel=p.data.qvel.at[0].add(1.0))

    found = jax.jit(lambda k: randomizers.resample_while_penetrating(physics, k, draw, 5))(
        jax.random.key(1)
    )
    assert float(found.data.qvel[0]) == 5.0

"""Our step composition against MJX's own: the kinematics pass we skip is redundant.

`physics.step` starts each substep's forward pass from the kinematics that the
previous substep (or the reset) left in `data`, instead of recomputing them. These
tests compare it with stock `mjx.forward` / `mjx.step` on random states of every
domain's model, so a MuJoCo upgrade that reorders MJX's stages fails here first.
"""

import copy
import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pertask
import pytest
from mujoco import mjx

import jaxcontrol
from jaxcontrol import mjcf, reference
from jaxcontrol import physics as physics_lib
from jaxcontrol.mjcf import compat

DOMAINS = sorted(jaxcontrol.TASKS_BY_DOMAIN)
# The default tier checks our forward pass on one model without constraints and one
# with contacts and joint limits (about 20 s of compile each); the full tier checks
# every domain. Every task's one-step parity covers the composition in the default tier.
DEFAULT_TIER_DOMAINS = ("acrobot", "walker")


def _env(domain):
    return jaxcontrol.load(domain, jaxcontrol.TASKS_BY_DOMAIN[domain][0])


@functools.partial(jax.jit, static_argnums=(0, 2))
def _random_data(env, key, count=8):
    """`count` data with random qpos, qvel and ctrl, their kinematics current (jitted:
    MJX run op by op costs seconds per call)."""
    model = env.mjx_model
    kq, kv, kc = jax.random.split(key, 3)
    base = env.blank_state().data  # qpos0 after a forward pass (no reset to compile)
    shape = (count,)
    data = jax.vmap(
        lambda q, v, c: base.replace(qpos=base.qpos + q, qvel=v, ctrl=c),
    )(
        0.5 * jax.random.normal(kq, shape + base.qpos.shape),
        2.0 * jax.random.normal(kv, shape + base.qvel.shape),
        jax.random.uniform(kc, shape + base.ctrl.shape, minval=-1, maxval=1),
    )
    return jax.vmap(lambda d: mjx.kinematics(model, d))(data)


def _physics(env, data):
    return physics_lib.Physics(env.mjx_model, data, env.names)


def _assert_data_close(ours, theirs, rtol=1e-5, atol=1e-5):
    for field in ("qpos", "qvel", "qacc", "xpos", "xmat", "qfrc_actuator", "qfrc_bias"):
        np.testing.assert_allclose(
            getattr(ours, field), getattr(theirs, field), rtol=rtol, atol=atol, err_msg=field
        )


@pytest.mark.parametrize(
    "domain",
    [d if d in DEFAULT_TIER_DOMAINS else pytest.param(d, marks=pytest.mark.full) for d in DOMAINS],
)
def test_forward_after_kinematics_matches_mjx_forward(domain):
    """In float64: the random states are deep in contact, where float32's rounding
    differences between two compiled programs reach 1e-5 of qacc (fish, humanoid)."""
    with reference.precision(True):
        env = _env(domain)
        model = env.mjx_model
        data = _random_data(env, jax.random.key(1))
        forward = physics_lib.forward_after_kinematics
        ours = jax.jit(jax.vmap(lambda d: forward(_physics(env, d))))(data)
        theirs = jax.jit(jax.vmap(lambda d: mjx.forward(model, d)))(data)
        _assert_data_close(ours, theirs, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("domain, n_sub_steps", [("pendulum", 3), ("acrobot", 1)])
def test_step_matches_mjx_step_then_kinematics(domain, n_sub_steps):
    """Euler over several substeps and RK4 over one (every task's one-step parity covers the rest)."""
    env = _env(domain)
    model = env.mjx_model
    data = _random_data(env, jax.random.key(2))

    def stock(d):
        for _ in range(n_sub_steps):
            d = mjx.step(model, d)
        return mjx.kinematics(model, d)

    def ours(d):
        return physics_lib.step(_physics(env, d), n_sub_steps, physics_lib.sync_kinematics)

    _assert_data_close(jax.jit(jax.vmap(ours))(data), jax.jit(jax.vmap(stock))(data))


def test_sync_levels_add_what_they_promise():
    env = _env("cartpole")
    model = env.mjx_model
    data = _random_data(env, jax.random.key(3), count=1)
    data = jax.tree.map(lambda x: x[0], data)
    full = jax.jit(mjx.forward)(model, data)
    position = jax.jit(physics_lib.sync_position)(_physics(env, data))
    np.testing.assert_allclose(position.subtree_com, full.subtree_com, atol=1e-6)
    synced = jax.jit(physics_lib.sync_full)(_physics(env, data))
    for field in ("subtree_com", "qfrc_bias", "cdof_dot"):
        np.testing.assert_allclose(getattr(synced, field), getattr(full, field), atol=1e-5)


def test_unsupported_integrator_names_the_valid_ones():
    env = _env("pendulum")
    model = env.mjx_model
    other = model.tree_replace({"opt.integrator": mujoco.mjtIntegrator.mjINT_IMPLICIT})
    data = jax.jit(env.reset)(jax.random.key(0)).data
    physics = physics_lib.Physics(other, data, env.names)
    with pytest.raises(ValueError, match="mjINT_EULER, mjINT_RK4, mjINT_IMPLICITFAST"):
        physics_lib.step(physics, 1, physics_lib.sync_kinematics)


def test_step_is_unchanged_by_stale_derived_fields_other_than_kinematics():
    """Everything but the kinematics is recomputed: stale bias forces do not leak in."""
    env = _env("acrobot")
    data = jax.tree.map(lambda x: x[0], _random_data(env, jax.random.key(4), count=1))
    stale = data.replace(qfrc_bias=jnp.full_like(data.qfrc_bias, 1e3), qacc=data.qacc + 5.0)
    step = jax.jit(lambda d: physics_lib.step(_physics(env, d), 1, physics_lib.sync_kinematics))
    np.testing.assert_array_equal(step(stale).qpos, step(data).qpos)


def test_contact_count_is_c_mujocos_ncon():
    """On random humanoid poses (many touching the floor or themselves)."""
    mj_model = compat.to_mjx_compatible(mjcf.build("humanoid"))
    model = compat.put_model(mj_model)
    names = physics_lib.Names(mj_model)
    data = mujoco.MjData(mj_model)
    rng = np.random.RandomState(0)
    poses, expected = [], []
    for _ in range(32):
        mujoco.mj_resetData(mj_model, data)
        data.qpos[:] = mj_model.qpos0 + rng.normal(0, 0.4, mj_model.nq)
        data.qpos[2] = rng.uniform(0.2, 1.4)
        data.qpos[3:7] /= np.linalg.norm(data.qpos[3:7])
        mujoco.mj_forward(mj_model, data)
        poses.append(np.array(data.qpos))
        expected.append(data.ncon)
    base = mjx.put_data(mj_model, mujoco.MjData(mj_model))

    @jax.jit
    @jax.vmap
    def count(qpos):
        data = mjx.kinematics(model, base.replace(qpos=qpos))
        return physics_lib.contact_count(physics_lib.Physics(model, data, names))

    counts = np.asarray(count(jnp.asarray(np.stack(poses))))
    assert 0 in expected and max(expected) > 1  # both kinds of pose occur
    np.testing.assert_array_equal(counts > 0, np.array(expected) > 0)
    np.testing.assert_array_equal(counts, expected)


_ON_A_PLANE = """
<mujoco>
  <default><geom contype="2" conaffinity="1"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="{size} {size} 0.1" contype="1" conaffinity="2"/>
    <body pos="-1.5 0 0.1"><freejoint/><geom type="sphere" size="0.1"/></body>
    <body pos="-0.75 0 0.1" euler="0 80 0"><freejoint/><geom type="capsule" size="0.05 0.2"/></body>
    <body pos="0 0 0.1" euler="10 5 0"><freejoint/><geom type="box" size="0.1 0.08 0.06"/></body>
    <body pos="0.75 0 0.1" euler="0 20 0"><freejoint/><geom type="ellipsoid" size="0.12 0.08 0.05"/></body>
    <body pos="1.5 0 0.1" euler="30 0 0"><freejoint/><geom type="cylinder" size="0.08 0.1"/></body>
  </worldbody>
</mujoco>
"""


def _settle(model, data, steps=60):
    return jax.lax.fori_loop(0, steps, lambda _, d: mjx.step(model, d), data)


def test_mjx_step_ignores_what_the_physics_key_drops():
    """`pertask.physics_key` lets tasks share MJX tests where their models differ only in
    planes' sizes and the model statistics: MJX's step must then be bit-identical. Every
    primitive that MJX collides with a plane lands on a small and on a huge floor."""
    small, huge = (mujoco.MjModel.from_xml_string(_ON_A_PLANE.format(size=s)) for s in (1, 80))
    assert small.stat.extent != huge.stat.extent
    keyless = [pertask.without_what_mjx_ignores(copy.deepcopy(m)) for m in (small, huge)]
    np.testing.assert_array_equal(keyless[0].geom_size, keyless[1].geom_size)
    data = mjx.put_data(small, mujoco.MjData(small))
    settle = jax.jit(_settle)
    ends = [settle(mjx.put_model(m), data) for m in (small, huge)]
    contact = ends[0]._impl.contact
    touching = np.asarray(contact.geom)[np.asarray(contact.dist) < 0]
    assert set(touching[:, 1]) == set(range(1, small.ngeom))  # every body is on the floor
    for field in ("qpos", "qvel", "qacc"):
        np.testing.assert_array_equal(getattr(ends[0], field), getattr(ends[1], field), field)


def test_the_physics_key_keeps_plane_sizes_where_rays_read_them():
    with_rays = _ON_A_PLANE.replace(
        '<body pos="-1.5', '<site name="eye" pos="0 0 1" zaxis="1 0 -1"/><body pos="-1.5'
    ).replace("</worldbody>", "</worldbody><sensor><rangefinder site='eye'/></sensor>")
    model = pertask.without_what_mjx_ignores(
        mujoco.MjModel.from_xml_string(with_rays.format(size=3))
    )
    np.testing.assert_array_equal(model.geom_size[0], [3, 3, 0.1])


def _tasks_sharing_a_key_with_different_models():
    """(first task, sibling) pairs whose compiled models differ but whose keys agree."""
    pairs = []
    for domain, names in jaxcontrol.TASKS_BY_DOMAIN.items():
        first = (domain, names[0])
        for task in ((domain, name) for name in names[1:]):
            models = (jaxcontrol.load(*t).mj_model for t in (first, task))
            if len({pertask.model_digest(m) for m in models}) == 2 and (
                pertask.physics_key(first) == pertask.physics_key(task)
            ):
                pairs.append((first, task))
    return pairs


def test_quadruped_walk_and_run_share_a_physics_key():
    """Their floors' sizes are their only difference, so `--backend auto` runs run's
    tests on C (its task code) and walk's on MJX (the shared physics)."""
    assert pertask.physics_key(("quadruped", "walk")) == pertask.physics_key(("quadruped", "run"))


@pytest.mark.full
def test_tasks_whose_physics_keys_agree_step_bit_identically_on_mjx():
    """The full-tier check on the suite's own models, from each first task's resets."""
    pairs = _tasks_sharing_a_key_with_different_models()
    assert (("quadruped", "walk"), ("quadruped", "run")) in pairs
    settle = jax.jit(jax.vmap(_settle, in_axes=(None, 0)))
    for first, task in pairs:
        env = jaxcontrol.load(*first)
        data = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(5), 4)).data
        ends = [settle(jaxcontrol.load(*t).mjx_model, data) for t in (first, task)]
        for field in ("qpos", "qvel", "qacc"):
            np.testing.assert_array_equal(getattr(ends[0], field), getattr(ends[1], field))

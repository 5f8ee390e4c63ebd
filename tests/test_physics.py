"""Our step composition against MJX's own: the kinematics pass we skip is redundant.

`physics.step` starts each substep's forward pass from the kinematics that the
previous substep (or the reset) left in `data`, instead of recomputing them. These
tests compare it with stock `mjx.forward` / `mjx.step` on random states of every
domain's model, so a MuJoCo upgrade that reorders MJX's stages fails here first.
"""

import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from mujoco import mjx

import jaxcontrol
from jaxcontrol import physics as physics_lib

DOMAINS = sorted(jaxcontrol.TASKS_BY_DOMAIN)


def _env(domain):
    return jaxcontrol.load(domain, jaxcontrol.TASKS_BY_DOMAIN[domain][0])


@functools.partial(jax.jit, static_argnums=(0, 2))
def _random_data(env, key, count=8):
    """`count` data with random qpos, qvel and ctrl, their kinematics current (jitted:
    MJX run op by op costs seconds per call)."""
    model = env.mjx_model
    kq, kv, kc = jax.random.split(key, 3)
    base = env.reset(jax.random.key(0)).data
    shape = (count,)
    data = jax.vmap(
        lambda q, v, c: base.replace(qpos=base.qpos + q, qvel=v, ctrl=c),
    )(
        0.5 * jax.random.normal(kq, shape + base.qpos.shape),
        2.0 * jax.random.normal(kv, shape + base.qvel.shape),
        jax.random.uniform(kc, shape + base.ctrl.shape, minval=-1, maxval=1),
    )
    return jax.vmap(lambda d: mjx.kinematics(model, d))(data)


def _assert_data_close(ours, theirs, rtol=1e-5, atol=1e-5):
    for field in ("qpos", "qvel", "qacc", "xpos", "xmat", "qfrc_actuator", "qfrc_bias"):
        np.testing.assert_allclose(
            getattr(ours, field), getattr(theirs, field), rtol=rtol, atol=atol, err_msg=field
        )


@pytest.mark.parametrize("domain", DOMAINS)
def test_forward_after_kinematics_matches_mjx_forward(domain):
    env = _env(domain)
    model = env.mjx_model
    data = _random_data(env, jax.random.key(1))
    ours = jax.jit(jax.vmap(lambda d: physics_lib.forward_after_kinematics(model, d)))(data)
    theirs = jax.jit(jax.vmap(lambda d: mjx.forward(model, d)))(data)
    _assert_data_close(ours, theirs)


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
        return physics_lib.step(model, d, n_sub_steps, physics_lib.sync_kinematics)

    _assert_data_close(jax.jit(jax.vmap(ours))(data), jax.jit(jax.vmap(stock))(data))


def test_sync_levels_add_what_they_promise():
    env = _env("cartpole")
    model = env.mjx_model
    data = _random_data(env, jax.random.key(3), count=1)
    data = jax.tree.map(lambda x: x[0], data)
    full = jax.jit(mjx.forward)(model, data)
    position = jax.jit(physics_lib.sync_position)(model, data)
    np.testing.assert_allclose(position.subtree_com, full.subtree_com, atol=1e-6)
    synced = jax.jit(physics_lib.sync_full)(model, data)
    for field in ("subtree_com", "qfrc_bias", "cdof_dot"):
        np.testing.assert_allclose(getattr(synced, field), getattr(full, field), atol=1e-5)


def test_unsupported_integrator_names_the_valid_ones():
    env = _env("pendulum")
    model = env.mjx_model
    other = model.tree_replace({"opt.integrator": mujoco.mjtIntegrator.mjINT_IMPLICIT})
    data = jax.jit(env.reset)(jax.random.key(0)).data
    with pytest.raises(ValueError, match="mjINT_EULER, mjINT_RK4, mjINT_IMPLICITFAST"):
        physics_lib.step(other, data, 1, physics_lib.sync_kinematics)


def test_step_is_unchanged_by_stale_derived_fields_other_than_kinematics():
    """Everything but the kinematics is recomputed: stale bias forces do not leak in."""
    env = _env("acrobot")
    model = env.mjx_model
    data = jax.tree.map(lambda x: x[0], _random_data(env, jax.random.key(4), count=1))
    stale = data.replace(qfrc_bias=jnp.full_like(data.qfrc_bias, 1e3), qacc=data.qacc + 5.0)
    step = jax.jit(lambda d: physics_lib.step(model, d, 1, physics_lib.sync_kinematics))
    np.testing.assert_array_equal(step(stale).qpos, step(data).qpos)

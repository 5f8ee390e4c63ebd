"""Per-environment model fields: each environment's own model values, applied by the step.

point_mass-hard writes its actuation directions into `wrap_prm` (a field MJX
keeps static), and any `mjx.Model` array may vary per environment. These tests
check that every environment of a batch gets its own values, that the physics
uses them (against C MuJoCo on the modified model), and that bad field names
are refused with the valid choices.
"""

import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import physics as physics_lib
from jaxcontrol import reference
from jaxcontrol.mjcf import compat
from jaxcontrol.wrappers import AutoReset


@functools.cache
def _hard():
    return jaxcontrol.load("point_mass", "hard")


def test_each_environment_draws_its_own_wrap_prm():
    env = _hard()
    states = reference.batched_reset(env, jax.random.split(jax.random.key(0), 64))
    wrap = np.asarray(states.model_fields["wrap_prm"])
    assert wrap.shape == (64, 4)
    assert len({row.tobytes() for row in wrap}) == 64
    # Two unit directions, not too parallel (dm_control's rejection rule).
    np.testing.assert_allclose(np.linalg.norm(wrap[:, :2], axis=1), 1, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(wrap[:, 2:], axis=1), 1, rtol=1e-6)
    assert np.all(np.abs(np.sum(wrap[:, :2] * wrap[:, 2:], axis=1)) <= 0.9 + 1e-6)


def test_step_uses_each_environments_wrap_prm_like_c_mujoco():
    """Tendon lengths, actuator forces and the next state equal C MuJoCo's with the
    same wrap_prm written into its model, environment by environment (float64)."""
    with reference.precision(True):
        env = jaxcontrol.load("point_mass", "hard")
        states = reference.batched_reset(env, jax.random.split(jax.random.key(1), 8))
        actions = jax.random.uniform(jax.random.key(2), (8, 2), minval=-1, maxval=1)
        stepped = jax.tree.map(np.asarray, reference.batched_step(env, states, actions).data)
        wraps = np.asarray(states.model_fields["wrap_prm"])
        qpos, qvel = np.asarray(states.data.qpos), np.asarray(states.data.qvel)
    model = compat.to_mjx_compatible(env.mj_model)
    data = mujoco.MjData(model)
    for i in range(8):
        model.wrap_prm[:] = wraps[i]
        mujoco.mj_resetData(model, data)
        data.qpos[:], data.qvel[:], data.ctrl[:] = qpos[i], qvel[i], np.asarray(actions[i])
        mujoco.mj_step(model, data)
        # point_mass syncs only poses after a step, so tendon and actuator quantities
        # are those of the step's own forward pass, as C leaves them after mj_step.
        for field in ("qpos", "qvel", "ten_length", "actuator_force", "actuator_length"):
            np.testing.assert_allclose(
                getattr(stepped, field)[i], getattr(data, field), rtol=0, atol=1e-12, err_msg=field
            )


def test_model_fields_survive_steps_and_auto_reset_redraws_them():
    """The State carries them, on either backend; C MuJoCo's compiles no physics (MJX's
    step with them is the test above)."""
    env = jaxcontrol.load("point_mass", "hard", backend="mujoco")
    auto = AutoReset(env)
    states = jax.vmap(auto.reset)(jax.random.split(jax.random.key(3), 8))
    drawn = np.asarray(states.model_fields["wrap_prm"])
    near_end = states.replace(step=states.step.at[:4].set(env.episode_length - 1))
    stepped = jax.jit(jax.vmap(auto.step))(near_end, jnp.zeros((8, 2)))
    after = np.asarray(stepped.model_fields["wrap_prm"])
    np.testing.assert_array_equal(after[4:], drawn[4:])  # still mid-episode
    assert not np.any(np.all(after[:4] == drawn[:4], axis=1))  # restarted: redrawn


def test_set_state_accepts_model_fields():
    env = _hard()
    state = env.blank_state()
    wrap = jnp.array([0.0, 1.0, 1.0, 0.0])  # swaps the actuators' axes
    moved = jax.jit(
        lambda s: env.set_state(s, jnp.zeros(2), jnp.zeros(2), model_fields={"wrap_prm": wrap})
    )(state)
    np.testing.assert_array_equal(moved.model_fields["wrap_prm"], wrap)
    pushed = jax.jit(env.step)(moved, jnp.array([1.0, 0.0]))
    assert pushed.data.qvel[1] > 0 and pushed.data.qvel[0] == 0


def test_unknown_or_static_model_fields_are_refused_with_the_valid_ones():
    env = _hard()
    physics = physics_lib.Physics(env.mjx_model, env.blank_state().data, env.names)
    with pytest.raises(ValueError, match="valid fields: .*body_mass"):
        physics.with_model(geom_posn=jnp.zeros((env.mj_model.ngeom, 3)))
    with pytest.raises(ValueError, match="cannot vary per environment"):
        physics.with_model(geom_type=jnp.zeros(env.mj_model.ngeom, int))
    with pytest.raises(ValueError, match="must have shape"):
        physics.with_model(geom_pos=jnp.zeros(3))
    with pytest.raises(ValueError, match="cannot vary per environment"):
        env.set_state(env.blank_state(), jnp.zeros(2), jnp.zeros(2), model_fields={"nq": 1})


def test_any_jax_leaf_field_varies_per_environment():
    """Domain randomisation's base: a mass per environment, equal to C MuJoCo with it."""
    env = jaxcontrol.load("point_mass", "easy")
    start = env.blank_state()
    scales = np.array([1.0, 2.0, 0.5])
    masses = np.asarray(env.mj_model.body_mass)[None] * scales[:, None]
    action = jnp.array([1.0, -0.5])

    @jax.jit
    @jax.vmap
    def push(mass):
        state = env.set_state(start, jnp.zeros(2), jnp.zeros(2), model_fields={"body_mass": mass})
        return env.step(state, action).data.qvel

    ours = np.asarray(push(jnp.asarray(masses)))
    model = compat.to_mjx_compatible(env.mj_model)
    data = mujoco.MjData(model)
    for i, mass in enumerate(masses):
        model.body_mass[:] = mass
        # C caches mass-derived constants (e.g. dof_M0 of "simple" bodies) at compile
        # time; MJX reads body_mass directly. mj_setConst refreshes C's.
        mujoco.mj_setConst(model, data)
        mujoco.mj_resetData(model, data)
        data.ctrl[:] = action
        mujoco.mj_step(model, data)
        np.testing.assert_allclose(ours[i], data.qvel, rtol=1e-5)
    assert len({row.tobytes() for row in ours}) == 3

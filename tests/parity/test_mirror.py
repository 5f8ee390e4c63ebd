"""`reference.mirror`: a FIRST state of ours equal to a dm_control environment's state."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import StepType, reference
from jaxcontrol import physics as physics_lib


def test_mirror_copies_physics_step_count_and_model_fields():
    """From a mid-episode dm_control state, both engines then agree step for step,
    and both end the episode at the same step."""
    with reference.precision(True):
        env = jaxcontrol.load("point_mass", "hard", time_limit=1.0)  # 50 steps
        dm_env = reference.reference_env("point_mass", "hard", seed=4, time_limit=1.0)
        dm_env.reset()
        rng = np.random.RandomState(0)
        for _ in range(37):
            dm_env.step(rng.uniform(-1, 1, 2))
        state = jax.jit(lambda s: reference.inject(env, s))(reference.DmState.capture(env, dm_env))
        assert int(state.step) == 37 and int(state.step_type) == StepType.FIRST
        np.testing.assert_array_equal(state.model_fields["wrap_prm"], dm_env.physics.model.wrap_prm)
        np.testing.assert_array_equal(state.data.qpos, dm_env.physics.data.qpos)
        np.testing.assert_array_equal(state.data.qacc_warmstart, dm_env.physics.data.qacc_warmstart)
        step = jax.jit(env.step)
        for _ in range(13):
            action = rng.uniform(-1, 1, 2)
            timestep, state = dm_env.step(action), step(state, action)
            np.testing.assert_allclose(state.data.qpos, dm_env.physics.data.qpos, atol=1e-12)
            np.testing.assert_allclose(state.reward, timestep.reward, atol=1e-12)
            assert int(state.step_type) == int(timestep.step_type)
        assert timestep.last() and int(state.step_type) == StepType.LAST


def test_mirror_is_the_public_form_of_inject():
    env = jaxcontrol.load("point_mass", "easy")
    dm_env = reference.reference_env("point_mass", "easy", seed=1)
    timestep = dm_env.reset()
    state = reference.mirror(env, dm_env)
    for key, value in timestep.observation.items():
        np.testing.assert_allclose(state.observation[key], value, atol=1e-6)


@pytest.mark.full  # 36 s of CI; the default tier's one steps hold what it injects to dm_control
def test_mjx_steps_states_injected_on_c_as_it_steps_its_own():
    """`batched_inject_on_c` hands MJX's step the state variables and MJX's kinematics
    of them, as `batched_inject` does: from finger-spin's dm_control states, some of
    them touching the spinner, one MJX step of either agrees to float32 rounding
    (the two programs round the kinematics differently in the last bit, and contacts
    amplify it), far below the float32 one-step target."""
    env = jaxcontrol.load("finger", "spin")
    transitions = reference.reference_transitions(env, n=6, seed=0, steps_between=40)
    starts = jax.tree.map(lambda *xs: np.stack(xs), *[t.start for t in transitions])
    actions = jnp.asarray(np.stack([t.action for t in transitions]), jnp.float32)
    own_first, via_c_first = (
        reference.batched_inject(env, starts),
        reference.batched_inject_on_c(env, starts),
    )
    for name in physics_lib.KINEMATICS:
        np.testing.assert_allclose(
            getattr(via_c_first.data, name), getattr(own_first.data, name), atol=1e-6
        )
    own = reference.batched_step(env, own_first, actions)
    via_c = reference.batched_step(env, via_c_first, actions)
    assert np.sum(np.asarray(own.observation["touch"]) > 0) >= 2, "too few starts touch"
    for name in ("qpos", "qvel"):
        scale = max(1.0, float(np.max(np.abs(getattr(own.data, name)))))
        np.testing.assert_allclose(
            getattr(via_c.data, name), getattr(own.data, name), atol=1e-5 * scale
        )
    for key in own.observation:
        scale = max(1.0, float(np.max(np.abs(own.observation[key]))))
        np.testing.assert_allclose(via_c.observation[key], own.observation[key], atol=1e-5 * scale)
    np.testing.assert_allclose(via_c.reward, own.reward, atol=1e-5)


def test_the_bridges_overrides_name_registered_tasks():
    """`reference.overrides` keys on (domain, task): a misspelt key would leave its task
    on the default loader without a word."""
    overrides = reference.overrides
    for table in (overrides.ENVIRONMENTS, overrides.MIRROR_VARIABLES):
        assert set(table) <= set(jaxcontrol.ALL_TASKS)
    assert overrides.environment_loader("lqr", "lqr_6_2") is overrides.lqr_environment
    assert overrides.environment_loader("cartpole", "swingup") is overrides.default_environment


def test_lqr_reference_has_the_tasks_model_seed():
    """The loader override reads the task's own arguments: LQR's model comes from
    `model_seed`, its episodes from the seed."""
    env = jaxcontrol.load("lqr", "lqr_2_1", model_seed=5)
    stiffness = [
        np.array(reference.reference_for(env, seed).physics.model.jnt_stiffness) for seed in (0, 1)
    ]
    np.testing.assert_array_equal(stiffness[0], stiffness[1])
    np.testing.assert_array_equal(stiffness[0], env.mj_model.jnt_stiffness)

"""`equivalence.mirror`: a FIRST state of ours equal to a dm_control environment's state."""

import jax
import numpy as np

import jaxcontrol
from jaxcontrol import StepType, equivalence


def test_mirror_copies_physics_step_count_and_model_fields():
    """From a mid-episode dm_control state, both engines then agree step for step,
    and both end the episode at the same step."""
    with equivalence.precision(True):
        env = jaxcontrol.load("point_mass", "hard", time_limit=1.0)  # 50 steps
        dm_env = equivalence.reference_env("point_mass", "hard", seed=4, time_limit=1.0)
        dm_env.reset()
        rng = np.random.RandomState(0)
        for _ in range(37):
            dm_env.step(rng.uniform(-1, 1, 2))
        state = jax.jit(lambda s: equivalence.inject(env, s))(
            equivalence.DmState.capture(env, dm_env)
        )
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
    dm_env = equivalence.reference_env("point_mass", "easy", seed=1)
    timestep = dm_env.reset()
    state = equivalence.mirror(env, dm_env)
    for key, value in timestep.observation.items():
        np.testing.assert_allclose(state.observation[key], value, atol=1e-6)

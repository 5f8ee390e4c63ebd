"""`jaxcontrol.suite.load_vector`: N environments, NumPy in and out, dm_env's episode rules."""

import dm_env
import jax
import numpy as np
import pytest

from jaxcontrol import suite


def test_each_environment_is_the_env_it_stands_for_and_restarts_after_last():
    vector = suite.load_vector("cartpole", "balance", 2, task_kwargs={"random": 5})
    assert vector.control_timestep() == 0.01
    first = vector.reset()
    assert (first.step_type == dm_env.StepType.FIRST).all()
    env = vector.jax_env
    random = np.random.RandomState(0)
    actions = random.uniform(-1, 1, (2, 1))
    time_step = vector.step(actions)
    with jax.enable_x64(True):
        for index, key in enumerate(jax.random.split(jax.random.key(5), 2)):
            alone = jax.jit(env.reset)(key)
            np.testing.assert_array_equal(
                first.observation["position"][index], alone.observation["position"]
            )
            alone = jax.jit(env.step)(alone, actions[index])
            np.testing.assert_array_equal(
                time_step.observation["velocity"][index], alone.observation["velocity"]
            )
            assert time_step.reward[index] == alone.reward
    for step in range(2, env.episode_length + 1):
        time_step = vector.step(random.uniform(-1, 1, (2, 1)))
        expected = dm_env.StepType.LAST if step == env.episode_length else dm_env.StepType.MID
        assert (time_step.step_type == expected).all()
    restarted = vector.step(np.zeros((2, 1)))
    assert (restarted.step_type == dm_env.StepType.FIRST).all()
    assert (restarted.reward == 0).all() and (restarted.discount == 1).all()
    assert not np.array_equal(restarted.observation["position"], first.observation["position"])


def test_flat_observations_and_a_wrong_action_shape():
    vector = suite.load_vector(
        "cartpole", "balance", 2, environment_kwargs={"flat_observation": True}
    )
    time_step = vector.reset()
    assert list(time_step.observation) == ["observations"]
    assert time_step.observation["observations"].shape == (2, 5)
    assert vector.observation_spec()["observations"].shape == (5,)
    with pytest.raises(ValueError, match=r"expected actions of shape \(2, 1\)"):
        vector.step(np.zeros(1))

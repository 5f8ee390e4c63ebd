"""The per-task battery, run for every task in the registry.

Specs match dm_control's; rewards lie in [0, 1]; a key fixes the trajectory;
initial states are random; no observation is constant; and 1024 environments
run a full episode under jit(vmap) without a NaN.
"""

import functools

import jax
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import StepType, equivalence

NUM_ENVS = 1024


@pytest.fixture(scope="module")
def env(task):
    return jaxcontrol.load(*task)


@pytest.fixture(scope="module")
def reference(task):
    return equivalence.reference_env(*task, seed=0)


def _random_actions(env, key, shape):
    spec = env.action_spec()
    return jax.random.uniform(key, shape + spec.shape, minval=spec.minimum, maxval=spec.maximum)


@functools.partial(jax.jit, static_argnums=(0, 2))
def _reset(env, key, num_envs):
    return jax.vmap(env.reset)(jax.random.split(key, num_envs))


@functools.partial(jax.jit, static_argnums=(0, 2, 3))
def _rollout(env, key, num_envs, steps):
    reset_key, action_key = jax.random.split(key)
    states = _reset(env, reset_key, num_envs)
    actions = _random_actions(env, action_key, (steps, num_envs))

    def body(states, action):
        states = jax.vmap(env.step)(states, action)
        return states, (
            states.observation,
            states.reward,
            states.discount,
            states.step_type,
            states.diverged,
        )

    return states, jax.lax.scan(body, states, actions)[1]


@pytest.fixture(scope="module")
def episode(env):
    """A full episode of NUM_ENVS environments under random actions."""
    first = _reset(env, jax.random.key(0), NUM_ENVS)
    _, trajectory = _rollout(env, jax.random.key(1), NUM_ENVS, env.episode_length)
    return first, jax.tree.map(np.asarray, trajectory)


def test_action_spec_matches_dm_control(env, reference):
    ours, ref = env.action_spec(), reference.action_spec()
    assert ours.shape == ref.shape
    np.testing.assert_array_equal(ours.minimum, ref.minimum)
    np.testing.assert_array_equal(ours.maximum, ref.maximum)


def test_observation_spec_matches_dm_control(env, reference):
    ours, ref = env.observation_spec(), reference.observation_spec()
    assert list(ours) == list(ref), "observation keys or their order differ"
    for key in ref:
        assert ours[key].shape == ref[key].shape, key


def test_timing_matches_dm_control(env, reference):
    assert env.control_timestep == pytest.approx(reference.control_timestep(), abs=0)
    assert env.physics_timestep == reference.physics.timestep()
    # dm_control ends at the first step count >= time_limit / control_timestep.
    assert env.episode_length == int(np.ceil(reference._step_limit))


def test_observations_conform_to_spec(env, episode):
    first, (observation, *_) = episode
    for key, spec in env.observation_spec().items():
        assert first.observation[key].shape == (NUM_ENVS,) + spec.shape
        assert first.observation[key].dtype == spec.dtype
        assert observation[key].shape == (env.episode_length, NUM_ENVS) + spec.shape


def test_episode_has_no_nan_and_rewards_in_unit_interval(episode):
    _, (observation, reward, _, _, diverged) = episode
    for key, value in observation.items():
        assert np.all(np.isfinite(value)), key
    assert np.all(np.isfinite(reward))
    assert reward.min() >= 0 and reward.max() <= 1
    assert not diverged.any()


def test_episode_ends_by_truncation(env, episode):
    first, (_, _, discount, step_type, _) = episode
    assert np.all(np.asarray(first.step_type) == StepType.FIRST)
    assert np.all(step_type[:-1] == StepType.MID)
    assert np.all(step_type[-1] == StepType.LAST)
    assert np.all(discount == 1.0)


def test_no_observation_stays_constant(episode):
    _, (observation, *_) = episode
    for key, value in observation.items():
        spread = value.reshape(-1, *value.shape[2:]).std(axis=0)
        assert np.all(spread > 0), f"{key} has a constant entry: {spread}"


def test_same_key_same_trajectory(env, episode):
    """A second run from the same key is bit-identical to the first."""
    _, again = _rollout(env, jax.random.key(1), NUM_ENVS, env.episode_length)
    for x, y in zip(jax.tree.leaves(episode[1]), jax.tree.leaves(again)):
        np.testing.assert_array_equal(x, np.asarray(y))
    first = _reset(env, jax.random.key(0), NUM_ENVS)
    np.testing.assert_array_equal(first.data.qpos, episode[0].data.qpos)


def test_different_keys_give_different_initial_states(episode):
    qpos = np.asarray(episode[0].data.qpos)
    assert len({row.tobytes() for row in qpos}) == NUM_ENVS

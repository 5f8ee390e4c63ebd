"""The per-task battery, run for every task in the registry.

Specs match dm_control's; rewards lie in [0, 1]; a key fixes the trajectory;
initial states are random; no observation is constant; and 1024 environments
run a full episode under jit(vmap) without a NaN.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import StepType, equivalence

NUM_ENVS = 1024
TWINS = 8  # extra environments that replay the first ones (determinism)


@pytest.fixture(scope="module")
def env(task):
    return jaxcontrol.load(*task)


@pytest.fixture(scope="module")
def reference(task):
    return equivalence.reference_env(*task, seed=0)


def _random_actions(env, key, shape):
    spec = env.action_spec()
    return jax.random.uniform(key, shape + spec.shape, minval=spec.minimum, maxval=spec.maximum)


@functools.partial(jax.jit, static_argnums=(0, 2, 3))
def _rollout(env, key, num_envs, steps):
    """A random-action episode of num_envs + TWINS environments.

    The last TWINS environments repeat the first TWINS' keys and actions, so one
    run shows that a trajectory depends on nothing but its key and actions.
    """
    reset_key, action_key = jax.random.split(key)
    keys = jax.random.split(reset_key, num_envs)
    states = jax.vmap(env.reset)(jnp.concatenate([keys, keys[:TWINS]]))
    actions = _random_actions(env, action_key, (steps, num_envs))
    actions = jnp.concatenate([actions, actions[:, :TWINS]], axis=1)

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


@functools.lru_cache(maxsize=2)
def _episode(env):
    # Cached outside pytest's fixture scopes: xdist workers may tear module
    # fixtures down between a task's tests, and this is the battery's big cost.
    first, trajectory = _rollout(env, jax.random.key(1), NUM_ENVS, env.episode_length)
    return first, jax.tree.map(np.asarray, trajectory)


@pytest.fixture(scope="module")
def episode(env):
    """A full episode of NUM_ENVS (+ TWINS) environments under random actions."""
    return _episode(env)


def test_task_tests_share_one_xdist_worker(request, task):
    """Under `--dist loadgroup`, a task's tests form one group, so its rollout runs once."""
    if not request.config.getvalue("loadgroup"):
        pytest.skip("not running under pytest-xdist --dist loadgroup")
    assert request.node.nodeid.endswith("@{}-{}".format(*task)), request.node.nodeid


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
        assert first.observation[key].shape == (NUM_ENVS + TWINS,) + spec.shape
        assert first.observation[key].dtype == spec.dtype
        assert observation[key].shape == (env.episode_length, NUM_ENVS + TWINS) + spec.shape


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


def _assert_twins_match(tree, axis):
    for leaf in jax.tree.leaves(tree):
        leaf = np.asarray(leaf)
        twins = leaf.take(np.arange(NUM_ENVS, NUM_ENVS + TWINS), axis=axis)
        np.testing.assert_array_equal(twins, leaf.take(np.arange(TWINS), axis=axis))


def test_same_key_same_trajectory(env, episode):
    """The same key and actions give a bit-identical trajectory, within a run and across runs."""
    first, trajectory = episode
    _assert_twins_match((first.data, first.observation, first.variables), axis=0)
    _assert_twins_match(trajectory, axis=1)
    reset = jax.jit(jax.vmap(env.reset))
    keys = jax.random.split(jax.random.key(2), 16)
    for x, y in zip(jax.tree.leaves(reset(keys).data), jax.tree.leaves(reset(keys).data)):
        np.testing.assert_array_equal(x, y)


def test_different_keys_give_different_initial_states(episode):
    """Distinct keys give distinct initial states, up to chance collisions.

    A one-dimensional float32 draw takes one of about 2**23 values, so 1024 draws
    collide with probability ~6% (the birthday bound). A handful of collisions is
    chance; a reused key would collapse the batch to a few states.
    """
    states = jax.tree.map(lambda x: x[:NUM_ENVS], episode[0])
    parts = [states.data.qpos, states.data.qvel, *jax.tree.leaves(states.variables)]
    rows = np.concatenate([np.asarray(p).reshape(NUM_ENVS, -1) for p in parts], axis=1)
    assert len({row.tobytes() for row in rows}) >= NUM_ENVS - 4

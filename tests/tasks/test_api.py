"""The public API: registry, errors, immutability, clipping, divergence, auto-reset."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_control import suite

import jaxcontrol
from jaxcontrol import StepType, reference
from jaxcontrol.wrappers import AutoReset

# One compiled reset and step per Env, shared by the tests below (an Env is a static
# argument: equal Envs share the program).
_reset = jax.jit(lambda env, key: env.reset(key), static_argnums=0)
_step = jax.jit(lambda env, state, action: env.step(state, action), static_argnums=0)


def test_the_suite_is_dm_controls_whole_suite():
    """Every one of dm_control's 51 tasks, in its order and with its tags."""
    assert jaxcontrol.ALL_TASKS == suite.ALL_TASKS
    assert len(jaxcontrol.ALL_TASKS) == 51
    assert jaxcontrol.BENCHMARKING == suite.BENCHMARKING
    assert len(jaxcontrol.BENCHMARKING) == 28
    assert jaxcontrol.EXTRA == suite.EXTRA
    for tag, theirs in (("hard", suite.HARD), ("easy", suite.EASY)):
        assert jaxcontrol.registry.REGISTRY.tasks(tag) == theirs, tag


def test_unknown_domain_lists_close_matches_first():
    with pytest.raises(
        ValueError,
        match=r"unknown domain 'cartpol'.*did you mean 'cartpole'"
        r".*valid domains: cartpole, .*acrobot",
    ):
        jaxcontrol.load("cartpol", "swingup")


def test_unknown_task_lists_valid_tasks():
    with pytest.raises(ValueError, match=r"unknown task 'swing_up'.*'swingup'.*balance"):
        jaxcontrol.load("cartpole", "swing_up")


def test_a_task_id_alone_loads_the_same_task():
    env = jaxcontrol.load("point_mass-easy", time_limit=2.0)
    assert (env.domain, env.task_name, env.episode_length) == ("point_mass", "easy", 100)
    with pytest.raises(ValueError, match=r"unknown task 'point_mass-eazy'.*'point_mass-easy'"):
        jaxcontrol.load("point_mass-eazy")
    with pytest.raises(ValueError, match=r"unknown task 'cartpole' \(DOMAIN-TASK\)"):
        jaxcontrol.load("cartpole")  # a domain alone is not a task


def test_unknown_task_argument_is_an_error():
    with pytest.raises(ValueError, match=r"unknown argument 'time_limt'.*'time_limit'"):
        jaxcontrol.load("pendulum", "swingup", time_limt=5)


def test_task_arguments_apply():
    env = jaxcontrol.load("pendulum", "swingup", time_limit=2.0)
    assert env.episode_length == 100
    env = jaxcontrol.load("cartpole", "three_poles", num_poles=4)
    assert env.mj_model.nq == 5


def test_env_is_immutable_and_hashable():
    a, b = jaxcontrol.load("cartpole", "swingup"), jaxcontrol.load("cartpole", "swingup")
    assert a == b and hash(a) == hash(b)
    assert a != jaxcontrol.load("cartpole", "balance")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.n_sub_steps = 2
    # Usable as a static argument.
    s = _reset(a, jax.random.key(0))
    np.testing.assert_array_equal(
        _step(a, s, jnp.zeros(1)).data.qpos, _step(b, s, jnp.zeros(1)).data.qpos
    )


def test_blank_state_is_shaped_like_an_mjx_reset():
    """The battery checks `blank_state` against every task's reset, but under
    `--backend auto` its MJX tasks reset on C (tests/tasks/test_battery.py, `rollout`):
    here against MJX's own reset, whose data the task code does not shape."""
    env = jaxcontrol.load("cartpole", "swingup")
    reset = _reset(env, jax.random.key(0)).replace(key=None)
    blank = env.blank_state().replace(key=None)
    assert jax.tree.structure(blank) == jax.tree.structure(reset)
    for ours, theirs in zip(jax.tree.leaves(blank), jax.tree.leaves(reset)):
        assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype)


def test_wrong_action_shape_names_expected_shape():
    env = jaxcontrol.load("point_mass", "easy")
    state = jax.eval_shape(env.reset, jax.random.key(0))
    with pytest.raises(ValueError, match=r"expects an action of shape \(2,\), got \(3,\)"):
        jax.jit(env.step).trace(state, jnp.zeros(3))  # raised while tracing


def test_out_of_range_actions_are_clipped_like_ctrlrange():
    env = jaxcontrol.load("cartpole", "swingup")
    state = _reset(env, jax.random.key(0))
    big, limit = _step(env, state, jnp.array([7.0])), _step(env, state, jnp.array([1.0]))
    np.testing.assert_array_equal(big.data.qpos, limit.data.qpos)
    np.testing.assert_array_equal(big.data.qvel, limit.data.qvel)
    assert float(big.data.ctrl[0]) == 7.0  # physics.control() reads the action as given


def test_nan_action_ends_only_that_episode():
    env = jaxcontrol.load("cartpole", "swingup")
    states = reference.batched_reset(env, jax.random.split(jax.random.key(0), 4))
    actions = jnp.zeros((4, 1)).at[2, 0].set(jnp.nan)
    clean = reference.batched_step(env, states, jnp.zeros((4, 1)))
    stepped = reference.batched_step(env, states, actions)
    assert stepped.diverged.tolist() == [False, False, True, False]
    assert stepped.step_type.tolist() == [StepType.MID, StepType.MID, StepType.LAST, StepType.MID]
    # The diverged environment keeps its last finite state; nothing is NaN.
    for before, after in zip(jax.tree.leaves(states.data), jax.tree.leaves(stepped.data)):
        np.testing.assert_array_equal(after[2], before[2])
    for leaf in jax.tree.leaves((stepped.observation, stepped.reward, stepped.data)):
        assert np.all(np.isfinite(leaf))
    assert float(stepped.reward[2]) == 0.0
    for i in (0, 1, 3):  # neighbours untouched
        np.testing.assert_array_equal(stepped.data.qpos[i], clean.data.qpos[i])
        np.testing.assert_array_equal(
            stepped.observation["position"][i], clean.observation["position"][i]
        )


def test_first_state_semantics():
    env = jaxcontrol.load("acrobot", "swingup")
    state = _reset(env, jax.random.key(1))
    assert int(state.step_type) == StepType.FIRST and float(state.reward) == 0.0
    assert int(state.step) == 0


def test_stepping_past_last_keeps_the_episode_going():
    env = jaxcontrol.load("pendulum", "swingup", time_limit=0.06)
    state = _reset(env, jax.random.key(0))
    types = []
    for _ in range(5):
        state = _step(env, state, jnp.zeros(1))
        types.append(int(state.step_type))
    assert types == [StepType.MID, StepType.MID, StepType.LAST, StepType.LAST, StepType.LAST]
    assert int(state.step) == 5


def test_set_state_recomputes_observation():
    env = jaxcontrol.load("pendulum", "swingup")
    state = _reset(env, jax.random.key(0))
    set_state = jax.jit(env.set_state)
    upright = set_state(state, qpos=jnp.zeros(1), qvel=jnp.array([0.5]))
    np.testing.assert_allclose(upright.observation["orientation"], [1.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(upright.observation["velocity"], [0.5])
    hanging = set_state(state, qpos=jnp.array([np.pi]), qvel=jnp.zeros(1))
    np.testing.assert_allclose(hanging.observation["orientation"], [-1.0, 0.0], atol=1e-6)
    with pytest.raises(ValueError, match="unknown task variables"):
        env.set_state(state, qpos=jnp.zeros(1), qvel=jnp.zeros(1), target=1.0)


def test_auto_reset_restarts_finished_episodes_and_keeps_final_observation():
    env = jaxcontrol.load("pendulum", "swingup", time_limit=0.06)
    venv = AutoReset(env)
    states = reference.batched_reset(venv, jax.random.split(jax.random.key(0), 3))
    step = functools.partial(reference.batched_step, venv)
    actions = jnp.zeros((3, 1))
    for _ in range(2):
        states = step(states, actions)
    before = states
    states = step(states, actions)  # third step ends every episode
    assert np.all(np.asarray(states.step_type) == StepType.LAST)
    assert np.all(np.asarray(states.step) == 0)
    manual = reference.batched_step(env, before, actions)
    np.testing.assert_array_equal(
        states.info["final_observation"]["orientation"], manual.observation["orientation"]
    )
    fresh = reference.batched_reset(env, manual.key)
    np.testing.assert_array_equal(
        states.observation["orientation"], fresh.observation["orientation"]
    )
    states = step(states, actions)
    assert np.all(np.asarray(states.step_type) == StepType.MID)
    assert np.all(np.asarray(states.step) == 1)

"""`jaxcontrol.suite` against dm_control's own suite: lists, arguments, specs, physics.

Each comparison loads dm_control's environment of the task and ours, puts ours in
dm_control's state (`suite.mirror`) and steps both with the same actions.
"""

import collections

import numpy as np
import pytest
from dm_control import suite as dm_suite
from dm_control.rl import control
from scipy import stats

from jaxcontrol import suite
from jaxcontrol.parity.tolerance import ONE_STEP_TARGET

TOLERANCE = ONE_STEP_TARGET["float64"]  # PARITY.md's one-step target


def _pair(domain, task, *, backend="mujoco", steps=3, seed=0, **kwargs):
    """dm_control's environment after `steps` random steps, and ours mirrored to it."""
    theirs = dm_suite.load(domain, task, task_kwargs={"random": seed}, **kwargs)
    ours = suite.load(domain, task, task_kwargs={"random": seed}, backend=backend, **kwargs)
    random = np.random.RandomState(seed)
    theirs.reset()
    for _ in range(steps):
        theirs.step(random.uniform(-1, 1, theirs.action_spec().shape))
    suite.mirror(ours, theirs)
    return ours, theirs, random


def _assert_observations_close(ours, theirs, tolerance):
    assert list(ours) == list(theirs)
    for key in theirs:
        assert ours[key].dtype == theirs[key].dtype == np.float64
        np.testing.assert_allclose(ours[key], theirs[key], rtol=0, atol=tolerance, err_msg=key)


def test_the_task_lists_are_dm_controls():
    for name in (
        "ALL_TASKS",
        "BENCHMARKING",
        "EASY",
        "HARD",
        "EXTRA",
        "NO_REWARD_VIZ",
        "REWARD_VIZ",
        "TASKS_BY_DOMAIN",
    ):
        assert getattr(suite, name) == getattr(dm_suite, name), name


def test_an_unknown_environment_argument_is_an_error_naming_the_valid_ones():
    with pytest.raises(ValueError, match="flat_observation.*n_sub_steps|n_sub_steps.*flat_obs"):
        suite.load("cartpole", "balance", environment_kwargs={"n_substeps": 2})


def test_invalid_environment_arguments_are_refused():
    with pytest.raises(ValueError, match="Both n_sub_steps and control_timestep"):
        suite.load(
            "cartpole", "balance", environment_kwargs={"n_sub_steps": 2, "control_timestep": 0.02}
        )
    with pytest.raises(ValueError, match="legacy_step=False is not supported"):
        suite.load("cartpole", "balance", environment_kwargs={"legacy_step": False})
    with pytest.raises(ValueError, match="unknown argument 'num_pols'"):
        suite.load("cartpole", "balance", task_kwargs={"num_pols": 2})
    with pytest.raises(ValueError, match="unknown backend"):
        suite.load("cartpole", "balance", backend="gpu")
    with pytest.raises(ValueError, match="unknown precision 'float16'.*float32"):
        suite.load("cartpole", "balance", backend="mjx", precision="float16")
    with pytest.raises(ValueError, match="precision='float32' is MJX's"):
        suite.load_vector("cartpole", "balance", 4, precision="float32")


# Ids that are not DOMAIN-TASK: per-task ids belong to the `task` fixture's grouping
# (tests/conftest.py; tests/test_run_order.py).
@pytest.mark.parametrize(
    "domain,task_name",
    [("cartpole", "balance"), ("finger", "spin")],
    ids=["cartpole/balance", "finger/spin"],
)
def test_specs_and_control_timestep_are_dm_controls(domain, task_name):
    ours = suite.load(domain, task_name)
    theirs = dm_suite.load(domain, task_name)
    assert ours.action_spec() == theirs.action_spec()
    assert ours.action_spec().name == theirs.action_spec().name
    assert ours.observation_spec() == theirs.observation_spec()
    assert ours.reward_spec() == theirs.reward_spec()
    assert ours.discount_spec() == theirs.discount_spec()
    assert ours.control_timestep() == theirs.control_timestep()
    assert ours.physics.timestep() == theirs.physics.timestep()


def test_environment_arguments_set_the_episode_as_dm_controls_do():
    kwargs = {"environment_kwargs": {"n_sub_steps": 2, "flat_observation": True}}
    ours, theirs, random = _pair("cartpole", "balance", **kwargs)
    assert ours.control_timestep() == theirs.control_timestep() == 0.02
    assert ours.observation_spec() == theirs.observation_spec()
    assert set(ours.observation_spec()) == {control.FLAT_OBSERVATION_KEY}
    steps = 0
    while True:
        action = random.uniform(-1, 1, (1,))
        a, b = ours.step(action), theirs.step(action)
        steps += 1
        _assert_observations_close(a.observation, b.observation, TOLERANCE)
        assert a.step_type == b.step_type
        if b.last():
            break
    assert steps == 500 - 3  # 10 s at 0.02 s, 3 steps taken before the mirror
    short = suite.load("cartpole", "balance", task_kwargs={"time_limit": 0.5})
    short.reset()
    assert sum(1 for _ in iter(lambda: short.step([0.0]).last(), True)) == 49


def test_a_mirrored_episode_is_dm_controls_bit_for_bit_touch_included():
    # A state whose touch sensors read the transition just taken: recomputing them
    # at the state (as `reference.mirror` does) gives other values.
    # Seed 1 places the peg in the hand: after 4 steps a touch sensor reads its contact.
    theirs = dm_suite.load("manipulator", "bring_peg", task_kwargs={"random": 1})
    random = np.random.RandomState(1)
    theirs.reset()
    for _ in range(4):
        theirs.step(random.uniform(-1, 1, theirs.action_spec().shape))
    assert theirs.task.get_observation(theirs.physics)["touch"].any()
    ours = suite.load("manipulator", "bring_peg", task_kwargs={"random": 1})
    suite.mirror(ours, theirs)
    _assert_observations_close(
        ours.task.get_observation(ours.physics), theirs.task.get_observation(theirs.physics), 0.0
    )
    for _ in range(10):
        action = random.uniform(-1, 1, theirs.action_spec().shape)
        a, b = ours.step(action), theirs.step(action)
        np.testing.assert_array_equal(ours.physics.data.qpos, theirs.physics.data.qpos)
        np.testing.assert_array_equal(ours.physics.data.qvel, theirs.physics.data.qvel)
        np.testing.assert_array_equal(ours.physics.data.sensordata, theirs.physics.data.sensordata)
        _assert_observations_close(a.observation, b.observation, TOLERANCE)
        assert abs(a.reward - b.reward) <= TOLERANCE


def test_reads_see_the_current_state_and_writes_take_effect_in_the_next_step():
    ours, theirs, random = _pair("cartpole", "swingup")
    for physics in (ours.physics, theirs.physics):
        physics.named.data.qpos["slider"] = 0.3  # outside reset_context, as code does
    mid = theirs.physics.get_state()
    action = random.uniform(-1, 1, (1,))
    a, b = ours.step(action), theirs.step(action)
    _assert_observations_close(a.observation, b.observation, TOLERANCE)
    for name in ("xpos", "xmat", "geom_xpos", "qpos", "qvel"):
        np.testing.assert_array_equal(
            getattr(ours.physics.named.data, name).__array__(),
            getattr(theirs.physics.named.data, name).__array__(),
        )
    assert ours.physics.time() == theirs.physics.time()
    np.testing.assert_array_equal(ours.physics.get_state(), theirs.physics.get_state())
    for physics in (ours.physics, theirs.physics):
        with physics.reset_context():
            physics.set_state(mid)
    a, b = ours.step(action), theirs.step(action)
    _assert_observations_close(a.observation, b.observation, TOLERANCE)
    assert ours.physics.pole_angle_cosine() == theirs.physics.pole_angle_cosine()


def test_the_mjx_backend_follows_dm_control_within_the_one_step_target():
    ours, theirs, random = _pair("pendulum", "swingup", backend="mjx")
    assert ours.backend == "mjx"
    for step in range(6):
        if step == 3:  # a state set in the host physics reaches MJX's next step
            state = theirs.physics.get_state()
            state[1] = 0.5  # qvel["hinge"]
            for physics in (ours.physics, theirs.physics):
                with physics.reset_context():
                    physics.set_state(state)
        action = random.uniform(-1, 1, (1,))
        a, b = ours.step(action), theirs.step(action)
        _assert_observations_close(a.observation, b.observation, TOLERANCE)
        assert abs(a.reward - b.reward) <= TOLERANCE
        np.testing.assert_allclose(ours.physics.data.xpos, theirs.physics.data.xpos, atol=TOLERANCE)
        for name in ("qacc", "qfrc_constraint", "qfrc_actuator", "actuator_force"):
            np.testing.assert_allclose(
                getattr(ours.physics.data, name),
                getattr(theirs.physics.data, name),
                atol=TOLERANCE,
                err_msg=name,
            )


def test_random_is_a_seed_a_random_state_or_fresh_entropy():
    def first(random):
        return suite.load("cartpole", "swingup", task_kwargs={"random": random}).reset()

    np.testing.assert_array_equal(
        first(7).observation["position"], first(7).observation["position"]
    )
    a = first(np.random.RandomState(7)).observation["position"]
    b = first(np.random.RandomState(7)).observation["position"]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(
        first(None).observation["position"], first(None).observation["position"]
    )
    env = suite.load("cartpole", "swingup", task_kwargs={"random": 7})
    assert isinstance(env.task.random, np.random.RandomState)


def test_episodes_from_a_seed_follow_dm_controls_distribution():
    # JAX keys are not RandomState draws: the episodes differ, their law does not.
    ours = suite.load("cartpole", "swingup", task_kwargs={"random": 0})
    theirs = dm_suite.load("cartpole", "swingup", task_kwargs={"random": 0})
    draws = collections.defaultdict(list)
    for _ in range(300):
        for name, env in (("ours", ours), ("theirs", theirs)):
            observation = env.reset().observation
            draws[name].append(np.concatenate([observation["position"], observation["velocity"]]))
    a, b = np.array(draws["ours"]), np.array(draws["theirs"])
    for column in range(a.shape[1]):
        assert stats.ks_2samp(a[:, column], b[:, column]).pvalue > 1e-3, column

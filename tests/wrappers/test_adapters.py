"""The dm_env and Gymnasium adapters: contracts, drop-in loops, registration."""

import functools
import os
import subprocess
import sys
import textwrap

import dm_env
import gymnasium
import jax
import numpy as np
import pytest
from absl.testing import absltest
from dm_control import suite
from dm_env import test_utils
from gymnasium.utils.env_checker import check_env
from toy_env import ToyEnv

import jaxcontrol
from jaxcontrol.core import StepType
from jaxcontrol.wrappers import (
    AutoReset,
    DmEnv,
    FlattenObservation,
    GymnasiumEnv,
    GymnasiumVectorEnv,
)

pytestmark = pytest.mark.xdist_group("wrappers")

# The adapters' programs and the reference rollouts are compiled separately;
# XLA may round them differently in float32 (an ulp), never more.
same = functools.partial(np.testing.assert_allclose, rtol=1e-5, atol=1e-6)


@functools.cache
def short(domain="pendulum", task="swingup", limit=0.1):
    return jaxcontrol.load(domain, task, time_limit=limit)  # five steps


class DmEnvContractTest(test_utils.EnvironmentTestMixin, absltest.TestCase):
    """dm_env's own test battery, over several episodes of a wrapped task."""

    def make_object_under_test(self):
        return DmEnv(short(), seed=3)

    def make_action_sequence(self):
        for _ in range(15):  # five-step episodes: ends and restarts several times
            yield self.make_action()


def dm_control_loop(env, steps_limit=2000):
    """An evaluation loop as written for dm_control.suite (unchanged for DmEnv)."""
    kinds, total = [], 0.0
    spec = env.action_spec()
    time_step = env.reset()
    kinds.append((time_step.step_type, time_step.reward, time_step.discount))
    rng = np.random.RandomState(0)
    while not time_step.last() and len(kinds) < steps_limit:
        action = rng.uniform(spec.minimum, spec.maximum, spec.shape)
        time_step = env.step(action)
        total += time_step.reward
        # dm_control's rewards are floats or NumPy float64s by task; ours always float64.
        kinds.append(
            (
                time_step.step_type,
                isinstance(time_step.reward, float),
                isinstance(time_step.discount, float),
            )
        )
    time_step = env.step(np.zeros(spec.shape))  # after LAST: the next episode's FIRST
    kinds.append((time_step.step_type, time_step.reward, time_step.discount))
    return kinds, total, time_step


def test_dm_env_is_a_drop_in_for_dm_control_suite_load():
    ours = DmEnv(jaxcontrol.load("pendulum", "swingup"), seed=0)
    theirs = suite.load("pendulum", "swingup", task_kwargs={"random": 0})
    assert ours.action_spec() == theirs.action_spec()
    np.testing.assert_array_equal(ours.action_spec().minimum, theirs.action_spec().minimum)
    np.testing.assert_array_equal(ours.action_spec().maximum, theirs.action_spec().maximum)
    assert ours.observation_spec() == theirs.observation_spec()
    assert list(ours.observation_spec()) == list(theirs.observation_spec())
    assert ours.reward_spec() == theirs.reward_spec()
    assert ours.discount_spec() == theirs.discount_spec()
    our_kinds, our_return, our_next = dm_control_loop(ours)
    their_kinds, their_return, _their_next = dm_control_loop(theirs)
    assert our_kinds == their_kinds  # FIRST (None, None), 999 x MID, LAST, FIRST again
    assert len(our_kinds) == 1002 and our_kinds[-2][0] == dm_env.StepType.LAST
    assert 0 <= our_return <= 1000 and abs(our_return - their_return) < 200
    assert not hasattr(ours, "physics")
    for key, value in our_next.observation.items():
        assert value.dtype == theirs.observation_spec()[key].dtype


def test_dm_env_episodes_follow_auto_reset_from_the_same_key():
    env = ToyEnv(episode_length=4)
    ours = DmEnv(env, seed=5)
    auto = AutoReset(env)
    state = auto.reset(jax.random.key(5))
    step = jax.jit(auto.step)
    time_step = ours.reset()
    action = np.array([0.4])
    for _ in range(3):  # three episodes
        for _ in range(4):
            same(time_step.observation["position"], state.observation["position"])
            time_step, state = ours.step(action), step(state, action.astype(np.float32))
        assert time_step.last() and int(state.step_type) == StepType.LAST
        same(time_step.observation["position"], state.info["final_observation"]["position"])
        time_step = ours.step(action)  # dm_env spends a step() on the restart
        assert time_step.first() and time_step.reward is None


def test_dm_env_refuses_auto_reset_and_bad_actions():
    with pytest.raises(ValueError, match="without AutoReset"):
        DmEnv(AutoReset(short()))
    env = DmEnv(short())
    env.reset()
    with pytest.raises(ValueError, match=r"shape \(1,\)"):
        env.step(np.zeros(3))


def test_gymnasium_vector_env_steps_all_envs_and_maps_truncation():
    toy = ToyEnv(episode_length=5)
    env = GymnasiumVectorEnv(toy, num_envs=4, seed=0)
    assert env.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    obs, info = env.reset(seed=1)
    assert obs.shape == (4, 2) and obs.dtype == np.float32 and obs in env.observation_space
    # The same trajectory as AutoReset, vmapped, from the same keys.
    auto = AutoReset(toy)
    key = jax.random.split(jax.random.key(1))[1]
    states = jax.vmap(auto.reset)(jax.random.split(key, 4))
    flat = FlattenObservation(toy)
    same(obs, jax.vmap(flat.flatten)(states.observation))
    actions = np.linspace(-1, 1, 4, dtype=np.float32).reshape(4, 1)
    step = jax.jit(jax.vmap(auto.step))
    for t in range(1, 12):
        obs, reward, terminated, truncated, info = env.step(actions)
        states = step(states, actions)
        same(obs, jax.vmap(flat.flatten)(states.observation))
        same(reward, np.asarray(states.reward, np.float64))
        assert reward.dtype == np.float64 and terminated.dtype == truncated.dtype == bool
        assert not terminated.any()  # time limits only
        assert truncated.all() == (t % 5 == 0) and truncated.any() == (t % 5 == 0)
        if t % 5 == 0:
            assert info["_final_obs"].all() and len(info["final_obs"]) == 4
            final = jax.vmap(flat.flatten)(states.info["final_observation"])
            same(np.stack(info["final_obs"]), final)
        else:
            assert "final_obs" not in info
    env.close()


def test_gymnasium_vector_env_dict_observations_and_seeds():
    env = GymnasiumVectorEnv(ToyEnv(), num_envs=3, flatten=False)
    assert isinstance(env.single_observation_space, gymnasium.spaces.Dict)
    obs, _ = env.reset(seed=[1, 2, 3])
    assert set(obs) == {"position", "velocity"} and obs["position"].shape == (3, 1)
    assert obs in env.observation_space
    again, _ = env.reset(seed=[1, 2, 3])
    np.testing.assert_array_equal(again["position"], obs["position"])
    with pytest.raises(ValueError, match="expected 3 seeds"):
        env.reset(seed=[1, 2])
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros((2, 1), np.float32))
    with pytest.raises(ValueError, match="without AutoReset"):
        GymnasiumVectorEnv(AutoReset(ToyEnv()), 2)


def test_terminated_comes_from_a_zero_discount():
    """A true terminal state (discount 0) is `terminated`, not `truncated`."""
    from jaxcontrol.wrappers.gymnasium_adapter import _ends

    state = ToyEnv().reset(jax.random.key(0))
    last = state.replace(step_type=np.int32(StepType.LAST))
    assert [bool(x) for x in _ends(last.replace(discount=np.float32(0)))] == [True, False]
    assert [bool(x) for x in _ends(last)] == [False, True]
    assert [bool(x) for x in _ends(state)] == [False, False]


def test_gymnasium_make_registers_every_task_and_passes_check_env():
    for domain, task in jaxcontrol.ALL_TASKS:
        assert f"jaxcontrol/{domain}-{task}-v0" in gymnasium.registry
    env = gymnasium.make("jaxcontrol/pendulum-swingup-v0", time_limit=0.1)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3,)
    total, done, steps = 0.0, False, 0
    while not done:
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        total, done, steps = total + reward, terminated or truncated, steps + 1
    assert steps == 5 and truncated and not terminated
    vector = gymnasium.make_vec("jaxcontrol/pendulum-swingup-v0", num_envs=2, time_limit=0.1)
    assert isinstance(vector, GymnasiumVectorEnv)
    assert vector.reset(seed=0)[0].shape == (2, 3)
    assert isinstance(GymnasiumEnv(short()).observation_space, gymnasium.spaces.Box)


def _python(code):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        timeout=300,
        check=False,
    )


def test_import_registers_lazily_and_a_missing_extra_says_what_to_install():
    result = _python(
        """
        import sys
        import jaxcontrol
        assert "gymnasium" not in sys.modules, "import jaxcontrol imported gymnasium"
        import gymnasium
        assert "jaxcontrol/cartpole-swingup-v0" in gymnasium.registry
        print("ok")
        """
    )
    assert result.stdout.strip() == "ok", result.stderr
    result = _python(
        """
        import sys
        sys.modules["gymnasium"] = None  # as if the extra were not installed
        import jaxcontrol
        from jaxcontrol.wrappers import DmEnv  # the rest works without it
        try:
            from jaxcontrol.wrappers import GymnasiumVectorEnv
        except ImportError as error:
            print(error)
        """
    )
    assert "pip install 'jaxcontrol[gymnasium]'" in result.stdout, result.stderr

"""dog's observations, rewards and resets against dm_control, without stepping MJX.

Stepping the dog under MJX costs minutes of compilation; these checks need none:

* observations and rewards: dm_control's own physics states (after its steps, and
  fetch's ball placed at the target and in the mouth) are copied onto the device as
  they are, and our jitted observation and reward functions must give dm_control's
  to round-off in float64;
* the reset: the stand heights and body weight are dm_control's; our
  `initialize_episode` (jitted alone, no forward pass) leaves every entry that
  dm_control leaves at its default, and draws the others from dm_control's
  distributions (two-sample KS tests against dm_control's own resets).
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import jaxcontrol
from jaxcontrol import parity, reference
from jaxcontrol.mjcf import compat
from jaxcontrol.physics import Physics
from jaxcontrol.tasks import dog

TASKS = ("stand", "walk", "trot", "run", "fetch")
# What dog's observations and rewards read from the data (nothing else is copied).
_READ = (
    "qpos",
    "qvel",
    "act",
    "ctrl",
    "xpos",
    "xmat",
    "geom_xpos",
    "site_xpos",
    "site_xmat",
    "sensordata",
    "cvel",
    "subtree_com",
)
RESETS_OURS, RESETS_DM = 1000, 300
# MJX ignores dog's noslip iterations, and says so (tested below); the tests here run no
# MJX step, so the warning is noise in them.
pytestmark = pytest.mark.filterwarnings("ignore:the model sets noslip_iterations")


def _env(task_name):
    return jaxcontrol.load("dog", task_name)


def _observer(env):
    @jax.jit
    def observe(data):
        physics = Physics.create(env.mjx_model, data, env.names)
        return env.task.get_observation(physics, {}), env.task.get_reward(physics, {})

    blank = env._initial_data()

    def run(fields):
        data = blank.replace(**{f: jnp.reshape(fields[f], getattr(blank, f).shape) for f in _READ})
        obs, reward = observe(data)
        return jax.tree.map(np.asarray, obs), float(reward)

    return run


def _snapshot(mj_data) -> dict[str, np.ndarray]:
    return {f: np.array(getattr(mj_data, f)) for f in _READ}


def _dm_states(dm_env, steps=40):
    """(data fields, observation, reward) after some of dm_control's random-action steps."""
    spec = dm_env.action_spec()
    random = np.random.RandomState(0)
    dm_env.reset()
    for i in range(steps):
        timestep = dm_env.step(random.uniform(spec.minimum, spec.maximum))
        if i % 10 in (0, 9):
            yield _snapshot(dm_env.physics.data.ptr), timestep.observation, timestep.reward


def _placed_balls(dm_env):
    """fetch: the ball at the target (dm_control's let-go branch) and between the bites."""
    physics = dm_env.physics
    named = physics.named
    for where in ("target", "mouth"):
        dm_env.reset()
        if where == "target":
            position = named.data.geom_xpos["target"].copy()
        else:
            position = 0.5 * (
                named.data.site_xpos["upper_bite"] + named.data.site_xpos["lower_bite"]
            )
        named.data.qpos["ball_root"][:3] = position
        physics.forward()
        if where == "target":  # the reward's let-go branch
            assert physics.ball_to_target_distance() < 2 * named.model.geom_size["target", 0]
        task = dm_env.task
        yield _snapshot(physics.data.ptr), task.get_observation(physics), task.get_reward(physics)


@pytest.mark.parametrize("task_name", TASKS)
def test_observations_and_rewards_match_dm_control_on_its_states(task_name):
    with reference.precision(True):
        env = _env(task_name)
        dm_env = reference.reference_for(env, seed=0)
        observe = _observer(env)
        states = list(_dm_states(dm_env))
        rewards = [r for _, _, r in states]
        if task_name == "fetch":
            states += list(_placed_balls(dm_env))
        for data, expected_obs, expected_reward in states:
            obs, reward = observe(data)
            assert list(obs) == list(expected_obs)
            for key, value in obs.items():
                np.testing.assert_allclose(value, expected_obs[key], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(reward, expected_reward, rtol=1e-12, atol=1e-15)
    assert len(set(rewards)) > 1, rewards  # the states differ in what the reward reads


def test_stand_heights_and_body_weight_are_dm_control_s():
    for task_name in ("stand", "fetch"):
        env = _env(task_name)
        dm_env = reference.reference_for(env, seed=0)
        dm_env.reset()
        assert dog.stand_heights(env.mj_model) == tuple(dm_env.task._stand_height)
        assert dog.body_weight(env.mj_model) == dm_env.task._body_weight


def _our_resets(env, n):
    @jax.jit
    @jax.vmap
    def draw(key):
        physics = Physics.create(env.mjx_model, env._initial_data(), env.names)
        data = env.task.initialize_episode(physics, key)[0].data
        return data.qpos, data.qvel, data.act

    return [np.asarray(x) for x in draw(jax.random.split(jax.random.key(5), n))]


def _dm_resets(env, n):
    dm_env = reference.reference_for(env, seed=3)
    samples = []
    for _ in range(n):
        dm_env.reset()
        data = dm_env.physics.data
        samples.append((data.qpos.copy(), data.qvel.copy(), data.act.copy()))
    return [np.stack(x) for x in zip(*samples)]


@pytest.mark.parametrize("task_name", ["stand", "fetch"])
def test_reset_distribution_matches_dm_control(task_name):
    with reference.precision(True):
        env = _env(task_name)
        ours = _our_resets(env, RESETS_OURS)
    ref = _dm_resets(env, RESETS_DM)
    names = ("qpos", "qvel", "act")
    random_columns = 0
    for name, a, b in zip(names, ours, ref):
        for column in range(b.shape[1]):
            x, y = a[:, column], b[:, column]
            if np.ptp(y) == 0:  # dm_control leaves it at its default: so must we
                np.testing.assert_array_equal(x, y[0], err_msg=f"{name}[{column}]")
                continue
            random_columns += 1
            p = stats.ks_2samp(x, y).pvalue
            assert p > parity.KS_THRESHOLD, f"{name}[{column}]: KS p = {p:.2e}"
    # Root heading (w, z), three root velocities, 38 activations; fetch: ball x, y, velocity.
    assert random_columns == 2 + 3 + 38 + (5 if task_name == "fetch" else 0)
    if task_name == "fetch":
        ball = env.names.rows("qpos")["ball_root"]
        for qpos in (ours[0], ref[0]):
            np.testing.assert_allclose(np.hypot(*qpos[:, ball[:2]].T), 7.5, rtol=1e-12)


def test_mjx_warns_that_it_ignores_noslip():
    """dog sets 4 noslip iterations, which MJX ignores: putting it on MJX says so."""
    model = _env("stand").mj_model
    assert model.opt.noslip_iterations == 4
    with pytest.warns(UserWarning, match="noslip_iterations=4, which MJX ignores"):
        compat.put_model(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compat.put_model(model, steps=False)  # kinematics only (the C backend)

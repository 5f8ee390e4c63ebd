"""humanoid_CMU's observations and rewards read dm_control's states as dm_control does.

No physics runs here: dm_control computes each state (upright or tumbling, still
or fast, with random controls), our task reads the same data fields, and every
observation and reward must equal dm_control's to round-off. The states reach
every term of the reward (head height, the thorax's uprightness, control, speed).
The one-step parity test covers the physics and the sensor sync.
"""

import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import reference
from jaxcontrol.physics import Physics

N_STATES = 24


def _dm_states(dm_env, seed):
    """dm_control's physics at varied states, after its forward pass, one at a time."""
    physics = dm_env.physics
    random = np.random.RandomState(seed)
    for i in range(N_STATES):
        with physics.reset_context():
            if i % 3 == 0:  # a random reset pose: low, tumbled
                dm_env.task.initialize_episode(physics)
            else:  # the upright pose, raised or lowered, tilted, moving
                physics.data.qpos[:] = physics.model.qpos0
                physics.data.qpos[2] += random.uniform(-0.4, 0.2)
                physics.data.qpos[3:7] += random.normal(scale=0.3 * (i % 3 == 2), size=4)
                physics.data.qpos[3:7] /= np.linalg.norm(physics.data.qpos[3:7])
                physics.data.qpos[7:] += random.normal(scale=0.1, size=physics.model.nq - 7)
            physics.data.qvel[:] = random.normal(scale=1.0, size=physics.model.nv)
            physics.data.qvel[:2] = random.normal(scale=6.0, size=2)
            physics.data.ctrl[:] = random.uniform(-1.2, 1.2, size=physics.model.nu)
        yield physics


@pytest.mark.parametrize("task_name", ["stand", "walk", "run"])
def test_observation_and_reward_match_dm_control(task_name):
    with reference.precision(True):
        env = jaxcontrol.load("humanoid_CMU", task_name)
        dm_env = reference.reference_for(env, seed=0)
        blank = env._initial_data()
        rewards = []
        for dm in _dm_states(dm_env, seed=1):
            data = blank.replace(
                qpos=dm.data.qpos.copy(),
                qvel=dm.data.qvel.copy(),
                ctrl=dm.data.ctrl.copy(),
                xpos=dm.data.xpos.copy(),
                xmat=dm.data.xmat.reshape(-1, 3, 3).copy(),
                sensordata=dm.data.sensordata.copy(),
            )
            physics = Physics.create(env.mjx_model, data, env.names)
            ours = env.task.get_observation(physics, {})
            expected = dm_env.task.get_observation(dm)
            assert list(ours) == list(expected)
            for key, value in expected.items():
                np.testing.assert_allclose(ours[key], value, rtol=0, atol=1e-12, err_msg=key)
            reward = float(env.task.get_reward(physics, {}))
            rewards.append(dm_env.task.get_reward(dm))
            assert reward == pytest.approx(rewards[-1], rel=0, abs=1e-12)
    dm_env.close()
    assert max(rewards) > 0.2 and min(rewards) < 0.05, rewards  # the states span the reward

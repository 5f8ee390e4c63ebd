"""A policy evaluated inside dm_control itself (``evaluate --in-dm-control``).

The same policy must score alike in jaxcontrol and in dm_control, and the
run's wrappers (action repeat, images of the run's size and camera, frame
stacking) must be rebuilt around dm_control's environment as ours do them.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from markers import needs_gl

import jaxcontrol
from jaxcontrol import reference, wrappers
from jaxcontrol.agents.common import dm_control_eval
from jaxcontrol.agents.common.evaluation import evaluate


def _balance(observation):
    """A linear controller that balances cartpole (about 999.7 a 1000-step episode)."""
    position, velocity = observation["position"], observation["velocity"]
    force = 10 * position[:, 2] + 3 * velocity[:, 1] + position[:, 0] + velocity[:, 0]
    return jnp.clip(force, -1.0, 1.0)[:, None]


def test_run_wrappers_are_read_from_the_stack():
    task = jaxcontrol.load("cartpole", "balance", backend="mujoco")
    assert dm_control_eval.RunWrappers.of(task) == dm_control_eval.RunWrappers()
    pixels = wrappers.Pixels(wrappers.ActionRepeat(task, 2), height=16, width=16)
    how = dm_control_eval.RunWrappers.of(wrappers.FrameStack(pixels, 3))
    assert (how.action_repeat, how.pixels, how.frames) == (2, pixels, 3)
    with pytest.raises(ValueError, match="FlattenObservation"):
        dm_control_eval.RunWrappers.of(wrappers.FlattenObservation(task))


def test_a_policy_scores_alike_in_dm_control_and_in_jaxcontrol():
    """Same task, same policy: dm_control's returns and ours agree to the noise of the resets."""
    env = jaxcontrol.load("cartpole", "balance", backend="mujoco")
    policy = lambda params, observation: _balance(observation)
    theirs = dm_control_eval.evaluate_in_dm_control(env, policy, None, seed=3, episodes=3)
    ours = np.asarray(evaluate(env, policy, None, jax.random.key(3), 3))
    assert theirs["episodes"] == 3 and len(theirs["returns"]) == 3
    assert min(theirs["returns"]) > 990.0 and ours.min() > 990.0
    assert abs(theirs["mean_return"] - float(ours.mean())) < 0.5


@needs_gl
def test_dm_control_images_are_repeated_and_stacked_like_ours():
    """FrameStack(Pixels(ActionRepeat(task, 2)), 3) rebuilt on dm_control: the first
    image thrice at a reset, then the oldest dropped and dm_control's newest image
    appended; rewards summed over the repeated steps."""
    task = jaxcontrol.load("cartpole", "swingup", backend="mujoco")
    env = wrappers.FrameStack(
        wrappers.Pixels(wrappers.ActionRepeat(task, 2), height=16, width=16), 3
    )
    episode = dm_control_eval._DmControlEpisode(env, seed=7)  # pylint: disable=protected-access
    plain = reference.reference_for(task, seed=7)  # the same resets, without the wrappers
    try:
        stack = episode.reset()["pixels"][0]
        plain.reset()
        first = plain.physics.render(16, 16, camera_id=0)
        assert stack.shape == (16, 16, 9) and stack.dtype == np.uint8
        np.testing.assert_array_equal(stack, np.concatenate([first] * 3, axis=-1))
        for action in (0.7, -0.4):
            observation, reward, last = episode.step(np.array([action]))
            expected = sum(plain.step([action]).reward for _ in range(2))
            newest = plain.physics.render(16, 16, camera_id=0)
            after = observation["pixels"][0]
            np.testing.assert_array_equal(after[..., :6], stack[..., 3:])
            np.testing.assert_array_equal(after[..., 6:], newest)
            assert reward == pytest.approx(expected, abs=1e-12) and not last
            stack = after
        assert not np.array_equal(stack[..., :3], stack[..., 6:])  # the cart moved
    finally:
        episode.close()
        plain.close()

"""`BraxEnv`: the brax.envs.Env contract, under Brax's own training wrappers, without training.

Brax's PPO on a real task is in the slow tier (tests/agents/test_brax_slow.py).
"""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from toy_env import ToyEnv

from jaxcontrol.core import StepType
from jaxcontrol.wrappers import ActionRepeat, AutoReset, FlattenObservation

brax_envs = pytest.importorskip("brax.envs", reason="needs the jaxcontrol[brax] extra")
brax_training = pytest.importorskip("brax.envs.wrappers.training")

from jaxcontrol.wrappers import BraxEnv, clip_normalized_observations


class WallToy(ToyEnv):
    """The toy env, but hitting the wall at x = +-2 is a true terminal state (discount 0)."""

    def step(self, state, action):
        stepped = super().step(state, action)
        wall = jnp.abs(stepped.data["x"]) >= 2.0
        return stepped.replace(
            discount=jnp.where(wall, 0.0, stepped.discount),
            step_type=jnp.where(wall, StepType.LAST, stepped.step_type).astype(jnp.int32),
        )

    def __hash__(self):
        return hash(("WallToy", self.episode_length))


def test_spec_and_one_step():
    toy = ToyEnv(episode_length=50)
    env = BraxEnv(toy)
    assert isinstance(env, brax_envs.Env) and env.backend == "mjx"
    assert env.observation_size == 2 and env.action_size == 1 and env.episode_length == 50
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    ours = toy.reset(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(state.obs, [ours.observation["position"][0], 0.0])
    assert state.obs.dtype == jnp.float32 and float(state.reward) == 0 and float(state.done) == 0
    stepped = jax.jit(env.step)(state, jnp.ones((1,)))
    ours = toy.step(ours, jnp.ones((1,)))
    assert float(stepped.reward) == float(ours.reward) and float(stepped.done) == 0.0
    # The jaxcontrol State rides along as the pipeline state.
    assert int(stepped.pipeline_state.step) == 1
    flat = BraxEnv(FlattenObservation(ActionRepeat(toy, 2)))
    assert flat.observation_size == 2 and flat.episode_length == 25


def test_refuses_what_brax_cannot_drive():
    with pytest.raises(ValueError, match="resets episodes itself"):
        BraxEnv(AutoReset(ToyEnv()))
    with pytest.raises(TypeError, match="jaxcontrol.load"):
        BraxEnv(object())


def test_under_brax_training_wrappers_truncation_is_not_termination():
    """Brax's wrap (vmap, episode limit, auto-reset): the time limit is a truncation
    (done and truncation 1) and a wall a termination (done 1, truncation 0)."""
    env = BraxEnv(WallToy(episode_length=30))
    wrapped = brax_training.wrap(env, episode_length=env.episode_length)
    keys = jax.random.split(jax.random.PRNGKey(1), 2)
    state = jax.jit(wrapped.reset)(keys)
    first_obs = state.obs
    # Env 0 does nothing (reaches the time limit), env 1 pushes into the wall.
    actions = jnp.array([[0.0], [1.0]])
    step = jax.jit(wrapped.step)
    done, truncation, obs = [], [], []
    for _ in range(30):
        state = step(state, actions)
        done.append(np.asarray(state.done))
        truncation.append(np.asarray(state.info["truncation"]))
        obs.append(np.asarray(state.obs))
    done, truncation = np.array(done), np.array(truncation)
    assert done[:29, 0].sum() == 0 and done[29, 0] == 1 and truncation[29, 0] == 1
    wall = int(np.argmax(done[:, 1]))
    assert done[wall, 1] == 1 and truncation[wall, 1] == 0 and wall < 29
    # Brax's auto-reset put back the first state, pipeline (our State) included.
    np.testing.assert_array_equal(obs[wall][1], first_obs[1])
    assert int(state.pipeline_state.step[0]) == 0


def test_clipped_normaliser_bounds_what_the_networks_see():
    from brax.training.acme import running_statistics
    from brax.training.agents.ppo import networks as ppo_networks

    seen = []

    def factory(observation_size, action_size, preprocess_observations_fn):
        seen.append(preprocess_observations_fn)
        return ppo_networks.make_ppo_networks(
            observation_size, action_size, preprocess_observations_fn=preprocess_observations_fn
        )

    clipped = clip_normalized_observations(factory, limit=5.0)
    networks = clipped(2, 1, preprocess_observations_fn=running_statistics.normalize)
    # A feature with a tiny running std (cartpole's cos of the pole angle: 1.7e-4).
    stats = running_statistics.init_state(jax.ShapeDtypeStruct((2,), jnp.float32))
    stats = stats.replace(mean=jnp.array([1.0, 0.0]), std=jnp.array([1.7e-4, 1.0]))
    observation = jnp.array([[0.99, 7.0]])
    np.testing.assert_allclose(seen[0](observation, stats), [[-5.0, 5.0]])
    np.testing.assert_allclose(
        running_statistics.normalize(observation, stats)[0, 0], -58.8, rtol=1e-3
    )
    params = networks.policy_network.init(jax.random.PRNGKey(0))
    apply = networks.policy_network.apply
    at_the_clip = jnp.array([[1.0 - 5 * 1.7e-4, 5.0]])
    np.testing.assert_allclose(
        apply(stats, params, observation), apply(stats, params, at_the_clip), rtol=1e-5
    )
    with pytest.raises(ValueError, match="normalize_observations=True"):
        clipped(2, 1, preprocess_observations_fn=lambda x, y: x)
    with pytest.raises(ValueError, match="positive"):
        clip_normalized_observations(factory, limit=0.0)


def test_missing_extra_says_what_to_install():
    code = """
        import sys
        sys.modules["brax"] = None  # as if the extra were not installed
        import jaxcontrol
        try:
            from jaxcontrol.wrappers import BraxEnv, clip_normalized_observations
        except ImportError as error:
            print(error)
        """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        timeout=300,
        check=False,
    )
    assert "pip install 'jaxcontrol[brax]'" in result.stdout, result.stderr

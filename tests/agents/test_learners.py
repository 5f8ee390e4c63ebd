"""Shapes, jit/vmap and learning of the three learners on the fast toy env."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from agent_configs import TINY
from toy_env import ToyEnv

from jaxcontrol.agents.common.evaluation import evaluate, evaluate_seeds, summarize
from jaxcontrol.agents.common.learner import train_from_learner
from jaxcontrol.agents.common.observations import flatten_observation
from jaxcontrol.agents.ppo.networks import GaussianPolicy
from jaxcontrol.agents.registry import get_agent
from jaxcontrol.wrappers import (
    ActionRepeat,
    AutoReset,
    FlattenObservation,
    GaussianNoise,
    Observable,
    Observables,
    RecordEpisodeStatistics,
)

# One xdist worker per module, so module-scoped fixtures build once under
# `pytest -n 2 --dist loadgroup`.
pytestmark = pytest.mark.xdist_group("agents_learners")

AGENTS = ("ppo", "sac", "d4pg")
LEARNED = 40.0  # toy return (max 50); doing nothing scores about 25.


@pytest.fixture(scope="module", params=AGENTS)
def trained(request, toy_env):
    """Runs each agent's tiny config to the end with the chunked driver."""
    name = request.param
    learner = get_agent(name).make_learner(TINY[name], toy_env)
    state = jax.jit(learner.init)(jax.random.PRNGKey(0))
    run_chunk = jax.jit(learner.run_chunk)
    history = []
    for _ in range(learner.num_chunks):
        state, metrics = run_chunk(state)
        history.append(jax.device_get(metrics))
    return name, learner, state, history


def test_metrics_are_finite_scalars(trained):
    _, learner, _, history = trained
    assert len(history) == learner.num_chunks
    for metrics in history:
        for key, value in metrics.items():
            assert np.shape(value) == (), key
            assert np.isfinite(value), key  # no NaN, even in chunks where no episode ended
    assert history[-1]["episodes"] > 0


def test_learns_toy_and_evaluation_is_frozen(trained, toy_env):
    name, learner, state, _ = trained
    params = learner.policy_params(state)
    before = jax.tree.map(np.asarray, state)
    returns = jax.jit(lambda p, k: evaluate(toy_env, learner.policy, p, k, 20))(
        params, jax.random.PRNGKey(7)
    )
    # Evaluation reads a frozen copy of the policy: the learner state is untouched.
    jax.tree.map(np.testing.assert_array_equal, before, jax.tree.map(np.asarray, state))
    idle = evaluate(toy_env, lambda p, obs: jnp.zeros((20, 1)), None, jax.random.PRNGKey(7), 20)
    assert float(jnp.mean(idle)) < 30.0
    assert float(jnp.mean(returns)) >= LEARNED, (name, float(jnp.mean(returns)))


def test_policy_is_deterministic_and_bounded(trained, toy_env):
    _, learner, state, _ = trained
    states = jax.vmap(toy_env.reset)(jax.random.split(jax.random.PRNGKey(3), 5))
    params = learner.policy_params(state)
    a1 = learner.policy(params, states.observation)
    a2 = learner.policy(params, states.observation)
    assert a1.shape == (5, 1)
    np.testing.assert_array_equal(a1, a2)
    assert bool(jnp.all(jnp.abs(a1) <= 1.0))


@pytest.mark.parametrize("name", AGENTS)
def test_train_is_one_program_vmappable_over_seeds(name, toy_env):
    config = TINY[name]
    short = {
        "ppo": {"total_env_steps": 2 * 16 * 16 * 3, "updates_per_chunk": 3},
        "sac": {"total_env_steps": 1_000 + 2 * 8 * 10, "iterations_per_chunk": 10},
        "d4pg": {"total_env_steps": 1_000 + 2 * 8 * 10, "iterations_per_chunk": 10},
    }[name]
    config = dataclasses.replace(config, **short)
    learner = get_agent(name).make_learner(config, toy_env)
    assert learner.num_chunks == 2
    train = train_from_learner(learner)
    keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])
    states, metrics = jax.jit(jax.vmap(train))(keys)
    assert metrics["updates"].shape == (2, 2)
    returns = evaluate_seeds(
        toy_env, learner.policy, jax.vmap(learner.policy_params)(states), jax.random.PRNGKey(5), 3
    )
    summary = summarize(returns)
    assert returns.shape == (2, 3) and summary["episodes"] == 6
    assert len(summary["seed_means"]) == 2 and summary["seed_stderr"] >= 0.0
    loss_key = "policy_loss" if name == "ppo" else "critic_loss"
    assert not np.allclose(metrics[loss_key][0], metrics[loss_key][1])
    if name == "ppo":  # one compile more; the program is shared by all learners
        # Seed 0 of the batched call is the same run as seed 0 alone (up to float
        # reassociation by batching).
        _, single = jax.jit(train)(keys[0])
        np.testing.assert_allclose(metrics[loss_key][0], single[loss_key], rtol=2e-3, atol=1e-5)


def _stack_flat_repeat(env):
    return FlattenObservation(ActionRepeat(env, 2))


def _stack_own_auto_reset(env):
    noisy = Observables(env, {"position": Observable(corruptor=GaussianNoise(0.01))})
    return RecordEpisodeStatistics(AutoReset(noisy))


@pytest.mark.parametrize(
    "name, build", [("ppo", _stack_flat_repeat), ("sac", _stack_own_auto_reset)]
)
def test_learners_train_on_wrapper_stacks(name, build, toy_env):
    """Any EnvLike stack trains: a flat observation under ActionRepeat (the learner adds the
    AutoReset), and a stack that restarts its own episodes, under episode statistics."""
    env = build(toy_env)
    short = {
        # Episodes in lock-step, so that the count below is simple (staggering: below).
        "ppo": {"total_env_steps": 16 * 16 * 3, "updates_per_chunk": 3, "stagger_episodes": False},
        "sac": {"total_env_steps": 8 * 40, "learning_starts": 64, "iterations_per_chunk": 20},
    }[name]
    learner = get_agent(name).make_learner(dataclasses.replace(TINY[name], **short), env)
    state, metrics = jax.jit(learner.run_chunk)(jax.jit(learner.init)(jax.random.PRNGKey(0)))
    # ActionRepeat(2) halves the toy's 50-step episodes: PPO's 16 envs x 48 steps end 32.
    if name == "ppo":
        assert float(metrics["episodes"]) == 16 * (48 // 25)
    assert all(np.isfinite(float(v)) for v in metrics.values())
    returns = evaluate(env, learner.policy, learner.policy_params(state), jax.random.PRNGKey(1), 4)
    assert returns.shape == (4,) and bool(jnp.all(jnp.isfinite(returns)))


def test_staggered_first_episodes_cover_every_phase_and_are_not_reported(toy_env):
    """Environment i starts i/E of the way into its time limit (under ActionRepeat too:
    the bare env's steps), so its first episode ends early; only whole episodes count."""
    from jaxcontrol.agents.common.venv import training_env  # pylint: disable=import-outside-toplevel

    tenv = training_env(ActionRepeat(toy_env, 2), 16)
    state = tenv.reset(jax.random.PRNGKey(0), stagger=True)
    offsets = np.arange(16) * 50 // 16
    np.testing.assert_array_equal(state.step, offsets)
    returns = tenv.zero_returns(stagger=True)
    assert not np.isnan(returns[0]) and np.isnan(returns[1:]).all()
    step = jax.jit(tenv.step)
    first_end, reported = np.full(16, -1), []
    for t in range(1, 51):
        state, returns, transition, finished, count = step(state, returns, jnp.zeros((16, 1)))
        done = np.asarray(transition["done"])
        first_end[(first_end < 0) & done] = t
        reported.append((float(finished), float(count)))
    np.testing.assert_array_equal(first_end, -(-(50 - offsets) // 2))  # ceil: 2 steps each
    # Env 0's 25-step episodes (t = 25, 50) and each other env's one whole episode.
    whole = 1 + np.sum(first_end[1:] + 25 <= 50)
    assert sum(count for _, count in reported) == 1 + whole
    assert all(np.isfinite(total) for total, _ in reported)
    assert not np.isnan(np.asarray(returns)).any()  # every env is on a whole episode now
    lockstep = tenv.reset(jax.random.PRNGKey(0))
    assert (np.asarray(lockstep.step) == 0).all()
    assert (np.asarray(tenv.zero_returns()) == 0).all()


def test_ppo_staggers_its_environments(toy_env):
    """PPO's default; off, its environments start together."""
    for stagger, steps in ((True, np.arange(16) * 50 // 16), (False, np.zeros(16))):
        config = dataclasses.replace(TINY["ppo"], stagger_episodes=stagger)
        state = get_agent("ppo").make_learner(config, toy_env).init(jax.random.PRNGKey(0))
        np.testing.assert_array_equal(state.env_state.step, steps)


def test_ppo_with_a_state_dependent_std_learns_toy(toy_env):
    """The policy network's log std per state starts at init_log_std, moves per state, learns."""
    config = dataclasses.replace(TINY["ppo"], state_dependent_std=True)
    learner = get_agent("ppo").make_learner(config, toy_env)
    state = jax.jit(learner.init)(jax.random.PRNGKey(0))
    states = jax.vmap(toy_env.reset)(jax.random.split(jax.random.PRNGKey(3), 32))
    obs = flatten_observation(states.observation, toy_env.observation_spec())
    net = GaussianPolicy(1, config.hidden_sizes, config.init_log_std, state_dependent_std=True)

    def log_std(state):
        return net.apply({"params": state.params["policy"]}, obs)[1]

    assert "log_std" not in state.params["policy"]
    assert log_std(state).shape == (32, 1)
    np.testing.assert_allclose(log_std(state), config.init_log_std, atol=0.05)
    run_chunk = jax.jit(learner.run_chunk)
    for _ in range(learner.num_chunks):
        state, metrics = run_chunk(state)
        assert all(np.isfinite(v) for v in jax.device_get(metrics).values())
    assert float(np.std(log_std(state))) > 1e-3  # it differs from state to state
    returns = evaluate(
        toy_env, learner.policy, learner.policy_params(state), jax.random.PRNGKey(7), 20
    )
    assert float(jnp.mean(returns)) >= LEARNED


def test_learners_refuse_what_is_not_an_env(toy_env):
    with pytest.raises(TypeError, match="jaxcontrol.load"):
        get_agent("ppo").make_learner(TINY["ppo"], object())
    # Episode statistics count across restarts, so the learner's AutoReset cannot go on top.
    with pytest.raises(ValueError, match="goes above AutoReset"):
        get_agent("sac").make_learner(TINY["sac"], RecordEpisodeStatistics(toy_env))


def test_evaluation_counts_one_episode_per_env(toy_env):
    """A stack that restarts itself scores the first episode only; no time limit needs steps."""
    policy = lambda p, obs: jnp.zeros((3, 1))
    plain = evaluate(toy_env, policy, None, jax.random.PRNGKey(2), 3)
    restarting = evaluate(AutoReset(toy_env), policy, None, jax.random.PRNGKey(2), 3, num_steps=80)
    np.testing.assert_allclose(restarting, plain, rtol=1e-6)
    with pytest.raises(ValueError, match="num_steps"):
        evaluate(ToyEnv(episode_length=None), policy, None, jax.random.PRNGKey(2), 3)

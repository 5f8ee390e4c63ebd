"""LQR: the model seed, an infinite time limit and true terminal states.

dm_control draws LQR's model from the task's random state, so `model_seed`
chooses it here; parity is shown for several seeds against dm_control's
environment loaded with that seed. LQR is the suite's only task without a time
limit: its episodes end only at a terminal state (discount 0), which the
episode tools (returns, soak, episode parity) must stop at, never summing past.

The tests of those tools that need no MJX step run on C MuJoCo behind the Env
(`C`): the step types, rewards and discounts are our task code on either backend,
and C compiles no physics. MJX steps LQR in the battery, in the other model
seeds' one step and in the episode parity below.
"""

import os

os.environ.setdefault("MUJOCO_GL", "disable")

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import StepType, parity, reference
from jaxcontrol.mjcf import compare

SEEDS = (1, 7, 2**32 - 1)
C = {"backend": "mujoco"}


@pytest.mark.parametrize("name", ["lqr_2_1", "lqr_6_2"])
@pytest.mark.parametrize("seed", SEEDS)
def test_model_seed_gives_dm_controls_model(name, seed):
    env = jaxcontrol.load("lqr", name, model_seed=seed)
    dm_env = reference.reference_for(env, seed=0)
    assert compare.compare_models(env.mj_model, dm_env.physics.model.ptr) == []


def test_model_seeds_differ_and_the_default_is_zero():
    stiffness = [
        jaxcontrol.load("lqr", "lqr_2_1", model_seed=s).mj_model.jnt_stiffness for s in (0, 1)
    ]
    assert not np.array_equal(*stiffness)
    assert jaxcontrol.load("lqr", "lqr_2_1") == jaxcontrol.load("lqr", "lqr_2_1", model_seed=0)


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, True, "3", None])
def test_bad_model_seed_is_refused(seed):
    with pytest.raises(ValueError, match=r"model_seed must be an integer in \[0, 2\*\*32\)"):
        jaxcontrol.load("lqr", "lqr_2_1", model_seed=seed)


def test_bad_control_cost_is_refused():
    with pytest.raises(ValueError, match="control_cost_coef must be positive"):
        jaxcontrol.load("lqr", "lqr_2_1", control_cost_coef=0.0)


def test_reference_episodes_follow_the_seed_and_keep_the_model():
    """The reference's model is fixed by model_seed; its episodes by the seed."""
    env = jaxcontrol.load("lqr", "lqr_6_2", model_seed=7)
    a, b, c = (reference.reference_for(env, seed) for seed in (0, 0, 1))
    starts = [e.reset().observation["position"] for e in (a, b, c)]
    np.testing.assert_array_equal(starts[0], starts[1])
    assert not np.array_equal(starts[0], starts[2])
    np.testing.assert_array_equal(c.physics.model.jnt_stiffness, env.mj_model.jnt_stiffness)


@pytest.mark.float64
@pytest.mark.parametrize("seed", SEEDS[:2])
def test_one_step_parity_for_other_model_seeds(seed):
    """One float64 step from dm_control's states, with dm_control's model at that seed."""
    with reference.precision(True):
        env = jaxcontrol.load("lqr", "lqr_6_2", model_seed=seed)
        transitions = reference.reference_transitions(env, n=8, seed=seed)
        ours, cpu, _ = parity.step.step_parity(env, transitions, raw=False)
    assert max(ours.values()) <= 1e-9, ours
    assert max(cpu.values()) <= 1e-9, cpu


# ----- no time limit, true terminal states --------------------------------------------------


def _near_origin(env, dm_env, scale):
    """dm_control's reset state scaled to norm `scale`, in both environments (float64)."""
    dm_env.reset()
    qpos = np.array(dm_env.physics.data.qpos)
    qpos *= scale / np.linalg.norm(qpos)
    with dm_env.physics.reset_context():
        dm_env.physics.data.qpos[:] = qpos
    return reference.mirror(env, dm_env)


@pytest.mark.float64
def test_optimal_policy_reaches_the_terminal_state_where_dm_control_does():
    """Under dm_control's optimal LQR gain from a state near the origin, ours ends (LAST,
    discount 0) at the same step as dm_control, with the same return, and stays LAST."""
    from dm_control.suite import lqr_solver

    with reference.precision(True):
        env = jaxcontrol.load("lqr", "lqr_2_1", model_seed=3, **C)
        dm_env = reference.reference_for(env, seed=0)
        _, gain, _ = lqr_solver.solve(dm_env)
        state = _near_origin(env, dm_env, 3e-6)
        dm_rewards = []
        while True:
            x = np.hstack([dm_env.physics.data.qpos, dm_env.physics.data.qvel])
            timestep = dm_env.step(gain @ x)
            dm_rewards.append(timestep.reward)
            if timestep.last():
                break
        assert timestep.discount == 0.0 and len(dm_rewards) < 1000

        @jax.jit
        def rollout(state):
            def body(s, _):
                x = jnp.concatenate([s.data.qpos, s.data.qvel])
                s = env.step(s, jnp.asarray(gain) @ x)
                return s, (s.reward, s.step_type, s.discount)

            return jax.lax.scan(body, state, None, length=len(dm_rewards) + 5)[1]

        rewards, types, discounts = map(np.asarray, rollout(state))
    n = len(dm_rewards)
    assert np.all(types[: n - 1] == StepType.MID) and np.all(types[n - 1 :] == StepType.LAST)
    assert np.all(discounts[: n - 1] == 1) and np.all(discounts[n - 1 :] == 0)
    np.testing.assert_allclose(rewards[:n], dm_rewards, rtol=0, atol=1e-12)


def test_last_stays_last_with_its_discount_after_leaving_the_terminal_state():
    env = jaxcontrol.load("lqr", "lqr_2_1")
    state = jax.jit(env.set_state)(env.blank_state(), np.zeros(2), np.zeros(2))
    step = jax.jit(env.step)
    ended = step(state, jnp.zeros(1))
    assert int(ended.step_type) == StepType.LAST and float(ended.discount) == 0
    pushed = step(ended, jnp.ones(1))  # away from the origin
    assert float(jnp.linalg.norm(pushed.data.qvel)) > 1e-3
    assert int(pushed.step_type) == StepType.LAST and float(pushed.discount) == 0


def test_no_time_limit():
    env = jaxcontrol.load("lqr", "lqr_6_2")
    assert env.time_limit == float("inf") and env.episode_length is None
    assert reference.episode_steps(env) == reference.EPISODE_STEPS == 1000
    low, high = reference.action_bounds(env.action_spec())  # unbounded motors: [-1, 1]
    np.testing.assert_array_equal(low, -1.0)
    np.testing.assert_array_equal(high, 1.0)
    assert np.all(env.action_spec().maximum > 1e9)


def test_returns_stop_at_last():
    """Open-loop returns count rewards up to LAST only (here a 10-step time limit within
    a 25-step action sequence), ours and dm_control's alike."""
    env = jaxcontrol.load("lqr", "lqr_2_1", time_limit=0.3, **C)
    assert env.episode_length == 10
    actions = parity.open_loop_actions(env.action_spec(), "sinusoid", 25)
    keys = jax.random.split(jax.random.key(0), 4)
    run = parity.measures._open_loop_returns(env)  # one row of returns: env has no siblings
    (returns,) = np.asarray(run(keys, jnp.asarray(actions, jnp.float32)))

    @jax.jit
    def first_ten(keys):
        states = jax.vmap(env.reset)(keys)

        def body(s, a):
            s = jax.vmap(env.step, in_axes=(0, None))(s, a)
            return s, s.reward

        return jax.lax.scan(body, states, jnp.asarray(actions[:10], jnp.float32))[1].sum(0)

    np.testing.assert_allclose(returns, np.asarray(first_ten(keys)), rtol=1e-6)
    dm_env = reference.reference_for(env, seed=0)
    total = parity.measures._dm_control_return(dm_env, actions)
    assert dm_env._step_count == 10 and np.isfinite(total)


def test_soak_checks_step_types_without_and_with_a_time_limit():
    for kwargs, steps in (({}, 30), ({"time_limit": 0.3}, 30)):
        env = jaxcontrol.load("lqr", "lqr_2_1", **kwargs, **C)
        soak = parity.soak(env, num_envs=8, steps=steps, shards=1)
        assert soak["ends_by_truncation"], (kwargs, soak)
        assert soak["rewards_in_range"] and soak["nonfinite"] == 0, soak
        assert soak["reward_min"] < 0  # LQR's rewards leave [0, 1]


class _Batch:
    def __init__(self, step_type, step, discount):
        self.step_type, self.step = jnp.asarray(step_type), jnp.asarray(step)
        self.discount = jnp.asarray(discount, jnp.float32)


@pytest.mark.parametrize(
    ("step_type", "step", "discount", "ended", "limit", "ok"),
    [
        ([1, 1], [5, 5], [1, 1], [False, False], None, True),  # MID, no limit
        ([2, 1], [5, 5], [0, 1], [False, False], None, True),  # a terminal state
        ([2, 2], [6, 6], [0, 1], [True, True], None, True),  # LAST ever after
        ([1, 1], [6, 6], [1, 1], [True, False], None, False),  # MID after LAST
        ([2, 1], [5, 5], [1, 1], [False, False], None, False),  # LAST, discount 1, no limit
        ([1, 1], [5, 5], [0, 1], [False, False], None, False),  # MID with discount 0
        ([2, 2], [10, 10], [1, 1], [False, False], 10, True),  # truncation
        ([2, 2], [10, 10], [0, 1], [False, False], 10, False),  # the limit wins: discount 1
        ([1, 1], [10, 9], [1, 1], [False, False], 10, False),  # no LAST at the limit
    ],
)
def test_step_type_rule(step_type, step, discount, ended, limit, ok):
    batch = _Batch(step_type, step, discount)
    assert bool(parity.soaks._step_types_ok(batch, jnp.asarray(ended), limit)) == ok


@pytest.mark.float64
def test_episode_parity_stops_at_last():
    """dm_control's episode ends (LAST) at a 10-step limit: every engine stops there."""
    with reference.precision(True):
        env = jaxcontrol.load("lqr", "lqr_2_1", time_limit=0.3)
        report = parity.trajectory.episode_parity(env, seed=0, steps=25, amplitude=0.3)
    assert report["steps"] == 10 and report["dm_control_last"] and report["ends_alike"]
    assert report["ours_rel"] < 1e-12 and report["cpu_rel"] < 1e-12

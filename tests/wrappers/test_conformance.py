"""One conformance battery for every wrapper and some stacks of them.

Each case is rolled out once, jitted and vmapped over three environments, for
twelve steps on a task whose episodes last five (so restarts and LAST steps
happen), on the C backend: the wrappers see only the Env's interface, and C
compiles no physics (the module took 25 s on one core instead of 117 s of CI on
MJX). The other wrapper tests run theirs on MJX. Checked for every case:
  * the specs match what reset and step return (shapes, dtypes, per environment);
  * the same key gives a bit-identical trajectory, another key another one;
  * parity with the unwrapped task wherever the wrapper claims it: an identity
    configuration equals the bare env, ActionRepeat(k) equals k steps,
    FlattenObservation equals the concatenation, RecordEpisodeStatistics sums
    the rewards, AutoReset equals the bare env until LAST and then its reset.

Parity compares two separately compiled programs, which XLA may fuse and so
round differently in float32 (seen: 1 ulp after a few steps), so it holds to
`same` below (2e-6), far below any real difference; bit-identity is asserted
where one program runs twice.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs
from numpy_tree import to_numpy

import jaxcontrol
from jaxcontrol.core import StepType
from jaxcontrol.wrappers import (
    ActionRepeat,
    AutoReset,
    DomainRandomization,
    EnvLike,
    FlattenObservation,
    GaussianNoise,
    Observable,
    Observables,
    RecordEpisodeStatistics,
    Wrapper,
)

pytestmark = pytest.mark.xdist_group("wrappers")

same = functools.partial(np.testing.assert_allclose, rtol=2e-6, atol=2e-6)

STEPS, ENVS = 12, 3
TASKS = {  # cheap tasks, episodes of five steps
    "pendulum": ("pendulum", "swingup", 0.1),
}


@functools.cache
def bare(name):
    domain, task, limit = TASKS[name]
    return jaxcontrol.load(domain, task, time_limit=limit, backend="mujoco")


def heavier(key, fields):
    return {"body_mass": fields["body_mass"] * jax.random.uniform(key, (), minval=0.5, maxval=2)}


def identity_fields(key, fields):
    del key, fields
    return {}


NOISY = {
    "orientation": Observable(
        delay=2, buffer_size=3, aggregator="mean", corruptor=GaussianNoise(0.1)
    ),
    "velocity": Observable(update_interval=2, buffer_size=2),
}

# case -> (task, build(env) -> wrapped, parity claim)
CASES = {
    "ActionRepeat": ("pendulum", lambda e: ActionRepeat(e, 3), "repeat3"),
    "FlattenObservation": ("pendulum", FlattenObservation, "flatten"),
    "RecordEpisodeStatistics": ("pendulum", RecordEpisodeStatistics, "statistics"),
    "AutoReset": ("pendulum", AutoReset, "auto_reset"),
    "Observables-identity": (
        "pendulum",
        lambda e: Observables(e, {"orientation": Observable()}),
        "split_identity",
    ),
    "Observables": ("pendulum", lambda e: Observables(e, NOISY), None),
    "DomainRandomization-identity": (
        "pendulum",
        lambda e: DomainRandomization(e, identity_fields),
        "split_identity",
    ),
    "DomainRandomization": ("pendulum", lambda e: DomainRandomization(e, heavier), None),
    "stack-training": (
        "pendulum",
        lambda e: FlattenObservation(RecordEpisodeStatistics(AutoReset(ActionRepeat(e, 2)))),
        None,
    ),
    "stack-everything": (
        "pendulum",
        lambda e: RecordEpisodeStatistics(
            AutoReset(ActionRepeat(Observables(DomainRandomization(e, heavier), NOISY), 2))
        ),
        None,
    ),
}


def rollout(env, keys, action_key):
    """Vmapped reset over `keys`, then STEPS random-action steps; every state stacked."""
    spec = env.action_spec()
    low = jnp.maximum(spec.minimum, -1.0)
    high = jnp.minimum(spec.maximum, 1.0)
    actions = jax.random.uniform(
        action_key, (STEPS, len(keys)) + spec.shape, minval=low, maxval=high
    )
    first = jax.vmap(env.reset)(keys)

    def body(states, action):
        states = jax.vmap(env.step)(states, action)
        return states, states

    _, states = jax.lax.scan(body, first, actions)
    return first, states, actions


@functools.cache
def compiled_rollout(env):
    return jax.jit(functools.partial(rollout, env))


@functools.cache
def run(case, seed=0):
    task, build, _ = CASES[case]
    env = build(bare(task))
    keys = jax.random.split(jax.random.key(seed), ENVS)
    return env, to_numpy(compiled_rollout(env)(keys, jax.random.key(seed + 100)))


def per_env(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


@pytest.mark.parametrize("case", CASES)
def test_protocol_and_specs_match_what_reset_and_step_return(case):
    env, (first, states, _) = run(case)
    assert isinstance(env, EnvLike) and isinstance(env, Wrapper)
    assert env.unwrapped is bare(CASES[case][0])
    obs_spec = env.observation_spec()
    for i in range(ENVS):
        for state in (per_env(first, i), per_env(per_env(states, STEPS - 1), i)):
            if isinstance(obs_spec, specs.Array):
                obs_spec.validate(state.observation)
            else:
                assert list(state.observation) == list(obs_spec)
                for key, spec in obs_spec.items():
                    spec.validate(state.observation[key])
            assert state.reward.shape == () and state.discount.shape == ()
    assert env.action_spec().shape == bare(CASES[case][0]).action_spec().shape
    assert env.control_timestep > 0
    assert np.all(first.step_type == StepType.FIRST)
    assert set(np.unique(states.step_type)) <= {StepType.MID, StepType.LAST}
    assert np.all(np.isfinite(states.reward))


@pytest.mark.parametrize("case", CASES)
def test_same_key_same_trajectory_other_key_another(case):
    env = run(case)[0]
    keys = jax.random.split(jax.random.key(0), ENVS)
    again = to_numpy(compiled_rollout(env)(keys, jax.random.key(100)))
    jax.tree.map(np.testing.assert_array_equal, run(case)[1], again)
    other = run(case, seed=1)[1][1]
    assert not np.array_equal(_flat(run(case)[1][1].observation), _flat(other.observation))


def _flat(observation):
    return np.concatenate([np.ravel(x) for x in jax.tree.leaves(observation)])


@functools.cache
def bare_run(task, keys_seed, split):
    """The bare env's rollout from the same keys (from the first half of each split)."""
    keys = jax.random.split(jax.random.key(keys_seed), ENVS)
    if split:
        keys = jax.vmap(lambda k: jax.random.split(k)[0])(keys)
    return to_numpy(compiled_rollout(bare(task))(keys, jax.random.key(keys_seed + 100)))


def claimed(claim):
    return [case for case, (_, _, c) in CASES.items() if c == claim]


@pytest.mark.parametrize("case", claimed("split_identity"))
def test_identity_configurations_equal_the_bare_env_bit_for_bit(case):
    """A wrapper configured to change nothing is the bare env (its key split once)."""
    _, (first, states, _) = run(case)
    bare_first, bare_states, _ = bare_run(CASES[case][0], 0, True)
    for ours, theirs in ((first, bare_first), (states, bare_states)):
        jax.tree.map(same, ours.observation, theirs.observation)
        for field in ("reward", "discount", "step_type"):
            same(getattr(ours, field), getattr(theirs, field))
        same(ours.data.qpos, theirs.data.qpos)


def test_action_repeat_equals_k_steps():
    env, (first, states, actions) = run("ActionRepeat")
    inner = bare("pendulum")
    assert env.control_timestep == pytest.approx(3 * inner.control_timestep)
    assert env.episode_length == 2  # ceil(5 / 3)
    # The bare env from the same reset, each action taken three times.
    repeated = jnp.repeat(jnp.asarray(actions), 3, axis=0)

    @jax.jit
    def bare_steps(first, repeated):
        return jax.lax.scan(lambda s, a: (jax.vmap(inner.step)(s, a),) * 2, first, repeated)[1]

    raw = to_numpy(bare_steps(first, repeated))
    # Up to the first LAST (inner step 5, our step 2) everything agrees bit for bit.
    for t in range(2):
        ends = 3 * t + 2 if t == 0 else 4  # the second repeat stops at the LAST (inner step 5)
        same(states.data.qpos[t], raw.data.qpos[ends])
        jax.tree.map(
            same,
            per_env(states.observation, t),
            per_env(raw.observation, ends),
        )
        start = 3 * t
        expected = raw.reward[start]
        for i in range(start + 1, ends + 1):
            expected = expected + raw.reward[i]
        same(states.reward[t], expected)
    assert np.all(states.step_type[1] == StepType.LAST) and np.all(states.step[1] == 5)


def test_flatten_observation_is_the_concatenation():
    env, (_, states, _) = run("FlattenObservation")
    _, bare_states, _ = bare_run("pendulum", 0, False)
    expected = np.concatenate(
        [
            bare_states.observation[k].reshape(STEPS, ENVS, -1)
            for k in bare("pendulum").observation_spec()
        ],
        axis=-1,
    )
    same(states.observation, expected)
    assert env.observation_spec().shape == (expected.shape[-1],)
    restored = jax.vmap(jax.vmap(env.unflatten))(states.observation)
    jax.tree.map(same, restored, bare_states.observation)


def test_record_episode_statistics_sums_each_episode():
    _, (first, states, _) = run("RecordEpisodeStatistics")
    np.testing.assert_array_equal(first.info["episode_return"], 0)
    _, bare_states, _ = bare_run("pendulum", 0, False)
    same(states.reward, bare_states.reward)
    total = np.zeros(ENVS, states.reward.dtype)
    for t in range(5):
        total = total + states.reward[t]  # its own rewards, summed in order: exact
        np.testing.assert_array_equal(states.info["episode_return"][t], total)
        np.testing.assert_array_equal(states.info["episode_length"][t], t + 1)
    # The bare env keeps returning LAST after its time limit; every step after a
    # LAST starts a new count.
    np.testing.assert_array_equal(states.info["episode_length"][5:], 1)


def test_record_episode_statistics_over_auto_reset_counts_every_episode():
    _, (_, states, _) = run("stack-training")
    lengths, last = states.info["episode_length"], states.step_type == StepType.LAST
    # ActionRepeat(2) over a five-step episode: episodes of three steps, back to back.
    np.testing.assert_array_equal(lengths[:, 0], [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3])
    assert np.all(last == (lengths == 3))
    assert np.all(np.isfinite(states.info["episode_return"]))


def test_auto_reset_equals_the_bare_env_until_last_then_its_reset():
    _, (first, states, _) = run("AutoReset")
    bare_first, bare_states, _ = bare_run("pendulum", 0, False)
    same(first.observation["orientation"], bare_first.observation["orientation"])
    for t in range(4):
        same(states.data.qpos[t], bare_states.data.qpos[t])
    assert np.all(states.step_type[4] == StepType.LAST) and np.all(states.step[4] == 0)
    jax.tree.map(
        same,
        per_env(states.info["final_observation"], 4),
        per_env(bare_states.observation, 4),
    )
    keys = jax.random.wrap_key_data(bare_states.key[4])
    fresh = to_numpy(jax.jit(jax.vmap(bare("pendulum").reset))(keys))
    jax.tree.map(same, per_env(states.observation, 4), fresh.observation)
    assert np.all(states.step_type[5] == StepType.MID)

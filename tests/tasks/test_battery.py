"""The per-task battery, run for every task in the registry.

Default tier (cheap per task): specs match dm_control's, bad input is refused,
and a short vmapped rollout conforms to the specs, keeps rewards in the task's
`reward_range` ([0, 1] but for LQR), depends only on its keys and actions,
starts from random states and ends as dm_control's does: by truncation at the
time limit (never, where the limit is infinite), and at a terminal state with
the task's discount where the task declares one (`Task.terminal_state`). Full
tier (`-m full`): 1024 environments run a whole episode, and the NaN soak counts
non-finite states over 1e6 random-action steps.

The default tier steps each task on the backend `pertask.backend_for` picks: MJX
for each domain's smallest physics (from C MuJoCo's resets: `rollout`), the C
backend behind the same Env for the other tasks and for the largest models
(`--backend` overrides it).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pertask import backend_for, constraint_rows, task_cache

import jaxcontrol
from jaxcontrol import StepType, parity, reference

DISTINCT = 8
TWINS = 4  # extra environments that replay the first ones (determinism)
STEPS = 60  # long enough for finger-spin's fingertip to reach the spinner

# A rollout's cost is its physics steps times the size of each, and MJX's constraint
# rows (every contact slot, active or not) measure that size: cartpole has 1, stacker
# -stack_4 1,025, humanoid_CMU 4,684, dog 32,530. A task whose STEPS control steps would
# exceed this many row-substeps per environment rolls out fewer, never below MIN_STEPS.
ROW_SUBSTEPS = 100_000
MIN_STEPS = 5


def rollout_steps(env) -> int:
    """Control steps of the battery's rollout: STEPS, or fewer on the largest MJX models."""
    if env.backend != "mjx":  # C MuJoCo steps the largest model in milliseconds
        return STEPS
    affordable = ROW_SUBSTEPS // max(1, constraint_rows(env) * env.n_sub_steps)
    return int(np.clip(affordable, MIN_STEPS, STEPS))


# The default tier compiles at XLA's backend optimisation level 0 (conftest), where
# compiling costs less and running costs more. Where a control step runs
# RUN_BOUND_SUB_STEPS physics steps or more and the rollout runs RUN_BOUND_PHYSICS_STEPS
# or more, the rollout's time goes into running (manipulator-insert_peg: 145 s at level
# 0, 87 s at XLA's default level 3; walker-walk 14.0 and 16.9 s; bring_ball's 180
# physics steps 37 s at level 3, 41 s at level 0; docs/testing.md), so the
# battery's step compiles at the default level there. stacker-stack_2's 130 (13 control
# steps) cost 69 s at level 3 and 53 s at level 0.
RUN_BOUND_SUB_STEPS = 10
RUN_BOUND_PHYSICS_STEPS = 150
_optimised_step = jax.jit(
    reference.batched_step.__wrapped__,
    static_argnums=0,
    compiler_options={"xla_backend_optimization_level": 3},
)


def _step_program(env):
    """The jitted program `_step` runs for `env`."""
    if env.backend != "mjx":  # C runs the steps
        return reference.batched_step
    physics_steps = rollout_steps(env) * env.n_sub_steps
    if env.n_sub_steps >= RUN_BOUND_SUB_STEPS and physics_steps >= RUN_BOUND_PHYSICS_STEPS:
        return _optimised_step
    return reference.batched_step


def _step(env, states, actions):
    """`jax.vmap(env.step)`, jitted at the level that costs this task's battery least."""
    return _step_program(env)(env, states, actions)


@pytest.fixture(scope="module")
def env(task, request):
    return jaxcontrol.load(*task, backend=backend_for(task, request.config))


@pytest.fixture(scope="module")
def dm_env(task):
    return reference.reference_env(*task, seed=0)


@task_cache
def _short_rollout(env, reset_on_c):
    """`rollout_steps` random-action steps of DISTINCT + TWINS environments.

    The last TWINS environments repeat the first TWINS' keys and actions, so one
    run shows that a trajectory depends on nothing but its key and actions.
    `reset_on_c`: the first states are C MuJoCo's resets in `env`'s structure
    (`reference.batched_reset_on_c`), so that no MJX reset is compiled.
    """
    reset_key, action_key = jax.random.split(jax.random.key(1))
    keys = jax.random.split(reset_key, DISTINCT)
    reset = reference.batched_reset_on_c if reset_on_c else reference.batched_reset
    first = reset(env, jnp.concatenate([keys, keys[:TWINS]]))
    low, high = reference.action_bounds(env.action_spec())
    shape = (rollout_steps(env), DISTINCT) + low.shape
    actions = jax.random.uniform(action_key, shape, minval=low, maxval=high)
    actions = jnp.concatenate([actions, actions[:, :TWINS]], axis=1)
    states, trajectory = first, []
    for action in actions:
        states = _step(env, states, action)
        trajectory.append(_recorded(states))
    return first, states, jax.tree.map(lambda *xs: np.stack(xs), *trajectory)


def _without_key(states):
    return jax.tree.map(np.asarray, states.replace(key=None))


def _recorded(states):
    """A step's record: the state without its key, and of its physics data only the
    state variables (the rest derives from them; dog's constraint arrays alone are
    over 10 MB per environment and step)."""
    data = {k: getattr(states.data, k) for k in ("time", "qpos", "qvel", "act", "qacc_warmstart")}
    return _without_key(states.replace(data=data))


@pytest.fixture(scope="module")
def rollout(env, request):
    """The short rollout. Under `--backend auto` (the default tier) an MJX task's
    episodes start from C MuJoCo's resets: compiling a domain's MJX reset (its
    collision and settling loops and a forward pass) cost the default tier as much
    as its step (docs/testing.md). The task's reset code runs on C here;
    MJX's pieces of it have tests of their own (tests/tasks/test_randomizers.py's
    rejection loop, test_quadruped.py's height search, test_cheetah_reset.py's
    settling), and `--backend mjx` and the full tier reset every task on MJX."""
    return _short_rollout(env, request.config.getoption("--backend") == "auto")


def test_task_tests_share_one_xdist_worker(request, task):
    """Under `--dist loadgroup`, a task's tests form one group, so its rollout runs once."""
    # xdist sets "dist" to "no" on its workers and keeps the mode as "loadgroup".
    if not request.config.getoption("loadgroup", False):
        pytest.skip("not running under pytest-xdist --dist loadgroup")
    assert request.node.nodeid.endswith("@{}-{}".format(*task)), request.node.nodeid


def test_action_spec_matches_dm_control(env, dm_env):
    """dm_control's bounds, rounded to our dtype (quadruped's -0.8 has no float32)."""
    ours, ref = env.action_spec(), dm_env.action_spec()
    assert ours.shape == ref.shape
    np.testing.assert_array_equal(ours.minimum, ref.minimum.astype(ours.dtype))
    np.testing.assert_array_equal(ours.maximum, ref.maximum.astype(ours.dtype))


def test_observation_spec_matches_dm_control(env, dm_env):
    ours, ref = env.observation_spec(), dm_env.observation_spec()
    assert list(ours) == list(ref), "observation keys or their order differ"
    for key in ref:
        assert ours[key].shape == ref[key].shape, key


def test_timing_matches_dm_control(env, dm_env):
    assert env.control_timestep == pytest.approx(dm_env.control_timestep(), abs=0)
    assert env.physics_timestep == dm_env.physics.timestep()
    # dm_control ends at the first step count >= time_limit / control_timestep.
    if np.isinf(dm_env._step_limit):
        assert env.episode_length is None and np.isinf(env.time_limit)
    else:
        assert env.episode_length == int(np.ceil(dm_env._step_limit))


def test_bad_action_shape_is_refused(env):
    state = env.blank_state()
    wrong = jnp.zeros((env.action_spec().shape[0] + 1,))
    with pytest.raises(ValueError, match="expects an action of shape"):
        jax.eval_shape(env.step, state, wrong)


def test_unknown_task_argument_is_refused(task):
    with pytest.raises(ValueError, match="unknown argument 'time_limt'.*time_limit"):
        jaxcontrol.load(*task, time_limt=3.0)


def test_blank_state_is_shaped_like_a_reset(env, rollout):
    """`blank_state` skips tracing `reset`: its structure, shapes and dtypes must be one's."""
    first = jax.tree.map(lambda x: x[0], rollout[0].replace(key=None))
    blank = env.blank_state().replace(key=None)
    assert jax.tree.structure(blank) == jax.tree.structure(first)
    for ours, theirs in zip(jax.tree.leaves(blank), jax.tree.leaves(first)):
        assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype)


def test_observations_conform_to_spec(env, rollout):
    first, _, trajectory = rollout
    lanes = DISTINCT + TWINS
    for key, spec in env.observation_spec().items():
        assert first.observation[key].shape == (lanes,) + spec.shape
        assert first.observation[key].dtype == spec.dtype
        assert trajectory.observation[key].shape == (rollout_steps(env), lanes) + spec.shape
        assert trajectory.observation[key].dtype == spec.dtype


def test_rollout_is_finite_and_rewards_in_range(env, rollout):
    _, _, trajectory = rollout
    for key, value in trajectory.observation.items():
        assert np.all(np.isfinite(value)), key
    assert np.all(np.isfinite(trajectory.reward))
    low, high = env.task.reward_range
    assert trajectory.reward.min() >= low and trajectory.reward.max() <= high
    assert not trajectory.diverged.any()
    assert np.all(trajectory.step_type == StepType.MID)
    assert np.all(trajectory.discount == 1.0)


@pytest.mark.mjx_tasks
def test_mjx_one_step_from_dm_controls_states(env, rollout):
    """MJX's step from DISTINCT + TWINS of dm_control's states (resets and mid-episode,
    `reference.reference_transitions`), in float32 with the rollout's own compiled
    step: dm_control's next observations, reward, qpos and qvel within the float32
    one-step target (relative to scale), or 10x stock MJX's own error from the same
    states where ours misses it. The states are injected by C MuJoCo with MJX's
    kinematics (`reference.batched_inject_on_c`), so no MJX program is compiled for
    this test but MJX's kinematics (and stock MJX's step where it is needed). The float64 one step of the default
    tier (test_parity.py) steps C MuJoCo behind our Env; MJX's is the full tier's.
    Only the tasks whose battery steps MJX (`mjx_tasks`): the C backend's tasks have
    their one step in float64."""
    transitions = reference.reference_transitions(env, n=DISTINCT + TWINS, seed=0)
    starts = jax.tree.map(lambda *xs: np.stack(xs), *[t.start for t in transitions])
    first = reference.batched_inject_on_c(env, jax.device_put(starts))
    actions = jnp.asarray(np.stack([t.action for t in transitions]), env.action_spec().dtype)
    programs = _step_program(env)._cache_size()
    ours = parity.step.compare_step(first, _step(env, first, actions), transitions, True)
    assert _step_program(env)._cache_size() == programs, "the rollout's step was not reused"
    ours = {k: v for k, v in ours.items() if not k.startswith("reset_obs/")}  # C's
    raw = {}
    if not max(ours.values()) <= parity.tolerance.ONE_STEP_TARGET["float32"]:
        raw = parity.step.raw_step_parity(env, transitions, relative=True, ours=ours)
    misses = parity.tolerance.one_step_misses("float32", ours, raw)
    assert not misses, f"MJX differs from dm_control (difference, tolerance): {misses}"


def test_episode_ends_by_truncation_at_the_time_limit(env, rollout):
    """From one step before the limit: LAST with discount 1, and LAST again after.
    Without a time limit, no step count truncates (here, one short of int32's limit)."""
    _, states, _ = rollout
    spec = env.action_spec()
    actions = jnp.zeros((DISTINCT + TWINS,) + spec.shape, spec.dtype)
    if env.episode_length is None:
        late = states.replace(step=jnp.full_like(states.step, np.iinfo(np.int32).max - 1))
        stepped = _step(env, late, actions)
        assert np.all(np.asarray(stepped.step_type) == StepType.MID)
        assert np.all(np.asarray(stepped.discount) == 1.0)
        return
    near_end = states.replace(step=jnp.full_like(states.step, env.episode_length - 1))
    last = _step(env, near_end, actions)
    after = _step(env, last, actions)
    for s in (last, after):
        assert np.all(np.asarray(s.step_type) == StepType.LAST)
        assert np.all(np.asarray(s.discount) == 1.0)


def test_terminal_state_ends_the_episode_as_dm_control(env, dm_env):
    """Where the task declares a terminal state (`Task.terminal_state`), one step from it
    under zero action is LAST with dm_control's discount, here and in dm_control, and the
    step after is LAST again. A task without one never terminates (no termination rule)."""
    terminal = env.task.terminal_state()
    if terminal is None:
        physics = env._physics(env.blank_state().data, env.default_model_fields())
        assert env.task.get_termination(physics, env.blank_state().variables) is None
        return
    dm_env.reset()
    with dm_env.physics.reset_context():
        dm_env.physics.data.qpos[:] = terminal["qpos"]
        dm_env.physics.data.qvel[:] = terminal["qvel"]
    zeros = np.zeros(env.action_spec().shape)
    dm_step = dm_env.step(zeros)
    assert dm_step.last() and dm_step.discount < 1, dm_step
    # jitted: run eagerly, set_state's forward pass costs 5x its compile (lqr: 16 s against 3)
    state = jax.jit(env.set_state)(env.blank_state(), terminal["qpos"], terminal["qvel"])
    step = jax.jit(env.step)
    steps = [step(state, zeros)]
    steps.append(step(steps[0], zeros))
    for s in steps:
        assert int(s.step_type) == StepType.LAST
        assert float(s.discount) == dm_step.discount


def _assert_twins_match(tree, axis):
    for leaf in jax.tree.leaves(tree):
        leaf = np.asarray(leaf)
        twins = leaf.take(np.arange(DISTINCT, DISTINCT + TWINS), axis=axis)
        np.testing.assert_array_equal(twins, leaf.take(np.arange(TWINS), axis=axis))


def test_same_key_same_trajectory(rollout):
    """The same key and actions give a bit-identical trajectory."""
    first, _, trajectory = rollout
    _assert_twins_match(_without_key(first), axis=0)
    _assert_twins_match(trajectory, axis=1)


def test_different_keys_give_different_initial_states(rollout):
    first = _without_key(rollout[0])
    parts = [first.data.qpos, first.data.qvel, *jax.tree.leaves(first.variables)]
    parts += jax.tree.leaves(first.model_fields)
    rows = np.concatenate([p[:DISTINCT].reshape(DISTINCT, -1) for p in parts], axis=1)
    assert len({row.tobytes() for row in rows}) == DISTINCT


def _constant_entries(observations, share=1.0):
    """{key: indices of the entries at one value in at least `share` of the samples}."""
    out = {}
    for key, value in observations.items():
        value = np.asarray(value).reshape(len(value), -1)
        top = [np.unique(column, return_counts=True)[1].max() for column in value.T]
        out[key] = set(np.flatnonzero(np.asarray(top) >= share * len(value)).tolist())
    return out


def _dm_control_constant_entries(task, steps):
    """Entries of dm_control's own rollouts (DISTINCT episodes of `steps` random actions)
    that sit at one value in 90% of the steps: constant ones, and rare events such as
    touch sensors, which a rollout of this length may or may not trigger."""
    observations = []
    for seed in range(DISTINCT):
        dm_env = reference.reference_env(*task, seed=seed)
        (low, high), rng = (
            reference.action_bounds(dm_env.action_spec()),
            np.random.default_rng(seed),
        )
        dm_env.reset()
        for _ in range(steps):
            obs = dm_env.step(rng.uniform(low, high)).observation
            observations.append({k: np.atleast_1d(v).ravel() for k, v in obs.items()})
    stacked = {k: np.stack([o[k] for o in observations]) for k in observations[0]}
    return _constant_entries(stacked, share=0.9)


def test_no_observation_stays_constant(task, env, rollout):
    """An entry constant over our rollout is constant, or nearly (a touch sensor), over
    dm_control's too; anything else is wired to nothing."""
    _, _, trajectory = rollout
    flat = {k: v.reshape(v.shape[0] * v.shape[1], -1) for k, v in trajectory.observation.items()}
    theirs = _dm_control_constant_entries(task, rollout_steps(env))
    ours = _constant_entries(flat)
    for key in ours:
        assert ours[key] <= theirs[key], (
            f"{key} entries {sorted(ours[key] - theirs[key])} stay constant"
        )


# ----- full tier -------------------------------------------------------------------------


@pytest.mark.full
def test_full_episode_and_nan_soak(task, full_record):
    """1024 environments, 1000 steps: conformance over a whole episode, no NaN."""
    soak = full_record("soak")
    assert soak["steps"] >= 1_000_000
    assert soak["nonfinite"] == 0, soak
    assert soak["diverged"] == 0, soak
    low, high = jaxcontrol.load(*task).task.reward_range
    assert soak["reward_min"] >= low and soak["reward_max"] <= high, soak
    assert soak["ends_by_truncation"], soak
    assert soak["constant_observations"] == [], soak
    assert soak["replay_identical"], soak

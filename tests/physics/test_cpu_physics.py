"""The C MuJoCo backend (`backend="mujoco"`): dm_control's engine behind the same Env.

Default tier (cheap): a few tasks' float64 trajectories from a `mirror`ed dm_control
state are dm_control's bit for bit in qpos and qvel (its own engine, its own warm
start) and to round-off in observations and rewards; a vmapped batch is one host
call and equals its environments stepped one at a time; it runs inside `lax.scan`;
an invalid state is contained as an MJX divergence is; bad backends are refused.
Full tier: every registered task, 1000 steps.
"""

import copy
import subprocess
import sys

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from mujoco import mjx

import jaxcontrol
from jaxcontrol import cpu_physics, reference
from jaxcontrol import physics as physics_lib
from jaxcontrol.mjcf import compat
from jaxcontrol.render import gl

# A contact task with a free joint (quaternions) and the solver's warm start, and a
# per-episode model field (point_mass-hard's wrap_prm, a per-environment tendon).
CHEAP = [("humanoid", "walk"), ("point_mass", "hard")]


def _trajectory_differences(task, steps: int, seed: int = 0) -> dict[str, float]:
    """Worst differences from dm_control over `steps` random-action steps from its reset."""
    with reference.precision(True):
        env = jaxcontrol.load(*task, backend="mujoco")
        dm_env = reference.reference_env(*task, seed=seed)
        first = dm_env.reset()
        state = reference.mirror(env, dm_env)  # its forward pass is C's too
        step = jax.jit(env.step)
        rng = np.random.default_rng(seed)
        low, high = reference.action_bounds(dm_env.action_spec())
        worst = dict.fromkeys(("qpos", "qvel", "observation", "reward"), 0.0)
        for key, value in first.observation.items():
            difference = np.abs(np.asarray(state.observation[key]) - value).max()
            worst["observation"] = max(worst["observation"], float(difference))
        for _ in range(steps):
            action = rng.uniform(low, high)
            timestep = dm_env.step(action)
            state = step(state, jnp.asarray(action))
            physics = dm_env.physics.data
            worst["qpos"] = max(worst["qpos"], np.abs(state.data.qpos - physics.qpos).max())
            worst["qvel"] = max(worst["qvel"], np.abs(state.data.qvel - physics.qvel).max())
            worst["reward"] = max(worst["reward"], abs(float(state.reward) - timestep.reward))
            for key, value in timestep.observation.items():
                difference = np.abs(np.asarray(state.observation[key]) - value).max()
                worst["observation"] = max(worst["observation"], float(difference))
            assert bool(state.last()) == timestep.last()
            if timestep.last():
                break
    return worst


# Ids other than the task ids: these are not the per-task battery (conftest groups those).
@pytest.mark.parametrize("cheap_task", CHEAP, ids=lambda task: "c-mujoco-" + "-".join(task))
def test_trajectories_are_dm_controls(cheap_task):
    worst = _trajectory_differences(cheap_task, steps=100)
    assert worst["qpos"] == 0 and worst["qvel"] == 0, worst
    assert worst["observation"] <= 1e-12 and worst["reward"] <= 1e-12, worst


@pytest.mark.full
def test_full_trajectories_are_dm_controls(task):
    worst = _trajectory_differences(task, steps=1000)
    assert worst["qpos"] <= 1e-12 and worst["qvel"] <= 1e-12, worst
    assert worst["observation"] <= 1e-12 and worst["reward"] <= 1e-12, worst


def test_a_reset_ends_with_cs_forward_pass(monkeypatch):
    """hopper's touch sensors read contact forces: after a reset into the floor, ours
    are C's, as dm_control's are, from one host call per batch (no MJX solver)."""
    env = jaxcontrol.load("hopper", "stand", backend="mujoco")
    engine_step, calls = cpu_physics.Engine.step, []

    def spy(self, time, fields, inputs, forward_only=False):
        calls.append((time.shape, forward_only))
        return engine_step(self, time, fields, inputs, forward_only)

    monkeypatch.setattr(cpu_physics.Engine, "step", spy)
    with reference.precision(True):
        dm_env = reference.reference_env("hopper", "stand", seed=0)
        dm_env.reset()
        physics = dm_env.physics
        with physics.reset_context():  # upright, pushed into the floor: both feet touch
            physics.data.qpos[:] = 0
            physics.data.qpos[1] = -0.1
        theirs = dm_env.task.get_observation(physics)
        assert np.all(theirs["touch"] > 0), theirs["touch"]
        state = reference.mirror(env, dm_env)
        for key, value in theirs.items():
            np.testing.assert_allclose(state.observation[key], value, rtol=0, atol=1e-12)
    assert calls == [((1,), True)]
    jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), 4))
    assert calls[-1] == ((4,), True)


def test_contact_tests_are_cs_own_ncon(monkeypatch):
    """On the C backend a reset's rejection sampler asks C MuJoCo for `ncon`, as
    dm_control does: poses from clear of the floor to sunk into it give C's counts,
    per environment of a vmapped batch, and no MJX collision or kinematics is traced
    (humanoid's sampler, quadruped's height search)."""
    env = jaxcontrol.load("humanoid", "walk", backend="mujoco")
    states = reference.batched_reset(env, jax.random.split(jax.random.key(0), 8))
    heights = jnp.linspace(-0.3, 1.6, 8)  # root z: from deep in the floor to clear of it
    qpos = states.data.qpos.at[:, 2].set(heights)

    def count(data):
        return physics_lib.contact_count(env._physics(data, {}))

    ours = jax.jit(jax.vmap(count))(states.data.replace(qpos=qpos))
    model, data = env.mj_model, mujoco.MjData(env.mj_model)
    theirs = []
    for q in np.asarray(qpos, np.float64):
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        theirs.append(data.ncon)
    assert np.asarray(ours).tolist() == theirs
    assert theirs[0] > 10 and theirs[-1] == 0, theirs

    def no_mjx(*args, **kwargs):
        raise AssertionError("MJX collision or kinematics traced in a C backend reset")

    monkeypatch.setattr(mjx, "collision", no_mjx)
    monkeypatch.setattr(mjx, "kinematics", no_mjx)
    jax.eval_shape(jax.vmap(env.reset), jax.random.split(jax.random.key(1), 4))
    # quadruped's height search counts contacts deeper than a slack, on C too.
    escape = jaxcontrol.load("quadruped", "escape", backend="mujoco")
    jax.eval_shape(jax.vmap(escape.reset), jax.random.split(jax.random.key(1), 4))


def test_contact_depths_are_cs_own():
    """`contact_count_and_depth` on the C backend: C's contacts deeper than the slack
    inside their margin, and the deepest one, per environment, with each one's own
    terrain (quadruped-escape's per-episode `hfield_data`)."""
    env = jaxcontrol.load("quadruped", "escape", backend="mujoco")
    states = reference.batched_reset(env, jax.random.split(jax.random.key(0), 8))
    heights = jnp.linspace(-0.05, 3.0, 8)  # root z: sunk into the terrain, then clear of it
    qpos = states.data.qpos.at[:, 2].set(heights)
    slack = 1e-3

    def count(data, fields):
        return physics_lib.contact_count_and_depth(env._physics(data, fields), slack)

    fields = states.model_fields
    ours = jax.jit(jax.vmap(count))(states.data.replace(qpos=qpos), fields)
    model, data = copy.deepcopy(env.mj_model), mujoco.MjData(env.mj_model)
    counts, depths = [], []
    for q, terrain in zip(np.asarray(qpos, np.float64), np.asarray(fields["hfield_data"])):
        model.hfield_data[:] = terrain
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        inside = -data.contact.dist  # every geom's margin is 0
        counts.append(int(np.sum(inside > slack)))
        depths.append(max(inside.max(initial=0.0), 0.0))
    assert np.asarray(ours[0]).tolist() == counts
    np.testing.assert_allclose(ours[1], depths, rtol=1e-6, atol=1e-7)
    assert counts[0] > 0 and counts[-1] == 0 and depths[0] > slack, (counts, depths)
    assert not np.any(env.mj_model.geom_margin)


def test_states_carry_no_constraint_rows(cartpole):
    """C keeps its own constraint and contact rows: a State carries none of MJX's,
    from a reset, a step, `set_state` or `blank_state` (dog's were 12 MB)."""
    state = jax.jit(cartpole.reset)(jax.random.key(0))
    stepped = jax.jit(cartpole.step)(state, jnp.ones(cartpole.action_spec().shape))
    placed = jax.jit(cartpole.set_state)(state, stepped.data.qpos, stepped.data.qvel)
    for carried in (state, stepped, placed, cartpole.blank_state()):
        assert carried.data._impl.efc_J.shape == (0, 2)
    assert jax.tree.structure(state) == jax.tree.structure(stepped)
    # What a reset starts from keeps them, for a rejection sampler's MJX collision.
    assert cartpole._initial_data()._impl.efc_J.shape == (1, 2)  # the slider's limit
    data = jaxcontrol.load("cheetah", "run", backend="mujoco")._initial_data()
    whole, cut = data._impl, cpu_physics.without_constraint_rows(data)._impl
    assert whole.contact.dist.shape[0] > 0 and whole.efc_J.shape[0] > 0
    assert cut.contact.dist.shape == (0,) and cut.efc_J.shape[0] == 0


def test_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="unknown backend 'c'; valid backends: mjx, mujoco"):
        jaxcontrol.load("cartpole", "swingup", backend="c")


@pytest.fixture(scope="module")
def cartpole():
    return jaxcontrol.load("cartpole", "swingup", backend="mujoco")


def test_a_vmapped_batch_is_one_host_call(cartpole, monkeypatch):
    """On the callback path (where the FFI step cannot be built: test_ffi_step.py)."""
    monkeypatch.setattr(cpu_physics.Engine, "stepper", lambda self, *args: None)
    keys = jax.random.split(jax.random.key(0), 5)
    states = jax.jit(jax.vmap(cartpole.reset))(keys)
    actions = jax.random.uniform(jax.random.key(1), (5, 1), minval=-1, maxval=1)
    engine_step, batches = cpu_physics.Engine.step, []

    def spy(self, time, *args):
        batches.append(time.shape)
        return engine_step(self, time, *args)

    monkeypatch.setattr(cpu_physics.Engine, "step", spy)
    batched = jax.jit(jax.vmap(cartpole.step))(states, actions)
    assert batches == [(5,)]
    one = jax.jit(cartpole.step)
    for i in range(5):
        alone = one(jax.tree.map(lambda x, i=i: x[i], states), actions[i])
        np.testing.assert_array_equal(alone.data.qpos, batched.data.qpos[i])
        np.testing.assert_array_equal(
            alone.observation["position"], batched.observation["position"][i]
        )
    assert batches[1:] == [(1,)] * 5


def test_runs_inside_scan(cartpole):
    """Ten steps in a `lax.scan` equal ten jitted steps."""
    state = jax.jit(cartpole.reset)(jax.random.key(2))
    actions = 0.5 * jnp.ones((10, 1))

    @jax.jit
    def rollout(state):
        return jax.lax.scan(lambda s, a: (cartpole.step(s, a), None), state, actions)[0]

    scanned, stepped = rollout(state), state
    for action in actions:
        stepped = jax.jit(cartpole.step)(stepped, action)
    np.testing.assert_array_equal(scanned.data.qpos, stepped.data.qpos)
    assert int(scanned.step) == 10


def test_an_invalid_state_is_contained(cartpole):
    """C MuJoCo's bad-state warning (dm_control raises on it) ends that episode only."""
    states = jax.jit(jax.vmap(cartpole.reset))(jax.random.split(jax.random.key(3), 2))
    qvel = states.data.qvel.at[1].set(1e12)  # beyond mjMAXVAL: C resets and warns
    states = states.replace(data=states.data.replace(qvel=qvel))
    stepped = jax.jit(jax.vmap(cartpole.step))(states, jnp.zeros((2, 1)))
    assert np.asarray(stepped.diverged).tolist() == [False, True]
    assert int(stepped.step_type[1]) == jaxcontrol.StepType.LAST
    np.testing.assert_array_equal(stepped.data.qpos[1], states.data.qpos[1])  # the last finite
    assert np.all(np.isfinite(np.asarray(stepped.data.qpos)))


def test_per_episode_model_fields_apply_per_environment():
    """A batch carries each environment's own model fields (point_mass-hard's
    actuation directions, drawn per episode) into C, as each stepped alone does."""
    env = jaxcontrol.load("point_mass", "hard", backend="mujoco")
    (field,) = env.task.episode_model_fields
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(4), 4))
    values = np.asarray(states.model_fields[field])
    assert len({v.tobytes() for v in values}) == 4  # four different episodes
    actions = jnp.ones((4, 2))
    batched = jax.jit(jax.vmap(env.step))(states, actions)
    one = jax.jit(env.step)
    for i in range(4):
        alone = one(jax.tree.map(lambda x, i=i: x[i], states), actions[i])
        np.testing.assert_array_equal(alone.data.qvel, batched.data.qvel[i])
        # C MuJoCo itself, on a model holding this environment's field
        model = compat.to_mjx_compatible(env.mj_model)
        getattr(model, field)[...] = values[i].reshape(getattr(model, field).shape)
        data = mujoco.MjData(model)
        data.qpos, data.qvel = states.data.qpos[i], states.data.qvel[i]
        data.qacc_warmstart = states.data.qacc_warmstart[i]
        data.ctrl = actions[i]
        mujoco.mj_step(model, data, env.n_sub_steps)
        np.testing.assert_allclose(batched.data.qvel[i], data.qvel, rtol=1e-5, atol=1e-6)


def test_model_copies_fall_back_to_the_whole_model_when_a_rebuild_differs():
    env = jaxcontrol.load("quadruped", "escape", backend="mujoco")
    assert cpu_physics._engine(env).copyable_model().nbuffer < env.mj_model.nbuffer / 50

    def heavier():
        model = env.task.make_model()
        model.body_mass[1] *= 2
        return model

    engine = cpu_physics.Engine(env.mj_model, env.n_sub_steps, make_model=heavier)
    with pytest.warns(UserWarning, match="body_mass.*copies the whole model"):
        assert engine.copyable_model() is engine.model
    bare = cpu_physics.Engine(env.mj_model, env.n_sub_steps)  # nothing to rebuild with
    assert bare.copyable_model() is bare.model


@pytest.mark.parametrize(
    "sensed_task",
    [("quadruped", "escape"), ("hopper", "hop")],
    ids=lambda t: "sensors-" + "-".join(t),
)
def test_substeps_without_sensors_change_no_bit(sensed_task):
    """A control step's substeps but the last skip the sensors, which feed nothing back:
    states and sensordata equal C MuJoCo's `mj_step` n times then `mj_step1`, bit for bit.
    quadruped-escape has rangefinders on a heightfield of each environment's own (the
    per-model path, whose copies are built without textures), an accelerometer and
    force-torque sensors; hopper, touch sensors. The references step the Env's own
    textured model."""
    env = jaxcontrol.load(*sensed_task, backend="mujoco")
    model = compat.to_mjx_compatible(env.mj_model)
    assert model.nsensor and env.n_sub_steps > 1
    engine = cpu_physics.Engine(
        env.mj_model, env.n_sub_steps, threads=2, make_model=env.task.make_model
    )
    assert model.ntex and not engine.copyable_model().ntex
    rng = np.random.default_rng(0)
    n, fields = 3, {}
    if model.nhfield:
        fields["hfield_data"] = rng.uniform(0, 0.3, (n, model.hfield_data.size))
    inputs = {
        name: np.stack([getattr(mujoco.MjData(model), name)] * n) for name in cpu_physics._INPUTS
    }
    inputs["qvel"] = rng.normal(0, 0.5, inputs["qvel"].shape)
    references = []
    for i in range(n):
        own = compat.to_mjx_compatible(env.mj_model)
        for name, values in fields.items():
            getattr(own, name)[...] = values[i].reshape(getattr(own, name).shape)
        data = mujoco.MjData(own)
        data.qvel = inputs["qvel"][i]
        references.append((own, data))
    time = np.zeros(n)
    for _ in range(5):
        inputs["ctrl"] = rng.uniform(-1, 1, inputs["ctrl"].shape)
        time, out = engine.step(time, fields, inputs)
        for i, (own, data) in enumerate(references):
            data.ctrl = inputs["ctrl"][i]
            mujoco.mj_step(own, data, env.n_sub_steps)
            mujoco.mj_step1(own, data)
            for name in (*cpu_physics._STATE_OUT[1:], "sensordata", "xpos"):
                np.testing.assert_array_equal(out[name][i], getattr(data, name), err_msg=name)
        inputs.update({name: out[name] for name in cpu_physics._STATE_OUT[1:]})
    assert np.any(out["sensordata"])


_ONE_CORE_STEPS = """
import os, sys
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
import jaxcontrol
from jaxcontrol import parity, reference
env = jaxcontrol.load("quadruped", "escape", backend="mujoco")
transitions = reference.reference_transitions(env, n=6, seed=0)
for _ in range(3):
    parity.engines.mjx_step_from(env, transitions)
print("stepped")
"""


def test_parity_tools_step_the_c_backend_on_one_core():
    """On one core, a C backend program given large NumPy arguments (quadruped-escape's
    terrain, 0.3 MB per state) hung in 4 of 6 runs of the one-step parity: JAX's CPU
    runtime never finished their transfer while the program's host call waited. The
    parity tools transfer their states first (`parity.engines._on_device`)."""
    if gl.unavailable_reason():  # dm_control's escape draws its terrain with OpenGL
        pytest.skip(gl.unavailable_reason())
    done = subprocess.run(
        [sys.executable, "-c", _ONE_CORE_STEPS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "stepped" in done.stdout, done.stderr[-3000:]

"""The C backend's XLA FFI step (jaxcontrol/ffi_step.cc) against its Python callback.

The callback path is the one proven against dm_control (test_cpu_physics.py and the
full tier); the handler must give its bits exactly, in both precisions, with
per-environment model fields and with substeps whose sensors are skipped. Where the
handler cannot be built, the callback steps instead, after one warning.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import cpu_physics, ffi_step, reference


def _rollout(task, steps: int, batch: int, callback: bool):
    env = jaxcontrol.load(*task, backend="mujoco")
    if callback:
        cpu_physics._engine(env).stepper = lambda *args: None
    low, high = (jnp.asarray(b) for b in reference.action_bounds(env.action_spec()))
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), batch))

    @jax.jit
    def run(states):
        def body(states, key):
            actions = jax.random.uniform(key, (batch,) + low.shape, minval=low, maxval=high)
            states = jax.vmap(env.step)(states, actions)
            return states, (states.observation, states.reward)

        return jax.lax.scan(body, states, jax.random.split(jax.random.key(1), steps))

    final, (observations, rewards) = run(states)
    return env, final.data, observations, rewards


@pytest.mark.parametrize(
    "stepped_task, x64",
    [
        (("finger", "spin"), True),  # per-environment model fields (damping, site colours)
        (("hopper", "hop"), True),  # 4 substeps, sensors on the last only
        (("cheetah", "run"), False),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, tuple) else ("float64" if v else "float32"),
)
def test_the_handler_steps_as_the_callback_does(stepped_task, x64):
    with reference.precision(x64):
        env, data, observations, rewards = _rollout(stepped_task, 25, 4, callback=False)
        assert cpu_physics._engine(env)._steppers, "the handler did not step"
        assert all(s is not None for s in cpu_physics._engine(env)._steppers.values())
        _, expected, expected_observations, expected_rewards = _rollout(stepped_task, 25, 4, True)
    for name in (*cpu_physics._STATE_OUT, "sensordata", "xpos", "geom_xmat"):
        np.testing.assert_array_equal(getattr(data, name), getattr(expected, name), name)
    # What a sync computes is C's own on the handler's path, JAX's on the callback's.
    tolerance = 1e-12 if x64 else 1e-5
    for key in observations:
        np.testing.assert_allclose(
            observations[key], expected_observations[key], rtol=tolerance, atol=tolerance
        )
    np.testing.assert_allclose(rewards, expected_rewards, rtol=tolerance, atol=tolerance)


SYNCED = ("subtree_com", "cvel", "cdof", "cdof_dot", "_impl.cinert", "_impl.subtree_linvel")


def test_what_a_sync_reads_is_dm_controls_own():
    """cheetah's sync (centres of mass, body velocities, its subtree-velocity sensor) is
    C's `mj_step1` on the handler's path: dm_control's values, bit for bit."""
    with reference.precision(True):
        env = jaxcontrol.load("cheetah", "run", backend="mujoco")
        dm_env = reference.reference_env("cheetah", "run", seed=0)
        dm_env.reset()
        state = reference.mirror(env, dm_env)
        step = jax.jit(env.step)
        rng = np.random.default_rng(0)
        low, high = reference.action_bounds(dm_env.action_spec())
        for _ in range(10):
            action = rng.uniform(low, high)
            timestep = dm_env.step(action)
            state = step(state, jnp.asarray(action))
            for path in SYNCED:
                ours = cpu_physics._at(state.data, path)
                theirs = getattr(dm_env.physics.data, cpu_physics._leaf(path))
                np.testing.assert_array_equal(ours, theirs, path)
            for key, value in timestep.observation.items():
                np.testing.assert_array_equal(state.observation[key], value, key)


def test_a_batch_is_one_ffi_call():
    env = jaxcontrol.load("cartpole", "swingup", backend="mujoco")
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), 5))
    lowered = jax.jit(jax.vmap(env.step)).lower(states, jnp.zeros((5, 1)))
    assert lowered.as_text().count(ffi_step.TARGET) == 1


def test_fields_a_batch_cannot_expand_take_the_callback():
    """quadruped-escape's terrain is a heightfield per environment: no expanded field."""
    assert not ffi_step.supports(("hfield_data",))
    assert ffi_step.supports(("geom_size", "body_pos"))
    env = jaxcontrol.load("quadruped", "escape", backend="mujoco")
    assert cpu_physics._engine(env).stepper(("hfield_data",), ("sensordata",)) is None


def test_without_a_compiler_the_callback_steps_after_one_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXCONTROL_FFI_CACHE", str(tmp_path))
    monkeypatch.setenv("CXX", "no-such-compiler")
    ffi_step.library.cache_clear()
    try:
        with pytest.warns(UserWarning, match="no-such-compiler.*") as caught:
            assert ffi_step.library() is None
        assert ffi_step.library() is None  # cached: no second build, no second warning
        assert len(caught) == 1
        assert "pure_callback" in str(caught[0].message)
        env = jaxcontrol.load("cartpole", "swingup", backend="mujoco")
        state = jax.jit(env.reset)(jax.random.key(0))
        stepped = jax.jit(env.step)(state, jnp.ones(1))
        assert cpu_physics._engine(env)._steppers == {((), cpu_physics._DERIVED): None}
        assert np.all(np.isfinite(stepped.data.qpos))
    finally:
        ffi_step.library.cache_clear()


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("JAXCONTROL_MUJOCO_FFI", "0")
    ffi_step.library.cache_clear()
    try:
        assert ffi_step.library() is None
    finally:
        ffi_step.library.cache_clear()


# Every output the handler can return: the step's sensors and poses, and what syncs read.
_ALL_OUTPUTS = (*cpu_physics._DERIVED, *(cpu_physics._leaf(path) for path in SYNCED), "cinert")


def _stepper(env, lean: bool, outputs=_ALL_OUTPUTS) -> ffi_step.Stepper:
    engine = cpu_physics._engine(env)
    lib = ffi_step.library()
    return ffi_step.Stepper(
        lib, engine.model, engine.n_sub_steps, False, 1, (), tuple(dict.fromkeys(outputs)), lean
    )


def _random_state(model, n: int, steps: int, seed: int) -> list[np.ndarray]:
    """Rows of the eight operands after `steps` random C MuJoCo steps from `n` perturbed
    default states."""
    rng = np.random.default_rng(seed)
    data = mujoco.MjData(model)
    rows = []
    for _ in range(n):
        mujoco.mj_resetData(model, data)
        data.qpos[:] += rng.normal(0, 0.05, model.nq)
        mujoco.mj_normalizeQuat(model, data.qpos)
        for _ in range(steps):
            data.ctrl[:] = rng.uniform(-1, 1, model.nu)
            mujoco.mj_step(model, data)
        rows.append([np.array(getattr(data, name)).ravel() for name in cpu_physics._STATE])
    return [np.stack(column) for column in zip(*rows)]


def _step(stepper, rows, n):
    blank = mujoco.MjData(stepper._model)
    shapes = [jax.ShapeDtypeStruct(r.shape, r.dtype) for r in rows[:5]]
    shapes += [
        jax.ShapeDtypeStruct((n, getattr(blank, name).size), rows[0].dtype)
        for name in stepper.outputs
    ]
    return [np.asarray(x) for x in stepper(rows, [], shapes)]


@pytest.mark.float64
@pytest.mark.parametrize(
    "task",
    [
        ("cheetah", "run"),  # one substep: the end stage is half the step
        ("hopper", "hop"),  # a subtree-velocity sensor beside touch sensors
        ("manipulator", "bring_ball"),  # tendon transmissions, many contacts
        ("humanoid", "walk"),  # velocimeters, gyros, subtree momenta, accelerometers
        ("acrobot", "swingup"),  # energy enabled
    ],
    ids="-".join,
)
def test_the_lean_end_stage_gives_mj_step1s_outputs(task):
    """The end stage without collision, constraints, inertia and bias forces returns
    mj_step1's state, sensors, poses and synced fields bit for bit, call after call."""
    with reference.precision(True):
        env = jaxcontrol.load(*task, backend="mujoco")
        lean, full = _stepper(env, True), _stepper(env, False)
        assert lean.lean and not full.lean
        n = 6
        rows = _random_state(lean._model, n, steps=50, seed=3)
        rng = np.random.default_rng(0)
        lean_rows = full_rows = rows
        for _ in range(5):
            ctrl = rng.uniform(-1, 1, rows[5].shape)
            lean_out = _step(lean, [*lean_rows[:5], ctrl, *lean_rows[6:]], n)
            full_out = _step(full, [*full_rows[:5], ctrl, *full_rows[6:]], n)
            for name, a, b in zip(("state",) * 5 + lean.outputs, lean_out, full_out):
                np.testing.assert_array_equal(a, b, name)
            lean_rows = [*lean_out[:5], *rows[5:]]
            full_rows = [*full_out[:5], *rows[5:]]


def test_outputs_the_lean_stage_does_not_compute_take_mj_step1():
    env = jaxcontrol.load("cheetah", "run", backend="mujoco")
    assert not _stepper(env, True, (*cpu_physics._DERIVED, "qfrc_bias")).lean
    assert not _stepper(env, True, (*cpu_physics._DERIVED, "qfrc_constraint")).lean

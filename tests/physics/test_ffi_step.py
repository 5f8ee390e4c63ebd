"""The C backend's XLA FFI step (jaxcontrol/ffi_step.cc) against its Python callback.

The callback path is the one proven against dm_control (test_cpu_physics.py and the
full tier); the handler must give its bits exactly, in both precisions, with
per-environment model fields and with substeps whose sensors are skipped. Where the
handler cannot be built, the callback steps instead, after one warning.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
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

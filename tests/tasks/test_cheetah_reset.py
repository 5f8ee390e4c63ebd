"""cheetah-run's reset settles the model as dm_control's does, state for state.

dm_control writes the limited joints' `qpos` inside `reset_context` and calls
`physics.step(nstep=200)`. Its legacy step opens with `mj_step2`, finishing the
step begun by the reset's forward pass at qpos0, so the first step's
accelerations (gravity and joint springs) are those at qpos0 while the
integration starts from the new `qpos`. Here the same `qpos` goes through
dm_control and through `cheetah.settle`, the code `initialize_episode` runs,
and the settled states are compared in float64.
"""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from mujoco import mjx

import jaxcontrol
from jaxcontrol import reference
from jaxcontrol.mjcf import compat
from jaxcontrol.physics import Physics
from jaxcontrol.tasks import cheetah

N_DRAWS = 8


def _draws(model) -> np.ndarray:
    limited = np.flatnonzero(model.jnt_limited == 1)
    lower, upper = model.jnt_range[limited].T
    qpos = np.zeros((N_DRAWS, model.nq))
    qpos[:, limited] = np.random.RandomState(1).uniform(lower, upper, (N_DRAWS, len(limited)))
    return qpos


def _dm_control_settle(qpos: np.ndarray, n_steps: int):
    """dm_control's own code path: qpos written in reset_context, then step."""
    physics = reference.reference_env("cheetah", "run", seed=0).physics
    out = []
    for q in qpos:
        with physics.reset_context():
            physics.data.qpos[:] = q
            physics.step(nstep=n_steps)
        out.append(
            (physics.data.qpos.copy(), physics.data.qvel.copy(), physics.data.qacc_warmstart.copy())
        )
    return tuple(np.stack(x) for x in zip(*out))


def _ours(env, qpos: np.ndarray, n_steps: int):
    @jax.jit
    @jax.vmap
    def run(q):
        physics = Physics.create(env.mjx_model, env._initial_data(), env.names)
        settled = cheetah.settle(physics, q, n_steps)
        return settled.data.qpos, settled.data.qvel

    return tuple(np.asarray(x) for x in run(jnp.asarray(qpos)))


def _raw_mjx(env, qpos, qvel, warmstart, n_steps: int):
    """Stock `mjx.step`, n_steps times from the given states."""
    mj_model = compat.to_mjx_compatible(env.mj_model)
    model = compat.put_model(mj_model)
    blank = compat.put_data(mj_model, mujoco.MjData(mj_model))

    @jax.jit
    @jax.vmap
    def run(q, v, w):
        data = mjx.forward(model, blank.replace(qpos=q, qvel=v, qacc_warmstart=w))
        data, _ = jax.lax.scan(lambda d, _: (mjx.step(model, d), None), data, None, n_steps)
        return data.qpos, data.qvel

    return tuple(np.asarray(x) for x in run(qpos, qvel, warmstart))


@pytest.fixture(scope="module")
def x64():
    with reference.precision(True):
        yield jaxcontrol.load("cheetah", "run")


def test_first_step_is_mj_step2_of_the_reset_forward_pass(x64):
    env = x64
    qpos = _draws(env.mj_model)
    dm_qpos, dm_qvel, _ = _dm_control_settle(qpos, 1)
    qpos_ours, qvel_ours = _ours(env, qpos, 1)
    np.testing.assert_allclose(qpos_ours, dm_qpos, rtol=0, atol=1e-12)
    np.testing.assert_allclose(qvel_ours, dm_qvel, rtol=0, atol=1e-12)


def test_settled_state_matches_dm_control(x64):
    """200 steps: ours within 1e-9 of dm_control, or 10x stock MJX's own error.

    Stock MJX runs the last 199 steps from dm_control's state after the first;
    where the settling cheetah lands, the two constraint solvers agree only to
    their tolerance, and ours must then agree with stock MJX to round-off.
    """
    env = x64
    qpos = _draws(env.mj_model)
    n = cheetah._SETTLE_STEPS
    dm_qpos, dm_qvel, _ = _dm_control_settle(qpos, n)
    first_qpos, first_qvel, first_warmstart = _dm_control_settle(qpos, 1)
    ours = _ours(env, qpos, n)
    raw = _raw_mjx(env, first_qpos, first_qvel, first_warmstart, n - 1)
    for mine, stock, ref in zip(ours, raw, (dm_qpos, dm_qvel)):
        raw_error = np.abs(stock - ref).max()
        assert np.abs(mine - ref).max() <= max(1e-9, 10 * raw_error)
        np.testing.assert_allclose(mine, stock, rtol=0, atol=1e-9)


@pytest.mark.parametrize("n_steps", [1, cheetah._SETTLE_STEPS])
def test_the_c_backend_settles_as_dm_control_bit_for_bit(n_steps):
    """On the C backend the settle's steps are C's own, `mj_step2` and all: the
    settled qpos, qvel and warm start are dm_control's, bit for bit, under `vmap`."""
    with reference.precision(True):
        env = jaxcontrol.load("cheetah", "run", backend="mujoco")
        qpos = _draws(env.mj_model)

        @jax.jit
        @jax.vmap
        def run(q):
            physics = env._physics(env._initial_data(), env.default_model_fields())
            data = cheetah.settle(physics, q, n_steps).data
            return data.qpos, data.qvel, data.qacc_warmstart

        ours = tuple(np.asarray(x) for x in run(jnp.asarray(qpos)))
    for mine, theirs in zip(ours, _dm_control_settle(qpos, n_steps)):
        np.testing.assert_array_equal(mine, theirs)


def test_a_c_backend_reset_compiles_no_mjx_step(monkeypatch):
    """The C backend's reset never traces MJX's step: its settle is C's (and a
    reset's shapes, on either backend, step nothing: `core._no_steps`)."""

    def refuse(*args, **kwargs):
        raise AssertionError("MJX stepped in a C backend reset")

    env = jaxcontrol.load("cheetah", "run", backend="mujoco")
    monkeypatch.setattr(cheetah.physics_lib, "step", refuse)
    monkeypatch.setattr(cheetah.mjx, "euler", refuse)
    state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), 4))
    assert np.isfinite(np.asarray(state.data.qpos)).all()
    assert np.abs(np.asarray(state.data.qvel)).max() < 1.0  # settled

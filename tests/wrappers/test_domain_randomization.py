"""DomainRandomization: each environment's own model, equal to C MuJoCo's modified model.

The reference is C MuJoCo on the same `MjModel` with the same fields written
into it and `mj_setConst` run afterwards (what a recompiled model would hold):
its derived constants field by field, and one step in float64.
"""

import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import physics as physics_lib
from jaxcontrol import reference
from jaxcontrol.mjcf import compat
from jaxcontrol.wrappers import DomainRandomization, ModelFields, model_constants

pytestmark = pytest.mark.xdist_group("wrappers")

SCALED = ("body_mass", "body_inertia", "dof_armature", "actuator_gear")


def scale_everything(key, fields):
    """Mass, inertia, armature and gear scaled per body / dof / actuator; friction and damping too."""
    keys = jax.random.split(key, 6)
    out = {}
    for k, name in zip(keys, (*SCALED, "geom_friction", "dof_damping"), strict=False):
        value = fields[name]
        scale = jax.random.uniform(k, value.shape[:1], minval=0.5, maxval=1.5)
        out[name] = value * scale.reshape(scale.shape + (1,) * (value.ndim - 1))
    out["dof_damping"] = out["dof_damping"] + 0.05  # cartpole's hinge has none
    out["dof_armature"] = out["dof_armature"] + 0.01 * scale_of(keys[2], fields["dof_armature"])
    return out


def scale_of(key, value):
    return jax.random.uniform(key, value.shape, minval=0.5, maxval=1.5)


def _c_model(env, fields):
    """C MuJoCo's model with `fields` written in and its constants recomputed."""
    model = compat.to_mjx_compatible(env.mj_model)
    for name, value in fields.items():
        getattr(model, name)[...] = np.asarray(value).reshape(getattr(model, name).shape)
    mujoco.mj_setConst(model, mujoco.MjData(model))
    return model


@functools.cache
def _drawn(domain, task, n):
    """n environments' fields (float64), from the wrapper's own per-env draw."""
    with reference.precision(True):
        env = jaxcontrol.load(domain, task)
        wrapped = DomainRandomization(env, scale_everything)
        keys = jax.random.split(jax.random.key(7), n)
        fields = jax.jit(jax.vmap(wrapped.model_fields))(keys)
        return env, jax.tree.map(np.asarray, fields)


@pytest.mark.parametrize(
    "model", [("cartpole", "balance"), ("point_mass", "easy"), ("cheetah", "run")]
)
def test_derived_constants_equal_mj_set_const(model):
    """Every field C's mj_setConst changes after the edit, ours changes equally."""
    env, fields = _drawn(*model, 2)
    base = compat.to_mjx_compatible(env.mj_model)
    for i in range(2):
        ours = {name: value[i] for name, value in fields.items()}
        reference = _c_model(
            env, {name: ours[name] for name in (*SCALED, "geom_friction", "dof_damping")}
        )
        changed = [
            name
            for name in model_constants.DERIVED
            if not np.array_equal(getattr(base, name), getattr(reference, name))
        ]
        assert {"body_invweight0", "dof_invweight0", "body_subtreemass"} <= set(changed)
        for name in model_constants.DERIVED:
            np.testing.assert_allclose(
                ours[name].reshape(getattr(reference, name).shape),
                getattr(reference, name),
                rtol=1e-10,
                atol=1e-12,
                err_msg=f"{model} {name}",
            )


def test_fields_nothing_derives_from_cost_no_recompute():
    env = jaxcontrol.load("cartpole", "balance")
    wrapped = DomainRandomization(env, lambda k, f: {"geom_friction": f["geom_friction"] * 0.5})
    fields = jax.eval_shape(wrapped.model_fields, jax.random.key(0))
    assert set(fields) == {"geom_friction"}


@pytest.mark.parametrize("backend", ["mjx", "mujoco"])
@pytest.mark.parametrize(("domain", "name", "warmup"), [("cartpole", "swingup", 120)])
def test_one_step_equals_c_mujoco_on_the_modified_model(domain, name, warmup, backend):
    """float64: our randomised step against C's `mj_step` on the edited, setConst'ed model.

    The states come from our own rollouts of the randomised envs, pushed until
    a constraint is active (cartpole's rail limit), where the derived
    inverse weights enter; the same step on the edited model *without*
    `mj_setConst` is measurably different, so the test sees the constants. On
    the C backend, the wrapper's fields (and its derived constants) reach C.
    """
    n = 6
    with reference.precision(True):
        env = jaxcontrol.load(domain, name, backend=backend)
        wrapped = DomainRandomization(env, scale_everything)
        keys = jax.random.split(jax.random.key(3), n)
        # Full push one way: the cart reaches its rail limit, the point mass a wall.
        actions = jnp.ones((warmup + 1, n) + env.action_spec().shape)

        @jax.jit
        def roll(keys, actions):
            # The carry keeps the state before the last step: one step in the program.
            def body(carry, action):
                _, states = carry
                return (states, jax.vmap(wrapped.step)(states, action)), None

            states = jax.vmap(wrapped.reset)(keys)
            pair = jax.lax.scan(body, (states, states), actions)[0]
            return [s.replace(key=jax.random.key_data(s.key)) for s in pair]

        before, after = jax.tree.map(np.asarray, roll(keys, actions))
    differs_without_set_const = 0.0
    for i in range(n):
        fields = {
            name: before.model_fields[name][i] for name in (*SCALED, "geom_friction", "dof_damping")
        }
        errors = []
        for set_const in (True, False):
            model = _c_model(env, fields) if set_const else _unset(env, fields)
            data = mujoco.MjData(model)
            data.qpos[:], data.qvel[:] = before.data.qpos[i], before.data.qvel[i]
            data.qacc_warmstart[:] = before.data.qacc_warmstart[i]
            data.ctrl[:] = actions[-1, i]
            for _ in range(env.n_sub_steps):
                mujoco.mj_step(model, data)
            errors.append(
                max(
                    np.max(np.abs(data.qpos - after.data.qpos[i])),
                    np.max(np.abs(data.qvel - after.data.qvel[i])),
                )
            )
        assert errors[0] < 1e-9, (i, errors)
        differs_without_set_const = max(differs_without_set_const, errors[1])
    if backend == "mjx":  # the C backend's data keeps no constraint rows in JAX
        assert np.any(before.data._impl.efc_J != 0), "no active constraint: R would go unseen"
    assert differs_without_set_const > 1e-6


def _unset(env, fields):
    model = compat.to_mjx_compatible(env.mj_model)
    for name, value in fields.items():
        getattr(model, name)[...] = np.asarray(value).reshape(getattr(model, name).shape)
    return model


def test_every_environment_gets_its_own_parameters_and_keeps_them():
    env = jaxcontrol.load("pendulum", "swingup", time_limit=0.1)
    wrapped = DomainRandomization(env, scale_everything)
    states = jax.jit(jax.vmap(wrapped.reset))(jax.random.split(jax.random.key(0), 16))
    for name in (*SCALED, "geom_friction", "body_invweight0"):
        rows = np.asarray(states.model_fields[name]).reshape(16, -1)
        assert len({row.tobytes() for row in rows}) == 16, name
    stepped = jax.jit(jax.vmap(wrapped.step))(states, jnp.zeros((16, 1)))
    jax.tree.map(np.testing.assert_array_equal, stepped.model_fields, states.model_fields)
    # Same key, same model; the physics differs between environments with different masses.
    again = jax.jit(jax.vmap(wrapped.reset))(jax.random.split(jax.random.key(0), 16))
    jax.tree.map(np.testing.assert_array_equal, again.model_fields, states.model_fields)


def test_bad_functions_are_refused_with_the_fix():
    env = jaxcontrol.load("cartpole", "balance")
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="valid fields: .*body_mass"):
        DomainRandomization(env, lambda k, f: {"body_mas": f["body_mass"]}).reset(key)
    with pytest.raises(ValueError, match="valid fields"):
        ModelFields(env)["mass"]
    with pytest.raises(ValueError, match="full arrays"):
        DomainRandomization(env, lambda k, f: {"body_mass": f["body_mass"][1]}).reset(key)
    with pytest.raises(TypeError, match="dict of model fields"):
        DomainRandomization(env, lambda k, f: f["body_mass"]).reset(key)
    with pytest.raises(TypeError, match="fn must be a function"):
        DomainRandomization(env, "body_mass")
    assert "body_mass" in ModelFields(env) and len(ModelFields(env)) == len(
        physics_lib.per_env_model_fields()
    )


def test_fields_stored_in_another_shape_by_mjx_are_applied_in_its_shape():
    """cam_mat0 is (ncam, 9) in MjModel and (ncam, 3, 3) in MJX (tracking cameras read it)."""
    env = jaxcontrol.load("cartpole", "balance")
    fields = ModelFields(env)
    physics = physics_lib.Physics.create(
        env.mjx_model, env.blank_state().data, env.names, {"cam_mat0": fields["cam_mat0"]}
    )
    assert physics.model.cam_mat0.shape == (env.mj_model.ncam, 3, 3)
    assert physics.model_fields["cam_mat0"].shape == (env.mj_model.ncam, 9)
    np.testing.assert_array_equal(physics.model.cam_mat0, env.mjx_model.cam_mat0)

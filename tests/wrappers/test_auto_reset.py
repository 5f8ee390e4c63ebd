"""AutoReset: per-environment semantics, one cond under any number of vmaps, placement."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from toy_env import ToyEnv

import jaxcontrol
from jaxcontrol.core import StepType
from jaxcontrol.wrappers import (
    ActionRepeat,
    AutoReset,
    DomainRandomization,
    FlattenObservation,
    Observable,
    Observables,
    RecordEpisodeStatistics,
)
from jaxcontrol.wrappers.auto_reset import any_in_batch

pytestmark = pytest.mark.xdist_group("wrappers")


def _pendulum(limit=0.06):
    return jaxcontrol.load("pendulum", "swingup", time_limit=limit)  # 3 steps


def _toy():
    """The learners' tiny JAX env: restarts need no physics, and it compiles at once."""
    return ToyEnv(episode_length=3)


def _primitives(jaxpr, skip_conds):
    """Names of the primitives in a jaxpr, recursively (optionally not inside conds)."""
    names = []
    for eqn in jaxpr.eqns:
        names.append(eqn.primitive.name)
        if skip_conds and eqn.primitive.name == "cond":
            continue
        for sub in jax.core.jaxprs_in_params(eqn.params):
            names.extend(_primitives(sub, skip_conds))
    return names


def _conds(jaxpr):
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "cond":
            found.append(eqn)
        for sub in jax.core.jaxprs_in_params(eqn.params):
            found.extend(_conds(sub))
    return found


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_the_restart_is_one_cond_under_any_number_of_vmaps(levels):
    """The reset runs only inside one cond with a scalar predicate, never as a select.

    A per-environment cond under vmap would become a select that runs the reset
    (and its random draws) on every step; here the random draws, which only the
    reset makes, appear only inside the cond's branch.
    """
    env = AutoReset(_toy())  # random draws in its reset, none in its step
    step, reset, shape = env.step, env.reset, ()
    for size in (2, 3, 4)[:levels]:
        step, reset, shape = jax.vmap(step), jax.vmap(reset), (size, *shape)
    keys = jax.random.split(jax.random.key(0), int(np.prod(shape))).reshape(shape)
    states = jax.eval_shape(reset, keys)  # traced only: nothing runs
    closed = jax.make_jaxpr(step)(states, jnp.zeros((*shape, 1)))
    conds = _conds(closed.jaxpr)
    assert len(conds) == 1  # the toy's own step has none: this is the restart
    assert conds[0].invars[0].aval.shape == ()  # an unbatched predicate
    assert "random_bits" not in _primitives(closed.jaxpr, skip_conds=True)
    assert "random_bits" in _primitives(closed.jaxpr, skip_conds=False)


def test_any_in_batch_reduces_every_vmap_level_and_is_never_batched():
    flags = jnp.zeros((2, 3, 4), bool).at[1, 2, 3].set(True)
    out = jax.vmap(jax.vmap(jax.vmap(lambda f: jnp.stack([any_in_batch(f), f]))))(flags)
    np.testing.assert_array_equal(out[..., 0], True)  # the one True anywhere reaches all
    np.testing.assert_array_equal(out[..., 1], flags)
    assert bool(any_in_batch(jnp.bool_(False))) is False
    nothing = jax.vmap(jax.vmap(any_in_batch))(jnp.zeros((2, 3), bool))
    assert not np.any(nothing)


def test_restarts_only_the_finished_environments_with_their_own_keys():
    env = _toy()
    auto = AutoReset(env)
    keys = jax.random.split(jax.random.key(1), 4)
    states = jax.vmap(auto.reset)(keys)
    # Environments 0 and 2 are one step from their time limit.
    states = states.replace(step=states.step.at[jnp.array([0, 2])].set(env.episode_length - 1))
    before = states
    actions = jnp.full((4, 1), 0.3)
    stepped = jax.vmap(auto.step)(states, actions)
    raw = jax.vmap(env.step)(auto.inner_state(before), actions)
    fresh = jax.vmap(env.reset)(raw.key)
    done = np.array([True, False, True, False])
    np.testing.assert_array_equal(
        np.asarray(stepped.step_type), np.where(done, StepType.LAST, StepType.MID)
    )
    np.testing.assert_array_equal(np.asarray(stepped.step), np.where(done, 0, raw.step))
    for i in range(4):
        expected = fresh if done[i] else raw
        np.testing.assert_array_equal(stepped.data["x"][i], expected.data["x"][i])
        np.testing.assert_array_equal(stepped.key[i] == expected.key[i], True)
        np.testing.assert_array_equal(stepped.reward[i], raw.reward[i])
        np.testing.assert_array_equal(
            stepped.info["final_observation"]["position"][i], raw.observation["position"][i]
        )


def test_one_environment_unbatched_restarts_too():
    auto = AutoReset(_toy())
    state = auto.reset(jax.random.key(0))
    step = jax.jit(auto.step)
    kinds = []
    for _ in range(4):
        state = step(state, jnp.zeros(1))
        kinds.append((int(state.step_type), int(state.step)))
    assert kinds == [(StepType.MID, 1), (StepType.MID, 2), (StepType.LAST, 0), (StepType.MID, 1)]


def test_placement_is_checked_at_construction():
    env = _pendulum()
    with pytest.raises(ValueError, match=r"RecordEpisodeStatistics\(AutoReset\(env\)\)"):
        AutoReset(RecordEpisodeStatistics(env))
    with pytest.raises(ValueError, match=r"AutoReset\(Observables\(env"):
        Observables(AutoReset(env), {"velocity": Observable(delay=1)})
    with pytest.raises(ValueError, match="already does"):
        AutoReset(AutoReset(env))
    with pytest.raises(TypeError, match="directly on the Env"):
        DomainRandomization(ActionRepeat(env, 2), lambda k, f: {})
    with pytest.raises(TypeError, match="jaxcontrol.load"):
        AutoReset("cartpole")
    with pytest.raises(ValueError, match="k >= 1"):
        ActionRepeat(env, 0)
    with pytest.raises(TypeError, match="dict observation"):
        FlattenObservation(FlattenObservation(env))
    # Allowed orders build.
    RecordEpisodeStatistics(AutoReset(ActionRepeat(FlattenObservation(env), 2)))

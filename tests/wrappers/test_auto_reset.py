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


def _tree_equal(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize(
    "last, block",
    [
        ((), None),  # none finish
        ((3,), None),  # one: one block of max(1, 16 // 128)
        ((0, 5, 9), 2),  # few: two blocks, the second half empty
        ((1, 2, 3, 15), 1),  # exactly four blocks: still the few path
        ((1, 2, 3, 4, 15), 1),  # five blocks' worth: the whole batch resets
        (tuple(range(0, 16, 2)), 2),  # many: the whole batch resets
    ],
    ids=["none", "one", "few", "four-blocks", "five", "many"],
)
def test_step_batch_is_vmapped_step_whether_few_or_many_finish(last, block):
    env = _toy()
    auto = AutoReset(env)
    states = jax.vmap(auto.reset)(jax.random.split(jax.random.key(2), 16))
    near_end = np.isin(np.arange(16), last)
    states = states.replace(step=jnp.where(near_end, env.episode_length - 1, 0))
    actions = jnp.full((16, 1), 0.3)
    batch = jax.jit(lambda s, a: auto.step_batch(s, a, block))(states, actions)
    np.testing.assert_array_equal(np.asarray(batch.last()), near_end)
    _tree_equal(batch, jax.jit(jax.vmap(auto.step))(states, actions))


def test_step_batch_under_a_vmap_over_seeds():
    """Seeds around the batch: one seed with few finished, one with many, one with none."""
    env = _toy()
    auto = AutoReset(env)
    keys = jax.random.split(jax.random.key(3), 3 * 16).reshape(3, 16)
    states = jax.vmap(jax.vmap(auto.reset))(keys)
    near_end = np.zeros((3, 16), bool)
    near_end[0, [4, 7]] = True
    near_end[1, :12] = True
    states = states.replace(step=jnp.where(near_end, env.episode_length - 1, 0))
    actions = jnp.full((3, 16, 1), -0.2)
    for few_only in (False, True):  # all three seeds, then the first and the last
        pick = np.array([0, 2]) if few_only else np.arange(3)
        s, a = jax.tree.map(lambda x, p=pick: x[p], states), actions[pick]
        batch = jax.jit(jax.vmap(lambda s, a: auto.step_batch(s, a, 2)))(s, a)
        _tree_equal(batch, jax.jit(jax.vmap(jax.vmap(auto.step)))(s, a))


def test_step_batch_resets_a_block_at_a_time_when_few_finish():
    """The few-finished path's reset (its random draws) runs inside a loop on `block` lanes."""
    auto = AutoReset(_toy())
    states = jax.eval_shape(jax.vmap(auto.reset), jax.random.split(jax.random.key(0), 16))
    closed = jax.make_jaxpr(lambda s, a: auto.step_batch(s, a, 4))(states, jnp.zeros((16, 1)))
    loops = [e for e in _all_eqns(closed.jaxpr) if e.primitive.name == "while"]
    assert len(loops) == 1
    body = loops[0].params["body_jaxpr"].jaxpr
    draws = [e for e in _all_eqns(body) if e.primitive.name == "random_bits"]
    assert draws and all(e.outvars[0].aval.shape[0] == 4 for e in draws)


def _all_eqns(jaxpr):
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in jax.core.jaxprs_in_params(eqn.params):
            yield from _all_eqns(sub)


def test_step_batch_on_c_mujoco_is_vmapped_step_bit_for_bit():
    env = jaxcontrol.load("cartpole", "balance", time_limit=0.03, backend="mujoco")  # 3 steps
    auto = AutoReset(env)
    states = jax.vmap(auto.reset)(jax.random.split(jax.random.key(4), 8))
    states = states.replace(step=jnp.array([2, 0, 0, 2, 1, 0, 0, 0]))
    actions = jnp.linspace(-1, 1, 8)[:, None]
    _tree_equal(
        jax.jit(lambda s, a: auto.step_batch(s, a, 1))(states, actions),
        jax.jit(jax.vmap(auto.step))(states, actions),
    )


def test_step_batch_checks_its_block():
    auto = AutoReset(_toy())
    states = jax.vmap(auto.reset)(jax.random.split(jax.random.key(0), 4))
    with pytest.raises(ValueError, match=r"block must be in \[1, 4\]"):
        auto.step_batch(states, jnp.zeros((4, 1)), 5)

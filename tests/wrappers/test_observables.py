"""Observables against dm_control Composer's own observation `Updater`.

dm_control's `Updater` is driven with one physics step per control step and a
`Generic` observable that reads, at each update, the observation our wrapped
env produced at that step; ours wraps the same env. Every configuration of
update interval, delay, buffer size, aggregator, padding and (deterministic)
corruptor must give the same observations step for step. The pipeline needs
no physics, so these run on the learners' tiny JAX env (`ToyEnv`); the conformance
battery runs `Observables` on a suite task.
"""

import collections
import contextlib
import functools

import jax
import numpy as np
import pytest
from dm_control.composer.observation import updater
from dm_control.composer.observation.observable import base as observable_base
from numpy_tree import to_numpy
from toy_env import ToyEnv

from jaxcontrol.wrappers import AGGREGATORS, GaussianNoise, Observable, Observables

pytestmark = pytest.mark.xdist_group("wrappers")

STEPS, ENVS = 14, 3


def affine(key, value):
    """A deterministic corruptor (dm_control's gets no key of ours)."""
    del key
    return 2 * value + 1


CONFIGS = {
    "delay2-buffer3": {"delay": 2, "buffer_size": 3},
    "interval3-buffer2-mean": {"update_interval": 3, "buffer_size": 2, "aggregator": "mean"},
    "delay4-interval2-buffer4-max": {
        "delay": 4,
        "update_interval": 2,
        "buffer_size": 4,
        "aggregator": "max",
    },
    "delay1-sum-corrupt": {"delay": 1, "buffer_size": 3, "aggregator": "sum", "corruptor": affine},
    "median-interval2": {"update_interval": 2, "buffer_size": 3, "aggregator": "median"},
    "delay5-buffer1": {"delay": 5},
}


@functools.cache
def env():
    return ToyEnv(episode_length=100)


@functools.cache
def compiled(wrapped):
    def run(keys, actions):
        first = jax.vmap(wrapped.reset)(keys)
        _, states = jax.lax.scan(lambda s, a: (jax.vmap(wrapped.step)(s, a),) * 2, first, actions)
        return first, states

    return jax.jit(run)


def rollout(wrapped, seed=0):
    keys = jax.random.split(jax.random.key(seed), ENVS)
    actions = jax.random.uniform(jax.random.key(seed + 1), (STEPS, ENVS, 1), minval=-1)
    first, states = compiled(wrapped)(keys, actions)
    return to_numpy((first, states))


class _NoPhysics:
    """The Updater only asks a physics to suppress errors while it reads a spec."""

    @contextlib.contextmanager
    def suppress_physics_errors(self):
        yield


def dm_control_observations(raw, config, pad_with_initial_value):
    """dm_control's Updater fed with the raw observation sequence of one environment."""
    current = {"t": 0}

    def read(_physics):
        return raw[current["t"]]

    kwargs = dict(config)
    corruptor = kwargs.pop("corruptor", None)
    if corruptor is not None:
        kwargs["corruptor"] = lambda value, random_state: np.asarray(corruptor(None, value))
    obs = observable_base.Generic(read, **kwargs)
    obs.enabled = True
    observables = collections.OrderedDict(position=obs)
    up = updater.Updater(
        observables,
        1,
        strip_singleton_buffer_dim=True,
        pad_with_initial_value=pad_with_initial_value,
    )
    up.reset(physics=_NoPhysics(), random_state=np.random.RandomState(0))
    out = [up.get_observation()["position"]]
    for t in range(1, len(raw)):
        up.prepare_for_next_control_step()
        current["t"] = t
        up.update()
        out.append(up.get_observation()["position"])
    return np.stack(out)


@pytest.mark.parametrize("pad", [False, True], ids=["zeros", "initial"])
@pytest.mark.parametrize("name", CONFIGS)
def test_equals_dm_control_composer_updater(name, pad):
    config = CONFIGS[name]
    wrapped = Observables(env(), {"position": Observable(**config)}, pad_with_initial_value=pad)
    first, states = rollout(wrapped)
    plain_first, plain_states = rollout(Observables(env(), {"position": Observable()}))
    raw = np.concatenate(
        [plain_first.observation["position"][None], plain_states.observation["position"]]
    )
    ours = np.concatenate([first.observation["position"][None], states.observation["position"]])
    for i in range(ENVS):
        expected = dm_control_observations(raw[:, i], config, pad)
        np.testing.assert_allclose(ours[:, i], expected, rtol=1e-6, atol=1e-7, err_msg=name)
    # The other entry is untouched, and the spec says what step returns.
    np.testing.assert_array_equal(
        states.observation["velocity"], plain_states.observation["velocity"]
    )
    spec = wrapped.observation_spec()["position"]
    assert ours.shape[2:] == spec.shape and ours.dtype == spec.dtype


def test_noise_is_per_environment_and_keyed():
    noisy = Observables(env(), {"position": Observable(corruptor=GaussianNoise(0.1))})
    _first, states = rollout(noisy)
    _plain_first, plain_states = rollout(Observables(env(), {"position": Observable()}))
    noise = states.observation["position"] - plain_states.observation["position"]
    assert noise.shape == (STEPS, ENVS, 1)
    assert 0.05 < noise.std() < 0.2
    flat = noise.reshape(-1, 1)
    assert len({row.tobytes() for row in flat}) == flat.shape[0]  # no key used twice
    again = rollout(noisy)[1].observation["position"]
    np.testing.assert_array_equal(again, states.observation["position"])
    assert GaussianNoise(0.1) == GaussianNoise(0.1)  # hashable values: jit reuses the step


def test_drawn_delays_and_intervals_stay_within_bounds():
    def delay(key):
        return jax.random.randint(key, (), 0, 4)

    def interval(key):
        return jax.random.randint(key, (), 1, 3)

    wrapped = Observables(
        env(),
        {"position": Observable(delay=delay, max_delay=3, update_interval=interval, buffer_size=2)},
    )
    _, states = rollout(wrapped)
    assert np.all(np.isfinite(states.observation["position"]))
    plain_first, plain_states = rollout(Observables(env(), {"position": Observable()}))
    raw = plain_states.observation["position"]
    # Every delivered value is one of the values observed at some step (or the padding).
    for t in range(STEPS):
        for i in range(ENVS):
            newest = states.observation["position"][t, i, -1]
            candidates = np.concatenate(
                [np.zeros((1, 1)), plain_first.observation["position"][i][None], raw[: t + 1, i]]
            )
            assert np.any(np.all(np.isclose(candidates, newest), axis=1))


def test_bad_configurations_name_the_valid_choices():
    with pytest.raises(ValueError, match="valid names: min, max, mean, median, sum"):
        Observable(aggregator="average")
    with pytest.raises(ValueError, match="valid names: position, velocity"):
        Observables(env(), {"positon": Observable()})
    with pytest.raises(ValueError, match="buffer_size"):
        Observable(buffer_size=0)
    with pytest.raises(ValueError, match="max_delay"):
        Observable(delay=lambda key: 1)
    with pytest.raises(ValueError, match="update_interval"):
        Observable(update_interval=0)
    assert set(AGGREGATORS) == set(observable_base.AGGREGATORS)

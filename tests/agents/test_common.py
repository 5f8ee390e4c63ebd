"""Running statistics, observation flattening, configs and evaluation summaries."""

import collections
import dataclasses
import math

import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

from jaxcontrol.agents.common import running_stats
from jaxcontrol.agents.common.config import config_from_dict, replace, to_dict
from jaxcontrol.agents.common.evaluation import summarize
from jaxcontrol.agents.common.learner import chunks_for
from jaxcontrol.agents.common.observations import flatten_observation, observation_size


def test_running_stats_two_batches():
    # [1, 2, 3] then [4, 5]: mean 3, population variance (4+1+0+1+4)/5 = 2.
    stats = running_stats.init(1)
    stats = running_stats.update(stats, jnp.array([[1.0], [2.0], [3.0]]))
    stats = running_stats.update(stats, jnp.array([[4.0], [5.0]]))
    np.testing.assert_allclose(stats.count, 5.0)
    np.testing.assert_allclose(stats.mean, [3.0])
    np.testing.assert_allclose(stats.variance, [2.0], rtol=1e-6)
    np.testing.assert_allclose(
        running_stats.normalize(stats, jnp.array([5.0])), [2.0 / math.sqrt(2.0)], rtol=1e-5
    )


def test_running_stats_leading_axes_and_clip():
    stats = running_stats.update(running_stats.init(2), jnp.ones((3, 4, 2)))
    assert stats.count == 12.0
    # variance 0: (x - 1) / sqrt(eps) is huge, clipped to 5.
    np.testing.assert_allclose(running_stats.normalize(stats, jnp.array([2.0, 0.0])), [5.0, -5.0])


def test_flatten_observation_follows_spec_order():
    spec = collections.OrderedDict(
        position=specs.Array((2,), np.float32),
        velocity=specs.Array((), np.float32),
        image=specs.Array((2, 2), np.float32),
    )
    assert observation_size(spec) == 7
    obs = {
        "velocity": jnp.array([9.0, 8.0]),  # deliberately out of order
        "image": jnp.arange(8.0).reshape(2, 2, 2),
        "position": jnp.array([[1.0, 2.0], [3.0, 4.0]]),
    }
    flat = flatten_observation(obs, spec)
    np.testing.assert_array_equal(flat, [[1, 2, 9, 0, 1, 2, 3], [3, 4, 8, 4, 5, 6, 7]])
    single = flatten_observation({k: v[0] for k, v in obs.items()}, spec)
    np.testing.assert_array_equal(single, flat[0])


@dataclasses.dataclass(frozen=True)
class _Toy:
    a: int = 1
    sizes: tuple = (2, 3)


def test_config_helpers_reject_unknown_fields():
    with pytest.raises(TypeError):
        _Toy(b=2)  # pylint: disable=unexpected-keyword-arg
    with pytest.raises(ValueError, match="unknown _Toy field"):
        config_from_dict(_Toy, {"a": 2, "bee": 3})
    with pytest.raises(ValueError, match="bee"):
        replace(_Toy(), bee=1)
    toy = config_from_dict(_Toy, {"sizes": [4, 5]})
    assert toy.sizes == (4, 5) and to_dict(toy) == {"a": 1, "sizes": [4, 5]}


def test_summarize():
    out = summarize(np.array([1.0, 2.0, 3.0, 4.0]))
    # std (ddof 1) = sqrt(5/3); stderr = that / 2.
    assert out["mean_return"] == 2.5 and out["episodes"] == 4
    np.testing.assert_allclose(out["stderr"], math.sqrt(5 / 3) / 2)
    seeds = summarize(np.array([[1.0, 3.0], [5.0, 7.0]]))
    assert seeds["seed_means"] == [2.0, 6.0]
    np.testing.assert_allclose(seeds["seed_stderr"], math.sqrt(8.0) / math.sqrt(2))


def test_chunks_for():
    assert chunks_for(100, 10, 3) == (3, 4)  # 10 updates -> 4 chunks of 3
    assert chunks_for(5, 10, 3) == (1, 1)
    assert chunks_for(60, 10, 20) == (6, 1)

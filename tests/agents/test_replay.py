"""The circular time-major replay buffer and prioritized sampling."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol.agents.common import replay as replay_lib


def _row(t, num_envs=2):
    # Value encodes (time, env): 10 * t + env.
    return {"x": 10.0 * t + jnp.arange(num_envs, dtype=jnp.float32)}


def _filled(capacity, rows):
    replay = replay_lib.init(_row(0), capacity)
    for t in range(rows):
        replay = replay_lib.add(replay, _row(t))
    return replay


def test_add_wraps_around():
    replay = _filled(4, 6)  # rows 0..5 written; 4 and 5 overwrote 0 and 1.
    assert int(replay.size) == 4 and int(replay.position) == 2
    np.testing.assert_array_equal(replay.data["x"][:, 0], [40, 50, 20, 30])


def test_windows_are_consecutive_and_never_cross_the_write_position():
    replay = _filled(4, 6)  # logical order: t = 2, 3, 4, 5
    assert int(replay_lib.num_windows(replay, 3)) == 2
    _, envs, windows = replay_lib.sample(replay, jax.random.key(0), 256, window=3)
    x = np.asarray(windows["x"])  # [3, B]
    starts_t = x[0] // 10
    assert set(starts_t.tolist()) == {2.0, 3.0}
    np.testing.assert_array_equal(x[1], x[0] + 10)
    np.testing.assert_array_equal(x[2], x[0] + 20)
    np.testing.assert_array_equal(x[0] % 10, envs)
    assert set(np.asarray(envs).tolist()) == {0, 1}


def test_prioritized_probabilities_and_weights():
    replay = _filled(3, 2)  # rows t=0, t=1; window 1 -> 4 valid (row, env) cells.
    replay = replay_lib.update_priorities(
        replay, jnp.array([0, 0, 1, 1]), jnp.array([0, 1, 0, 1]), jnp.array([1.0, 3.0, 0.0, 0.0])
    )
    # alpha = 1: P = [1/4, 3/4, ~0, ~0] (zero priority floored at 1e-6).
    rows, envs, windows, weights = replay_lib.sample_prioritized(
        replay, jax.random.key(1), 4000, window=1, alpha=1.0, beta=1.0
    )
    frac_env1 = float(jnp.mean(envs == 1))
    assert abs(frac_env1 - 0.75) < 0.03
    assert set(np.asarray(rows).tolist()) == {0}
    # w = (N P)^-beta with N = 4 valid cells: (4/4)^-1 = 1 and (4*3/4)^-1 = 1/3,
    # normalised by the largest -> [1, 1/3].
    w = np.asarray(weights)
    np.testing.assert_allclose(w[np.asarray(envs) == 0], 1.0, rtol=1e-4)
    np.testing.assert_allclose(w[np.asarray(envs) == 1], 1.0 / 3.0, rtol=1e-4)
    np.testing.assert_array_equal(np.asarray(windows["x"])[0] % 10, envs)


def test_prioritized_excludes_incomplete_windows():
    replay = _filled(8, 5)  # rows t=0..4; windows of 3 may start at t=0,1,2 only.
    replay = replay.replace(priorities=replay.priorities.at[3:].set(100.0))
    rows, _, _, _ = replay_lib.sample_prioritized(
        replay, jax.random.key(2), 512, window=3, alpha=0.6, beta=0.4
    )
    assert set(np.asarray(rows).tolist()) <= {0, 1, 2}


def test_new_rows_get_max_priority():
    replay = _filled(4, 1)
    replay = replay_lib.update_priorities(replay, jnp.array([0]), jnp.array([1]), jnp.array([7.0]))
    replay = replay_lib.add(replay, _row(1))
    np.testing.assert_array_equal(replay.priorities[1], [7.0, 7.0])

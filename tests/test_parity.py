"""Parity with dm_control itself, on dm_control's own states.

Every number compared here comes from dm_control at test time: its resets,
its rollouts, its observations and rewards. Float64 runs in a fresh process
(`jaxcontrol check --json`), because switching `jax_enable_x64` inside one
process mixes dtypes in MJX's module-level constants.
"""

import functools
import json
import subprocess
import sys

import jax
import numpy as np
import pytest
from scipy import stats

import jaxcontrol
from jaxcontrol import equivalence

N_STATES = 24
N_RESETS = 1024


@pytest.fixture(scope="module")
def float64_report(task):
    """One-step parity on N_STATES states and a whole episode, in float64."""
    return _float64_report(task)


@functools.lru_cache(maxsize=2)
def _float64_report(task):
    # Cached outside pytest's fixture scopes: xdist workers may tear module
    # fixtures down between a task's tests, and each report is a fresh process.
    command = [
        sys.executable,
        "-m",
        "jaxcontrol",
        "check",
        *task,
        "--states",
        str(N_STATES),
        "--episode",
        "--amplitude",
        "0.3",
        "--json",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"check failed to report:\n{done.stdout}\n{done.stderr[-3000:]}"
    return json.loads(lines[-1])


def _assert_within(differences, tolerance, who):
    for name, worst in differences.items():
        assert worst <= tolerance, f"{who} {name} differs from dm_control by {worst:.3e}"


def test_one_step_float32(task):
    transitions = equivalence.reference_transitions(*task, n=N_STATES, seed=0)
    env = jaxcontrol.load(*task)
    ours, cpu = equivalence.step_parity(env, transitions)
    keys = {f"obs/{k}" for k in transitions[0].observation} | {"reward", "qpos", "qvel"}
    assert set(ours) == keys and set(cpu) == keys
    _assert_within(ours, 1e-5, "MJX")
    _assert_within(cpu, 1e-5, "CPU path")


def test_one_step_float64(float64_report):
    assert float64_report["dtype"] == "float64"
    assert float64_report["n_states"] == N_STATES
    _assert_within(float64_report["ours"], 1e-9, "MJX")
    _assert_within(float64_report["cpu"], 1e-9, "CPU path")


def test_whole_episode_float64(float64_report):
    """The 1000-step return under a fixed smooth action sequence (amplitude 0.3).

    At full-range actions cartpole's rail-limit impacts add constraint-solver
    tolerance differences that its chaotic swing amplifies (BENCHMARKS.md).
    """
    episode = float64_report["episode"]
    assert episode["steps"] == 1000 and episode["amplitude"] == 0.3
    assert episode["ours_rel"] <= 1e-6, episode
    assert episode["ours_obs"] <= 1e-4, episode
    # Our model under C MuJoCo, observed by our task code: dm_control to rounding.
    assert episode["cpu_rel"] <= 1e-12, episode
    assert episode["cpu_obs"] <= 1e-12, episode


def test_reset_observation_matches_dm_control(task):
    """The FIRST observation, from dm_control's reset state."""
    dm_env = equivalence.reference_env(*task, seed=5)
    env = jaxcontrol.load(*task)
    template = env.reset(jax.random.key(0))
    set_state = jax.jit(env.set_state)
    for _ in range(5):
        timestep = dm_env.reset()
        p = dm_env.physics
        variables = equivalence.reference_variables(*task, p)
        state = set_state(template, p.data.qpos, p.data.qvel, **variables)
        for key, value in timestep.observation.items():
            np.testing.assert_allclose(state.observation[key], value, atol=1e-6, err_msg=key)


def _ks_pvalues(ours: np.ndarray, ref: np.ndarray) -> list[float]:
    pvalues = []
    for column in range(ref.shape[1]):
        a, b = ours[:, column], ref[:, column]
        if np.ptp(a) == 0 and np.ptp(b) == 0:
            assert a[0] == pytest.approx(b[0], abs=1e-6)
            continue
        pvalues.append(stats.ks_2samp(a, b).pvalue)
    return pvalues


def test_reset_distribution_matches_dm_control(task):
    """Two-sample Kolmogorov-Smirnov per state coordinate (and task variable)."""
    env = jaxcontrol.load(*task)
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(11), N_RESETS))
    ref = equivalence.reference_resets(*task, n=600, seed=3)
    ours = {
        "qpos": np.asarray(states.data.qpos),
        "qvel": np.asarray(states.data.qvel),
        **{k: np.asarray(v) for k, v in states.variables.items()},
    }
    assert set(ref) == set(ours), "task variables differ from dm_control's"
    for name in ref:
        pvalues = _ks_pvalues(ours[name].reshape(N_RESETS, -1), ref[name].reshape(600, -1))
        assert all(p > 1e-3 for p in pvalues), f"{name}: KS p-values {pvalues}"

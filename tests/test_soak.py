"""The long soak's counting (benchmarks/soak.py): a diverging environment is counted once,
restarted, and leaves nothing non-finite behind; its neighbours run on."""

import importlib
import pathlib

import jax
import numpy as np
import pytest

import jaxcontrol

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def soak(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("soak")


@pytest.mark.parametrize("backend", ["mjx", "mujoco"])
def test_a_divergence_is_counted_and_restarted(soak, backend, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # C MuJoCo logs its bad-state warning to MUJOCO_LOG.TXT
    env = jaxcontrol.load("pendulum", "swingup", backend=backend, time_limit=0.1)  # 5 steps
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), 4))
    # Beyond what float32 and C MuJoCo (mjMAXVAL) step: environment 1 diverges at once.
    states = states.replace(data=states.data.replace(qvel=states.data.qvel.at[1].set(1e30)))
    chunk = soak.make_chunk(env, num_envs=4, steps=3)
    after, counts = chunk(states, jax.random.key(1))
    counts = jax.device_get(counts)
    assert (counts["diverged"], counts["episodes"], counts["nonfinite"]) == (1, 1, 0)
    assert counts["terminal"] == 0
    # Environment 1 restarted in its first step and took two more; the others took three.
    assert np.asarray(after.step).tolist() == [3, 2, 3, 3]
    assert not np.asarray(after.diverged).any()
    assert abs(float(after.data.qvel[1, 0])) < 1e3
    # Two more chunks: the 5-step time limit ends every episode once more.
    after, counts = chunk(after, jax.random.key(2))
    assert int(counts["episodes"]) == 4 and int(counts["diverged"]) == 0
    assert np.asarray(after.step).tolist() == [1, 0, 1, 1]  # restarted at steps 5, 5, 5, 5

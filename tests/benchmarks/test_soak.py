"""The long soak's counting (benchmarks/soak.py): a diverging environment is counted once,
restarted, and leaves nothing non-finite behind; its neighbours run on."""

import importlib
import pathlib

import jax
import numpy as np
import pytest

import jaxcontrol

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


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


def test_a_stopped_soak_resumes_and_counts_on(soak, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["--tasks", "pendulum-swingup", "--backend", "mujoco", "--envs", "2", "--chunk", "5"]
    argv += ["--out", str(tmp_path)]
    record_path = tmp_path / "pendulum-swingup.json"
    saves = []

    def save_then_stop(record):
        (tmp_path / "pendulum-swingup.json").write_text(soak.json.dumps(record))
        saves.append(record["steps"])
        if len(saves) == 2:
            raise KeyboardInterrupt  # stopped after two chunks (20 steps), its record kept

    monkeypatch.setattr(soak, "soak_task", _with_save(soak.soak_task, save_then_stop))
    with pytest.raises(KeyboardInterrupt):
        soak.main(argv + ["--steps", "40"])
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    stopped = soak.json.loads(record_path.read_text())
    assert (stopped["steps"], stopped["segments"], stopped["timed_steps"]) == (20, 1, 10)
    assert "| 20 of 40 (stopped) |" in soak.to_markdown([stopped])

    soak.main(argv + ["--steps", "40"])
    resumed = soak.json.loads(record_path.read_text())
    # Each segment's first (compiling) chunk is counted but not timed.
    assert (resumed["steps"], resumed["segments"], resumed["timed_steps"]) == (40, 2, 20)
    assert resumed["nonfinite"] == resumed["diverged"] == resumed["episodes"] == 0
    assert resumed["qvel_max"] >= stopped["qvel_max"]
    assert resumed["compile_s"] == stopped["compile_s"]
    assert "| 40 |" in soak.to_markdown([resumed])
    soak.main(argv + ["--steps", "40"])  # done: skipped, record untouched
    assert soak.json.loads(record_path.read_text()) == resumed
    # Other settings do not resume it.
    soak.main(argv + ["--envs", "4", "--steps", "20"])  # the later --envs wins
    afresh = soak.json.loads(record_path.read_text())
    assert (afresh["steps"], afresh["segments"], afresh["envs"]) == (20, 1, 4)


def test_resumed_segments_draw_their_own_keys(soak):
    whole = jax.random.split(jax.random.key(3))
    assert all(
        np.array_equal(jax.random.key_data(a), jax.random.key_data(b))
        for a, b in zip(soak.segment_keys(3, 0), whole)
    )
    first, second = soak.segment_keys(3, 1)[0], soak.segment_keys(3, 2)[0]
    assert not np.array_equal(jax.random.key_data(first), jax.random.key_data(second))
    assert not np.array_equal(jax.random.key_data(first), jax.random.key_data(whole[0]))


def _with_save(soak_task, save):
    def wrapped(name, args, earlier=None, _save=None):
        return soak_task(name, args, earlier, save)

    return wrapped

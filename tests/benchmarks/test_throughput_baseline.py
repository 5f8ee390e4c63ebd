"""The throughput benchmark's raw MJX baseline (benchmarks/throughput.py) steps the
physics of a real episode: per-episode model fields are written into its model."""

import importlib
import os
import pathlib

import jax
import numpy as np
import pytest

import jaxcontrol

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def throughput(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("throughput")


def test_raw_steps_the_first_episodes_model(throughput):
    env = jaxcontrol.load("reacher", "easy")
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), 3))
    model = throughput.episode_model(env, states)
    target = env.mj_model.geom("target").id
    first = np.asarray(states.model_fields["geom_pos"][0, target])
    assert not np.allclose(first, np.asarray(env.mjx_model.geom_pos[target]))
    np.testing.assert_array_equal(np.asarray(model.geom_pos[target]), first)
    np.testing.assert_array_equal(
        np.asarray(model.geom_size), np.asarray(states.model_fields["geom_size"][0])
    )


def test_tasks_without_episode_fields_keep_the_compiled_model(throughput):
    env = jaxcontrol.load("cartpole", "swingup")
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), 2))
    assert throughput.episode_model(env, states) is env.mjx_model


@pytest.fixture
def compile_probe(throughput):  # the throughput fixture puts benchmarks/ on the path
    return importlib.import_module("gpu_compile_probe")


def test_compile_probe_times_a_compile_and_stops_a_slow_one(compile_probe, tmp_path):
    """benchmarks/gpu_compile_probe.py: one program compiled alone in a fresh process."""
    log = tmp_path / "raw.log"
    row = compile_probe.probe(
        "pendulum-swingup", 2, "raw", "", timeout=300, log=str(log), vmodule="hlo_pass_pipeline=1"
    )
    assert row["status"] == "ok" and row["lower_s"] > 0 and row["compile_s"] > 0, row
    # XLA's verbose log is kept, and its pass timings summed: "N s in passes; fusion 0.1, ..."
    assert "HLO pass" in log.read_text() and " s in passes; " in row["passes"], row
    slow = compile_probe.probe("pendulum-swingup", 2, "reset", "", timeout=0.5)
    assert slow["status"] == "timeout 0.5 s" and slow["compile_s"] == "", slow
    failed = compile_probe.probe("pendulum-nope", 2, "ours", "", timeout=300)
    assert failed["status"].startswith("exit 1: ") and "nope" in failed["status"], failed


def test_compile_probe_names_the_slowest_passes_and_the_one_still_running(compile_probe):
    """Nested pipelines are timed as passes too: only the passes themselves are summed."""
    prefix = "I1129 22:21:58.896985   30433 hlo_pass_pipeline.cc:"
    log = "\n".join(
        [
            f"{prefix}296] Running HLO pass pipeline on module jit_step: simplification",
            f"{prefix}174]   HLO pass algsimp",
            f"{prefix}169] HLO pass: algsimp time: 1.5 s (1.5 s) (cumulative: 1.5 s)",
            f"{prefix}174]   HLO pass fusion",
            f"{prefix}169] HLO pass: fusion time: 300 ms (300 ms) (cumulative: 300 ms)",
            f"{prefix}169] HLO pass: simplification time: 1.75 s (1.75 s) (cumulative: 1.75 s)",
            f"{prefix}174]   HLO pass algsimp",
            f"{prefix}169] HLO pass: algsimp time: 500 us (500 us) (cumulative: 1.5 s)",
            f"{prefix}174]   HLO pass copy-insertion",
        ]
    )
    summary = compile_probe.pass_summary(log)
    assert summary == "1.8 s in passes; algsimp 1.5, fusion 0.3; still in copy-insertion", summary
    assert compile_probe.pass_summary("no verbose log") == ""


def test_compile_probe_pass_timeline_lists_the_dumps_in_order_and_removes_them(
    compile_probe, tmp_path
):
    dump = tmp_path / "raw.log.dump"
    dump.mkdir()
    for seconds, name in [(3.0, "module_0001.jit_step.0002.fusion.txt"), (1.0, "before.txt")]:
        (dump / name).write_text("HloModule")
        os.utime(dump / name, (100.0 + seconds, 100.0 + seconds))
    compile_probe._write_timeline(dump, 100.0, tmp_path / "raw.log.passes")
    lines = (tmp_path / "raw.log.passes").read_text().splitlines()
    assert [line.split() for line in lines] == [
        ["1.00", "before.txt"],
        ["3.00", "module_0001.jit_step.0002.fusion.txt"],
    ]
    assert not dump.exists()

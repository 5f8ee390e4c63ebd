"""Collecting a sweep's finished runs into the records tree, and reading them back."""

from __future__ import annotations

import json

import pytest
from fake_sweep import RETURNS

from jaxcontrol.results import collect, records


def test_finished_runs_are_copied_and_unfinished_ones_reported(sweep, tmp_path):
    done = collect.collect_sweep(sweep, tmp_path / "results")
    names = sorted(p.split("results/", 1)[1] for p in done.written)
    assert names == [
        "sac/cartpole-swingup/seed-0",
        "sac/cartpole-swingup/seed-1",
        "sac/cheetah-run/seed-0",
        "sac/cheetah-run/seed-1",
    ]
    assert [u.path.split("sweep/", 1)[1] for u in done.unfinished] == ["walker-walk/seed-0"]
    assert "eval.json" in done.unfinished[0].reason
    assert not (tmp_path / "results" / "sac" / "walker-walk").exists()


def test_a_record_holds_the_small_files_only(records_dir, sweep):
    seed = records_dir / "sac" / "cartpole-swingup" / "seed-1"
    assert sorted(p.name for p in seed.iterdir()) == [
        "curve.json",
        "eval.json",
        "eval_dm_control.json",
        "run.json",
        "sweep_run.json",
    ]
    source = sweep / "cartpole-swingup" / "seed-1"
    for name in ("run.json", "eval.json", "eval_dm_control.json", "sweep_run.json"):
        assert (seed / name).read_bytes() == (source / name).read_bytes()


def test_the_curve_holds_the_periodic_evaluations_and_the_last_chunk(records_dir):
    curve = json.loads((records_dir / "sac" / "cheetah-run" / "seed-0" / "curve.json").read_text())
    assert curve["evals"] == [
        {"env_steps": 100_000, "mean_return": 300.0, "stderr": 5.0, "episodes": 10},
        {"env_steps": 500_000, "mean_return": 600.0, "stderr": 5.0, "episodes": 10},
        {"env_steps": 1_000_000, "mean_return": 690.0, "stderr": 5.0, "episodes": 10},
    ]
    assert curve["env_steps"] == 1_000_000 and curve["chunks"] == 10
    assert curve["wall_seconds"] == pytest.approx(1_000_000 / 300.0)


def test_collecting_again_gives_the_same_bytes_and_drops_stale_files(sweep, records_dir):
    seed = records_dir / "sac" / "cheetah-run" / "seed-0"
    before = {p.name: p.read_bytes() for p in seed.iterdir()}
    collect.collect_sweep(sweep, records_dir)
    assert {p.name: p.read_bytes() for p in seed.iterdir()} == before
    (sweep / "cheetah-run" / "seed-0" / "eval_dm_control.json").unlink()
    collect.collect_sweep(sweep, records_dir)
    assert not (seed / "eval_dm_control.json").exists()


def test_records_load_sorted_with_their_evaluations(runs):
    assert [(r.agent, r.domain, r.task, r.seed) for r in runs] == [
        ("sac", "cartpole", "swingup", 0),
        ("sac", "cartpole", "swingup", 1),
        ("sac", "cheetah", "run", 0),
        ("sac", "cheetah", "run", 1),
    ]
    evals = runs[1].evals()
    assert [(e.control_steps, e.mean_return, e.final) for e in evals] == [
        (100_000, 200.0, False),
        (500_000, 900.0, False),
        (1_000_000, 860.0, False),
        (1_000_000, RETURNS["cartpole-swingup", 1][3], True),
    ]


def test_a_pixel_run_gets_its_own_agent_directory(tmp_path):
    run = {"env": "cheetah-run", "agent": "sac", "seed": 2, "pixels": True}
    assert records.record_dir(tmp_path, run) == tmp_path / "sac-pixels" / "cheetah-run" / "seed-2"


def test_a_malformed_metrics_line_is_named():
    with pytest.raises(ValueError, match="metrics.jsonl: line 2 is not JSON"):
        collect.curve(['{"env_steps": 1}', "{oops"])
    with pytest.raises(ValueError, match="line 1 is not a JSON object"):
        collect.curve(["[1, 2]"])


def test_a_directory_without_sweep_json_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a sweep directory"):
        collect.run_dirs(tmp_path)


def test_an_incomplete_record_is_named(records_dir):
    (records_dir / "sac" / "cheetah-run" / "seed-1" / "curve.json").unlink()
    with pytest.raises(ValueError, match="seed-1: incomplete record"):
        records.load(records_dir)

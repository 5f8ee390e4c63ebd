"""The full tier's long pieces resume where a stopped run left them (`parity.Progress`)."""

import json

import jax
import pytest

import jaxcontrol
from jaxcontrol import parity


@pytest.fixture(scope="module")
def env():
    return jaxcontrol.load("pendulum", "swingup")


def test_progress_keeps_parts_until_done(tmp_path):
    path = tmp_path / "progress" / "t-p.json"
    calls = []

    def measure(x):
        calls.append(x)
        return {"value": x}

    first = parity.Progress(path, {"n": 1})
    assert first.part("a", measure, 1) == {"value": 1}
    assert json.loads(path.read_text())["parts"] == {"a": {"value": 1}}

    again = parity.Progress(path, {"n": 1})
    assert again.part("a", measure, 99) == {"value": 1}  # reused, not measured
    assert again.part("b", measure, 2) == {"value": 2}
    assert calls == [1, 2] and again.resumed == ["a"]
    again.done()
    assert not path.exists()


def test_progress_ignores_parts_of_another_config(tmp_path):
    path = tmp_path / "p.json"
    parity.Progress(path, {"n": 1}).part("a", lambda: 1)
    other = parity.Progress(path, {"n": 2})
    assert other.part("a", lambda: 2) == 2 and other.resumed == []


def test_interrupted_soak_resumes_to_the_uninterrupted_result(env, tmp_path, monkeypatch):
    kwargs = {"num_envs": 4, "steps": 5, "shards": 2}
    whole = parity.soak(env, **kwargs)
    assert whole["steps"] == 20 and whole["shards"] == 2
    assert whole["replay_identical"]

    path = tmp_path / "soak.json"
    measure_shard = parity._soak_shard

    def stop_at_second(run, shard):
        if shard == 1:
            raise KeyboardInterrupt  # the session ends midway
        return measure_shard(run, shard)

    monkeypatch.setattr(parity, "_soak_shard", stop_at_second)
    with pytest.raises(KeyboardInterrupt):
        parity.soak(env, progress=parity.Progress(path), **kwargs)
    assert list(json.loads(path.read_text())["parts"]) == ["shard0"]

    monkeypatch.setattr(parity, "_soak_shard", measure_shard)
    progress = parity.Progress(path)
    resumed = parity.soak(env, progress=progress, **kwargs)
    assert progress.resumed == ["shard0"]
    assert resumed == whole
    assert not path.exists()


def test_a_replay_that_differs_is_reported_as_nondeterminism(env, monkeypatch):
    measure_shard, calls = parity._soak_shard, []

    def flaky(run, shard):  # the replay of shard 0 ends elsewhere than shard 0 did
        out = measure_shard(run, shard)
        calls.append(shard)
        return {**out, "final_digest": "other"} if calls.count(0) == 2 else out

    monkeypatch.setattr(parity, "_soak_shard", flaky)
    soak = parity.soak(env, num_envs=4, steps=5, shards=2)
    assert calls == [0, 1, 0] and not soak["replay_identical"]
    missed = parity.missed_targets({"soak": soak}, ["soak"])
    assert missed == ["soak: a replay of the same keys and actions differed (nondeterminism)"]


def test_soak_rejects_uneven_shards(env):
    with pytest.raises(ValueError, match="multiple of shards"):
        parity.soak(env, num_envs=5, steps=1, shards=2)


def test_cli_measures_only_missing_pieces_and_writes_each_at_once(tmp_path, monkeypatch, capsys):
    calls = []

    def fake(name):
        def piece(domain, task, progress):
            calls.append(name)
            if name == "second":
                # The first piece is already on disk when the second one runs.
                assert parity.read_record(tmp_path, f"{domain}-{task}")["first"]
            return {"value": name}

        return piece

    monkeypatch.setattr(parity, "PIECES", {"first": fake("first"), "second": fake("second")})
    args = ["pendulum-swingup", "--records", str(tmp_path), "--pieces", "first,second"]
    assert parity.main(args) == 0
    assert calls == ["first", "second"]
    parity.write_record(tmp_path, {"task": "pendulum-swingup", "second": {}})  # lost
    assert parity.main([*args, "--missing"]) == 0
    assert calls == ["first", "second", "second"]
    record = parity.read_record(tmp_path, "pendulum-swingup")
    assert record["first"]["value"] == "first" and record["second"]["value"] == "second"
    assert "all targets met" in capsys.readouterr().out


def test_pieces_measured_under_other_solver_caps_are_stale(tmp_path, monkeypatch, capsys):
    calls = []

    def piece(domain, task, progress):
        calls.append(progress.config.get("solver_caps"))
        return {"value": 1}

    monkeypatch.setattr(parity, "PIECES", {"only": piece})
    args = ["pendulum-swingup", "--records", str(tmp_path), "--pieces", "only", "--missing"]
    assert parity.main(args) == 0
    record = parity.read_record(tmp_path, "pendulum-swingup")
    assert record["only"]["solver_caps"] is None  # dm_control's settings
    assert parity.main(args) == 0 and calls == [None]  # done: not measured again

    # The task now lowers its caps: the piece is stale, reported and measured again.
    caps = (8, 8)
    monkeypatch.setattr(type(jaxcontrol.load("pendulum", "swingup").task), "solver_caps", caps)
    assert parity.missed_targets(record, ["only"], list(caps)) == [
        "measured under other solver settings: only"
    ]
    assert parity.main(args) == 0 and calls == [None, [8, 8]]
    assert parity.read_record(tmp_path, "pendulum-swingup")["only"]["solver_caps"] == [8, 8]
    assert "all targets met" in capsys.readouterr().out


def test_each_piece_names_its_jax_version_and_parity_md_shows_them(tmp_path, monkeypatch):
    monkeypatch.setattr(parity, "PIECES", {"only": lambda domain, task, progress: {"value": 1}})
    args = ["pendulum-swingup", "--records", str(tmp_path), "--pieces", "only"]
    assert parity.main(args) == 0
    record = parity.read_record(tmp_path, "pendulum-swingup")
    assert record["only"]["jax"] == jax.__version__
    # A piece from before pieces named their version takes its record's.
    old = {"task": "pendulum-swingup", "jax": "0.0.1", "only": {"value": 1}}
    assert parity.jax_versions(old) == ["0.0.1"]
    assert parity.jax_versions({**old, "only": {"value": 1, "jax": "0.0.2"}}) == ["0.0.2"]
    row = next(line for line in parity.render([record]).splitlines() if "pendulum-swingup" in line)
    assert row.endswith(f"jax {jax.__version__} |")

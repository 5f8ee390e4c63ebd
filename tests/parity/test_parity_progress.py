"""The full tier's long pieces resume where a stopped run left them (`parity.Progress`)."""

import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import mjx_fixes, parity, reference, soak_checkpoint
from jaxcontrol.cli import parity as parity_command
from jaxcontrol.parity import campaign

# Two shards of 4 environments, 6 steps in chunks of 2: one compile for the module's soaks.
SMALL = {"num_envs": 8, "steps": 6, "shards": 2, "checkpoint_every": 2}


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


def test_progress_counts_the_seconds_of_every_earlier_part(tmp_path):
    """A record's seconds include the quarters behind a policy that a later run only resumes."""
    path = tmp_path / "p.json"
    first = parity.Progress(path, {"n": 1})
    for name in ("q.0", "q.1", "q", "r"):
        first.part(name, lambda: 0)
    saved = json.loads(path.read_text())
    saved["seconds"] = {"q.0": 100.0, "q.1": 200.0, "q": 3.0, "r": 40.0}
    path.write_text(json.dumps(saved))

    later = parity.Progress(path, {"n": 1})
    later.part("q", lambda: 1)  # resumed: its quarters are never asked for
    later.part("s", lambda: 2)  # measured here: its time is this run's own
    assert later.resumed == ["q"] and later.measured == ["s"]
    assert later.earlier_seconds() == 343.0
    later.done()
    assert later.earlier_seconds() == 343.0  # still known once the parts file is gone

    resumed = parity.Progress(tmp_path / "r.json")  # a part that resumed from a checkpoint
    assert resumed.part("a", lambda: {"x": 1, "seconds_before": 50.0}) == {"x": 1}
    assert resumed.seconds["a"] >= 50.0 and resumed.earlier_seconds() == 50.0


def test_progress_ignores_parts_of_another_config(tmp_path):
    path = tmp_path / "p.json"
    parity.Progress(path, {"n": 1}).part("a", lambda: 1)
    other = parity.Progress(path, {"n": 2})
    assert other.part("a", lambda: 2) == 2 and other.resumed == []


def test_interrupted_soak_resumes_to_the_uninterrupted_result(env, tmp_path, monkeypatch):
    kwargs = SMALL
    whole = parity.soak(env, **kwargs)
    assert whole["steps"] == 48 and whole["shards"] == 2
    assert whole["replay_identical"]

    path = tmp_path / "soak.json"
    measure_shard = parity.soaks._soak_shard

    def stop_at_second(run, shard, *rest, **kw):
        if shard == 1:
            raise KeyboardInterrupt  # the session ends midway
        return measure_shard(run, shard, *rest, **kw)

    monkeypatch.setattr(parity.soaks, "_soak_shard", stop_at_second)
    with pytest.raises(KeyboardInterrupt):
        parity.soak(env, progress=parity.Progress(path), **kwargs)
    assert list(json.loads(path.read_text())["parts"]) == ["shard0"]

    monkeypatch.setattr(parity.soaks, "_soak_shard", measure_shard)
    progress = parity.Progress(path)
    resumed = parity.soak(env, progress=progress, **kwargs)
    assert progress.resumed == ["shard0"]
    assert resumed == whole
    assert not path.exists()


def _poisoned(run):
    """`run` whose first carry has every field of its `mjx.Data`s that a checkpoint
    drops set to NaN, or -1 where it is an integer."""

    def start(key):
        carry, action_keys = run.start(key)

        def poison(path, leaf):
            if soak_checkpoint.kept(path):
                return leaf
            bad = jnp.nan if jnp.issubdtype(leaf.dtype, jnp.inexact) else -1
            return jnp.full_like(leaf, bad)

        return jax.tree_util.tree_map_with_path(poison, carry), action_keys

    return run._replace(start=start)


def _stop_after_saves(monkeypatch, count):
    """Checkpoints save as usual, and the run stops (a session ends) after `count` saves;
    returns the steps done at each save."""
    save, done = soak_checkpoint.Checkpoint.save, []

    def stop(self, carry, progress):
        save(self, carry, progress)
        done.append(progress["done"])
        if len(done) == count:
            raise KeyboardInterrupt

    monkeypatch.setattr(soak_checkpoint.Checkpoint, "save", stop)
    return done


@pytest.mark.parametrize(
    "soaked",
    [
        ("pendulum", "swingup"),
        ("ball_in_cup", "catch"),  # contacts: its constraint arrays are not saved
        pytest.param(("manipulator", "insert_ball"), marks=pytest.mark.full),
        pytest.param(("stacker", "stack_4"), marks=pytest.mark.full),
    ],
    ids="/".join,  # not a task's id: the run order groups only tests that take `task`
)
def test_a_shard_stopped_midway_resumes_bit_identically_without_the_datas_impl(
    soaked, tmp_path, monkeypatch
):
    """A checkpoint drops what each `mjx.Data` holds under `_impl` (contacts,
    constraints, the mass matrix). A shard resumed from one, with those fields NaN,
    ends bit-identical to the shard that never stopped: the step computes them
    again before it reads them."""
    with reference.precision(False):
        env = jaxcontrol.load(*soaked)
        run = parity.soaks._soak(env, 4, 6, 2)
        whole = parity.soaks._soak_shard(run, 1)
        checkpoint = parity.Progress(tmp_path / "soak.json").checkpoint("shard1", shard=1)
        done = _stop_after_saves(monkeypatch, 1)
        with pytest.raises(KeyboardInterrupt):
            parity.soaks._soak_shard(run, 1, checkpoint)
        saved = np.load(checkpoint.path)
        assert not any("_impl" in name for name in saved.files)
        assert any("qpos" in name for name in saved.files)
        resumed = parity.soaks._soak_shard(_poisoned(run), 1, checkpoint)
    assert done == [2, 4]  # stopped after the first chunk; resumed from step 2
    assert resumed.pop("seconds_before") >= 0  # the time before the stop, for the record
    assert resumed == whole


def test_a_checkpoints_seconds_include_the_chunk_it_saves(env, tmp_path):
    """JAX returns from a chunk's call before the chunk is computed: a checkpoint's
    seconds (what a resumed shard adds to its own) must wait for it."""
    run = parity.soaks._soak(env, 4, 4, 2)

    def slowed(iterations):  # the chunk, and `iterations` products of a 384x384 matrix
        def advance(carry, action_keys):
            states, stats = run.advance(carry, action_keys)
            x = jnp.full((384, 384), 1.0 / 384) + stats["nonfinite"]
            x = jax.lax.fori_loop(0, iterations, lambda _, x: x @ x, x)
            return states, {**stats, "nonfinite": stats["nonfinite"] + (x[0, 0] > 1e9)}

        return jax.jit(advance)

    carry, action_keys = run.start(jax.random.fold_in(jax.random.key(1), 0))
    iterations, chunk = 1200, 0.0
    while chunk < 0.3 and iterations <= 1200 * 4**4:  # more work on a faster machine
        advance = slowed(iterations)
        jax.block_until_ready(advance(carry, action_keys[:2]))  # compiled before it is timed
        start = time.perf_counter()
        jax.block_until_ready(advance(carry, action_keys[:2]))
        chunk = time.perf_counter() - start  # this machine's own cost of one chunk
        iterations *= 4
    assert chunk >= 0.3, "the chunk is too quick here to tell its time from rounding"
    checkpoint = parity.Progress(tmp_path / "soak.json").checkpoint("shard0", shard=0)
    parity.soaks._soak_shard(run._replace(advance=advance), 0, checkpoint)
    saved = json.loads(str(np.load(checkpoint.path)["__meta__"]))  # its only save
    # Before the fix, the first checkpoint counted only the call's return: 0.0 s.
    assert saved["done"] == 2 and saved["seconds"] >= 0.5 * chunk


def test_a_checkpoint_from_another_host_resumes_a_shard_but_not_a_replay(
    env, tmp_path, monkeypatch
):
    run = parity.soaks._soak(env, 4, 6, 2)
    whole = parity.soaks._soak_shard(run, 0)
    checkpoint = parity.Progress(tmp_path / "soak.json").checkpoint("shard0", shard=0)
    _stop_after_saves(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        parity.soaks._soak_shard(run, 0, checkpoint)
    monkeypatch.undo()
    carry, progress = checkpoint.load(run.start(jax.random.key(0))[0])
    checkpoint.save(carry, {**progress, "hosts": ["amd"]})  # as if saved on another CPU

    resumed = parity.soaks._soak_shard(run, 0, checkpoint)  # its checkpoint names both hosts
    assert resumed["host"] == "+".join(sorted(["amd", parity.host_fingerprint()]))
    assert resumed["final_digest"] == whole["final_digest"]  # one host here, in truth
    replay = parity.soaks._soak_shard(run, 0, checkpoint, same_host=True)
    assert replay == whole  # started over here: nothing before it


def test_a_soak_stopped_inside_a_shard_resumes_there_and_leaves_no_checkpoint(
    env, tmp_path, monkeypatch
):
    kwargs = SMALL
    whole = parity.soak(env, **kwargs)
    path = tmp_path / "soak.json"
    done = _stop_after_saves(monkeypatch, 3)  # shard 0's two, then shard 1's first
    with pytest.raises(KeyboardInterrupt):
        parity.soak(env, progress=parity.Progress(path), **kwargs)
    assert done == [2, 4, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["soak.json", "soak.shard1.npz"]
    monkeypatch.undo()

    progress = parity.Progress(path)
    assert parity.soak(env, progress=progress, **kwargs) == whole
    assert progress.resumed == ["shard0"] and progress.measured == ["shard1", "replay"]
    assert list(tmp_path.iterdir()) == []


def test_a_checkpoint_of_another_measurement_is_ignored(env, tmp_path, monkeypatch):
    run = parity.soaks._soak(env, 4, 6, 2)
    checkpoint = parity.Progress(tmp_path / "soak.json", {"n": 1}).checkpoint("shard0", shard=0)
    _stop_after_saves(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        parity.soaks._soak_shard(run, 0, checkpoint)
    template = run.start(jax.random.key(0))[0]
    assert checkpoint.load(template) is not None
    other = parity.Progress(tmp_path / "soak.json", {"n": 2}).checkpoint("shard0", shard=0)
    assert other.load(template) is None
    assert (
        parity.Progress(tmp_path / "soak.json", {"n": 1})
        .checkpoint("shard0", shard=1)
        .load(template)
        is None
    )


def test_a_replay_that_differs_is_reported_as_nondeterminism(env, monkeypatch):
    measure_shard, calls = parity.soaks._soak_shard, []

    def flaky(run, shard, *rest, **kw):  # the replay of shard 0 ends elsewhere than shard 0 did
        out = measure_shard(run, shard, *rest, **kw)
        calls.append(shard)
        return {**out, "final_digest": "other"} if calls.count(0) == 2 else out

    monkeypatch.setattr(parity.soaks, "_soak_shard", flaky)
    soak = parity.soak(env, **SMALL)
    assert calls == [0, 1, 0] and not soak["replay_identical"]
    missed = parity.missed_targets({"soak": soak}, ["soak"])
    assert missed == ["soak: a replay of the same keys and actions differed (nondeterminism)"]


def test_a_replay_on_another_host_runs_shard_0_twice_there(env, tmp_path, monkeypatch):
    """Parts resume across machines, but float results repeat only on one host: where
    every shard was measured elsewhere, the replay compares two runs of shard 0 here."""
    kwargs = SMALL
    path = tmp_path / "soak.json"
    measure_shard, measured = parity.soaks._soak_shard, []

    def elsewhere(run, shard, *rest, **kw):  # another CPU: same statistics, other last bits
        measured.append(shard)
        return {**measure_shard(run, shard, *rest, **kw), "final_digest": "amd", "host": "amd"}

    monkeypatch.setattr(parity.soaks, "_soak_shard", elsewhere)
    with pytest.raises(parity.PartsLeft):
        parity.soak(env, progress=parity.Progress(path, only=["shard0", "shard1"]), **kwargs)

    def here(run, shard, *rest, **kw):
        measured.append(shard)
        return measure_shard(run, shard, *rest, **kw)

    monkeypatch.setattr(parity.soaks, "_soak_shard", here)
    soak = parity.soak(env, progress=parity.Progress(path), **kwargs)
    assert measured == [0, 1, 0, 0]  # the replay, then its reference, both here
    assert soak["replay_identical"] and soak["replay_reference"] == "a second replay on this host"
    assert soak["replayed"] == "shard0"
    assert soak["replay_reference"] != parity.soak(env, **kwargs)["replay_reference"]

    # A run given only the replay, before another run saved shard 0: two runs here too.
    measured.clear()
    with pytest.raises(parity.PartsLeft):
        parity.soak(env, progress=parity.Progress(tmp_path / "b.json", only=["replay"]), **kwargs)
    assert measured == [0, 0]


def test_a_replay_takes_a_shard_this_host_measured_and_runs_it_once(env, tmp_path, monkeypatch):
    """Shard 0 came from another machine, shard 1 from this one: the replay runs shard 1
    once and compares with its saved digest, so a nondeterministic shard 1 fails."""
    kwargs = SMALL
    path = tmp_path / "soak.json"
    measure_shard, measured = parity.soaks._soak_shard, []

    def elsewhere(run, shard, *rest, **kw):
        measured.append(shard)
        return {**measure_shard(run, shard, *rest, **kw), "final_digest": "amd", "host": "amd"}

    monkeypatch.setattr(parity.soaks, "_soak_shard", elsewhere)
    with pytest.raises(parity.PartsLeft):
        parity.soak(env, progress=parity.Progress(path, only=["shard0"]), **kwargs)
    assert json.loads(path.read_text())["parts"]["shard0"]["host"] == "amd"

    def here(run, shard, *rest, **kw):
        measured.append(shard)
        return measure_shard(run, shard, *rest, **kw)

    monkeypatch.setattr(parity.soaks, "_soak_shard", here)
    saved = path.read_text()
    soak = parity.soak(env, progress=parity.Progress(path), **kwargs)
    assert measured == [0, 1, 1]  # shard 1 here, then its replay, once
    assert soak["replay_identical"] and soak["replayed"] == "shard1"
    assert soak["replay_reference"] == "shard1"

    def flaky(run, shard, *rest, **kw):  # the replay of shard 1 ends elsewhere than shard 1 did
        out = here(run, shard, *rest, **kw)
        return {**out, "final_digest": "other"} if measured.count(1) == 2 else out

    measured.clear()
    path.write_text(saved)
    monkeypatch.setattr(parity.soaks, "_soak_shard", flaky)
    soak = parity.soak(env, progress=parity.Progress(path), **kwargs)
    assert measured == [1, 1] and not soak["replay_identical"]


def test_the_host_fingerprint_names_the_cores_a_process_may_use(monkeypatch):
    """XLA:CPU sizes its thread pool by the cores it may run on, which can reorder float
    reductions: a process pinned to one core (`taskset -c 0`) is another host."""
    prints = {}
    for cores in [{0}, {0, 1}, {1}]:
        parity.host_fingerprint.cache_clear()
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, c=cores: c, raising=False)
        prints[len(cores)] = prints.get(len(cores), set()) | {parity.host_fingerprint()}
    parity.host_fingerprint.cache_clear()
    assert len(prints[1]) == 1 and prints[1] != prints[2]  # the count, not which cores


def test_returns_run_in_quarters_that_resume_to_the_uninterrupted_result(env, tmp_path):
    """Our episodes run in quarters (one part each), the same episodes as one batch;
    a run given one quarter measures only it; a policy saved whole is kept."""
    whole = parity.returns(env, episodes=8)
    assert set(whole) == set(parity.POLICIES)
    keys = jax.random.split(jax.random.key(5 + 1), 8)  # sinusoid's episodes
    actions = _sinusoid(env)
    run = parity.measures._open_loop_returns(env)  # one row of returns: env has no siblings
    (one_batch,) = np.asarray(run(keys, jnp.asarray(actions, jnp.float32)))
    np.testing.assert_allclose(whole["sinusoid"]["ours_returns"], one_batch, rtol=1e-4)

    path = tmp_path / "returns.json"
    sentinel = {"saved": "whole, before quarters"}
    parity.Progress(path).part("zero", lambda: sentinel)
    only = parity.Progress(path, only=parity.expand_parts("returns", ["sinusoid.1"]))
    with pytest.raises(parity.PartsLeft):
        parity.returns(env, episodes=8, progress=only)
    assert set(json.loads(path.read_text())["parts"]) == {"zero", "sinusoid.1"}
    assert "sinusoid" in only.skipped and "zero.0" not in only.skipped

    progress = parity.Progress(path)
    resumed = parity.returns(env, episodes=8, progress=progress)
    assert progress.resumed == ["zero", "sinusoid.1"]
    assert resumed["zero"] == sentinel
    assert resumed["sinusoid"] == whole["sinusoid"] and resumed["bang_bang"] == whole["bang_bang"]
    assert not path.exists()


def _sinusoid(env):
    dm_env = reference.reference_for(env, 0)
    steps = reference.episode_steps(env)
    return parity.open_loop_actions(dm_env.action_spec(), "sinusoid", steps)


def test_a_policy_name_in_parts_stands_for_its_quarters():
    assert parity.expand_parts("returns", ["zero", "bang_bang.3"]) == [
        "zero.0",
        "zero.1",
        "zero.2",
        "zero.3",
        "zero",
        "bang_bang.3",
    ]
    assert parity.expand_parts("soak", ["shard0"]) == ["shard0"]
    assert parity.expand_parts("returns", None) is None


def test_the_float64_returns_resume_by_the_same_parts_and_are_measured_only_when_named():
    """The float64 remedy's returns split into the same quarters as the returns; its
    pieces are no task's default and no target of the record, and keep their own
    progress (their config names the piece)."""
    assert parity.piece_parts("returns_float64") == parity.piece_parts("returns")
    assert parity.expand_parts("returns_float64", ["zero"])[:4] == [f"zero.{q}" for q in range(4)]
    assert (
        parity.parts_error(["returns_float64"], ["sinusoid.2"], [("cartpole", "swingup")]) is None
    )
    remedy = set(parity.records.FLOAT64_REMEDY_PIECES)
    assert remedy == {"resets_float64", "returns_float64"} and remedy <= set(parity.PIECES)
    assert not remedy & set(parity.records.default_pieces())
    assert not remedy & set(parity.records.REQUIRED_PIECES)
    plain = parity.piece_progress("cartpole", "swingup", "returns", None).config
    wide = parity.piece_progress("cartpole", "swingup", "returns_float64", None).config
    assert plain != wide and wide["piece"] == "returns_float64"


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

    monkeypatch.setattr(
        parity.records, "PIECES", {"first": fake("first"), "second": fake("second")}
    )
    args = ["--env", "pendulum-swingup", "--records", str(tmp_path), "--pieces", "first,second"]
    assert parity_command.main(args) == 0
    assert calls == ["first", "second"]
    parity.write_record(tmp_path, {"task": "pendulum-swingup", "second": {}})  # lost
    assert parity_command.main([*args, "--missing"]) == 0
    assert calls == ["first", "second", "second"]
    record = parity.read_record(tmp_path, "pendulum-swingup")
    assert record["first"]["value"] == "first" and record["second"]["value"] == "second"
    assert "all targets met" in capsys.readouterr().out


def test_cli_render_with_a_task_named_measures_nothing_unless_pieces_are_named(
    tmp_path, monkeypatch, capsys
):
    """`parity TASK --render` once re-measured every piece of TASK before it rendered."""
    calls = []
    monkeypatch.setattr(
        parity.records, "PIECES", {"only": lambda *args: calls.append(1) or {"value": 1}}
    )
    out = tmp_path / "PARITY.md"
    base = ["--env", "pendulum-swingup", "--records", str(tmp_path), "--render", "--out", str(out)]
    assert parity_command.main(base) == 2 and not calls and not out.exists()
    message = capsys.readouterr().err
    assert "'jaxcontrol parity --render' with no task" in message and "of only" in message
    assert parity_command.main([*base, "--pieces", "only"]) == 0 and calls == [1] and out.exists()
    assert parity_command.main([*base, "--missing"]) == 0 and calls == [1]  # nothing missing
    assert parity_command.main(["--records", str(tmp_path), "--render", "--out", str(out)]) == 0


def test_pieces_measured_under_other_solver_caps_are_stale(tmp_path, monkeypatch, capsys):
    calls = []

    def piece(domain, task, progress):
        calls.append(progress.config.get("solver_caps"))
        return {"value": 1}

    monkeypatch.setattr(parity.records, "PIECES", {"only": piece})
    args = [
        "--env",
        "pendulum-swingup",
        "--records",
        str(tmp_path),
        "--pieces",
        "only",
        "--missing",
    ]
    assert parity_command.main(args) == 0
    record = parity.read_record(tmp_path, "pendulum-swingup")
    assert record["only"]["solver_caps"] is None  # dm_control's settings
    assert parity_command.main(args) == 0 and calls == [None]  # done: not measured again

    # The task now lowers its caps: the piece is stale, reported and measured again.
    caps = (8, 8)
    monkeypatch.setattr(type(jaxcontrol.load("pendulum", "swingup").task), "solver_caps", caps)
    assert parity.missed_targets(record, ["only"], list(caps)) == [
        "measured under other solver settings: only"
    ]
    assert parity_command.main(args) == 0 and calls == [None, [8, 8]]
    assert parity.read_record(tmp_path, "pendulum-swingup")["only"]["solver_caps"] == [8, 8]
    assert "all targets met" in capsys.readouterr().out


def test_missing_measures_again_the_pieces_of_another_jax(tmp_path, monkeypatch):
    """`--missing` measures what `--reuse-records` would not take: a piece from another
    JAX (or naming none, from before pieces did) is measured again, one-rollout
    families included; a piece from this JAX is kept."""
    calls = []

    def piece(domain, task, progress):
        calls.append(task)
        return {"value": 2}

    monkeypatch.setattr(parity.records, "PIECES", {"only": piece})
    old = {"value": 1, "solver_caps": None}
    parity.write_record(tmp_path, {"task": "pendulum-swingup", "only": {**old, "jax": "0.0.1"}})
    parity.write_record(tmp_path, {"task": "acrobot-swingup", "only": old})  # names no JAX
    args = [
        "--env",
        "pendulum-swingup",
        "--records",
        str(tmp_path),
        "--pieces",
        "only",
        "--missing",
    ]
    assert parity_command.main(args) == 0 and calls == ["swingup"]
    record = parity.read_record(tmp_path, "pendulum-swingup")
    assert record["only"]["value"] == 2 and record["only"]["jax"] == jax.__version__
    assert parity_command.main(args) == 0 and calls == ["swingup"]  # now current: kept
    assert parity.solver_caps("acrobot", "swingup") is None  # so not stale for its caps
    acrobot = parity.read_record(tmp_path, "acrobot-swingup")
    assert campaign.needs(acrobot, "acrobot", "swingup", "only")
    assert not campaign.needs(record, "pendulum", "swingup", "only")


def test_pieces_measured_under_stock_mjx_are_stale_for_elliptic_tasks(tmp_path, monkeypatch):
    """finger's contacts are elliptic, so `mjx_fixes` touches its physics: a piece
    from before the fix (none named) is stale, measured again and then names it;
    a parts file saved under stock MJX is not reused. pendulum has no elliptic
    contact: its pieces name no fix and stay valid."""
    fix = [mjx_fixes.ELLIPTIC_LINE_SEARCH]
    assert parity.mjx_fixes_of("finger", "spin") == fix
    assert parity.mjx_fixes_of("pendulum", "swingup") == []
    configs = []

    def piece(domain, task, progress):
        configs.append(progress.config.get("mjx_fixes"))
        return {"value": 1}

    monkeypatch.setattr(parity.records, "PIECES", {"only": piece})
    old = {"task": "finger-spin", "only": {"value": 1, "solver_caps": None}}
    parity.write_record(tmp_path, old)
    assert parity.missed_targets(old, ["only"], None, fix) == [
        f"measured under other MJX fixes (now {fix[0]}): only"
    ]
    args = ["--env", "finger-spin", "--records", str(tmp_path), "--pieces", "only", "--missing"]
    assert parity_command.main(args) == 0 and configs == [fix]
    assert parity.read_record(tmp_path, "finger-spin")["only"]["mjx_fixes"] == fix
    assert parity_command.main(args) == 0 and configs == [fix]  # done: not measured again
    fixed = parity.piece_progress("finger", "spin", "soak", tmp_path)
    assert fixed.config["mjx_fixes"] == fix
    stock_config = {k: v for k, v in fixed.config.items() if k != "mjx_fixes"}
    parity.Progress(fixed.path, stock_config).part("shard0", lambda: {"value": 1})
    assert parity.Progress(fixed.path, stock_config).saved()[0] == {"shard0": {"value": 1}}
    assert parity.piece_progress("finger", "spin", "soak", tmp_path).saved() == ({}, {})
    assert "mjx_fixes" not in parity.piece_progress("pendulum", "swingup", "soak", None).config


def test_the_full_tier_reuses_only_pieces_of_the_physics_and_jax_now():
    """`--reuse-records` (tests/conftest.py) asserts a recorded piece as it stands only
    where it was measured under the task's solver caps and MJX fixes now, with this
    JAX; any other piece is measured again."""
    fix = [mjx_fixes.ELLIPTIC_LINE_SEARCH]
    now = {"value": 1, "solver_caps": [8, 8], "mjx_fixes": fix, "jax": jax.__version__}
    record = {"task": "finger-spin", "jax": "0.0.1", "episode": now}
    assert parity.current_piece(record, "episode", [8, 8], fix) is now
    assert parity.current_piece(record, "resets", [8, 8], fix) is None  # never measured
    assert parity.current_piece(record, "episode", None, fix) is None  # other caps
    assert parity.current_piece(record, "episode", [8, 8], []) is None  # other fixes
    older = {**record, "episode": {**now, "jax": "0.0.1"}}
    assert parity.current_piece(older, "episode", [8, 8], fix) is None  # other JAX
    # A piece from before pieces named their JAX: its record's JAX changes as soon as
    # another piece is measured again, so it is measured again too.
    unnamed = {k: v for k, v in now.items() if k != "jax"}
    same = {**record, "jax": jax.__version__, "episode": unnamed}
    assert parity.current_piece(same, "episode", [8, 8], fix) is None


def test_a_merged_record_keeps_the_jax_of_pieces_that_do_not_name_theirs(tmp_path):
    old = {"task": "pendulum-swingup", "jax": "0.0.1", "episode": {"v": 1}, "resets": {"v": 2}}
    parity.write_record(tmp_path, old)
    parity.write_record(tmp_path, {"task": "pendulum-swingup", "jax": "0.0.2", "resets": {"v": 3}})
    merged = parity.read_record(tmp_path, "pendulum-swingup")
    assert merged["jax"] == "0.0.2" and merged["resets"] == {"v": 3}
    assert merged["episode"] == {"v": 1, "jax": "0.0.1"}
    assert parity.jax_versions(merged) == ["0.0.1", "0.0.2"]


def test_each_piece_names_its_jax_version_and_parity_md_shows_them(tmp_path, monkeypatch):
    monkeypatch.setattr(
        parity.records, "PIECES", {"only": lambda domain, task, progress: {"value": 1}}
    )
    args = ["--env", "pendulum-swingup", "--records", str(tmp_path), "--pieces", "only"]
    assert parity_command.main(args) == 0
    record = parity.read_record(tmp_path, "pendulum-swingup")
    assert record["only"]["jax"] == jax.__version__
    # A piece from before pieces named their version takes its record's.
    old = {"task": "pendulum-swingup", "jax": "0.0.1", "only": {"value": 1}}
    assert parity.jax_versions(old) == ["0.0.1"]
    assert parity.jax_versions({**old, "only": {"value": 1, "jax": "0.0.2"}}) == ["0.0.2"]
    row = next(line for line in parity.render([record]).splitlines() if "pendulum-swingup" in line)
    assert row.endswith(f"jax {jax.__version__} |")


def test_runs_sharing_a_piece_measure_only_their_parts_and_the_last_completes(
    env, tmp_path, monkeypatch
):
    """Two runs split a soak's parts (one core each); together they give the same
    result as one run, and the run that saves the last part writes the record."""
    kwargs = SMALL
    whole = parity.soak(env, **kwargs)
    path = tmp_path / "soak.json"
    measure_shard, measured = parity.soaks._soak_shard, []

    def counted(run, shard, *rest, **kw):
        measured.append(shard)
        return measure_shard(run, shard, *rest, **kw)

    monkeypatch.setattr(parity.soaks, "_soak_shard", counted)
    first = parity.Progress(path, only=["shard1"])
    with pytest.raises(parity.PartsLeft) as left:
        parity.soak(env, progress=first, **kwargs)
    assert left.value.parts == ["shard0", "replay"] and measured == [1]
    assert path.exists()  # the parts stay for the other run

    second = parity.Progress(path, only=["shard0", "replay"])
    assert parity.soak(env, progress=second, **kwargs) == whole
    assert measured == [1, 0, 0] and second.resumed == ["shard1"]
    assert not path.exists()


def test_parts_saved_by_another_run_meanwhile_are_kept_and_reused(tmp_path):
    path = tmp_path / "p.json"
    mine, theirs = parity.Progress(path, only=["a"]), parity.Progress(path, only=["b"])
    assert mine.part("a", lambda: 1) == 1
    assert theirs.part("a", lambda: 99) == 1  # saved by the other run after it started
    assert theirs.part("b", lambda: 2) == 2
    assert json.loads(path.read_text())["parts"] == {"a": 1, "b": 2}  # neither lost
    assert mine.part("b", lambda: 99) == 2 and mine.resumed == ["b"]
    assert mine.part("c", lambda: 3) is None and mine.skipped == ["c"]


def test_cli_parts_are_validated_against_the_piece(capsys):
    for argv, expected in [
        (["--pieces", "soak", "--parts", "shard9"], "valid parts: shard0, shard1"),
        (["--pieces", "returns", "--parts", "shard0"], "valid parts: zero.0, zero.1"),
        (["--pieces", "soak,returns", "--parts", "shard0"], "needs exactly one of the pieces"),
        (["--pieces", "episode", "--parts", "shard0"], "needs exactly one of the pieces"),
    ]:
        assert parity_command.main(["--env", "pendulum-swingup", *argv]) == 2
        assert expected in capsys.readouterr().err
    with pytest.raises(ValueError, match="valid parts: zero.0, zero.1"):
        parity.measure_piece("pendulum", "swingup", "returns", parts=["sine"])


def test_soak_shards_are_the_tasks_and_key_its_progress(env, tmp_path):
    """A task's soak shards (`parity.settings.soak_shards`) set the soak's layout, its
    valid parts and its progress config (stacker's shards of 32 fit a session on one
    CPU core)."""
    shards = {parity.settings.soak_shards(*task) for task in jaxcontrol.ALL_TASKS}
    assert set(parity.settings.TASK_SOAK_SHARDS) <= set(jaxcontrol.ALL_TASKS)
    assert shards == {8, 32} and all(parity.SOAK_ENVS % count == 0 for count in shards)
    stack, pendulum = ("stacker", "stack_2"), ("pendulum", "swingup")
    assert parity.parts_error(["soak"], ["shard31", "replay"], [stack]) is None
    assert "valid parts: shard0" in parity.parts_error(["soak"], ["shard31"], [pendulum])
    configs = {
        (t, piece): parity.piece_progress(*t, piece, tmp_path).config
        for t in [stack, pendulum]
        for piece in ["soak", "returns"]
    }
    assert configs[stack, "soak"]["soak_shards"] == 32
    # The default's config names no shards, and returns' have none.
    assert "soak_shards" not in configs[pendulum, "soak"]
    assert "soak_shards" not in configs[stack, "returns"]
    soak = parity.soak(env, num_envs=32, steps=6, checkpoint_every=2)
    assert soak["shards"] == parity.settings.soak_shards(env.domain, env.task_name) == 8
    assert soak["steps"] == 192


def test_cli_runs_sharing_parts_write_the_record_once_all_are_saved(tmp_path, monkeypatch, capsys):
    measured, meanwhile = [], []

    def measure(name):
        measured.append(name)
        for other_run in meanwhile:
            other_run()
        return 1

    def piece(domain, task, progress):
        values = [progress.part(name, measure, name) for name in "ab"]
        progress.done()
        return {"value": sum(values)}

    def the_other_run_saves_a():
        other = parity.piece_progress("pendulum", "swingup", "long", tmp_path, ["a"])
        other.part("a", lambda: 1)

    monkeypatch.setattr(parity.records, "PIECES", {"long": piece})
    monkeypatch.setattr(parity.settings, "RESUMABLE", ("long",))
    monkeypatch.setattr(parity.settings, "piece_parts", lambda piece, shards=8: ("a", "b"))
    args = ["--env", "pendulum-swingup", "--records", str(tmp_path), "--pieces", "long", "--parts"]

    def read():
        return parity.read_record(tmp_path, "pendulum-swingup")

    progress_file = parity.progress_path(tmp_path, "pendulum-swingup", "long")
    marker = progress_file.with_suffix(".completing")

    # b alone: a is left; then a, with b saved, completes the piece in passing.
    assert parity_command.main([*args, "b"]) == 0
    assert "left to other runs: a" in capsys.readouterr().out and "long" not in read()
    assert parity_command.main([*args, "a"]) == 0 and read()["long"]["value"] == 2
    assert "all targets met" in capsys.readouterr().out
    assert measured == ["b", "a"] and not progress_file.exists()

    # Both finish together: a was skipped at b's start, and saved while b ran.
    parity.write_record(tmp_path, {"task": "pendulum-swingup", "long": {}})
    meanwhile.append(the_other_run_saves_a)
    marker.touch()  # ... and the other run has claimed the completion
    assert parity_command.main([*args, "b"]) == 0
    assert "being completed by another run" in capsys.readouterr().out
    assert read()["long"] == {} and progress_file.exists()
    marker.unlink()
    progress_file.unlink()
    assert parity_command.main([*args, "b"]) == 0  # this time, b's run claims it
    assert read()["long"]["value"] == 2 and read()["long"]["resumed_parts"] == ["a", "b"]
    assert "all targets met" in capsys.readouterr().out
    assert list(progress_file.parent.iterdir()) == []  # no parts, no marker left

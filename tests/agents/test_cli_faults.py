"""``jaxcontrol train`` under faults: SIGKILL at three points, SIGINT/SIGTERM, a full disk, run.json.

The broken runs of the kill test are subprocesses of ``toy_cli.py`` (the real
command line on the toy env) that kill themselves at a named point
(``faults.point``, set through ``JAXCONTROL_FAULT``): before the first
checkpoint, while a checkpoint is being written, and between checkpoints. The
uninterrupted run is the same command in this process, whose compilation cache
the subprocesses share. The other tests run the command in this process.
"""

import errno
import json
import os
import shutil
import signal
import subprocess
import sys

import jax
import numpy as np
import pytest
from toy_cli import TOY_ARGS, use_toy_env
from toy_env import ToyEnv

from jaxcontrol.agents.common import checkpoint as ckpt_lib
from jaxcontrol.agents.common import faults
from jaxcontrol.agents.common import run as run_lib
from jaxcontrol.agents.common.run import WALL_FIELDS
from jaxcontrol.agents.ppo import PPOConfig, make_learner
from jaxcontrol.cli import evaluate, train

pytestmark = pytest.mark.xdist_group("agents_faults")  # shares toy_xla_cache

HELPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "toy_cli.py")


@pytest.fixture(scope="module")
def straight_cli(tmp_path_factory, toy_xla_cache):
    """An uninterrupted ``jaxcontrol train`` on the toy env."""
    del toy_xla_cache
    out = str(tmp_path_factory.mktemp("cli") / "straight")
    with pytest.MonkeyPatch.context() as patch:
        use_toy_env(patch)
        assert train.main([*TOY_ARGS, "--out", out]) == 0
    return out


def _run(out, cache, fault=None, resume=False):
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "JAX_COMPILATION_CACHE_DIR": cache,
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }
    env.pop("JAXCONTROL_FAULT", None)
    if fault:
        env["JAXCONTROL_FAULT"] = fault
    argv = [sys.executable, HELPER, *TOY_ARGS, "--out", out, *(["--resume"] if resume else [])]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    return done.returncode, done.stdout + done.stderr


def _metrics(run_dir):
    return [
        {k: v for k, v in line.items() if k not in WALL_FIELDS}
        for line in run_lib.read_metrics(run_dir)
    ]


def _final_state(run_dir, step):
    config = PPOConfig(
        total_env_steps=3072,
        num_envs=16,
        unroll_length=16,
        num_minibatches=2,
        updates_per_chunk=2,
        hidden_sizes=(8, 8),
    )
    learner = make_learner(config, ToyEnv(episode_length=50))
    abstract = jax.eval_shape(learner.init, run_lib.split_run_key(5)[0])
    checkpointer = ckpt_lib.Checkpointer(os.path.join(run_dir, "checkpoints"))
    state, _ = checkpointer.restore_state(step, ckpt_lib.abstract_single_device(abstract))
    checkpointer.close()
    return jax.device_get(state)


def _complete(run_dir):
    """The steps whose checkpoint has its manifest."""
    directory = os.path.join(run_dir, "checkpoints")
    return [
        step
        for step in ckpt_lib.steps_on_disk(directory)
        if os.path.exists(os.path.join(directory, str(step), ckpt_lib.MANIFEST))
    ]


def test_killed_runs_resume_to_the_uninterrupted_result(straight_cli, tmp_path):
    cache, broken, straight = (
        jax.config.jax_compilation_cache_dir,
        str(tmp_path / "b"),
        straight_cli,
    )

    # 1. Killed after chunk 1, before the first checkpoint.
    rc, log = _run(broken, cache, "chunk-end:1:KILL")
    assert rc == -signal.SIGKILL, log
    assert len(run_lib.read_metrics(broken)) == 1
    assert ckpt_lib.steps_on_disk(os.path.join(broken, "checkpoints")) == []

    # 2. Killed while writing checkpoint 2: orbax is done, the manifest is not.
    rc, log = _run(broken, cache, "checkpoint-commit:1:KILL", resume=True)
    assert rc == -signal.SIGKILL, log
    assert "no complete checkpoint; starting from the beginning" in log
    assert os.path.isdir(os.path.join(broken, "checkpoints", "2"))
    assert _complete(broken) == []
    assert len(run_lib.read_metrics(broken)) == 2

    # 3. Killed after chunk 3, between checkpoints 2 and 4.
    rc, log = _run(broken, cache, "chunk-end:3:KILL", resume=True)
    assert rc == -signal.SIGKILL, log
    assert "checkpoints/2: incomplete" in log and "checkpoints-rejected/2" in log, log
    assert _complete(broken) == [2] and len(run_lib.read_metrics(broken)) == 3

    # 4. Resumed from checkpoint 2 to the end.
    rc, log = _run(broken, cache, resume=True)
    assert rc == 0, log
    assert "resume: from checkpoint 2" in log
    assert _metrics(broken) == _metrics(straight)
    assert [line["chunk"] for line in _metrics(broken)] == [1, 2, 3, 4, 5, 6]
    with (
        open(os.path.join(broken, "eval.json")) as f,
        open(os.path.join(straight, "eval.json")) as g,
    ):
        assert json.load(f)["returns"] == json.load(g)["returns"]
    jax.tree.map(np.testing.assert_array_equal, _final_state(straight, 6), _final_state(broken, 6))


def _verify_against_run_json(run_dir, step):
    """Checkpoint ``step`` matches its files, and belongs to the run in run.json."""
    step_dir = os.path.join(run_dir, "checkpoints", str(step))
    with open(os.path.join(step_dir, ckpt_lib.MANIFEST)) as f:
        struct = json.load(f)["structure"]
    with open(os.path.join(run_dir, "run.json")) as f:
        ckpt_lib.verify(step_dir, step, json.load(f), struct)


def _cli(args, capsys):
    rc = train.main(args)
    return rc, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("name", ["INT", "TERM"])
def test_a_signal_stops_after_the_chunk_and_says_how_to_resume(
    name, straight_cli, tmp_path, monkeypatch, capsys
):
    use_toy_env(monkeypatch)
    monkeypatch.setattr(faults, "_counts", {})
    monkeypatch.setenv("JAXCONTROL_FAULT", f"chunk-start:1:{name}")
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    out = str(tmp_path / "run")
    rc, err = _cli([*TOY_ARGS, "--out", out], capsys)
    assert rc == 128 + getattr(signal, f"SIG{name}"), err
    assert err[-1].startswith(f"stopped by SIG{name} after chunk 1 of 6; checkpoint 1 saved in ")
    assert err[-1].endswith(
        "; resume with: jaxcontrol train " + " ".join(TOY_ARGS) + f" --out {out} --resume"
    )
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
    assert len(run_lib.read_metrics(out)) == 1 and not os.path.exists(
        os.path.join(out, "eval.json")
    )
    _verify_against_run_json(out, 1)
    if name == "TERM":
        return  # the resume is the same as after SIGINT
    monkeypatch.delenv("JAXCONTROL_FAULT")
    rc, err = _cli([*TOY_ARGS, "--out", out, "--resume"], capsys)
    assert rc == 0, err
    assert _metrics(out) == _metrics(straight_cli)
    with (
        open(os.path.join(out, "eval.json")) as f,
        open(os.path.join(straight_cli, "eval.json")) as g,
    ):
        assert json.load(f)["returns"] == json.load(g)["returns"]


def test_the_cli_reports_a_full_disk_in_one_line(tmp_path, monkeypatch, capsys, toy_xla_cache):
    del toy_xla_cache
    use_toy_env(monkeypatch)
    real = ckpt_lib.write_manifest

    def write_manifest(step_dir, step, *args):
        if step == 4:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(step_dir, step, *args)

    monkeypatch.setattr(ckpt_lib, "write_manifest", write_manifest)
    out = str(tmp_path / "run")
    rc, err = _cli([*TOY_ARGS, "--out", out], capsys)
    assert rc == 1 and len(err) == 1, err
    assert err[0].startswith(
        f"error: cannot write checkpoint 4 in {out}/checkpoints: No space left"
    )
    assert "checkpoint 2 is intact; resume with: jaxcontrol train " in err[0]


@pytest.mark.parametrize("damage", ["missing", "garbled"])
def test_resume_names_a_missing_or_damaged_run_json(
    damage, straight_cli, tmp_path, monkeypatch, capsys
):
    use_toy_env(monkeypatch)
    out = str(tmp_path / "run")
    shutil.copytree(straight_cli, out)
    run_json = os.path.join(out, "run.json")
    if damage == "missing":
        os.unlink(run_json)
    else:
        with open(run_json, "wb") as f:
            f.write(bytes(range(200, 256)))
    rc, err = _cli([*TOY_ARGS, "--out", out, "--resume"], capsys)
    assert rc == 2 and len(err) == 1 and run_json in err[0], err
    rc, err = _cli([*TOY_ARGS, "--out", out], capsys)
    assert rc == 2 and "already holds a run" in err[0]


def test_evaluate_skips_a_damaged_checkpoint(straight_cli, tmp_path, monkeypatch, capsys):
    use_toy_env(monkeypatch)
    out = str(tmp_path / "run")
    shutil.copytree(straight_cli, out)
    damaged = os.path.join(out, "checkpoints", "6", "policy", "_METADATA")
    with open(damaged, "ab") as f:
        f.write(b" ")
    assert evaluate.main([out, "--episodes", "2"]) == 0
    assert f"evaluate: skipped {damaged}: " in capsys.readouterr().err
    with open(os.path.join(out, "eval.json")) as f:
        assert json.load(f)["env_steps"] == 2048  # checkpoint 4 of 6


def _with_steps(steps):
    """TOY_ARGS with another budget."""
    args = list(TOY_ARGS)
    args[args.index("--steps") + 1] = str(steps)
    return args


def _run_json(out):
    with open(os.path.join(out, "run.json")) as f:
        return json.load(f)


def test_resume_with_a_larger_budget_extends_the_run(straight_cli, tmp_path, monkeypatch, capsys):
    """A finished run of 3 chunks, resumed with the budget of 6: the uninterrupted run of 6."""
    use_toy_env(monkeypatch)
    out = str(tmp_path / "run")
    rc, err = _cli([*_with_steps(1536), "--out", out], capsys)
    assert rc == 0, err
    rc, err = _cli([*_with_steps(1024), "--out", out, "--resume"], capsys)
    shorter = (
        "error: --resume with --steps 1024: the run's budget is 1536 env steps; "
        "a run can be extended, not shortened"
    )
    assert rc == 2 and err == [shorter], err
    rc, err = _cli([*TOY_ARGS, "--out", out, "--resume"], capsys)
    assert rc == 0, err
    assert "resume: extending the run from 1536 to 3072 env steps" in err
    assert any(line.startswith("resume: from checkpoint 3 in ") for line in err), err
    assert _run_json(out) == _run_json(straight_cli)
    assert _metrics(out) == _metrics(straight_cli)
    with (
        open(os.path.join(out, "eval.json")) as f,
        open(os.path.join(straight_cli, "eval.json")) as g,
    ):
        assert json.load(f)["returns"] == json.load(g)["returns"]
    jax.tree.map(np.testing.assert_array_equal, _final_state(straight_cli, 6), _final_state(out, 6))


@pytest.mark.parametrize("case", ["under-one-chunk", "annealed"])
def test_resume_refuses_a_budget_the_run_cannot_take(case, tmp_path, monkeypatch, capsys):
    """A budget under one chunk made the run's chunks shorter; an annealed step size
    was scheduled over the budget. Neither run can be extended, and run.json stays."""
    use_toy_env(monkeypatch)
    out = str(tmp_path / "run")
    first, extra = (
        (256, []) if case == "under-one-chunk" else (1024, ["--set", "anneal_learning_rate=True"])
    )
    rc, err = _cli([*_with_steps(first), *extra, "--out", out], capsys)
    assert rc == 0, err
    saved = _run_json(out)
    rc, err = _cli([*TOY_ARGS, *extra, "--out", out, "--resume"], capsys)
    assert rc == 2 and len(err) == 1, err
    if case == "under-one-chunk":
        assert "its chunks hold 256 env steps, and the new budget's would hold 512" in err[0]
    else:
        assert "anneal_learning_rate decays the step size to 0 over that budget" in err[0]
        assert "the run's budget is 1024 env steps" in err[0]
    assert _run_json(out) == saved


def test_a_run_from_before_a_new_field_resumes(straight_cli, tmp_path, monkeypatch, capsys):
    """A run from before `stagger_episodes` recorded the field neither in run.json nor
    in its checkpoints' manifests. It ran in lock-step, and resumes so when told."""
    use_toy_env(monkeypatch)
    out = str(tmp_path / "run")
    shutil.copytree(straight_cli, out)
    shutil.rmtree(os.path.join(out, "checkpoints", "6"))
    saved = _run_json(out)
    del saved["config"]["stagger_episodes"]
    with open(os.path.join(out, "run.json"), "w") as f:
        json.dump(saved, f)
    manifest_path = os.path.join(out, "checkpoints", "4", ckpt_lib.MANIFEST)
    with open(manifest_path) as f:
        manifest = json.load(f)
    del manifest["run"]["config"]["stagger_episodes"]
    with open(manifest_path, "wb") as f:
        f.write(ckpt_lib._canonical(manifest))  # pylint: disable=protected-access
    rc, err = _cli([*TOY_ARGS, "--out", out, "--resume"], capsys)
    assert rc == 2 and "stagger_episodes False != True" in err[0], err
    lock_step = [*TOY_ARGS, "--set", "stagger_episodes=False"]
    rc, err = _cli([*lock_step, "--out", out, "--resume"], capsys)
    assert rc == 0, err
    assert any(line.startswith("resume: from checkpoint 4 in ") for line in err), err
    # Staggering shapes only the first reset: chunks 5 and 6 are the straight run's.
    assert _metrics(out) == _metrics(straight_cli)


def test_periodic_evaluations_land_on_the_chunks_that_reach_each_multiple(straight_cli):
    """--eval-every 1000 with 512-step chunks: after chunks 2, 4 and 6 (1024, 2048 and
    3072 env steps), 3 episodes each; the killed-and-resumed runs above compare these
    lines too, so a resumed run evaluates with the same keys."""
    lines = [json.loads(line) for line in open(os.path.join(straight_cli, "metrics.jsonl"))]
    evaluated = [(line["chunk"], line["env_steps"]) for line in lines if "eval_mean_return" in line]
    assert evaluated == [(2, 1024), (4, 2048), (6, 3072)]
    for line in lines:
        if "eval_returns" in line:
            returns = line["eval_returns"]
            assert line["eval_episodes"] == len(returns) == 3
            assert line["eval_mean_return"] == pytest.approx(sum(returns) / 3)

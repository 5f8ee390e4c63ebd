"""``jaxcontrol train`` / ``evaluate``: errors, outputs, resume, re-evaluation."""

import argparse
import json
import os
import sys

import jax
import pytest
from agent_configs import TINY_PPO_CLI
from toy_cli import TOY_ARGS, use_toy_env

from jaxcontrol import baselines, cpu_physics
from jaxcontrol.agents.common import run as run_lib
from jaxcontrol.agents.common import run_dir
from jaxcontrol.agents.common.run import WALL_FIELDS
from jaxcontrol.cli import evaluate, train

# One xdist worker per module, so module-scoped fixtures build once under
# `pytest -n 2 --dist loadgroup`.
pytestmark = pytest.mark.xdist_group("agents_cli")

TINY_PPO = [*TINY_PPO_CLI, "--eval-episodes", "2", "--checkpoint-every", "4"]


def _one_error_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--env", "cartpole-nope", "--agent", "ppo", "--steps", "10"], "unknown task"),
        (
            ["--env", "cheetah-rum", "--agent", "ppo", "--steps", "10"],
            "did you mean 'cheetah-run'?",
        ),
        (["--env", "cartpole", "--agent", "ppo", "--steps", "10"], "unknown task"),
        (["--env", "cartpole-balance", "--agent", "dqn", "--steps", "10"], "unknown agent"),
        (["--env", "cartpole-balance", "--agent", "ppo", "--steps", "0"], "an integer in [1, "),
        (["--env", "cartpole-balance", "--agent", "ppo", "--steps", "-5"], "an integer in [1, "),
        (
            ["--env", "cartpole-balance", "--agent", "ppo", "--steps", "10", "--set", "nmu_envs=3"],
            "unknown ppo config field 'nmu_envs'",
        ),
        (
            [
                "--env",
                "cartpole-balance",
                "--agent",
                "sac",
                "--steps",
                "10",
                "--set",
                "batch_size=0",
            ],
            "batch_size must be > 0",
        ),
        (["--env", "cartpole-balance", "--agent", "ppo"], "required"),
        (["--env", "cartpole-balance", "--agent", "ppo", "--steps", "10", "--resume"], "no run"),
        (
            ["--env", "cartpole-balance", "--agent", "ppo", "--steps", "10", "--devices", "64"],
            "devices exist",
        ),
        (
            ["--env", "cartpole-balance", "--agent", "ppo", "--steps", "10", "--process-id", "1"],
            "need --distributed",
        ),
    ],
)
def test_bad_flags_fail_with_one_line_and_write_nothing(args, expected, tmp_path, capsys):
    out = tmp_path / "run"
    assert train.main([*args, "--out", str(out)]) == 2
    assert expected in _one_error_line(capsys)
    assert not out.exists()


def test_unwritable_out(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    rc = train.main(
        [
            "--env",
            "cartpole-balance",
            "--agent",
            "ppo",
            "--steps",
            "10",
            "--out",
            str(blocker / "run"),
        ]
    )
    assert rc == 2 and "cannot write to --out" in _one_error_line(capsys)


def test_evaluate_without_run(tmp_path, capsys):
    assert evaluate.main([str(tmp_path)]) == 2
    assert "no run" in _one_error_line(capsys)


class Interrupt(Exception):
    pass


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory, xla_cache):
    """One tiny PPO run on the real cartpole through the CLI (2 chunks)."""
    del xla_cache
    out = str(tmp_path_factory.mktemp("cli") / "straight")
    assert train.main([*TINY_PPO, "--out", out]) == 0
    return out


def test_train_writes_outputs(straight_run):
    for name in ("run.json", "metrics.jsonl", "learning_curve.png", "eval.json"):
        assert os.path.getsize(os.path.join(straight_run, name)) > 0, name
    with open(os.path.join(straight_run, "eval.json")) as f:
        result = json.load(f)
    assert {"mean_return", "stderr", "episodes", "env_steps", "wall_seconds"} <= set(result)
    assert result["episodes"] == 2 and result["env_steps"] == 2048
    assert 0.0 <= result["mean_return"] <= 1000.0
    assert result["env"] == "cartpole-balance"
    assert result["published"] == baselines.reference("cartpole", "balance")
    assert len(run_lib.read_metrics(straight_run)) == 2
    assert sorted(os.listdir(os.path.join(straight_run, "checkpoints"))) == ["1", "2"]


def test_existing_run_and_mismatched_resume_are_refused(straight_run, capsys):
    with open(os.path.join(straight_run, "eval.json")) as f:
        before = f.read()
    assert train.main([*TINY_PPO, "--out", straight_run]) == 2
    assert "already holds a run" in _one_error_line(capsys)
    assert (
        train.main([*TINY_PPO, "--set", "learning_rate=0.5", "--out", straight_run, "--resume"])
        == 2
    )
    assert "learning_rate" in _one_error_line(capsys)
    assert train.main([*TINY_PPO, "--seed", "4", "--out", straight_run, "--resume"]) == 2
    assert "seed" in _one_error_line(capsys)
    ran_on = cpu_physics.default_backend()  # the run named none
    other = next(b for b in cpu_physics.BACKENDS if b != ran_on)
    resumed_on_other = [*TINY_PPO, "--backend", other, "--out", straight_run, "--resume"]
    assert train.main(resumed_on_other) == 2
    assert f"backend {ran_on!r} != {other!r}" in _one_error_line(capsys)
    with open(os.path.join(straight_run, "eval.json")) as f:
        assert f.read() == before


def test_the_default_backend_is_the_machines_and_a_resume_keeps_the_runs(tmp_path):
    """No --backend: C MuJoCo when JAX runs on the CPU, MJX on an accelerator; a
    resumed run keeps the backend it was started on, on any machine."""
    expected = "mujoco" if jax.default_backend() == "cpu" else "mjx"
    assert cpu_physics.default_backend() == expected
    fresh = argparse.Namespace(resume=False, distributed=False, out=str(tmp_path))
    assert train.default_backend(fresh) == expected
    multi_host = argparse.Namespace(resume=False, distributed=True, out=str(tmp_path))
    assert train.default_backend(multi_host) == "mjx"  # JAX must not start before initialize
    for saved, kept in (({"backend": "mujoco"}, "mujoco"), ({}, "mjx")):  # {}: before --backend
        with open(tmp_path / "run.json", "w") as f:
            json.dump({"env": "cartpole-balance", **saved}, f)
        resumed = argparse.Namespace(resume=True, distributed=False, out=str(tmp_path))
        assert train.default_backend(resumed) == kept


def test_train_on_the_other_backend(tmp_path, xla_cache):
    """--backend names the physics the machine would not pick (MJX on a CPU); the
    run records it, and evaluation rebuilds the task on it."""
    del xla_cache
    other = next(b for b in cpu_physics.BACKENDS if b != cpu_physics.default_backend())
    out = str(tmp_path / other)
    assert train.main([*TINY_PPO, "--backend", other, "--out", out]) == 0
    with open(os.path.join(out, "run.json")) as f:
        assert run_dir.backend(json.load(f)) == other
    with open(os.path.join(out, "eval.json")) as f:
        trained = json.load(f)
    assert trained["episodes"] == 2 and trained["env_steps"] == 2048
    assert evaluate.main([out, "--episodes", "2"]) == 0
    with open(os.path.join(out, "eval.json")) as f:
        assert json.load(f)["returns"] == trained["returns"]


def test_evaluate_rewrites_eval_json(straight_run):
    os.unlink(os.path.join(straight_run, "eval.json"))
    # Same episode count as training's evaluation: the compiled program is reused.
    assert evaluate.main([straight_run, "--episodes", "2"]) == 0
    with open(os.path.join(straight_run, "eval.json")) as f:
        again = json.load(f)
    assert again["episodes"] == 2 and again["env_steps"] == 2048


def test_evaluate_in_dm_control(straight_run, capsys):
    """The run's policy inside dm_control's own cartpole: a file beside eval.json,
    and a line that sets both returns side by side."""
    assert evaluate.main([straight_run, "--episodes", "2", "--in-dm-control"]) == 0
    with open(os.path.join(straight_run, "eval_dm_control.json")) as f:
        theirs = json.load(f)
    assert theirs["episodes"] == 2 and theirs["env_steps"] == 2048
    assert theirs["env"] == "cartpole-balance" and theirs["pixels"] is False
    assert 0.0 <= theirs["mean_return"] <= 1000.0 and len(theirs["returns"]) == 2
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("eval in dm_control: mean_return") and "in jaxcontrol" in line


def test_evaluate_in_dm_control_without_dm_control(straight_run, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dm_control", None)  # `import dm_control` fails
    assert evaluate.main([straight_run, "--in-dm-control"]) == 2
    assert "pip install 'jaxcontrol[test]'" in _one_error_line(capsys)


@pytest.mark.slow
def test_cli_resume_on_real_env_is_bit_identical(straight_run, tmp_path, monkeypatch):
    broken = str(tmp_path / "broken")
    real_loop = run_lib.train_loop

    def crashing_loop(*args, **kwargs):
        def crash(chunk, _):
            if chunk == 0:
                raise Interrupt()

        return real_loop(*args, **{**kwargs, "on_chunk": crash})

    monkeypatch.setattr(run_lib, "train_loop", crashing_loop)
    with pytest.raises(Interrupt):
        train.main([*TINY_PPO, "--out", broken])
    monkeypatch.setattr(run_lib, "train_loop", real_loop)
    assert train.main([*TINY_PPO, "--out", broken, "--resume"]) == 0
    strip = lambda lines: [{k: v for k, v in l.items() if k not in WALL_FIELDS} for l in lines]
    assert strip(run_lib.read_metrics(straight_run)) == strip(run_lib.read_metrics(broken))
    with open(os.path.join(broken, "eval.json")) as f:
        resumed = json.load(f)
    with open(os.path.join(straight_run, "eval.json")) as f:
        assert json.load(f)["returns"] == resumed["returns"]


def test_action_repeat_is_part_of_the_run(tmp_path, monkeypatch, capsys):
    """--action-repeat trains on ActionRepeat(env, k), records k and evaluates under it."""
    use_toy_env(monkeypatch)
    out = str(tmp_path / "repeat")
    args = [*TOY_ARGS, "--action-repeat", "2", "--out", out]
    assert train.main(args) == 0
    with open(os.path.join(out, "run.json")) as f:
        assert json.load(f)["action_repeat"] == 2
    with open(os.path.join(out, "eval.json")) as f:
        result = json.load(f)
    # The toy's 50 steps are 25 of ActionRepeat(2); a return sums all 50 rewards.
    assert result["action_repeat"] == 2 and 0.0 < result["mean_return"] <= 50.0
    capsys.readouterr()
    assert train.main([*args[:-4], "--action-repeat", "3", "--out", out, "--resume"]) == 2
    assert "action_repeat 2 != 3" in _one_error_line(capsys)
    assert evaluate.main([out, "--episodes", "2"]) == 0
    with open(os.path.join(out, "eval.json")) as f:
        assert json.load(f)["returns"] == result["returns"]

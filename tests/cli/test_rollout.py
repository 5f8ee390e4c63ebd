"""Tests for `jaxcontrol rollout`, the vectorised random-policy rollout."""

from __future__ import annotations

from jaxcontrol.cli import rollout


def test_rollout_runs_and_reports_throughput(capsys):
    status = rollout.main(["--env", "cartpole-balance", "--num-envs", "8", "--steps", "20"])
    out = capsys.readouterr().out
    assert status == 0
    assert "cartpole-balance" in out
    assert any("steps/s" in line for line in out.splitlines())
    assert "mean" in out and "std" in out


def test_unknown_env_lists_valid_names(capsys):
    status = rollout.main(["--env", "cartpol-swingup"])
    err = capsys.readouterr().err
    assert status == 2
    assert len(err.strip().splitlines()) == 1
    assert "cartpole" in err and "acrobot" in err


def test_env_without_task_lists_valid_names(capsys):
    status = rollout.main(["--env", "cartpole"])
    err = capsys.readouterr().err
    assert status == 2
    assert "cartpole-swingup" in err and "point_mass-easy" in err

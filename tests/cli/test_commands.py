"""The command line as one tree: its help, its dispatch, and the one DOMAIN-TASK reader."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import jaxcontrol
from jaxcontrol import cli, registry
from jaxcontrol.cli import args as cli_args
from jaxcontrol.cli import check, parity

TOOLKIT = {"args", "compile_cache"}  # the modules of jaxcontrol.cli that are not commands


def test_every_command_module_is_listed_and_every_listed_command_has_a_module():
    modules = {m.name for m in pkgutil.iter_modules(cli.__path__)} - TOOLKIT
    assert modules == {cli.command_module(name).__name__.rsplit(".", 1)[1] for name in cli.COMMANDS}


def test_help_lists_every_command_with_its_summary(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in cli.COMMANDS:
        summary = cli.command_module(name).SUMMARY
        assert f"  {name}" in out and summary in out


def test_python_dash_m_jaxcontrol_is_the_same_command_line():
    done = subprocess.run(
        [sys.executable, "-m", "jaxcontrol", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and all(name in done.stdout for name in cli.COMMANDS)


def test_an_unknown_command_suggests_the_close_one(capsys):
    assert cli.main(["evalute"]) == 2
    assert "did you mean 'evaluate'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, expected",
    [
        ("cartpole-swingup", ("cartpole", "swingup")),
        ("point_mass-easy", ("point_mass", "easy")),
        ("humanoid_CMU-run", ("humanoid_CMU", "run")),
        ("swimmer-swimmer15", ("swimmer", "swimmer15")),
    ],
)
def test_parse_task_id_splits_at_the_dash(text, expected):
    assert registry.parse_task_id(text) == expected


@pytest.mark.parametrize(
    "text, close",
    [
        ("cartpole-swingupp", "'cartpole-swingup'"),
        ("cartpole", "'cartpole-"),  # the domain alone: its tasks come first
        ("cartpole_swingup", "'cartpole-swingup'"),
        ("walker-walk-v0", "'walker-walk'"),
    ],
)
def test_parse_task_id_names_close_matches(text, close):
    with pytest.raises(ValueError, match="did you mean") as error:
        registry.parse_task_id(text)
    message = str(error.value)
    assert message.startswith(f"unknown task {text!r} (DOMAIN-TASK)")
    assert close in message.split("valid tasks:")[0]
    assert all(f"{d}-{t}" in message for d, t in jaxcontrol.ALL_TASKS)


def test_parse_env_is_a_usage_error():
    with pytest.raises(cli_args.UsageError, match="unknown task 'nope'"):
        cli_args.parse_env("nope")


def test_list_by_tag(capsys):
    assert cli.main(["list", "--tag", "benchmarking"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{d}-{t}\tbenchmarking" for d, t in jaxcontrol.BENCHMARKING]
    assert len(lines) == 28


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], "give the task as --env DOMAIN-TASK"),
        (["--env", "cheetah-rum"], "did you mean 'cheetah-run'"),
        (["cheetah"], "give the task as --env DOMAIN-TASK"),
        (["cheetah", "run", "--env", "cheetah-run"], "give the task as --env DOMAIN-TASK"),
        (["--env", "cheetah-run", "--states", "0"], "expected an integer in [1, 100000]"),
        (["--env", "cheetah-run", "--bogus"], "unknown flag '--bogus'"),
    ],
)
def test_check_usage_errors_are_one_line(argv, expected, capsys):
    assert check.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and expected in err[0]


def test_check_reads_the_older_domain_task_words_with_a_warning(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(check, "_run", lambda domain, task, args: seen.append((domain, task)) or 0)
    assert check.main(["cheetah", "run"]) == 0
    assert seen == [("cheetah", "run")]
    assert "use --env cheetah-run" in capsys.readouterr().err
    assert check.main(["--env", "walker-walk"]) == 0
    assert seen[-1] == ("walker", "walk")


def test_parity_takes_env_lists_and_the_older_positional_ids(monkeypatch, capsys):
    from jaxcontrol.parity import campaign

    seen = []
    monkeypatch.setattr(
        campaign, "measure_tasks", lambda tasks, pieces, directory, **kw: seen.append(tasks) or 0
    )
    argv = ["--pieces", "episode", "--records", "unused"]
    assert parity.main(["--env", "cartpole-balance,walker-walk", *argv]) == 0
    assert parity.main(["--env", "cartpole-balance", "--env", "walker-walk", *argv]) == 0
    assert capsys.readouterr().err == ""
    assert parity.main(["cartpole-balance", "walker-walk", *argv]) == 0
    assert "use --env cartpole-balance,walker-walk" in capsys.readouterr().err
    assert seen == [[("cartpole", "balance"), ("walker", "walk")]] * 3
    assert parity.main(["--env", "walker-wlak", *argv]) == 2
    assert "did you mean 'walker-walk'" in capsys.readouterr().err


def test_check_measures_a_task_against_dm_control(capsys):
    import json

    assert check.main(["--env", "pendulum-swingup", "--states", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report and isinstance(report, dict)

"""``jaxcontrol results``: its usage errors, and collecting and rendering end to end."""

from __future__ import annotations

import sys

import pytest

from jaxcontrol import cli
from jaxcontrol.cli import results


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--collect", "{tmp}"], "not a sweep directory (no sweep.json)"),
        (["--no-render"], "--no-render without --collect does nothing"),
        (["--out", "{tmp}/results.html"], "expected a Markdown file (.md)"),
        (["--records", "{tmp}/file"], "not a directory"),
        (["--reps", "10"], "expected an integer in [100, 1000000]"),
        (["--colect", "x"], "unknown flag '--colect'"),
        (["extra"], "unexpected argument 'extra'"),
    ],
)
def test_usage_errors_are_one_line(argv, expected, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert results.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and expected in err[0]


def test_a_missing_rliable_names_the_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "rliable.library", None)  # import raises ImportError
    assert results.main(["--records", str(tmp_path), "--out", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs the results extra" in err[0]
    assert "pip install 'jaxcontrol[results]'" in err[0]
    assert not (tmp_path / "r.md").exists()


def test_the_command_is_listed():
    assert "results" in cli.COMMANDS
    assert cli.command_module("results").SUMMARY == results.SUMMARY


def test_collect_then_render(sweep, tmp_path, capsys):
    records, out = tmp_path / "records", tmp_path / "docs" / "results.md"
    argv = ["--collect", str(sweep), "--records", str(records), "--out", str(out)]
    assert results.main([*argv, "--reps", "200", "--no-figures"]) == 0
    printed = capsys.readouterr().out
    assert f"{sweep}: 4 finished runs collected into {records}" in printed
    assert "not finished, not collected: " in printed and "walker-walk/seed-0" in printed
    assert (records / "sac" / "cheetah-run" / "seed-1" / "curve.json").is_file()
    assert "| walker-walk | not run |" in out.read_text()
    assert not (out.parent / "results").exists()


def test_a_broken_record_is_one_error_line(records_dir, tmp_path, capsys):
    (records_dir / "sac" / "cheetah-run" / "seed-1" / "eval.json").unlink()
    argv = ["--records", str(records_dir), "--out", str(tmp_path / "r.md"), "--no-figures"]
    assert results.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "incomplete record (no eval.json)" in err[0]

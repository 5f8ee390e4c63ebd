"""docs/results.md from the records: deterministic, with not-run tasks and missed targets."""

from __future__ import annotations

from jaxcontrol.results import page

REPS = 200


def _row(markdown: str, task: str) -> str:
    return next(line for line in markdown.splitlines() if line.startswith(f"| {task} |"))


def test_the_same_records_give_the_same_markdown(runs):
    assert page.render(runs, reps=REPS) == page.render(list(runs), reps=REPS)


def test_writing_twice_gives_the_same_bytes(records_dir, tmp_path):
    out = tmp_path / "docs" / "results.md"
    page.write(records_dir, out, reps=REPS, draw_figures=False)
    first = out.read_bytes()
    page.write(records_dir, out, reps=REPS, draw_figures=False)
    assert out.read_bytes() == first


def test_the_task_rows_hold_ours_and_the_published_figures(runs):
    markdown = page.render(runs, reps=REPS)
    cartpole = _row(markdown, "cartpole-swingup").split(" | ")
    assert cartpole[1:7] == [
        "2 (seeds 0, 1)",
        "150.0 [-485.3, 785.3]",
        "850.0 [214.7, 1485.3]",
        "860.0 [732.9, 987.1]",
        "860.0 / 774.0",
        "1 of 2",
    ]
    # CURL / DrQ at 100k and 500k, the TD-MPC2 repository's "500k", D4PG.
    assert cartpole[7:] == ["835±22 / 812±45", "848±15 / 870±7", "835±23", "876±9", "845.5±1.2 |"]


def test_a_task_without_runs_shows_as_not_run(runs):
    markdown = page.render(runs, reps=REPS)
    assert _row(markdown, "walker-walk").split(" | ")[1] == "not run"
    assert "not run" not in _row(markdown, "cheetah-run")
    assert "acrobot-swingup_sparse" in markdown  # every benchmarking task is listed


def test_the_page_says_which_targets_are_missed_and_by_how_much(runs):
    """The fake sweep's (d) is missed; its PlaNet means are provisional (2 of 5 seeds),
    listed with their side of the figure, and (a) is not decided by them."""
    markdown = page.render(runs, reps=REPS)
    assert "| (d) every final policy" in markdown and "| **missed** |" in markdown
    assert "- cartpole-swingup seed 1: dm_control 700.0 vs 870.0" in markdown
    assert "Not decided yet, for want of runs: (a), (b), (c), (e)." in markdown
    assert "Provisional, (a): tasks with fewer seeds than planned so far." in markdown
    assert "- cheetah-run: 650.0, below 765.0 so far (provisional: 2 of 5 seeds)" in markdown


def test_no_records_give_a_page_of_tasks_not_run(tmp_path):
    out = tmp_path / "results.md"
    assert page.write(tmp_path / "absent", out, reps=REPS) == [out]
    markdown = out.read_text()
    assert markdown.count("| not run |") == 28
    assert "No target is missed." in markdown and "![" not in markdown


def test_the_figures_are_drawn_linked_and_stale_ones_removed(records_dir, tmp_path):
    out = tmp_path / "docs" / "results.md"
    stale = tmp_path / "docs" / "results" / "curves-ppo.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old")
    written = page.write(records_dir, out, reps=REPS)
    names = sorted(p.name for p in written[1:])
    assert names == ["curves-sac.png", "profile-sac.png"]
    for path in written[1:]:
        assert path.read_bytes().startswith(b"\x89PNG")
    markdown = out.read_text()
    assert "](results/curves-sac.png)" in markdown and "](results/profile-sac.png)" in markdown
    assert not stale.exists()

"""The suite report's published scores (``jaxcontrol.baselines``)."""

import pytest

import jaxcontrol
from jaxcontrol import baselines


def test_both_tables_cover_the_same_28_tasks():
    tasks = baselines.tasks()
    assert len(tasks) == 28
    for table in baselines.TABLES:
        for domain, task in tasks:
            row = baselines.scores(domain, task, table)
            assert set(row) == set(baselines.AGENTS)
            assert all(0.0 <= s.mean <= 1000.0 and s.stderr >= 0.0 for s in row.values())


def test_every_benchmarking_task_we_port_has_scores():
    ported = set(jaxcontrol.BENCHMARKING)
    assert ported, "no task is tagged benchmarking"
    assert ported <= set(baselines.tasks())


def test_report_rows_are_labelled_by_the_report_order():
    # Table 1 of the report: D4PG after 1e8 steps on cartpole swingup, then swingup_sparse
    # (the HTML version of the report mislabels the latter).
    assert baselines.score("cartpole", "swingup") == (845.5, 1.2)
    assert baselines.score("cartpole", "swingup_sparse") == (808.4, 4.4)
    assert baselines.score("cartpole", "balance", "a3c", "after_24_hours") == (999.0, 0.0)


def test_reference_is_json_ready_and_none_for_unbenchmarked_tasks():
    ref = baselines.reference("point_mass", "easy")
    assert ref["after_1e8_steps"]["d4pg"] == {"mean": 977.3, "stderr": 0.6}
    assert baselines.reference("point_mass", "hard") is None


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: baselines.scores("cartpole", "nope"), "tasks with scores: acrobot-swingup"),
        (lambda: baselines.scores("cartpole", "balance", "after_1e9"), "after_1e8_steps"),
        (lambda: baselines.score("cartpole", "balance", "ppo"), "a3c, d4pg, d4pg_pixels, ddpg"),
    ],
)
def test_bad_names_list_the_valid_choices(call, message):
    with pytest.raises(ValueError, match=message):
        call()

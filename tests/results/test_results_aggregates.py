"""Aggregates over task sets: our IQM beside the published task means' IQM."""

from __future__ import annotations

import pytest
from scipy import stats as scipy_stats

from jaxcontrol.results import aggregates, published


def test_the_task_sets():
    sets = aggregates.task_sets([("cheetah", "run")])
    assert [(s.label, len(s.tasks), s.control_steps) for s in sets] == [
        ("all 1 tasks run", 1, 1_000_000),
        ("the TD-MPC2 repository's 22", 22, 1_000_000),
        ("the 6 PlaNet tasks", 6, 100_000),
        ("the 6 PlaNet tasks", 6, 500_000),
    ]


def test_our_iqm_over_the_tasks_run_by_hand(runs):
    task_set = aggregates.task_sets([("cartpole", "swingup"), ("cheetah", "run")])[0]
    a = aggregates.aggregate(runs, task_set, reps=200)
    # Scores 0.85, 0.87, 0.70, 0.72: the middle two are 0.72 and 0.85.
    assert a.iqm.mean == pytest.approx(0.785)
    assert a.iqm_of_means == pytest.approx(0.785)  # two task means, 0.86 and 0.71
    assert (a.measured, a.runs) == (2, 2)


def test_a_task_set_not_fully_run_is_counted_not_aggregated(runs):
    task_set = aggregates.task_sets([])[1]
    a = aggregates.aggregate(runs, task_set, reps=200)
    assert (a.measured, a.iqm, a.iqm_of_means) == (2, None, None)
    sac = [published.figure("tdmpc2_repo", "sac", *k, 1_000_000).mean for k in task_set.tasks]
    expected = scipy_stats.trim_mean(sac, 0.25) / 1000
    assert dict(a.published)["SAC"] == pytest.approx(expected)


def test_task_means(runs):
    means = aggregates.task_means(runs, [("cartpole", "swingup"), ("walker", "walk")], 500_000)
    assert means == {("cartpole", "swingup"): 850.0}

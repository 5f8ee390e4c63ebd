"""The learning targets, met or missed from hand-made values."""

from __future__ import annotations

import pytest

import jaxcontrol
from jaxcontrol.results import published, stats, targets


def _summaries(values: dict, steps: int, seeds: int | None = None) -> dict:
    """TaskSummaries whose mean at `steps` is the given value, each with `seeds` seeds
    (default: the task's planned number, so that its mean is final)."""
    out = {}
    for key, value in values.items():
        n = targets.planned_seeds(key) if seeds is None else seeds
        at = {m: None for m in stats.MILESTONES}
        at[steps] = stats.Interval(value, None, None, n)
        out[key] = stats.TaskSummary(
            *key,
            tuple(range(n)),
            at,
            stats.Interval(value, None, None, n),
            None,
            (None,) * n,
            (1.0,) * n,
            (1.0,) * n,
        )
    return out


def test_the_published_figures_are_the_sources():
    assert published.figure("curl", "sac", "cheetah", "run", 500_000)[-2:] == (795.0, 30.0)
    assert published.figure("drq", "sac", "walker", "walk", 100_000)[-2:] == (604.0, 317.0)
    # The TD-MPC2 repository's "500k" row is 1M control steps.
    sac = published.figure("tdmpc2_repo", "sac", "humanoid", "stand", 1_000_000)
    assert (sac.label, sac.mean, sac.std) == ("500k", 5.0, 1.0)
    assert len(published.tasks("tdmpc2_repo", "sac")) == 22
    assert len(published.tasks("curl")) == 6
    assert published.d4pg("cartpole", "swingup").mean == 845.5


def test_a_task_short_of_its_seeds_is_provisional(runs):
    """The fake sweep's two seeds of each PlaNet task are fewer than the five planned:
    their means are shown, and the target stays pending whichever side they fall."""
    result = targets.planet_500k(stats.by_task(runs, "sac"))
    assert result.status == targets.PENDING and result.misses == ()
    assert result.summary == "0 of 6 reached, 0 missed, 6 not final yet (2 of them provisional)"
    assert result.provisional == (
        "cartpole-swingup: 850.0, above 833.0 so far (provisional: 2 of 5 seeds)",
        "cheetah-run: 650.0, below 765.0 so far (provisional: 2 of 5 seeds)",
    )
    assert targets.planned_seeds(("cheetah", "run")) == 5
    assert targets.planned_seeds(("hopper", "hop")) == 3


def test_a_planet_target_is_missed_by_the_amount():
    figures = {k: published.figure("curl", "sac", *k, 500_000) for k in published.PLANET_TASKS}
    below = {("cheetah", "run"): 650.0}
    result = targets.planet_500k(_summaries(below, 500_000))
    assert result.status == targets.MISSED
    assert result.misses == ("cheetah-run: 650.0 < CURL's mean - std 765.0 (short by 115.0)",)
    assert result.summary == "0 of 6 reached, 1 missed, 5 not final yet"
    at_figure = {k: f.mean - f.std for k, f in figures.items()}
    four_seeds = targets.planet_500k(_summaries(at_figure, 500_000, seeds=4))
    assert four_seeds.status == targets.PENDING and len(four_seeds.provisional) == 6


def test_the_planet_target_is_met_at_the_figure_itself():
    figures = {k: published.figure("curl", "sac", *k, 500_000) for k in published.PLANET_TASKS}
    at_figure = {k: f.mean - f.std for k, f in figures.items()}
    assert targets.planet_500k(_summaries(at_figure, 500_000)).status == targets.MET
    del at_figure["walker", "walk"]
    assert targets.planet_500k(_summaries(at_figure, 500_000)).status == targets.PENDING


def test_the_d4pg_target_counts_tasks():
    tasks = list(jaxcontrol.BENCHMARKING)
    d4pg = {k: published.d4pg(*k).mean for k in tasks}
    above = {k: d4pg[k] for k in tasks[:14]}
    assert targets.d4pg_within_1m(_summaries(above, 1_000_000)).status == targets.MET
    thirteen = {k: d4pg[k] for k in tasks[:13]}
    assert targets.d4pg_within_1m(_summaries(thirteen, 1_000_000)).status == targets.PENDING
    # 13 reached and 15 below: 14 can no longer be reached.
    below = thirteen | {k: d4pg[k] - 1.0 for k in tasks[13:]}
    result = targets.d4pg_within_1m(_summaries(below, 1_000_000))
    assert result.status == targets.MISSED and len(result.misses) == 15
    assert "(short by 1.0)" in result.misses[0]


def test_the_tdmpc2_target_needs_the_count_and_the_iqm():
    tasks = published.tasks("tdmpc2_repo", "sac")
    theirs = {k: published.figure("tdmpc2_repo", "sac", *k, 1_000_000).mean for k in tasks}
    better = {k: v + 10.0 for k, v in theirs.items()}
    assert targets.tdmpc2_sac_1m(_summaries(better, 1_000_000)).status == targets.MET
    equal = dict(theirs)  # every task reached, but the IQM is not above theirs
    result = targets.tdmpc2_sac_1m(_summaries(equal, 1_000_000))
    assert result.status == targets.MISSED and result.misses[-1].startswith("IQM:")
    # 5 tasks below: 17 of 22, short of 18 whatever the IQM.
    worse = {k: (theirs[k] - 1.0 if i < 5 else theirs[k] + 50.0) for i, k in enumerate(tasks)}
    assert targets.tdmpc2_sac_1m(_summaries(worse, 1_000_000)).status == targets.MISSED


def test_the_transfer_target_names_the_policy_outside(runs):
    result = targets.transfer_all(runs)
    assert result.status == targets.MISSED
    assert result.misses == (
        "cartpole-swingup seed 1: dm_control 700.0 vs 870.0 (off by 170.0, allowed 43.5)",
    )
    fine = [r for r in runs if not (r.task == "swingup" and r.seed == 1)]
    assert targets.transfer_all(fine).status == targets.MET


def test_the_cost_target(runs):
    # Four runs, each 7200 CPU seconds on 2 cores: 4 box-hours, 84 projected for 84 runs.
    result = targets.cost(runs)
    assert result.status == targets.PENDING
    assert result.summary == (
        "4.00 box-hours over 4 of 84 runs, 84.00 projected for 84 (on course to miss by 72.00)"
    )
    assert targets.cost(runs * 21).status == targets.MISSED
    cheap = [r._replace(sweep_run={**r.sweep_run, "cpu_seconds": 1000.0}) for r in runs] * 21
    assert targets.cost(cheap).status == targets.MET
    assert targets.box_hours(cheap) == pytest.approx(84 * 500 / 3600)


def test_a_sweep_over_the_limit_is_missed_by_the_amount(runs):
    result = targets.cost(runs * 4)  # 16 box-hours
    assert result.status == targets.MISSED
    assert result.misses == ("16.00 box-hours > 12 (over by 4.00)",)

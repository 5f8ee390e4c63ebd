"""Per-task statistics over seeds, and the aggregates through rliable."""

from __future__ import annotations

import numpy as np
import pytest

from jaxcontrol.results import stats
from jaxcontrol.results.records import RunRecord

T_975_1 = 12.706204736174707  # Student t's 97.5th percentile, one degree of freedom


def _record(evals, final, repeat=1, seed=0, dmc=None):
    """A run whose periodic evaluations are [(env_steps, return)] and final (env_steps, return)."""
    return RunRecord(
        agent="sac",
        domain="cheetah",
        task="run",
        seed=seed,
        run={"env": "cheetah-run", "agent": "sac", "seed": seed, "action_repeat": repeat},
        eval={"mean_return": final[1], "stderr": 1.0, "episodes": 100, "env_steps": final[0]},
        eval_dm_control=dmc,
        sweep_run={"wall_seconds": 10.0, "cpu_seconds": 20.0},
        curve={"evals": [{"env_steps": s, "mean_return": r} for s, r in evals]},
    )


def test_t_interval_by_hand():
    i = stats.t_interval([100.0, 200.0])
    # s = 70.71, s / sqrt(2) = 50
    assert i.mean == 150.0 and i.n == 2
    assert i.low == pytest.approx(150.0 - T_975_1 * 50.0)
    assert i.high == pytest.approx(150.0 + T_975_1 * 50.0)


def test_one_seed_has_no_interval():
    assert stats.t_interval([412.0]) == stats.Interval(412.0, None, None, 1)
    with pytest.raises(ValueError):
        stats.t_interval([])


def test_return_at_takes_the_first_evaluation_at_or_after_the_steps():
    r = _record([(100_000, 10.0), (200_000, 20.0), (300_000, 30.0)], (300_000, 33.0))
    assert stats.return_at(r, 100_000) == 10.0
    assert stats.return_at(r, 150_000) == 20.0
    assert stats.return_at(r, 300_000) == 33.0  # the final evaluation, at the same steps
    assert stats.return_at(r, 300_001) is None


def test_steps_are_control_steps_under_action_repeat():
    r = _record([(50_000, 10.0), (250_000, 50.0)], (500_000, 90.0), repeat=2)
    assert stats.return_at(r, 100_000) == 10.0
    assert stats.return_at(r, 500_000) == 50.0
    assert stats.return_at(r, 1_000_000) == 90.0


def test_the_transfer_check_by_hand():
    inside = _record([], (10, 800.0), dmc={"mean_return": 770.0, "stderr": 1.0})
    check = stats.transfer(inside)
    assert check.allowed == pytest.approx(40.0)  # 5 % of 800 beats 2 * sqrt(2)
    assert check.difference == -30.0 and check.within
    outside = _record([], (10, 800.0), dmc={"mean_return": 759.0, "stderr": 1.0})
    assert not stats.transfer(outside).within
    noisy = _record([], (10, 100.0), dmc={"mean_return": 130.0, "stderr": 15.0})
    # 2 * sqrt(1 + 225) = 30.07 beats 5 % of 100
    assert stats.transfer(noisy).allowed == pytest.approx(2 * np.sqrt(226.0))
    assert stats.transfer(noisy).within
    assert stats.transfer(_record([], (10, 1.0))) is None


def test_summaries_of_the_fake_sweep(runs):
    summaries = stats.by_task(runs, "sac")
    cartpole = summaries["cartpole", "swingup"]
    assert cartpole.seeds == (0, 1)
    assert cartpole.at[100_000].mean == 150.0
    assert cartpole.at[100_000].high == pytest.approx(150.0 + T_975_1 * 50.0)
    assert cartpole.at[500_000].mean == 850.0
    assert cartpole.at[1_000_000].mean == 860.0  # the final evaluations, 850 and 870
    assert cartpole.dm_control.mean == 774.0
    assert [t.within for t in cartpole.transfers] == [True, False]
    assert summaries["cheetah", "run"].at[500_000].mean == 650.0


def test_the_score_matrix_is_runs_by_tasks_over_1000(runs):
    scores = stats.score_matrix(runs, [("cartpole", "swingup"), ("cheetah", "run")], 1_000_000)
    np.testing.assert_allclose(scores, [[0.85, 0.70], [0.87, 0.72]])
    assert stats.score_matrix(runs, [("walker", "walk")], 1_000_000) is None


def test_iqm_through_rliable_by_hand():
    # 8 runs of one task: the IQM is the mean of the middle four.
    scores = np.array([[0.0], [0.1], [0.2], [0.3], [0.4], [0.5], [0.6], [1.0]])
    i = stats.iqm(scores, reps=200)
    assert i.mean == pytest.approx(0.35)
    assert 0.0 <= i.low < 0.35 < i.high <= 1.0
    flat = stats.iqm(np.full((3, 4), 0.6), reps=200)
    assert (flat.mean, flat.low, flat.high) == pytest.approx((0.6, 0.6, 0.6))


def test_the_bootstrap_is_repeatable_and_leaves_numpy_s_generator_alone():
    scores = np.random.default_rng(1).uniform(size=(3, 5))
    np.random.seed(123)
    expected_next = np.random.random()
    np.random.seed(123)
    first = stats.iqm(scores, reps=300)
    assert np.random.random() == expected_next
    assert stats.iqm(scores, reps=300) == first
    assert stats.iqm(scores, reps=300, seed=1) != first


def test_iqm_of_means_and_the_profile_by_hand():
    assert stats.iqm_of_means([0.0, 100.0, 200.0, 1000.0]) == pytest.approx(0.15)
    taus = np.array([0.0, 0.5, 0.8])
    point, band = stats.profile(np.array([[0.1, 0.6], [0.7, 0.9]]), taus, reps=100)
    np.testing.assert_allclose(point, [1.0, 0.75, 0.25])
    assert band.shape == (2, 3)

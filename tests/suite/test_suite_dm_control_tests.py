"""dm_control's own suite tests (`dm_control/suite/suite_test.py`) on `jaxcontrol.suite`.

The default tier runs every test method on six cheap tasks; the full tier on
all 51 (`-m full`, `--tasks` to choose).
"""

import dm_control_suite_test as dm_tests
import pytest

CHEAP = [
    ("cartpole", "balance"),
    ("pendulum", "swingup"),
    ("point_mass", "easy"),
    ("reacher", "easy"),
    ("finger", "spin"),
    ("ball_in_cup", "catch"),
]


def test_dm_controls_constants_test_passes():
    dm_tests.run("test_constants")


@pytest.mark.parametrize("method", sorted(dm_tests.PER_TASK))
@pytest.mark.parametrize("cheap_task", CHEAP, ids=[f"{d}-{t}" for d, t in CHEAP])
def test_dm_controls_suite_test_passes_on_cheap_tasks(cheap_task, method):
    if not dm_tests.run_for_task(method, cheap_task):
        pytest.skip(f"dm_control runs {method} on {dm_tests.PER_TASK[method]!r} only")


@pytest.mark.full
@pytest.mark.parametrize("method", sorted(dm_tests.PER_TASK))
def test_dm_controls_suite_test_passes_on_every_task(task, method):
    if not dm_tests.run_for_task(method, task):
        pytest.skip(f"dm_control does not run {method} on {task}")

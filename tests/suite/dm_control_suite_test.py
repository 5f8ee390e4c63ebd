"""dm_control's own `suite_test.py`, read from the installed package, pointed at
`jaxcontrol.suite`.

The module is imported as dm_control ships it (its `mock` import served by
`unittest.mock`), and its `suite` reference is replaced by ours. Its test methods
are absl-parameterized over dm_control's task lists, which are ours in the same
order (`tests/suite/test_suite_api.py` checks), so the method for a task is its
name with the task's index appended.
"""

import importlib
import sys
import unittest.mock

from jaxcontrol import suite

sys.modules.setdefault("mock", unittest.mock)
suite_test = importlib.import_module("dm_control.suite.suite_test")
suite_test.suite = suite

# The per-task methods of dm_control's SuiteTest, and the task list each is
# parameterized over.
PER_TASK = {
    "test_components_have_names": suite.ALL_TASKS,
    "test_model_has_at_least_2_cameras": suite.ALL_TASKS,
    "test_task_conforms_to_spec": suite.ALL_TASKS,
    "test_environment_is_deterministic": suite.ALL_TASKS,
    "test_visualize_reward": suite.REWARD_VIZ,
    "test_task_supports_environment_kwargs": suite.ALL_TASKS,
    "test_observation_arrays_dont_share_memory": suite.ALL_TASKS,
    "test_observations_dont_contain_constant_elements": suite.ALL_TASKS,
    "test_initial_state_is_randomized": suite.ALL_TASKS,
}


def run(method: str) -> None:
    """Runs one of dm_control's SuiteTest methods, raising what it raises."""
    suite_test.SuiteTest(method).debug()


def run_for_task(method: str, task: tuple[str, str]) -> bool:
    """Runs `method` for `task`; False where dm_control does not run it for that task."""
    tasks = PER_TASK[method]
    if task not in tasks:
        return False
    run(f"{method}{tasks.index(task)}")
    return True

"""The run order that keeps per-task compiles down (conftest.pytest_collection_modifyitems)."""

import itertools
import pathlib
import re
import subprocess
import sys

import jaxcontrol

TESTS = pathlib.Path(__file__).parent


def test_each_tasks_tests_are_contiguous_with_float64_last():
    """Collects the default tier as CI runs it and reads the order back."""
    listing = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    ids = re.findall(r"^(tests/\S+::\S+)\[([^\]]+)\]$", listing, re.MULTILINE)
    names = {f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS}
    float64 = {"tests/test_parity.py::test_one_step_float64"}  # the tests marked float64
    per_task = [(task, test in float64) for test, task in ids if task in names]
    assert len({task for task, _ in per_task}) > 20
    tasks = [task for task, _ in itertools.groupby(per_task, key=lambda x: x[0])]
    assert len(tasks) == len(set(tasks)), "a task's tests are split in the run order"
    for task, group in itertools.groupby(per_task, key=lambda x: x[0]):
        marked = [is64 for _, is64 in group]
        assert marked == sorted(marked), f"{task}: a float32 test runs after a float64 one"

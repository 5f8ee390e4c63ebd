"""The run order that keeps per-task compiles down (conftest.pytest_collection_modifyitems)."""

import itertools
import pathlib
import re
import subprocess
import sys

import jaxcontrol

TESTS = pathlib.Path(__file__).parent


def _collected(markers=None):
    """(test, parameter id) of every collected test, in run order."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    listing = subprocess.run(
        command + (["-m", markers] if markers else []),
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return re.findall(r"^(tests/\S+::\S+)\[([^\]]+)\]$", listing, re.MULTILINE)


def test_each_tasks_tests_are_contiguous_with_float64_last():
    """Collects the default tier as CI runs it and reads the order back."""
    ids = _collected()
    float64 = set(_collected("float64 and not slow and not full"))  # the tests marked float64
    names = {f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS}
    per_task = [(task, (test, task) in float64) for test, task in ids if task in names]
    assert float64 and len(float64) < len(ids)
    assert len({task for task, _ in per_task}) > 20
    tasks = [task for task, _ in itertools.groupby(per_task, key=lambda x: x[0])]
    assert len(tasks) == len(set(tasks)), "a task's tests are split in the run order"
    for task, group in itertools.groupby(per_task, key=lambda x: x[0]):
        marked = [is64 for _, is64 in group]
        assert marked == sorted(marked), f"{task}: a float32 test runs after a float64 one"

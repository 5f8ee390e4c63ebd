"""The run order that keeps per-task compiles down (conftest.pytest_collection_modifyitems)."""

import itertools
import os
import pathlib
import re
import subprocess
import sys

import jaxcontrol

TESTS = pathlib.Path(__file__).parent


def _collected(tmp_path):
    """(test, parameter id, marked float64) of every test in the default tier, in run
    order: one `pytest --collect-only` as CI's command collects, read back through
    tests/run_order_listing.py."""
    listing = tmp_path / "order.txt"
    env = dict(
        os.environ,
        JAXCONTROL_RUN_ORDER_LISTING=str(listing),
        PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])),
    )
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    subprocess.run(
        command + ["-p", "run_order_listing"],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        check=True,
    )
    lines = listing.read_text().splitlines()
    found = [re.fullmatch(r"(float64|float32) (tests/\S+::\S+)\[([^\]]+)\]", l) for l in lines]
    return [(m[2], m[3], m[1] == "float64") for m in found if m]


def test_each_tasks_tests_are_contiguous_with_float64_last(tmp_path):
    """Collects the default tier as CI runs it and reads the order back."""
    ids = _collected(tmp_path)
    names = {f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS}
    per_task = [(task, is64) for _, task, is64 in ids if task in names]
    marked = [is64 for _, is64 in per_task]
    assert any(marked) and not all(marked)
    assert len({task for task, _ in per_task}) > 20
    tasks = [task for task, _ in itertools.groupby(per_task, key=lambda x: x[0])]
    assert len(tasks) == len(set(tasks)), "a task's tests are split in the run order"
    for task, group in itertools.groupby(per_task, key=lambda x: x[0]):
        marked = [is64 for _, is64 in group]
        assert marked == sorted(marked), f"{task}: a float32 test runs after a float64 one"

"""Shared test setup: no display for dm_control, task parameterisation."""

import os

os.environ.setdefault("MUJOCO_GL", "disable")

import pytest

import jaxcontrol

TASK_IDS = [f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS]


def pytest_addoption(parser):
    parser.addoption(
        "--tasks",
        default=None,
        help="comma-separated DOMAIN-TASK list to restrict the per-task battery",
    )


def pytest_generate_tests(metafunc):
    """Parameterises every test that takes `task` over the registry."""
    if "task" in metafunc.fixturenames:
        tasks = list(jaxcontrol.ALL_TASKS)
        wanted = metafunc.config.getoption("--tasks")
        if wanted:
            chosen = set(wanted.split(","))
            tasks = [dt for dt in tasks if f"{dt[0]}-{dt[1]}" in chosen]
        metafunc.parametrize("task", tasks, ids=[f"{d}-{t}" for d, t in tasks], scope="module")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups from the markers
def pytest_collection_modifyitems(config, items):
    """Keeps each task's tests on one xdist worker, so its fixtures build once."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "task" in callspec.params:
            domain, task = callspec.params["task"]
            item.add_marker(pytest.mark.xdist_group(f"{domain}-{task}"))

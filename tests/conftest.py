"""Shared test setup: headless OpenGL (or none), task parameterisation, test tiers.

Tiers (docs/testing.md):
  * default (CI): every test not marked `slow` or `full`;
  * full (`-m full`): the expensive per-task parity (PARITY.md's figures);
  * slow (`-m slow`): the learners' learning tests.

Every test that takes `task` is parameterised over the registry. A task's
tests run back to back on one xdist worker (one group per task), and when the
worker moves on to the next task its compiled executables are released, so a
worker that compiles all 51 models never piles them up (compiled code filling
`vm.max_map_count` once broke a long-lived process here).
"""

import ctypes.util
import os

# MuJoCo reads MUJOCO_GL once, at import: software OpenGL (osmesa) where libOSMesa is
# installed, so the rendering tests run headless; else no GL (they are skipped).
os.environ.setdefault("MUJOCO_GL", "osmesa" if ctypes.util.find_library("OSMesa") else "disable")
# The command line's default persistent compilation cache is in the user's home; the
# tests that want one point it at their own folder.
os.environ.setdefault("JAXCONTROL_COMPILE_CACHE", "none")

import jax
import pytest
from pertask import backend_for, clear_task_caches, task_cache

import jaxcontrol
from jaxcontrol import xla_flags as _xla_flags

TASK_IDS = [f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS]


def pytest_addoption(parser):
    parser.addoption(
        "--tasks",
        default=None,
        help="comma-separated DOMAIN-TASK list to restrict the per-task tests",
    )
    parser.addoption(
        "--backend",
        default="auto",
        choices=("auto", "mjx", "mujoco"),
        help="physics of the per-task battery and one-step parity: auto (MJX, but the C "
        "backend for the largest models; tests/pertask.py), mjx or mujoco",
    )
    parser.addoption(
        "--parity-records",
        default="parity_records",
        help="directory where the full tier writes each task's PARITY.md record",
    )
    parser.addoption(
        "--reuse-records",
        action="store_true",
        help="full tier: take each piece from the task's record in --parity-records where "
        "it was measured under the task's physics now (solver caps, MJX fixes) with this "
        "JAX (`jaxcontrol parity` writes such records piece by piece); measure the rest",
    )


def pytest_generate_tests(metafunc):
    """Parameterises every test that takes `task` over the registry (a test marked
    `mjx_tasks`: over the tasks whose battery steps MJX). A test that parametrizes
    `task` itself keeps its own tasks, and still joins their group and run order."""
    own = any("task" in _argnames(m) for m in metafunc.definition.iter_markers("parametrize"))
    if "task" in metafunc.fixturenames and not own:
        tasks = list(jaxcontrol.ALL_TASKS)
        wanted = metafunc.config.getoption("--tasks")
        if wanted:
            chosen = set(wanted.split(","))
            unknown = chosen - set(TASK_IDS)
            if unknown:
                raise pytest.UsageError(f"unknown --tasks {sorted(unknown)}; valid: {TASK_IDS}")
            tasks = [dt for dt in tasks if f"{dt[0]}-{dt[1]}" in chosen]
        if metafunc.definition.get_closest_marker("mjx_tasks"):
            tasks = [dt for dt in tasks if backend_for(dt, metafunc.config) == "mjx"]
        metafunc.parametrize("task", tasks, ids=[f"{d}-{t}" for d, t in tasks], scope="module")


def _argnames(parametrize_marker):
    names = parametrize_marker.args[0] if parametrize_marker.args else ()
    return [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)


def _task_of(item):
    callspec = getattr(item, "callspec", None)
    task = callspec.params.get("task") if callspec is not None else None
    # A test whose tasks `--tasks` leaves empty holds pytest's NOTSET (and is skipped).
    return task if isinstance(task, tuple) else None


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups from the markers
def pytest_collection_modifyitems(config, items):
    """One xdist group per task."""
    for item in items:
        task = _task_of(item)
        if task is not None:
            item.add_marker(pytest.mark.xdist_group("{}-{}".format(*task)))


class _RunOrder:
    """A task's tests contiguous in the run order, its float64 tests last.

    Every switch of precision releases JAX's compiled code
    (`reference.precision`), so a task's float32 tests share one compiled
    step only if no float64 test runs between them. This sorts after pytest has
    regrouped the items by their module-scoped parameters (which splits a task
    across files). Stable: within a task and precision, files and tests keep
    their order; tests without a task come last.
    """

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        order = {task: i for i, task in enumerate(jaxcontrol.ALL_TASKS)}
        items.sort(
            key=lambda item: (
                order.get(_task_of(item), len(order)),
                item.get_closest_marker("float64") is not None,
            )
        )


# The default tier compiles ~6 programs per task and runs each for a few steps, so
# compile time is most of its cost. XLA's backend optimisation level 0 cuts it: the
# per-task tests of finger-spin, humanoid-walk, cheetah-run and hopper-hop took 360
# instead of 459 worker-seconds; docs/testing.md). Only this tier uses it: the full and
# slow tiers run long simulations and measure what users run (XLA's default level).
DEFAULT_TIER = "not slow and not full"
DEFAULT_TIER_XLA_FLAG = "--xla_backend_optimization_level=0"


def pytest_configure(config):
    config.pluginmanager.register(_RunOrder(), "jaxcontrol-run-order")
    flags = os.environ.get("XLA_FLAGS", "")
    if config.option.markexpr == DEFAULT_TIER and "xla_backend_optimization_level" not in flags:
        if _xla_flags._backends_started():
            raise pytest.UsageError("JAX started before conftest could set XLA_FLAGS")
        os.environ["XLA_FLAGS"] = f"{flags} {DEFAULT_TIER_XLA_FLAG}".strip()


def pytest_runtest_teardown(item, nextitem):
    """Releases a task's compiled code once the worker moves on to another task."""
    task = _task_of(item)
    if task is not None and (nextitem is None or _task_of(nextitem) != task):
        clear_task_caches()
        jax.clear_caches()


@pytest.fixture(scope="module")
def full_record(task, request):
    """Returns piece -> measured dict for the task's full-tier parity record.

    Each piece is measured once per task (cached) and merged into the task's
    record file under --parity-records, from which `jaxcontrol parity
    --render` writes PARITY.md. With --reuse-records, a piece that the record
    already holds under the task's current physics and this JAX is asserted as
    it stands (`parity.current_piece`), not measured again.
    """
    directory = request.config.getoption("--parity-records")
    reuse = request.config.getoption("--reuse-records")

    def piece(name):
        return _full_piece(task, name, directory, reuse)

    return piece


@task_cache
def _full_piece(task, name, directory, reuse):
    from jaxcontrol import parity

    task_id = "{}-{}".format(*task)
    if reuse:
        record = parity.read_record(directory, task_id)
        fixes = parity.mjx_fixes_of(*task)
        kept = parity.current_piece(record, name, parity.solver_caps(*task), fixes)
        if kept is not None:
            return kept
    result = parity.measure_piece(*task, name, records=directory)
    parity.write_record(directory, {"task": task_id, **parity.provenance(), name: result})
    return result

"""Per-task result caches for the tests (see conftest.py).

Module fixtures may be torn down between a task's tests under xdist; a
`task_cache` keeps a task's expensive results (rollouts, reports) for all its
tests, and conftest clears every such cache when a worker moves on to the next
task, together with JAX's compiled executables.
"""

import functools
import hashlib

import mujoco
import numpy as np

import jaxcontrol
from jaxcontrol.mjcf import compat

_CACHES: list = []


def task_cache(function):
    """`functools.cache` for per-task results, cleared between tasks."""
    cached = functools.cache(function)
    _CACHES.append(cached)
    return cached


def clear_task_caches() -> None:
    for cached in _CACHES:
        cached.cache_clear()


# MJX's constraint rows (every contact slot, active or not) measure a model's cost to
# compile and to step: cartpole has 1, quadruped-escape 620, humanoid_CMU 4,684, dog
# 32,530. Above LARGE_MODEL_ROWS, one task's MJX physics costs the default tier 430 to
# 970 worker-seconds (docs/testing.md), so those
# models run on C there throughout.
LARGE_MODEL_ROWS = 4_000


def constraint_rows(env) -> int:
    """MJX's constraint rows for `env`'s model (no tracing: the initial data's shape)."""
    return int(env._initial_data()._impl.efc_J.shape[0])


def without_what_mjx_ignores(model: mujoco.MjModel) -> mujoco.MjModel:
    """`model` (modified in place) with fixed values in the fields that MJX's step
    reads nowhere: the statistics its `Statistic` documents as unused, and the sizes
    of planes, which only rays read (kept where the model has rangefinders).
    quadruped walk and run (and dog's stand, trot and run) differ in nothing else
    (their floors' sizes), so they share a key; tests/physics/test_physics.py proves that MJX's
    step ignores these fields."""
    model.stat.extent = 1.0
    model.stat.center[:] = 0.0
    model.stat.meanmass = model.stat.meansize = 1.0
    if mujoco.mjtSensor.mjSENS_RANGEFINDER not in model.sensor_type:
        model.geom_size[model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE] = 0.0
    return model


@functools.cache
def physics_key(task) -> tuple:
    """What MJX compiles of `task`'s physics: its domain, compiled model (as MJX gets
    it, solver caps included, less what MJX's step ignores), substeps and per-episode
    model fields (which enter the physics as data, or, where MJX keeps them static, as
    a program per value).
    Tasks with equal keys step the same physics program; only their task code
    (resets, observations, rewards) differs."""
    env = jaxcontrol.load(*task)
    model = compat.to_mjx_compatible(env.mj_model, env.task.solver_caps)
    digest = model_digest(without_what_mjx_ignores(model))
    return (task[0], digest, env.n_sub_steps, env.task.episode_model_fields)


def model_digest(model: mujoco.MjModel) -> str:
    """A hash of the compiled model's bytes (`mj_saveModel`)."""
    buffer = np.zeros(mujoco.mj_sizeModel(model), np.uint8)
    mujoco.mj_saveModel(model, None, buffer)
    return hashlib.sha256(buffer.tobytes()).hexdigest()


def backend_for(task, config) -> str:
    """The backend that `task`'s battery and one-step parity step with.

    `--backend`, whose default "auto" tests every task's own code on every task and
    MJX once per domain: MJX for the domain's first registered task of fewest
    constraint rows (its smallest physics), the C backend behind the same Env for
    every other task (C's float64 steps are dm_control's, so their parity is exact).
    A domain's other physics run the MJX code its smallest runs, with more bodies or
    contacts or other geoms in contact; the collision pairs jaxcontrol adds to MJX
    have tests of their own. Models of LARGE_MODEL_ROWS or more (dog, humanoid_CMU)
    run on C throughout. `--backend mjx` and the full tier step every task on MJX.
    """
    chosen = config.getoption("--backend")
    if chosen != "auto":
        return chosen
    return "mjx" if task == _mjx_task_of_domain(task[0]) else "mujoco"


@functools.cache
def _mjx_task_of_domain(domain: str):
    """The task whose battery steps MJX in the default tier (None: the domain's
    models are all too large)."""
    rows = {}
    for task in jaxcontrol.ALL_TASKS:  # in registration order: min keeps the first
        if task[0] == domain:
            rows[task] = constraint_rows(jaxcontrol.load(*task))
    smallest = min(rows, key=rows.get)
    return None if rows[smallest] >= LARGE_MODEL_ROWS else smallest

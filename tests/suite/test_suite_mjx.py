"""`jaxcontrol.suite` on MJX in float32, over the 28 benchmarking tasks (full tier).

dm_control's own suite tests run against `load(..., backend="mjx",
precision="float32")`, and one step from states mirrored from dm_control follows
dm_control within the tolerance PARITY.md uses: 1e-4 of each quantity's scale,
or 10x stock `mjx.step`'s own float32 error on the same states where that is
larger (`jaxcontrol.parity.tolerance`).
"""

import collections
import functools
import types

import dm_control_suite_test as dm_tests
import jax
import numpy as np
import pytest
from dm_control import suite as dm_suite

from jaxcontrol import suite
from jaxcontrol.parity.step import raw_step_parity, worst_difference
from jaxcontrol.parity.tolerance import one_step_misses
from jaxcontrol.reference.samples import step_transition

BENCHMARKING = [pytest.param(task, id=f"{task[0]}-{task[1]}") for task in suite.BENCHMARKING]
STATES = 12  # mirrored states per task: a reset, then 3 to 36 random steps into episodes


def _mjx_float32_suite():
    """`jaxcontrol.suite` whose `load` builds MJX float32 environments."""
    module = types.ModuleType("jaxcontrol_suite_mjx_float32")
    module.__dict__.update({k: v for k, v in vars(suite).items() if not k.startswith("__")})
    module.load = functools.partial(suite.load, backend="mjx", precision="float32")
    return module


@pytest.fixture
def mjx_float32_suite(monkeypatch):
    monkeypatch.setattr(dm_tests.suite_test, "suite", _mjx_float32_suite())


# dm_control's per-task methods, each on the benchmarking tasks it is parameterized over.
METHOD_TASKS = [
    pytest.param(task, method, id=f"{task[0]}-{task[1]}-{method}")
    for task in suite.BENCHMARKING
    for method in sorted(dm_tests.PER_TASK)
    if task in dm_tests.PER_TASK[method]
]


@pytest.mark.full
@pytest.mark.parametrize("benchmark_task,method", METHOD_TASKS)
def test_dm_controls_suite_test_passes_on_mjx_in_float32(mjx_float32_suite, benchmark_task, method):
    assert dm_tests.run_for_task(method, benchmark_task)


def _mirrored_steps(domain, task, seed=0):
    """Ours (MJX, float32) and dm_control's one step from the same `STATES` states.

    Returns ours' worst relative differences from dm_control (`obs/KEY`, reward,
    qpos, qvel) and the transitions, for stock MJX's on the same states.
    """
    theirs = dm_suite.load(domain, task, task_kwargs={"random": seed})
    ours = suite.load(
        domain, task, task_kwargs={"random": seed}, backend="mjx", precision="float32"
    )
    spec = theirs.action_spec()
    random = np.random.RandomState(seed)
    worst = collections.defaultdict(float)
    transitions = []
    for index in range(STATES):
        time_step = theirs.reset()
        for _ in range(index * 40 // STATES):
            time_step = theirs.step(random.uniform(spec.minimum, spec.maximum))
        suite.mirror(ours, theirs)
        action = random.uniform(spec.minimum, spec.maximum)
        a = ours.step(action)
        transition, b = step_transition(ours.jax_env, theirs, time_step.observation, action)
        transitions.append(transition)
        physics = theirs.physics
        pairs = {f"obs/{key}": (a.observation[key], b.observation[key]) for key in b.observation}
        pairs["reward"] = (a.reward, b.reward)
        pairs["qpos"] = (ours.physics.data.qpos, physics.data.qpos)
        pairs["qvel"] = (ours.physics.data.qvel, physics.data.qvel)
        for key, (x, y) in pairs.items():
            worst[key] = max(worst[key], worst_difference(x, y, relative=True))
    return dict(worst), ours.jax_env, transitions


@pytest.mark.full
@pytest.mark.parametrize("benchmark_task", BENCHMARKING)
def test_one_mjx_float32_step_follows_dm_control_within_paritys_tolerance(benchmark_task):
    assert not jax.config.jax_enable_x64
    ours, env, transitions = _mirrored_steps(*benchmark_task)
    raw = raw_step_parity(env, transitions, relative=True)
    assert ours["qpos"] > 0  # float32: not dm_control's float64 trajectory
    assert not one_step_misses("float32", ours, raw), (ours, raw)

"""jaxcontrol: the DeepMind Control Suite as pure JAX on MuJoCo MJX.

import jax, jaxcontrol
env = jaxcontrol.load("cartpole", "swingup")
states = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 1024))
states = jax.jit(jax.vmap(env.step))(states, actions)
"""

from jaxcontrol import import_setup as _import_setup

# XLA's CPU flag, MUJOCO_GL, a quiet MJX import, MJX's line-search fix: each
# described (what, why, how to turn it off) in jaxcontrol/import_setup.py.
_import_setup.apply_before_imports()

from jaxcontrol import registry as _registry
from jaxcontrol import tasks as _tasks  # noqa: F401  (registers the domains)
from jaxcontrol.core import Env, State, StepType
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY as _REGISTRY
from jaxcontrol.task import Task

__version__ = "0.1.0"

ALL_TASKS: tuple[tuple[str, str], ...] = _REGISTRY.tasks()
BENCHMARKING: tuple[tuple[str, str], ...] = _REGISTRY.tasks("benchmarking")
EXTRA: tuple[tuple[str, str], ...] = tuple(sorted(set(ALL_TASKS) - set(BENCHMARKING)))
TASKS_BY_DOMAIN: dict[str, tuple[str, ...]] = {
    domain: tuple(t for d, t in ALL_TASKS if d == domain) for domain in _REGISTRY.domains()
}


def load(
    domain_name: str, task_name: str | None = None, *, backend: str = "mjx", **task_kwargs
) -> Env:
    """Returns the environment for a suite task, like `dm_control.suite.load`.

    `load("cartpole", "swingup")` and `load("cartpole-swingup")` are the same task:
    a task id alone is read as the command line reads `--env` (`registry.parse_task_id`).

    Args:
      domain_name: e.g. "cartpole"; or, without `task_name`, the task's id
        DOMAIN-TASK, e.g. "cartpole-swingup".
      task_name: e.g. "swingup".
      backend: the physics of a step: "mjx" (pure JAX, any device) or "mujoco" (C
        MuJoCo on the host's CPUs through a callback, dm_control's own engine;
        `jaxcontrol.cpu_physics`). Resets, observations and rewards are JAX either way.
      **task_kwargs: task parameters, e.g. `time_limit=5.0`; an unknown one is a
        ValueError naming the valid ones.

    Raises:
      ValueError: for an unknown domain or task, listing the valid names with
        close matches first.
    """
    if task_name is None:
        domain_name, task_name = _registry.parse_task_id(domain_name)
    task = _REGISTRY.build(domain_name, task_name, **task_kwargs)
    return Env(domain_name, task_name, task, backend=backend)


_import_setup.apply_after_imports()  # Gymnasium ids, which read ALL_TASKS


__all__ = [
    "ALL_TASKS",
    "BENCHMARKING",
    "EXTRA",
    "TASKS_BY_DOMAIN",
    "Env",
    "Physics",
    "State",
    "StepType",
    "Task",
    "load",
]

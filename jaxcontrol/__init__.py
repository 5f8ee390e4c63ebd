"""jaxcontrol: the DeepMind Control Suite as pure JAX on MuJoCo MJX.

import jax, jaxcontrol
env = jaxcontrol.load("cartpole", "swingup")
states = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 1024))
states = jax.jit(jax.vmap(env.step))(states, actions)
"""

from jaxcontrol import xla_flags as _xla_flags

_xla_flags.apply()  # before anything can start JAX's CPU backend

from jaxcontrol.render import gl as _gl

_gl.choose_headless_default()  # MUJOCO_GL where no display is, before MuJoCo loads

from jaxcontrol import quiet_imports as _quiet_imports

_quiet_imports.import_mjx()  # without MJX's lines about its optional Warp backend

from jaxcontrol import mjx_fixes as _mjx_fixes

_mjx_fixes.apply()  # MJX's elliptic line search as C MuJoCo reads it (JAXCONTROL_STOCK_MJX=1: stock)

from jaxcontrol import tasks as _tasks  # noqa: F401  (registers the domains)
from jaxcontrol.core import Env, State, StepType
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY as _REGISTRY
from jaxcontrol.task import Task
from jaxcontrol.wrappers import gymnasium_registration as _gymnasium_registration

__version__ = "0.1.0"

ALL_TASKS: tuple[tuple[str, str], ...] = _REGISTRY.tasks()
BENCHMARKING: tuple[tuple[str, str], ...] = _REGISTRY.tasks("benchmarking")
EXTRA: tuple[tuple[str, str], ...] = tuple(sorted(set(ALL_TASKS) - set(BENCHMARKING)))
TASKS_BY_DOMAIN: dict[str, tuple[str, ...]] = {
    domain: tuple(t for d, t in ALL_TASKS if d == domain) for domain in _REGISTRY.domains()
}


def load(domain_name: str, task_name: str, *, backend: str = "mjx", **task_kwargs) -> Env:
    """Returns the environment for a suite task, like `dm_control.suite.load`.

    Args:
      domain_name: e.g. "cartpole".
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
    task = _REGISTRY.build(domain_name, task_name, **task_kwargs)
    return Env(domain_name, task_name, task, backend=backend)


_gymnasium_registration.install()  # jaxcontrol/DOMAIN-TASK-v0, once Gymnasium is imported


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

"""dm_control's own environment of a task (`dm_control.suite.load`), seeded.

dm_control is a test dependency: `pip install 'jaxcontrol[test]'`.
"""

from __future__ import annotations

import os
from typing import Any

from jaxcontrol.core import Env
from jaxcontrol.reference import overrides
from jaxcontrol.registry import REGISTRY


def dm_control_suite():
    """`dm_control.suite`, imported without a display (`MUJOCO_GL=disable` unless set)."""
    os.environ.setdefault("MUJOCO_GL", "disable")  # no display needed
    try:
        from dm_control import suite  # pylint: disable=import-outside-toplevel
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("parity checks need dm_control: pip install 'jaxcontrol[test]'") from e
    return suite


def reference_env(domain: str, task: str, seed: int, **task_kwargs) -> Any:
    """dm_control's environment for the registered task, seeded (`overrides.ENVIRONMENTS`
    where a task needs its own).

    `task_kwargs` are dm_control's task arguments (e.g. `time_limit`). For a task
    loaded with our own arguments (LQR's `model_seed`), use `reference_for`.
    """
    load = overrides.environment_loader(domain, task)
    prototype = REGISTRY.prototype(domain, task)
    return load(prototype, dm_control_suite().load, domain, task, seed, **task_kwargs)


def reference_for(env: Env, seed: int) -> Any:
    """dm_control's environment for `env`'s task, seeded: `env`'s model (LQR's
    `model_seed`) and time limit."""
    load = overrides.environment_loader(env.domain, env.task_name)
    return load(
        env.task,
        dm_control_suite().load,
        env.domain,
        env.task_name,
        seed,
        time_limit=env.task.time_limit,
    )

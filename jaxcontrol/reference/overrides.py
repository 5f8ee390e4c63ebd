"""Per-task overrides of the dm_control bridge, keyed on (domain, task).

Most tasks need none: dm_control's environment is `suite.load(domain, task,
task_kwargs={"random": seed, ...})`, and `mirror` copies a state's physics and
per-episode model fields generically. A task that needs more has an entry here:

  * `ENVIRONMENTS`: how to build dm_control's environment of the task, where its
    model depends on the task's own arguments (LQR draws its model from the task's
    random state) or the environment needs more than C MuJoCo (quadruped-escape).
  * `MIRROR_VARIABLES`: the episode's task variables, read from a dm_control
    environment, for variables dm_control keeps in its task object rather than in
    the model (none of the suite's tasks so far).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from jaxcontrol.render import gl
from jaxcontrol.task import Task

# (task, load, domain, name, seed, **kwargs) -> dm_control's environment, seeded.
EnvironmentLoader = Callable[..., Any]
# (task, dm_env) -> {variable name: value}.
VariablesReader = Callable[[Task, Any], dict[str, Any]]


def default_environment(task: Task, load, domain: str, name: str, seed: int, **kwargs) -> Any:
    """dm_control's environment of the task, its random state seeded with `seed`.

    Args:
      task: our task (its arguments, for loaders that need them).
      load: `dm_control.suite.load`.
      domain, name: the task's names.
      seed: seeds dm_control's task (`random`).
      **kwargs: more of dm_control's task arguments (e.g. `time_limit`).
    """
    del task
    return load(domain, name, task_kwargs={"random": seed, **kwargs})


def lqr_environment(task: Task, load, domain: str, name: str, seed: int, **kwargs) -> Any:
    """dm_control's LQR environment with the task's model, episodes seeded by `seed`.

    dm_control draws the model and then the episodes from one random state; it is
    created at the task's `model_seed` (the model) and reseeded in place with `seed`
    once the environment is built (the episodes).
    """
    random = np.random.RandomState(task.model_seed)
    env = load(domain, name, task_kwargs={"random": random, **kwargs})
    random.seed(seed)
    return env


def escape_environment(task: Task, load, domain: str, name: str, seed: int, **kwargs) -> Any:
    """dm_control's quadruped-escape, which needs OpenGL: its reset uploads the new
    terrain to a rendering context (created then if none exists), rendered or not."""
    reason = gl.unavailable_reason()
    if reason is not None:
        raise gl.RenderingUnavailable(
            f"dm_control's quadruped-escape needs OpenGL at every reset: {reason}"
        )
    return default_environment(task, load, domain, name, seed, **kwargs)


ENVIRONMENTS: dict[tuple[str, str], EnvironmentLoader] = {
    ("lqr", "lqr_2_1"): lqr_environment,
    ("lqr", "lqr_6_2"): lqr_environment,
    ("quadruped", "escape"): escape_environment,
}

MIRROR_VARIABLES: dict[tuple[str, str], VariablesReader] = {}


def environment_loader(domain: str, name: str) -> EnvironmentLoader:
    """How dm_control's environment of (domain, name) is built."""
    return ENVIRONMENTS.get((domain, name), default_environment)


def mirror_variables(domain: str, name: str, task: Task, dm_env: Any) -> dict[str, Any]:
    """The task variables of `dm_env`'s episode that `mirror` copies ({} for most
    tasks: their per-episode values are model fields, copied generically)."""
    reader = MIRROR_VARIABLES.get((domain, name))
    return {} if reader is None else reader(task, dm_env)

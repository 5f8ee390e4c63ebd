"""`jaxcontrol.suite`: dm_control's `suite` module over jaxcontrol's physics and tasks.

Code written for `dm_control.suite` runs unchanged after one line:

    from jaxcontrol import suite          # was: from dm_control import suite
    env = suite.load("cartpole", "swingup", task_kwargs={"random": 0})
    time_step = env.reset()
    env.physics.named.data.qpos["slider"], env.physics.render(84, 84, camera_id=0)

`load` returns a `dm_env.Environment` that behaves as dm_control's
`control.Environment` (`environment.Environment`): `physics` is dm_control's
Physics class over our model, `task` our task behind dm_control's Task
interface, the physics C MuJoCo by default (dm_control's trajectories, bit for
bit) or MJX (`backend="mjx"`). `load_vector` steps many in one jitted program.
It needs dm-control: `pip install 'jaxcontrol[suite]'`. docs/porting.md says
what differs.

The modules, one idea each:
  * `tasks`: the task lists (`ALL_TASKS`, `BENCHMARKING`, ...);
  * `options`: `environment_kwargs` and the task's `random`;
  * `host`: dm_control's Physics over our model, and what crosses to JAX;
  * `observe`: the JAX task evaluated on the host physics;
  * `task`: `env.task`, dm_control's Task interface;
  * `environment`: `env`, dm_control's `control.Environment`;
  * `mirror`: a dm_control environment's state copied into ours;
  * `vector`: `load_vector`, many environments in one jitted program.
"""

from __future__ import annotations

import dataclasses

from jaxcontrol import cpu_physics
from jaxcontrol.core import Env
from jaxcontrol.registry import REGISTRY
from jaxcontrol.suite import host, options
from jaxcontrol.suite.environment import FLAT_OBSERVATION_KEY, Environment
from jaxcontrol.suite.mirror import mirror
from jaxcontrol.suite.task import Task
from jaxcontrol.suite.tasks import (
    ALL_TASKS,
    BENCHMARKING,
    EASY,
    EXTRA,
    HARD,
    NO_REWARD_VIZ,
    REWARD_VIZ,
    TASKS_BY_DOMAIN,
)
from jaxcontrol.suite.vector import VectorEnvironment, vector_environment


def load(
    domain_name: str,
    task_name: str,
    task_kwargs=None,
    environment_kwargs=None,
    visualize_reward: bool = False,
    *,
    backend: str = "mujoco",
    precision: str = "float64",
) -> Environment:
    """Returns a suite environment, as `dm_control.suite.load` does.

    Args:
      domain_name: e.g. "cartpole".
      task_name: e.g. "swingup".
      task_kwargs: the task's arguments. `random` is an int seed, None (fresh
        entropy) or a `np.random.RandomState` (a seed is drawn from it); it seeds
        the JAX keys the episodes are drawn from, so the same seed gives the same
        episodes, but not dm_control's (JAX keys are not RandomState draws). Any
        other key is a jaxcontrol task argument (`time_limit`, cartpole's
        `num_poles`, ...); an unknown one is a ValueError naming the valid ones.
      environment_kwargs: `time_limit`, `control_timestep` or `n_sub_steps`,
        `flat_observation`, `legacy_step` (True only); an unknown key is a
        ValueError naming the valid ones.
      visualize_reward: colour the bodies by the reward in rendered frames.
      backend: "mujoco" (C MuJoCo on the host, dm_control's trajectories bit for
        bit) or "mjx".
      precision: what the JAX side computes in: "float64" (default), or
        "float32" with MJX (its fast setting; one step then follows dm_control
        within PARITY.md's float32 figures). Specs and outputs are float64 either way.

    Returns:
      An `Environment` (a `dm_env.Environment` with `physics` and `task`).

    Raises:
      ValueError: for an unknown domain, task, task argument or environment
        argument, or an invalid combination of them.
    """
    env, task = _build(domain_name, task_name, task_kwargs, environment_kwargs, backend, precision)
    environment = Environment(
        env, task, host.make_physics(env), options.environment_options(environment_kwargs)
    )
    task.visualize_reward = visualize_reward
    return environment


build_environment = load


def load_vector(
    domain_name: str,
    task_name: str,
    num_envs: int,
    task_kwargs=None,
    environment_kwargs=None,
    *,
    backend: str = "mujoco",
    precision: str = "float64",
) -> VectorEnvironment:
    """Returns `num_envs` environments of a task stepped as one jitted program.

    NumPy in, NumPy out: `step(actions)` takes a (num_envs, nu) array and returns
    one `TimeStep` of arrays with a leading axis of `num_envs`
    (`vector.VectorEnvironment`). The arguments are `load`'s;
    `task_kwargs['random']` seeds every environment's key.
    """
    kwargs = dict(task_kwargs or {})
    random = kwargs.pop("random", None)
    env, _ = _build(domain_name, task_name, kwargs, environment_kwargs, backend, precision)
    return vector_environment(env, num_envs, random, environment_kwargs, precision)


def _build(domain, name, task_kwargs, environment_kwargs, backend, precision) -> tuple[Env, Task]:
    """The jaxcontrol Env of the arguments, and `env.task`'s adapter of it."""
    cpu_physics.check_backend(backend)
    options.check_precision(precision, backend)
    kwargs = dict(task_kwargs or {})
    random, seed = options.random_state(kwargs.pop("random", None))
    env_options = options.environment_options(environment_kwargs)
    if env_options.time_limit is not None:
        kwargs["time_limit"] = env_options.time_limit
    if env_options.control_timestep is not None:
        kwargs["control_timestep"] = env_options.control_timestep
    task = REGISTRY.build(domain, name, **kwargs)
    env = Env(domain, name, task, backend=backend)
    if env_options.n_sub_steps is not None:
        step = env_options.n_sub_steps * env.physics_timestep
        env = Env(domain, name, dataclasses.replace(task, control_timestep=step), backend=backend)
    return env, Task(env, random, seed, precision)


__all__ = [
    "ALL_TASKS",
    "BENCHMARKING",
    "EASY",
    "EXTRA",
    "FLAT_OBSERVATION_KEY",
    "HARD",
    "NO_REWARD_VIZ",
    "REWARD_VIZ",
    "TASKS_BY_DOMAIN",
    "Environment",
    "Task",
    "VectorEnvironment",
    "build_environment",
    "load",
    "load_vector",
    "mirror",
]

"""`mirror(env, dm_env)`: a dm_control environment's current state, in a suite environment.

It copies what dm_control's next step starts from and what its observation of
the current state reads: the integration state (`mj_getState`'s
`mjSTATE_INTEGRATION`: time, positions, velocities, activations, the solver's
warm start, controls and applied forces), the task's per-episode model fields
and variables and the step count; then brings positions and velocities current
(`mj_step1`) and copies the sensors, whose force and touch readings belong to
the transition dm_control just took. Under `visualize_reward` the reward
materials' colours are copied too, as dm_control's last step (or reset) left them. From there the two environments give the
same observations and, on the C backend, the same trajectory bit for bit.
"""

from __future__ import annotations

import jax
import mujoco
import numpy as np

from jaxcontrol.suite import host
from jaxcontrol.suite import task as task_lib

_SIGNATURE = int(mujoco.mjtState.mjSTATE_INTEGRATION)


def mirror(env, dm_env) -> None:
    """Puts suite environment `env` in `dm_env`'s current state (a dm_control
    environment of the same task, mid-episode or not). `env` continues the episode:
    its next `step` is dm_control's next step."""
    from jaxcontrol.reference import overrides  # pylint: disable=import-outside-toplevel

    if env.task.state is None:
        env.reset()
    source, target = dm_env.physics, env.physics
    state = np.empty(mujoco.mj_stateSize(source.model.ptr, _SIGNATURE))
    mujoco.mj_getState(source.model.ptr, source.data.ptr, state, _SIGNATURE)
    mujoco.mj_setState(target.model.ptr, target.data.ptr, state, _SIGNATURE)
    jax_env = env.jax_env
    names = jax_env.task.episode_model_fields
    host.write_model_fields(target, host.model_fields(source, names))
    host.positions_and_velocities(target)
    target.data.sensordata[:] = source.data.sensordata
    variables = overrides.mirror_variables(jax_env.domain, jax_env.task_name, jax_env.task, dm_env)
    if variables:
        old = env.task.state.variables
        new = {k: jax.numpy.asarray(v, old[k].dtype) for k, v in variables.items()}
        env.task.state = env.task.state.replace(variables={**old, **new})
    env._step_count = int(dm_env._step_count)  # pylint: disable=protected-access
    env._reset_next_step = False  # pylint: disable=protected-access
    if env.task.visualize_reward:
        colors = target.named.model.mat_rgba
        names = [name for name in task_lib.REWARD_MATERIALS if name in colors.axes.row.names]
        colors[names] = source.named.model.mat_rgba[names]

"""`Environment`: dm_control's `control.Environment` over jaxcontrol's physics and tasks.

The TimeStep sequence, step counting, specs and `flat_observation` follow
dm_control's `control.Environment`; `env.physics` is dm_control's Physics class
over our model (`host`), `env.task` our task behind dm_control's Task
interface (`task`). Who advances the physics depends on the backend:

* "mujoco" (default): the host physics steps itself with C MuJoCo, as
  dm_control steps (`physics.step(n_sub_steps)`), and the JAX task reads it: the
  trajectories are dm_control's, bit for bit. Anything written into the physics
  (`set_state`, named writes, model fields) is what the next step starts from.
* "mjx": MJX steps a jaxcontrol `State` in one jitted call; the new state, its
  controls, sensors and acceleration-stage results (`qacc`, the generalized
  forces) are written into the host physics, whose positions and velocities are
  then brought current (`mj_step1`) for reading and rendering. A write to the host physics is carried into the `State` before the
  next step.
"""

from __future__ import annotations

import collections
import functools

import dm_env
import jax
import numpy as np
from dm_env import specs

from jaxcontrol.core import Env, State
from jaxcontrol.suite import host, options
from jaxcontrol.suite.options import EnvironmentOptions, step_limit
from jaxcontrol.suite.task import Task

FLAT_OBSERVATION_KEY = "observations"


@functools.partial(jax.jit, static_argnums=0)
def _mjx_step(env: Env, state: State, action) -> State:
    return env.step(state, action)


@functools.partial(jax.jit, static_argnums=0)
def _set_state(env: Env, state: State, qpos, qvel, act, time, model_fields, warmstart) -> State:
    return env.set_state(
        state, qpos, qvel, act, time, model_fields=model_fields, warmstart=warmstart
    )


class Environment(dm_env.Environment):
    """A suite task as dm_control's `control.Environment` (see the module docstring).

    Built by `jaxcontrol.suite.load`.
    """

    def __init__(self, env: Env, task: Task, physics, options: EnvironmentOptions):
        self._env = env
        self._task = task
        self._physics = physics
        self._physics.legacy_step = True
        self._flat_observation = options.flat_observation
        self._n_sub_steps = env.n_sub_steps
        self._step_limit = step_limit(env.time_limit, env.control_timestep)
        self._step_count = 0
        self._reset_next_step = True
        self._pushed: tuple | None = None  # what the MJX backend last wrote into the physics
        self._observation_spec = None

    # ----- dm_env ----------------------------------------------------------------------

    def reset(self) -> dm_env.TimeStep:
        """Starts a new episode and returns its FIRST TimeStep (reward and discount None)."""
        self._reset_next_step = False
        self._step_count = 0
        with self._physics.reset_context():
            self._task.initialize_episode(self._physics)
        self._remember_pushed()
        observation = self._observe(self._task.get_observation(self._physics))
        return dm_env.TimeStep(dm_env.StepType.FIRST, None, None, observation)

    def step(self, action) -> dm_env.TimeStep:
        """Applies `action` for one control step; after LAST, starts a new episode."""
        if self._reset_next_step:
            return self.reset()
        self._task.before_step(action, self._physics)
        if self._env.backend == "mujoco":
            self._physics.step(self._n_sub_steps)
        else:
            self._mjx_step()
        self._task.after_step(self._physics)

        reward = self._task.get_reward(self._physics)
        observation = self._observe(self._task.get_observation(self._physics))
        self._step_count += 1
        if self._step_count >= self._step_limit:
            discount = 1.0
        else:
            discount = self._task.get_termination(self._physics)
        if discount is not None:
            self._reset_next_step = True
            return dm_env.TimeStep(dm_env.StepType.LAST, reward, discount, observation)
        return dm_env.TimeStep(dm_env.StepType.MID, reward, 1.0, observation)

    def action_spec(self) -> specs.BoundedArray:
        """dm_control's action spec: float64, bounded by the control range, named by
        the actuators."""
        return self._task.action_spec(self._physics)

    def observation_spec(self):
        """Float64 array specs keyed and ordered like dm_control's (one key,
        "observations", with `flat_observation`)."""
        if self._observation_spec is None:
            with jax.enable_x64(True):
                inner = self._env.observation_spec()
            spec = collections.OrderedDict(
                (key, specs.Array(value.shape, np.float64, name=key))
                for key, value in inner.items()
            )
            if self._flat_observation:
                size = sum(int(np.prod(value.shape)) for value in spec.values())
                spec = collections.OrderedDict(
                    [
                        (
                            FLAT_OBSERVATION_KEY,
                            specs.Array((size,), np.float64, name=FLAT_OBSERVATION_KEY),
                        )
                    ]
                )
            self._observation_spec = spec
        return self._observation_spec

    # ----- dm_control's Environment ------------------------------------------------------

    @property
    def physics(self):
        """dm_control's Physics class of the domain over our model (`host`)."""
        return self._physics

    @property
    def task(self) -> Task:
        return self._task

    @property
    def backend(self) -> str:
        """ "mujoco" (C MuJoCo on the host) or "mjx"."""
        return self._env.backend

    @property
    def precision(self) -> str:
        """ "float64", or "float32" (MJX only): what the JAX side computes in. Specs and
        outputs are float64 either way."""
        return self._task.precision

    @property
    def jax_env(self) -> Env:
        """The jaxcontrol Env underneath (static: its pure `reset` and `step`)."""
        return self._env

    def control_timestep(self) -> float:
        """Seconds between actions."""
        return self._physics.timestep() * self._n_sub_steps

    # ----- inside ---------------------------------------------------------------------

    def _observe(self, observation):
        """A fresh copy (no memory shared between steps), flattened if asked."""
        observation = collections.OrderedDict(
            (key, np.array(value, np.float64)) for key, value in observation.items()
        )
        if self._flat_observation:
            flat = np.concatenate([value.ravel() for value in observation.values()])
            return collections.OrderedDict([(FLAT_OBSERVATION_KEY, flat)])
        return observation

    def _mjx_step(self) -> None:
        """One MJX control step from the host physics' state, written back into it."""
        env, physics = self._env, self._physics
        with options.numerics(self._task.precision):
            state = self._task.state
            if self._pushed is None or self._pushed != self._fingerprint():
                data = physics.data
                state = _set_state(
                    env,
                    state,
                    np.array(data.qpos),
                    np.array(data.qvel),
                    np.array(data.act) if env.mj_model.na else None,
                    float(data.time),
                    host.model_fields(physics, env.task.episode_model_fields),
                    np.array(data.qacc_warmstart),
                )
            # xfrc_applied and qfrc_applied from the host, as C's step reads them.
            state = state.replace(
                data=state.data.replace(
                    qfrc_applied=np.array(physics.data.qfrc_applied),
                    xfrc_applied=np.array(physics.data.xfrc_applied),
                )
            )
            state = _mjx_step(env, state, np.array(physics.data.ctrl))
        if bool(state.diverged):
            raise host.physics_error("MJX's physics state went non-finite in this step")
        self._task.state = state
        data = jax.device_get(state.data)
        host.write_state(physics, data.qpos, data.qvel, data.act, data.time, data.qacc_warmstart)
        host.positions_and_velocities(physics)
        host.write_acceleration(physics, data)
        physics.data.sensordata[:] = data.sensordata
        self._remember_pushed()

    def _fingerprint(self):
        return host.fingerprint(self._physics, self._env.task.episode_model_fields, host.STATE)

    def _remember_pushed(self) -> None:
        self._pushed = self._fingerprint() if self._env.backend == "mjx" else None

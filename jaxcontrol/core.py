"""`Env`, `State` and `StepType`: the pure-JAX face of a suite task.

`Env` holds only static data (the task, its models and tables), is immutable
and hashable, and can be closed over or passed as a static argument to `jit`.
All dynamic data lives in `State`, a pytree, so `jax.vmap(env.step)` runs
thousands of environments at once.

Episode semantics follow dm_env/dm_control: `reset` returns a FIRST state with
reward 0; `step` returns MID states and LAST at the time limit with discount 1
(truncation); discount 0 only at a true terminal state. A task with an infinite
time limit (LQR) has no truncation (`episode_length` None) and ends only at a
terminal state. `step` never resets by itself: stepping a LAST state continues
the same physics, and every later step is LAST again, with the discount of the
step that ended the episode. Use `jaxcontrol.wrappers.AutoReset` in training loops.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import math
from typing import Any

import dm_env
import flax.struct
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from dm_env import specs
from mujoco import mjx

from jaxcontrol import cpu_physics
from jaxcontrol import physics as physics_lib
from jaxcontrol.mjcf import compat
from jaxcontrol.physics import Physics
from jaxcontrol.task import Task


class StepType(enum.IntEnum):
    """dm_env's step types, as integers inside `State.step_type`."""

    FIRST = int(dm_env.StepType.FIRST)
    MID = int(dm_env.StepType.MID)
    LAST = int(dm_env.StepType.LAST)


@flax.struct.dataclass
class State:
    """One environment's full dynamic state (a pytree; batch it with vmap).

    Attributes:
      data: the MJX physics data, synchronised as dm_control's after a step.
      observation: OrderedDict keyed and ordered like dm_control's.
      reward: reward of the last transition (0 on FIRST).
      discount: 1.0, or the task's discount at a true terminal state.
      step_type: `StepType` as int32.
      step: control steps taken in this episode.
      variables: the task's per-episode variables that are not model fields.
      model_fields: this environment's own values of model fields (full
        arrays, keyed by `mjx.Model` field name), applied to `env.mjx_model` at
        every step: the task's per-episode model edits (a target's position,
        point_mass-hard's tendon coefficients) and any added by wrappers.
      key: this environment's PRNG key for its next reset.
      diverged: True once the physics went non-finite in this episode; the
        episode ended there and `data` holds the last finite state.
      info: free space for wrappers (e.g. `final_observation`).
    """

    data: mjx.Data
    observation: collections.OrderedDict
    reward: jax.Array
    discount: jax.Array
    step_type: jax.Array
    step: jax.Array
    variables: dict[str, jax.Array]
    model_fields: dict[str, jax.Array]
    key: jax.Array
    diverged: jax.Array
    info: dict[str, Any] = flax.struct.field(default_factory=dict)

    def first(self) -> jax.Array:
        return self.step_type == StepType.FIRST

    def mid(self) -> jax.Array:
        return self.step_type == StepType.MID

    def last(self) -> jax.Array:
        return self.step_type == StepType.LAST


class Env:
    """A suite task as pure `reset`/`step` functions over MJX.

    Build it with `jaxcontrol.load(domain, task)`. Two Envs are equal (and hash
    equal) when their domain, task name and task parameters are.
    """

    def __init__(self, domain: str, task_name: str, task: Task, backend: str = "mjx"):
        cpu_physics.check_backend(backend)
        mj_model = task.make_model()
        timestep = float(mj_model.opt.timestep)
        if task.control_timestep is None:
            n_sub_steps = 1
        else:
            n_sub_steps = _n_sub_steps(task.control_timestep, timestep)
        # dm_control ends an episode once step_count >= time_limit / control dt.
        step_limit = task.time_limit / (timestep * n_sub_steps)
        episode_length = None if math.isinf(step_limit) else math.ceil(step_limit)
        values = {
            "domain": domain,
            "task_name": task_name,
            "task": task,
            "mj_model": mj_model,
            "names": physics_lib.Names(mj_model),
            "n_sub_steps": n_sub_steps,
            "physics_timestep": timestep,
            "episode_length": episode_length,
            "backend": backend,
            "_cache": {},
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"Env is immutable; cannot set {name!r}")

    def _key(self):
        return (self.domain, self.task_name, self.task, self.backend)

    def __eq__(self, other):
        return isinstance(other, Env) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        backend = "" if self.backend == "mjx" else f", backend={self.backend!r}"
        return f"Env({self.domain}-{self.task_name}, {self.task}{backend})"

    # ----- static description ---------------------------------------------------

    @property
    def control_timestep(self) -> float:
        return self.physics_timestep * self.n_sub_steps

    @property
    def time_limit(self) -> float:
        return self.task.time_limit

    @property
    def unwrapped(self) -> Env:
        """This Env: the bottom of any wrapper stack (`jaxcontrol.wrappers.EnvLike`)."""
        return self

    @property
    def mjx_model(self) -> mjx.Model:
        """The MJX model, in float64 when jax_enable_x64 is on, else float32."""

        def build():
            with jax.ensure_compile_time_eval():  # concrete even when first used under jit
                # The C backend steps with C MuJoCo: MJX only computes kinematics there.
                steps = self.backend == "mjx"
                return compat.put_model(self.mj_model, self.task.solver_caps, steps=steps)

        return self._cached("mjx_model", build)

    def _initial_data(self) -> mjx.Data:
        """dm_control's state after `mj_resetData` and a forward pass."""

        def build():
            mj_model = compat.to_mjx_compatible(self.mj_model)
            mj_data = mujoco.MjData(mj_model)
            mujoco.mj_forward(mj_model, mj_data)
            with jax.ensure_compile_time_eval():
                return compat.put_data(mj_model, mj_data)

        return self._cached("initial_data", build)

    def _carried(self, data: mjx.Data) -> mjx.Data:
        """What a `State` keeps of `data`: all of it on MJX; on C, no constraint rows."""
        if self.backend == "mujoco":
            return cpu_physics.without_constraint_rows(data)
        return data

    def _cached(self, name, build):
        key = (name, bool(jax.config.jax_enable_x64))
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def _reset_shapes(self):
        """Shapes of a reset's task variables and observation (`jax.eval_shape`).

        Traces the task's `initialize_episode` and `get_observation`, not the forward
        pass between them, which changes no shape: tracing a whole `reset` cost several
        seconds per model (its collision detection), and the specs and the blank state
        would each have paid it. For the same reason the reset's contact loops count
        with `_no_contacts` here, as they count on C, so they trace neither MJX's
        collision nor its kinematics (`Physics.count_contacts`), and its physics steps
        (cheetah's settle) are `_no_steps`.
        """

        def shapes(key):
            fields = self.default_model_fields()
            physics = Physics.create(
                self.mjx_model, self._initial_data(), self.names, fields, _no_contacts, _no_steps
            )
            physics, variables = self.task.initialize_episode(physics, key)
            return variables, self.task.get_observation(physics, variables)

        return self._cached("reset_shapes", lambda: jax.eval_shape(shapes, jax.random.key(0)))

    def blank_state(self) -> State:
        """A state of this Env's structure with zero values (no physics computed).

        A cheap template for `set_state` and `reference.inject`: only its key,
        variables and model fields are used. Its structure, shapes and dtypes are
        a reset's (the battery checks them against `reset`'s).
        """

        def build():
            variables, observation = self._reset_shapes()
            dtype = _float_dtype()
            with jax.ensure_compile_time_eval():  # concrete even when first used under jit
                zeros = functools.partial(jax.tree.map, lambda s: jnp.zeros(s.shape, s.dtype))
                return State(
                    data=self._carried(self._initial_data()),
                    observation=zeros(observation),
                    reward=jnp.zeros((), dtype),
                    discount=jnp.zeros((), dtype),
                    step_type=jnp.int32(0),
                    step=jnp.int32(0),
                    variables=dict(zeros(variables)),
                    model_fields=self.default_model_fields(),
                    key=jax.random.key(0),
                    diverged=jnp.bool_(False),
                )

        return self._cached("blank_state", build)

    def action_spec(self) -> specs.BoundedArray:
        """dm_control's action spec: shape (nu,), bounds from ctrlrange."""
        m = self.mj_model
        limited = m.actuator_ctrllimited.astype(bool)
        minimum = np.full(m.nu, -mujoco.mjMAXVAL)
        maximum = np.full(m.nu, mujoco.mjMAXVAL)
        minimum[limited], maximum[limited] = m.actuator_ctrlrange[limited].T
        return specs.BoundedArray((m.nu,), _float_dtype(), minimum, maximum, name="action")

    def observation_spec(self) -> collections.OrderedDict:
        """Observation specs keyed and ordered like dm_control's."""

        def build():
            shapes = self._reset_shapes()[1]
            return collections.OrderedDict(
                (k, specs.Array(v.shape, v.dtype, name=k)) for k, v in shapes.items()
            )

        return self._cached("observation_spec", build)

    # ----- dynamics ---------------------------------------------------------------

    def _physics(self, data: mjx.Data, model_fields) -> Physics:
        # On the C backend, a reset's contact tests (rejection samplers) and physics
        # steps (cheetah's settle) run on C too.
        if self.backend == "mjx":
            return Physics.create(self.mjx_model, data, self.names, model_fields)
        # One object per Env each: Physics compares them as static.
        count = self._cached(
            "count_contacts", lambda: functools.partial(cpu_physics.contact_count, self)
        )
        steps = self._cached(
            "step_in_reset", lambda: functools.partial(cpu_physics.step_in_reset, self)
        )
        return Physics.create(self.mjx_model, data, self.names, model_fields, count, steps)

    def default_model_fields(self) -> dict[str, jax.Array]:
        """The compiled model's values of the task's per-episode model fields."""
        names = self.task.episode_model_fields
        physics_lib.check_model_fields(names)
        return {
            name: _model_field(self.mj_model, name, getattr(self.mj_model, name)) for name in names
        }

    def reset(self, key: jax.Array, model_fields=None) -> State:
        """Starts an episode: dm_control's `reset()` as a pure function of `key`.

        `model_fields` (full arrays keyed by `mjx.Model` field name) replace the
        compiled model's values for this episode before the task initialises
        it, as in a modified model (`jaxcontrol.wrappers.DomainRandomization`).
        """
        next_key, init_key = jax.random.split(key)
        given = dict(model_fields or {})
        physics_lib.check_model_fields(given)
        given = {k: _model_field(self.mj_model, k, v) for k, v in given.items()}
        physics = self._physics(self._initial_data(), {**self.default_model_fields(), **given})
        physics, variables = self.task.initialize_episode(physics, init_key)
        extra = set(physics.model_fields) - set(self.task.episode_model_fields) - set(given)
        if extra:
            raise ValueError(
                f"{self.domain}-{self.task_name} wrote model fields {sorted(extra)} at reset; "
                "declare them in its Task.episode_model_fields"
            )
        return self._restart(physics, variables, next_key)

    def _restart(self, physics: Physics, variables, key) -> State:
        if self.backend == "mujoco":
            data = cpu_physics.forward_without_actuation(self, physics, self.task.sync)
        else:
            data = physics_lib.forward_without_actuation(physics)
        physics = dataclasses.replace(physics, data=data)
        dtype = _float_dtype()
        return State(
            data=self._carried(data),
            observation=self.task.get_observation(physics, variables),
            reward=jnp.zeros((), dtype),
            discount=jnp.ones((), dtype),
            step_type=jnp.int32(StepType.FIRST),
            step=jnp.int32(0),
            variables=dict(variables),
            model_fields=dict(physics.model_fields),
            key=key,
            diverged=jnp.bool_(False),
        )

    def set_state(
        self,
        state: State,
        qpos,
        qvel,
        act=None,
        time=None,
        *,
        model_fields=None,
        step=None,
        warmstart=None,
        **variables,
    ) -> State:
        """Puts `state` at the given physics state: our `reset_context`.

        Derived quantities and the observation are recomputed, as dm_control does
        after `reset_context`. Task variables and model fields not given keep
        their values.

        Args:
          state: a state of this Env (its key and unspecified values are kept).
          qpos: generalised positions.
          qvel: generalised velocities.
          act: actuator activations, if the model has any.
          time: simulation time; kept from `state` when None.
          model_fields: per-environment model fields to overwrite, full arrays
            keyed by `mjx.Model` field name (e.g. {"geom_pos": ...}).
          step: control steps already taken in this episode (default 0), so
            that LAST comes when it would in the episode the state is taken from.
          warmstart: the solver's warm start (`qacc_warmstart`); zero if None,
            as after dm_control's reset.
          **variables: task variables to overwrite.

        Returns:
          A FIRST state at that physics state.
        """
        unknown = set(variables) - set(state.variables)
        if unknown:
            raise ValueError(
                f"unknown task variables {sorted(unknown)}; "
                f"{self.domain}-{self.task_name} has {sorted(state.variables)}"
            )
        dtype = state.data.qpos.dtype
        data = self._initial_data().replace(
            qpos=jnp.asarray(qpos, dtype),
            qvel=jnp.asarray(qvel, dtype),
            time=state.data.time if time is None else jnp.asarray(time, dtype),
        )
        if act is not None:
            data = data.replace(act=jnp.asarray(act, dtype))
        if warmstart is not None:
            data = data.replace(qacc_warmstart=jnp.asarray(warmstart, dtype))
        merged = {
            **state.variables,
            **{k: jnp.asarray(v, state.variables[k].dtype) for k, v in variables.items()},
        }
        model_fields = model_fields or {}
        physics_lib.check_model_fields(model_fields)
        fields = {
            **state.model_fields,
            **{k: _model_field(self.mj_model, k, v) for k, v in model_fields.items()},
        }
        restarted = self._restart(self._physics(data, fields), merged, state.key)
        if step is not None:
            restarted = restarted.replace(step=jnp.asarray(step, jnp.int32))
        return restarted

    def step(self, state: State, action: jax.Array) -> State:
        """Applies `action` for one control step (dm_control's `Environment.step`).

        Actions outside the control range are clipped by MuJoCo as in dm_control;
        `physics.control()` still reads the action as given. A non-finite physics
        state ends that environment's episode: its data reverts to the last finite
        state, the reward is 0 and `diverged` is set.
        """
        action = self._check_action(action)
        physics = self._physics(state.data, state.model_fields)
        data = self.task.before_step(physics, action, state.variables)
        physics = dataclasses.replace(physics, data=data)
        if self.backend == "mujoco":
            stepped = cpu_physics.step(self, physics, self.task.sync)
        else:
            stepped = physics_lib.step(physics, self.n_sub_steps, self.task.sync)
        finite = physics_lib.is_finite(stepped)
        data = jax.tree.map(lambda new, old: jnp.where(finite, new, old), stepped, state.data)
        physics = dataclasses.replace(physics, data=data)

        dtype = _float_dtype()
        reward = jnp.where(finite, self.task.get_reward(physics, state.variables), 0)
        observation = self.task.get_observation(physics, state.variables)
        count = state.step + 1
        truncated = (
            jnp.bool_(False) if self.episode_length is None else count >= self.episode_length
        )
        termination = self.task.get_termination(physics, state.variables)
        if termination is None:
            terminated, terminal_discount = jnp.bool_(False), jnp.ones((), dtype)
        else:
            terminated, terminal_discount = termination
        # As dm_control: the time limit wins over a terminal state (discount 1).
        discount = jnp.where(terminated & ~truncated, terminal_discount, 1).astype(dtype)
        last = truncated | terminated | ~finite
        # After LAST the episode stays ended (a terminal state may be left again).
        # A LAST state at step 0 is a new episode that `AutoReset` started in the
        # step that ended the last one (its step type still reports that end).
        ended = (state.step_type == StepType.LAST) & (state.step > 0)
        discount = jnp.where(ended, state.discount, discount)
        last = last | ended
        return state.replace(
            data=data,
            observation=observation,
            reward=reward.astype(dtype),
            discount=discount,
            step_type=jnp.where(last, StepType.LAST, StepType.MID).astype(jnp.int32),
            step=count,
            diverged=state.diverged | ~finite,
        )

    def render(
        self,
        state: State,
        height: int = 240,
        width: int = 320,
        camera_id: int | str = 0,
        *,
        index: int | None = None,
    ) -> np.ndarray:
        """An image of `state` by MuJoCo's OpenGL renderer, as dm_control's `physics.render`.

        Args:
          state: one environment's state, or a batch with `index` naming one.
          height: image height in pixels.
          width: image width in pixels.
          camera_id: a camera index or name of the model (-1: the free camera).
          index: which environment of a batched `state` to render.

        Returns:
          uint8 (height, width, 3). Needs OpenGL (`MUJOCO_GL`, see
          `jaxcontrol.render.gl`); for pixels inside jit see `jaxcontrol.wrappers.Pixels`.
        """
        from jaxcontrol.render import cpu  # pylint: disable=import-outside-toplevel

        return cpu.render(self, state, height, width, camera_id, index=index)

    def _check_action(self, action) -> jax.Array:
        action = jnp.asarray(action)
        expected = (self.mj_model.nu,)
        if action.shape != expected:
            raise ValueError(
                f"{self.domain}-{self.task_name} expects an action of shape {expected}, "
                f"got {action.shape} (vmap over a batch dimension instead of passing it)"
            )
        return action.astype(_float_dtype())


def _model_field(mj_model: mujoco.MjModel, name: str, value) -> jax.Array:
    """`value` as a per-environment value of model field `name` (float fields in
    JAX's default float, as the MJX model holds them)."""
    floating = np.issubdtype(np.asarray(getattr(mj_model, name)).dtype, np.floating)
    return jnp.asarray(value, _float_dtype() if floating else None)


def _float_dtype():
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


def _n_sub_steps(control_timestep: float, physics_timestep: float) -> int:
    """dm_control's `compute_n_steps`, with the same errors."""
    ratio = control_timestep / physics_timestep
    if control_timestep < physics_timestep:
        raise ValueError(
            f"control_timestep ({control_timestep}) cannot be smaller "
            f"than the physics timestep ({physics_timestep})"
        )
    if abs(ratio - round(ratio)) > 1e-8:
        raise ValueError(
            f"control_timestep ({control_timestep}) must be an integer "
            f"multiple of the physics timestep ({physics_timestep})"
        )
    return round(ratio)


def _no_contacts(physics: Physics, slack: float | None = None):
    """`Physics.count_contacts` for shape evaluation only (`Env._reset_shapes`): no
    contacts, as constants, so that a contact loop's shapes come without its collision."""
    count = jnp.int32(0)
    return count if slack is None else (count, jnp.zeros((), physics.data.qpos.dtype))


def _no_steps(physics: Physics, qpos: jax.Array, n_steps: int):
    """`Physics.step_in_reset` for shape evaluation only (`Env._reset_shapes`): the
    state as it is, so that a reset's physics steps trace no MJX step."""
    return {
        name: qpos if name == "qpos" else getattr(physics.data, name)
        for name in cpu_physics.RESET_STEPPED
    }

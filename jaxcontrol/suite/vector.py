"""`load_vector`: N suite environments stepped as one jitted program, NumPy in and out.

Each environment follows dm_control's episode rules on its own: its first step
and the step after its LAST start a new episode and return that episode's FIRST
(ignoring the action given for it). A `TimeStep`'s fields are NumPy arrays with
a leading axis of `num_envs`: `step_type` (dm_env's integer values), `reward`
and `discount` (float64; 0 and 1 where the step is FIRST, which dm_control
reports as None), and the observation (an OrderedDict of float64 arrays, or one
vector per environment under "observations" with `flat_observation`).

The physics is jaxcontrol's `Env` (C MuJoCo through `mujoco.batch` by default,
MJX on request) under `jax.vmap`, in float64 (float32 on request with MJX); the resets that a step needs run
inside the same program (`lax.cond`, taken only when some environment
restarts). There is no host `physics`: `render(index)` draws one environment.
"""

from __future__ import annotations

import collections

import dm_env
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

from jaxcontrol.core import Env, State, StepType
from jaxcontrol.suite import options
from jaxcontrol.suite.environment import FLAT_OBSERVATION_KEY


def _outputs(states: State) -> tuple:
    """What a `TimeStep` reads of the batch: a small part of the whole state."""
    return states.step_type, states.reward, states.discount, states.observation


def _programs(env: Env):
    """The jitted reset and step of `env`'s batch, each returning the new states and
    their `_outputs` (so the host fetches only those)."""

    @jax.jit
    def reset(keys: jax.Array):
        states = jax.vmap(env.reset)(keys)
        return states, _outputs(states)

    @jax.jit
    def step(states: State, actions: jax.Array, restart: jax.Array):
        stepped = jax.vmap(env.step)(states, actions)

        def restarted(stepped):
            fresh = jax.vmap(env.reset)(states.key)

            def pick(new, old):
                return jnp.where(restart.reshape(restart.shape + (1,) * (new.ndim - 1)), new, old)

            return jax.tree.map(pick, fresh, stepped)

        stepped = jax.lax.cond(restart.any(), restarted, lambda stepped: stepped, stepped)
        return stepped, _outputs(stepped)

    return reset, step


class VectorEnvironment:
    """`num_envs` environments of one task behind a NumPy API (module docstring).

    Built by `jaxcontrol.suite.load_vector`.
    """

    def __init__(
        self,
        env: Env,
        num_envs: int,
        seed: int,
        flat_observation: bool,
        precision: str = "float64",
    ):
        self._env = env
        self.precision = precision
        self.num_envs = int(num_envs)
        self._seed = seed
        self._flat_observation = flat_observation
        self._states: State | None = None
        self._outputs = None
        self._reset_program, self._step_program = _programs(env)
        self._restart = np.ones(self.num_envs, bool)

    @property
    def jax_env(self) -> Env:
        """The jaxcontrol Env underneath."""
        return self._env

    def reset(self) -> dm_env.TimeStep:
        """Starts a new episode in every environment (all FIRST)."""
        if self._states is None:
            keys = jax.random.split(jax.random.key(self._seed), self.num_envs)
        else:
            keys = self._states.key
        with options.numerics(self.precision):
            self._states, self._outputs = self._reset_program(keys)
        self._restart = np.zeros(self.num_envs, bool)
        return self._time_step()

    def step(self, actions) -> dm_env.TimeStep:
        """Steps every environment with its row of `actions` ((num_envs, nu)); those
        whose last step was LAST start a new episode instead."""
        if self._states is None:
            return self.reset()
        actions = np.asarray(actions, np.float64)
        expected = (self.num_envs, *self.action_spec().shape)
        if actions.shape != expected:
            raise ValueError(f"expected actions of shape {expected}, got {actions.shape}")
        with options.numerics(self.precision):
            self._states, self._outputs = self._step_program(self._states, actions, self._restart)
        step = self._time_step()
        self._restart = step.step_type == int(StepType.LAST)
        return step

    def action_spec(self) -> specs.BoundedArray:
        """One environment's action spec, as dm_control's (float64)."""
        inner = self._env.action_spec()
        return specs.BoundedArray(
            inner.shape, np.float64, np.asarray(inner.minimum), np.asarray(inner.maximum)
        )

    def observation_spec(self):
        """One environment's observation specs, as `load`'s environment gives them."""
        with jax.enable_x64(True):
            inner = self._env.observation_spec()
        spec = collections.OrderedDict(
            (key, specs.Array(value.shape, np.float64, name=key)) for key, value in inner.items()
        )
        if self._flat_observation:
            size = sum(int(np.prod(value.shape)) for value in spec.values())
            return collections.OrderedDict(
                [(FLAT_OBSERVATION_KEY, specs.Array((size,), np.float64, FLAT_OBSERVATION_KEY))]
            )
        return spec

    def control_timestep(self) -> float:
        """Seconds between actions."""
        return self._env.control_timestep

    def render(self, index: int, height: int = 240, width: int = 320, camera_id=-1):
        """Environment `index`'s current frame by MuJoCo's renderer (uint8)."""
        return self._env.render(self._states, height, width, camera_id, index=index)

    def _time_step(self) -> dm_env.TimeStep:
        step_type, reward, discount, observation = jax.device_get(self._outputs)
        observation = collections.OrderedDict(
            (key, np.array(value, np.float64)) for key, value in observation.items()
        )
        if self._flat_observation:
            flat = np.concatenate(
                [value.reshape(self.num_envs, -1) for value in observation.values()], axis=1
            )
            observation = collections.OrderedDict([(FLAT_OBSERVATION_KEY, flat)])
        return dm_env.TimeStep(
            step_type=np.array(step_type, np.int64),
            reward=np.array(reward, np.float64),
            discount=np.array(discount, np.float64),
            observation=observation,
        )


def vector_environment(
    env: Env, num_envs: int, random, environment_kwargs, precision: str = "float64"
) -> VectorEnvironment:
    """The `VectorEnvironment` of an Env built by `load_vector`."""
    _, seed = options.random_state(random)
    env_options = options.environment_options(environment_kwargs)
    return VectorEnvironment(env, num_envs, seed, env_options.flat_observation, precision)

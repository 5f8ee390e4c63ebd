"""`env.task`: dm_control's `Task` interface over a jaxcontrol task.

Code written for dm_control reads `env.task.random`, sets
`env.task.visualize_reward`, and calls `get_observation(physics)`,
`get_reward(physics)` and `get_termination(physics)` on a physics. Here each
runs the jaxcontrol task's JAX code on the host physics' current data
(`observe`); the three share one evaluation while the physics is unchanged.
`initialize_episode(physics)` draws the episode with the task's JAX reset and
writes it into the physics.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from jaxcontrol.core import Env, State
from jaxcontrol.suite import host, observe, options

REWARD_MATERIALS = ("self", "effector", "target")  # coloured by `visualize_reward`


@functools.partial(jax.jit, static_argnums=0)
def _reset(env: Env, key: jax.Array) -> State:
    return env.reset(key)


class Task:
    """dm_control's `base.Task` over a jaxcontrol Env's task.

    Args:
      env: the jaxcontrol Env (its task and backend).
      random: the task's `np.random.RandomState` (`env.task.random`).
      seed: the first episode's key is `jax.random.key(seed)`; each later
        episode uses the key the previous one carries (`State.key`), the
        sequence `jaxcontrol.wrappers.DmEnv` and `AutoReset` follow.
      precision: "float64", or "float32" (MJX only): what the JAX side computes in.
    """

    def __init__(
        self, env: Env, random: np.random.RandomState, seed: int, precision: str = "float64"
    ):
        self._env = env
        self.precision = precision
        self._random = random
        self._seed = seed
        self._visualize_reward = False
        self.state: State | None = None  # the episode's jaxcontrol state (its variables)
        self._cache: tuple[tuple, observe.Evaluation] | None = None

    @property
    def env(self) -> Env:
        """The jaxcontrol Env underneath."""
        return self._env

    @property
    def random(self) -> np.random.RandomState:
        """The task's `np.random.RandomState` (jaxcontrol's episodes draw from JAX keys)."""
        return self._random

    @property
    def visualize_reward(self) -> bool:
        return self._visualize_reward

    @visualize_reward.setter
    def visualize_reward(self, value: bool) -> None:
        if not isinstance(value, bool):
            # A ValueError, as dm_control raises.
            raise ValueError(f"visualize_reward takes a bool, not {type(value).__name__}")  # noqa: TRY004
        self._visualize_reward = value

    # ----- dm_control's Task methods ------------------------------------------------

    def action_spec(self, physics):
        """dm_control's action spec of the physics' actuators (float64, named)."""
        dm_mujoco, _ = host.dm_control_modules()
        return dm_mujoco.action_spec(physics)

    def initialize_episode(self, physics) -> None:
        """Draws an episode with the JAX task's reset and writes it into `physics`.

        Called inside `physics.reset_context()`, whose exit runs the forward pass.
        """
        key = jax.random.key(self._seed) if self.state is None else self.state.key
        with options.numerics(self.precision):
            self.state = _reset(self._env, key)
        data = self.state.data
        host.write_model_fields(physics, jax.device_get(self.state.model_fields))
        host.write_state(
            physics, np.asarray(data.qpos), np.asarray(data.qvel), np.asarray(data.act)
        )
        self.after_step(physics)

    def before_step(self, action, physics) -> None:
        """Sets the control signal to `action`, as dm_control."""
        action = getattr(action, "continuous_actions", action)
        physics.set_control(action)

    def after_step(self, physics) -> None:
        """Colours the bodies by the reward where `visualize_reward` is set."""
        if self._visualize_reward:
            reward = float(np.clip(self.get_reward(physics), 0.0, 1.0))
            set_reward_colors(physics, reward)

    def get_observation(self, physics):
        """The task's observation of `physics` (OrderedDict of float64 arrays)."""
        return self.evaluate(physics).observation

    def get_reward(self, physics):
        """The task's reward at `physics`."""
        return self.evaluate(physics).reward

    def get_termination(self, physics):
        """None, or the discount of a terminal state."""
        return self.evaluate(physics).discount

    def observation_spec(self, physics):
        """Not given: `Environment.observation_spec` reads the Env's (dm_control's
        protocol for a task without one)."""
        raise NotImplementedError

    # ----- the evaluation ------------------------------------------------------------

    def evaluate(self, physics) -> observe.Evaluation:
        """Observation, reward and termination at `physics`' current data, computed
        once per state of the physics."""
        names = self._env.task.episode_model_fields
        mark = (id(physics), host.fingerprint(physics, names))
        if self._cache is None or self._cache[0] != mark:
            variables = {} if self.state is None else self.state.variables
            fields = host.model_fields(physics, names)
            result = observe.evaluate(
                self._env, host.read(physics), fields, variables, self.precision
            )
            self._cache = (mark, result)
        return self._cache[1]


def set_reward_colors(physics, reward: float) -> None:
    """Blends the `self`, `effector` and `target` materials from `*_default` to
    `*_highlight` by reward**4, as dm_control colours a rendered frame."""
    colors = physics.named.model.mat_rgba
    default = colors[[name + "_default" for name in REWARD_MATERIALS]]
    highlight = colors[[name + "_highlight" for name in REWARD_MATERIALS]]
    blend = reward**4
    colors[list(REWARD_MATERIALS)] = blend * highlight + (1.0 - blend) * default

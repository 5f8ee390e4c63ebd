"""The base class of every suite task: small pure functions over `Physics`.

A task mirrors dm_control's `base.Task`: `initialize_episode`,
`get_observation`, `get_reward` and `get_termination`. Here each is a pure
function of a `Physics` view and the episode's own variables (targets,
randomised gains...), so the whole episode is one jittable pytree.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Mapping

import jax
import mujoco
from mujoco import mjx

from jaxcontrol import physics as physics_lib
from jaxcontrol.physics import Physics

Variables = Mapping[str, jax.Array]
Observation = "collections.OrderedDict[str, jax.Array]"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Task:
    """A suite task. Subclasses are frozen dataclasses (hashable, static).

    Attributes:
      time_limit: episode length in seconds (dm_control's `time_limit`).
      control_timestep: seconds between agent actions; None means one physics
        step (dm_control's default).
    """

    time_limit: float = float("inf")
    control_timestep: float | None = None

    def make_model(self) -> mujoco.MjModel:
        """Builds this task's CPU MuJoCo model."""
        raise NotImplementedError

    def sync(self, model: mjx.Model, data: mjx.Data) -> mjx.Data:
        """Recomputes what observations and rewards read after a step.

        dm_control ends each step with `mj_step1`; a task only pays for the part of
        it that its observations and reward use. Body, geom and site poses are
        always current; override (e.g. with `physics.sync_position`) for tasks that
        read tendons, centres of mass, cameras or sensors.
        """
        return physics_lib.sync_kinematics(model, data)

    def initialize_episode(
        self, physics: Physics, key: jax.Array
    ) -> tuple[mjx.Data, dict[str, jax.Array]]:
        """Returns the episode's initial data (qpos, qvel...) and variables."""
        raise NotImplementedError

    def before_step(self, physics: Physics, action: jax.Array, variables: Variables) -> mjx.Data:
        """Returns the data to step from: dm_control sets the control signal.

        It must leave `qpos` and the mocap poses unchanged: the step reuses the
        kinematics that the previous step computed for them.
        """
        del variables
        return physics.data.replace(ctrl=action)

    def get_observation(self, physics: Physics, variables: Variables) -> collections.OrderedDict:
        raise NotImplementedError

    def get_reward(self, physics: Physics, variables: Variables) -> jax.Array:
        raise NotImplementedError

    def get_termination(self, physics: Physics, variables: Variables) -> jax.Array | None:
        """Returns (terminated, discount) or None if the task never terminates."""
        del physics, variables
        return None

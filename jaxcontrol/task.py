"""The base class of every suite task: small pure functions over `Physics`.

A task mirrors dm_control's `base.Task`: `initialize_episode`,
`get_observation`, `get_reward` and `get_termination`. Here each is a pure
function of a `Physics` view and the episode's own variables, so the whole
episode is one jittable pytree. Where dm_control edits the model at reset (a
target's position or size), the task writes those fields with
`physics.with_model(...)` and declares them in `episode_model_fields`; each
environment then carries its own values in `State.model_fields`.

Facts about a task that only the parity harness or the dm_control bridge need
live with them, keyed on (domain, task): its declared episode class
(`parity.classes`), its rollout family (`parity.families`), its soak's shards
(`parity.settings`), and how to build or read its dm_control environment
(`reference.overrides`).
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

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

    Class attributes (facts about the task, not arguments):
      episode_model_fields: the model fields dm_control writes at every reset.
      solver_caps: (iterations, ls_iterations) for MJX's constraint solver,
        where lower caps than dm_control's keep MJX as close to C MuJoCo as
        dm_control's own settings (benchmarks/solver_caps.py); None keeps
        dm_control's. The CPU model (`Env.mj_model`) always keeps dm_control's.
        Where the measured caps depend on the task's arguments (stacker's box
        count, manipulator's prop and receptacle), the task overrides this with
        a property.
      reward_range: (low, high) bounds of every reward; dm_control's suite
        keeps its rewards in [0, 1] except for tasks such as LQR, whose reward
        is 1 minus an unbounded cost.

    A task with an infinite `time_limit` has no truncation (`Env.episode_length`
    is None): its episodes end only at a terminal state (`get_termination`).
    """

    time_limit: float = float("inf")
    control_timestep: float | None = None

    episode_model_fields: ClassVar[tuple[str, ...]] = ()
    solver_caps: ClassVar[tuple[int, int] | None] = None
    reward_range: ClassVar[tuple[float, float]] = (0.0, 1.0)

    def make_model(self) -> mujoco.MjModel:
        """Builds this task's CPU MuJoCo model."""
        raise NotImplementedError

    def sync(self, physics: Physics) -> mjx.Data:
        """Recomputes what observations and rewards read after a step.

        dm_control ends each step with `mj_step1`; a task only pays for the part of
        it that its observations and reward use. Body, geom and site poses are
        always current; override (e.g. with `physics.sync_position`) for tasks that
        read tendons, centres of mass, cameras or sensors.
        """
        return physics_lib.sync_kinematics(physics)

    def initialize_episode(
        self, physics: Physics, key: jax.Array
    ) -> tuple[Physics, dict[str, jax.Array]]:
        """Returns the episode's initial physics and its task variables.

        Set the state with `physics.with_data(qpos=...)` and the per-episode
        model edits with `physics.with_model(...)`.
        """
        raise NotImplementedError

    def terminal_state(self) -> dict[str, Any] | None:
        """A physics state (`qpos`, `qvel`) from which one step under zero action
        ends the episode at a true terminal state; None if the task never terminates.

        The test battery steps it here and in dm_control and expects LAST with the
        task's terminal discount from both.
        """
        return None

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

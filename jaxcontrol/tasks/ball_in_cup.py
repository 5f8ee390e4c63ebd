"""Ball-in-Cup domain: swing a ball on a string into a cup (dm_control `ball_in_cup`)."""

import collections
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from jaxcontrol import mjcf, randomizers
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 20  # (seconds)
_CONTROL_TIMESTEP = 0.02  # (seconds)
# dm_control's rejection loop has no cap; ours stops here (keeping the last draw).
_MAX_ATTEMPTS = 1000


def ball_to_target(physics: Physics) -> jax.Array:
    """The vector from the ball to the target."""
    target = physics.named.data.site_xpos["target", ["x", "z"]]
    ball = physics.named.data.xpos["ball", ["x", "z"]]
    return target - ball


def in_target(physics: Physics) -> jax.Array:
    """1 if the ball is in the target, 0 otherwise."""
    distance = jnp.abs(ball_to_target(physics))
    target_size = physics.named.model.site_size["target", [0, 2]]
    ball_size = physics.named.model.geom_size["ball", 0]
    return jnp.all(distance < target_size - ball_size).astype(distance.dtype)


def _random_ball_position(physics: Physics, key: jax.Array) -> Physics:
    """Assigns a random ball position (x, then z, as dm_control draws them)."""
    x_key, z_key = jax.random.split(key)
    dtype = physics.data.qpos.dtype
    qpos = physics.named.data.qpos
    qpos = qpos.at["ball_x"].set(jax.random.uniform(x_key, (), dtype, minval=-0.2, maxval=0.2))
    qpos = qpos.at["ball_z"].set(jax.random.uniform(z_key, (), dtype, minval=0.2, maxval=0.5))
    return physics.with_data(qpos=qpos.array)


# Sync: the observations are qpos and qvel, and the reward reads the target
# site's and the ball's poses, which `step` leaves current: the default
# `sync_kinematics` is exact. Nothing reads the string (tendon) directly.


@dataclasses.dataclass(frozen=True, kw_only=True)
class BallInCup(Task):
    """Put the ball in the cup."""

    time_limit: float = _DEFAULT_TIME_LIMIT
    control_timestep: float | None = _CONTROL_TIMESTEP

    # MJX solver caps: stock MJX's float64 trajectories under them stayed identical to
    # those at dm_control's settings (16 rollouts of 1000 steps), and it ran 6.4x
    # faster at batch 256 (docs/design/solver-caps.md). The CPU model keeps dm_control's.
    solver_caps: ClassVar[tuple[int, int] | None] = (8, 4)

    def make_model(self):
        return mjcf.ball_in_cup.make_model()

    def initialize_episode(self, physics, key):
        """Finds a collision-free random initial position of the ball.

        dm_control redraws until `ncon == 0` (no cap); the measured acceptance
        rate of one draw is 0.827 (C MuJoCo, 20000 draws).
        """
        physics = randomizers.resample_while_penetrating(
            physics, key, _random_ball_position, _MAX_ATTEMPTS
        )
        return physics, {}

    def get_observation(self, physics, variables):
        """The state."""
        return collections.OrderedDict(
            position=physics.position(),
            velocity=physics.velocity(),
        )

    def get_reward(self, physics, variables):
        """A sparse reward."""
        return in_target(physics)


REGISTRY.add("ball_in_cup", "catch", BallInCup(), tags=("benchmarking", "easy"))

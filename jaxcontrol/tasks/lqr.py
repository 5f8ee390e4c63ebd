"""Procedurally generated LQR domain: bring a chain of springs to rest (dm_control `lqr`).

dm_control draws the model (each joint's stiffness) from the task's random
state when the environment is loaded, so `random=seed` fixes both the model
and the episodes. Here the model is static (one `Env`, one model), and the
task argument `model_seed` chooses it: `jaxcontrol.load("lqr", "lqr_2_1",
model_seed=s)` has the model of `suite.load("lqr", "lqr_2_1",
task_kwargs={"random": s})`; its episodes are drawn from the reset's key.

The time limit is infinite, and an episode ends only at a true terminal state:
LAST with discount 0 once the state (qpos, qvel) comes within 1e-6 of the
origin. Rewards are 1 minus a quadratic cost, so they are negative away from
the origin (`reward_range`).
"""

import collections
import dataclasses
import operator
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol import mjcf
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = float("inf")
_CONTROL_COST_COEF = 0.1
_TERMINAL_TOL = 1e-6


def state_norm(physics: Physics) -> jax.Array:
    """The norm of the physics state (qpos, qvel; the model has no activations)."""
    return jnp.linalg.norm(jnp.concatenate([physics.position(), physics.velocity()]))


@dataclasses.dataclass(frozen=True, kw_only=True)
class LQRLevel(Task):
    """A linear quadratic regulator: cost = sum(states^2) + c * sum(controls^2).

    Attributes:
      n_bodies: bodies (degrees of freedom) of the chain.
      n_actuators: how many of the first bodies are actuated.
      control_cost_coef: c, the coefficient of the control cost (> 0).
      model_seed: dm_control's `random` seed as it draws the model: the joints'
        stiffnesses are those of dm_control's environment loaded with
        `random=model_seed`.
    """

    n_bodies: int
    n_actuators: int
    control_cost_coef: float = _CONTROL_COST_COEF
    model_seed: int = 0
    time_limit: float = _DEFAULT_TIME_LIMIT

    reward_range: ClassVar[tuple[float, float]] = (-float("inf"), 1.0)

    def __post_init__(self):
        if self.control_cost_coef <= 0:
            raise ValueError(f"control_cost_coef must be positive, got {self.control_cost_coef!r}")
        try:  # numpy's RandomState takes integers in [0, 2**32)
            valid = 0 <= operator.index(self.model_seed) < 2**32
        except TypeError:
            valid = False
        if not valid or isinstance(self.model_seed, bool):
            raise ValueError(
                f"model_seed must be an integer in [0, 2**32), got {self.model_seed!r}"
            )

    def make_model(self):
        return mjcf.lqr.make_model(self.n_bodies, self.n_actuators, self.model_seed)

    def terminal_state(self):
        """The origin: at rest there, the chain stays there and the episode ends."""
        return {"qpos": np.zeros(self.n_bodies), "qvel": np.zeros(self.n_bodies)}

    def initialize_episode(self, physics, key):
        """Random state sampled from a sphere of radius sqrt(2)."""
        unit = jax.random.normal(key, (physics.mj_model.nq,), physics.data.qpos.dtype)
        return physics.with_data(qpos=np.sqrt(2) * unit / jnp.linalg.norm(unit)), {}

    def get_observation(self, physics, variables):
        """Returns an observation of the state."""
        obs = collections.OrderedDict()
        obs["position"] = physics.position()
        obs["velocity"] = physics.velocity()
        return obs

    def get_reward(self, physics, variables):
        """Returns a quadratic state and control reward."""
        position = physics.position()
        state_cost = 0.5 * jnp.dot(position, position)
        control_signal = physics.control()
        control_l2_norm = 0.5 * jnp.dot(control_signal, control_signal)
        return 1 - (state_cost + control_l2_norm * self.control_cost_coef)

    def get_termination(self, physics, variables):
        """Terminates when the state norm is smaller than epsilon."""
        return state_norm(physics) < _TERMINAL_TOL, jnp.zeros((), physics.data.qpos.dtype)


REGISTRY.add("lqr", "lqr_2_1", LQRLevel(n_bodies=2, n_actuators=1))
REGISTRY.add("lqr", "lqr_6_2", LQRLevel(n_bodies=6, n_actuators=2))

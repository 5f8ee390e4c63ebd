"""Acrobot domain: swing up a two-link pendulum actuated at the elbow."""

import collections
import dataclasses

import jax
import jax.numpy as jnp

from jaxcontrol import mjcf, rewards
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 10
_ARMS = ["upper_arm", "lower_arm"]


def horizontal(physics: Physics) -> jax.Array:
    """Horizontal (x) components of the arms' z-axes."""
    return physics.named.data.xmat[_ARMS, "xz"]


def vertical(physics: Physics) -> jax.Array:
    """Vertical (z) components of the arms' z-axes."""
    return physics.named.data.xmat[_ARMS, "zz"]


def to_target(physics: Physics) -> jax.Array:
    """Distance from the tip to the target."""
    site_xpos = physics.named.data.site_xpos
    return jnp.linalg.norm(site_xpos["target"] - site_xpos["tip"])


def orientations(physics: Physics) -> jax.Array:
    return jnp.concatenate([horizontal(physics), vertical(physics)])


@dataclasses.dataclass(frozen=True, kw_only=True)
class Balance(Task):
    """Bring the tip to the target above the shoulder and keep it there."""

    sparse: bool
    time_limit: float = _DEFAULT_TIME_LIMIT

    def make_model(self):
        return mjcf.acrobot.make_model()

    def initialize_episode(self, physics, key):
        angles = jax.random.uniform(key, (2,), minval=-jnp.pi, maxval=jnp.pi)
        qpos = physics.named.data.qpos.at[["shoulder", "elbow"]].set(angles).array
        return physics.with_data(qpos=qpos), {}

    def get_observation(self, physics, variables):
        return collections.OrderedDict(
            orientations=orientations(physics),
            velocity=physics.velocity(),
        )

    def get_reward(self, physics, variables):
        target_radius = float(physics.named.mj_model.site_size["target", 0])
        return rewards.tolerance(
            to_target(physics), bounds=(0, target_radius), margin=0 if self.sparse else 1
        )


REGISTRY.add("acrobot", "swingup", Balance(sparse=False), tags=("benchmarking",))
REGISTRY.add("acrobot", "swingup_sparse", Balance(sparse=True), tags=("benchmarking",))

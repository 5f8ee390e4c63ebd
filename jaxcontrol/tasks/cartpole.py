"""Cartpole domain: swing up and balance k poles on a cart (dm_control `cartpole`)."""

import collections
import dataclasses

import jax
import jax.numpy as jnp

from jaxcontrol import mjcf, rewards
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 10
_CART_RANGE = (-0.25, 0.25)
_ANGLE_COSINE_RANGE = (0.995, 1)


def cart_position(physics: Physics) -> jax.Array:
    return physics.named.data.qpos["slider"][0]


def angular_vel(physics: Physics) -> jax.Array:
    return physics.data.qvel[1:]


def pole_angle_cosine(physics: Physics) -> jax.Array:
    return physics.named.data.xmat[2:, "zz"]


def bounded_position(physics: Physics) -> jax.Array:
    """Cart position, then (cos, sin) of each pole angle."""
    poles = physics.named.data.xmat[2:, ["zz", "xz"]].ravel()
    return jnp.concatenate([cart_position(physics)[None], poles])


@dataclasses.dataclass(frozen=True, kw_only=True)
class Balance(Task):
    """Balance (or swing up and balance) a chain of `num_poles` poles.

    Attributes:
      swing_up: start hanging down near the middle of the rail; otherwise start
        near upright at a random cart position.
      sparse: reward 1 only inside the cart and angle bounds.
      num_poles: length of the pole chain.
    """

    swing_up: bool
    sparse: bool
    num_poles: int = 1
    time_limit: float = _DEFAULT_TIME_LIMIT

    def make_model(self):
        return mjcf.cartpole.make_model(num_poles=self.num_poles)

    def initialize_episode(self, physics, key):
        nv = physics.model.nv
        k_slider, k_hinge, k_poles, k_vel = jax.random.split(key, 4)
        qpos = physics.named.data.qpos
        if self.swing_up:
            qpos = qpos.at["slider"].set(0.01 * jax.random.normal(k_slider))
            qpos = qpos.at["hinge_1"].set(jnp.pi + 0.01 * jax.random.normal(k_hinge))
            qpos = qpos.at[2:].set(0.1 * jax.random.normal(k_poles, (nv - 2,)))
        else:
            qpos = qpos.at["slider"].set(jax.random.uniform(k_slider, minval=-0.1, maxval=0.1))
            qpos = qpos.at[1:].set(
                jax.random.uniform(k_poles, (nv - 1,), minval=-0.034, maxval=0.034)
            )
        qvel = 0.01 * jax.random.normal(k_vel, (nv,))
        return physics.with_data(qpos=qpos.array, qvel=qvel), {}

    def get_observation(self, physics, variables):
        return collections.OrderedDict(
            position=bounded_position(physics),
            velocity=physics.velocity(),
        )

    def get_reward(self, physics, variables):
        if self.sparse:
            cart_in_bounds = rewards.tolerance(cart_position(physics), _CART_RANGE)
            angle_in_bounds = rewards.tolerance(
                pole_angle_cosine(physics), _ANGLE_COSINE_RANGE
            ).prod()
            return cart_in_bounds * angle_in_bounds
        upright = (pole_angle_cosine(physics) + 1) / 2
        centered = (1 + rewards.tolerance(cart_position(physics), margin=2)) / 2
        small_control = rewards.tolerance(
            physics.control(), margin=1, value_at_margin=0, sigmoid="quadratic"
        )[0]
        small_control = (4 + small_control) / 5
        small_velocity = rewards.tolerance(angular_vel(physics), margin=5).min()
        small_velocity = (1 + small_velocity) / 2
        return upright.mean() * small_control * small_velocity * centered


_BENCHMARKING = ("benchmarking",)
REGISTRY.add("cartpole", "balance", Balance(swing_up=False, sparse=False), _BENCHMARKING)
REGISTRY.add("cartpole", "balance_sparse", Balance(swing_up=False, sparse=True), _BENCHMARKING)
REGISTRY.add("cartpole", "swingup", Balance(swing_up=True, sparse=False), _BENCHMARKING)
REGISTRY.add("cartpole", "swingup_sparse", Balance(swing_up=True, sparse=True), _BENCHMARKING)
REGISTRY.add("cartpole", "two_poles", Balance(swing_up=True, sparse=False, num_poles=2))
REGISTRY.add("cartpole", "three_poles", Balance(swing_up=True, sparse=False, num_poles=3))

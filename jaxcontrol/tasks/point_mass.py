"""Point-mass domain: drive a planar mass to the target (dm_control `point_mass`)."""

import collections
import dataclasses

import jax
import jax.numpy as jnp

from jaxcontrol import mjcf, randomizers, rewards
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

_DEFAULT_TIME_LIMIT = 20
# Largest |cos| allowed between the two random actuation directions.
_MAX_ALIGNMENT = 0.9


def mass_to_target(physics: Physics) -> jax.Array:
    geom_xpos = physics.named.data.geom_xpos
    return geom_xpos["target"] - geom_xpos["pointmass"]


def mass_to_target_dist(physics: Physics) -> jax.Array:
    return jnp.linalg.norm(mass_to_target(physics))


def _unit_normal(key: jax.Array, dtype) -> jax.Array:
    direction = jax.random.normal(key, (2,), dtype)
    return direction / jnp.linalg.norm(direction)


def random_actuation_directions(key: jax.Array, dtype) -> tuple[jax.Array, jax.Array]:
    """Two random unit directions, redrawing the second while too parallel.

    dm_control's rejection loop, as a `lax.while_loop` with a fresh key per try.
    """
    first_key, loop_key = jax.random.split(key)
    dir1 = _unit_normal(first_key, dtype)

    def draw(carry):
        key, _ = carry
        key, draw_key = jax.random.split(key)
        return key, _unit_normal(draw_key, dtype)

    def too_parallel(carry):
        return jnp.abs(jnp.dot(dir1, carry[1])) > _MAX_ALIGNMENT

    _, dir2 = jax.lax.while_loop(too_parallel, draw, draw((loop_key, dir1)))
    return dir1, dir2


@dataclasses.dataclass(frozen=True, kw_only=True)
class PointMass(Task):
    """Reach the target; `randomize_gains` mixes the actuators' directions."""

    randomize_gains: bool
    time_limit: float = _DEFAULT_TIME_LIMIT

    @property
    def episode_model_fields(self):
        return ("wrap_prm",) if self.randomize_gains else ()

    def make_model(self):
        return mjcf.point_mass.make_model()

    def initialize_episode(self, physics, key):
        joint_key, gain_key = jax.random.split(key)
        qpos = randomizers.randomize_limited_and_rotational_joints(
            physics.mj_model, joint_key, physics.data.qpos
        )
        physics = physics.with_data(qpos=qpos)
        if self.randomize_gains:
            # dm_control writes the directions into the fixed tendons' joint
            # coefficients: wrap_prm holds t1's (root_x, root_y), then t2's.
            dir1, dir2 = random_actuation_directions(gain_key, qpos.dtype)
            physics = physics.with_model(wrap_prm=jnp.concatenate([dir1, dir2]))
        return physics, {}

    def get_observation(self, physics, variables):
        return collections.OrderedDict(
            position=physics.position(),
            velocity=physics.velocity(),
        )

    def get_reward(self, physics, variables):
        target_size = float(physics.named.mj_model.geom_size["target", 0])
        near_target = rewards.tolerance(
            mass_to_target_dist(physics), bounds=(0, target_size), margin=target_size
        )
        control_reward = rewards.tolerance(
            physics.control(), margin=1, value_at_margin=0, sigmoid="quadratic"
        ).mean()
        small_control = (control_reward + 4) / 5
        return near_target * small_control


REGISTRY.add("point_mass", "easy", PointMass(randomize_gains=False), tags=("benchmarking", "easy"))
REGISTRY.add("point_mass", "hard", PointMass(randomize_gains=True))

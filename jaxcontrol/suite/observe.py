"""The JAX task evaluated on the host physics: observation, reward and termination.

The host's state, sensors and body poses replace those of a template `mjx.Data`
and the task's `sync` recomputes the rest it reads, as a C backend step ends
(`jaxcontrol.cpu_physics`). One jitted call per Env gives all three, in float64
as dm_control (in float32 where an MJX environment's precision is float32).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import numpy as np

from jaxcontrol.core import Env
from jaxcontrol.physics import Physics
from jaxcontrol.suite import options


@functools.partial(jax.jit, static_argnums=0)
def _evaluate(env: Env, host, model_fields, variables):
    template = env.blank_state().data
    # MjData keeps matrices flat (xmat: nbody x 9); mjx.Data as 3 x 3.
    host = {name: value.reshape(getattr(template, name).shape) for name, value in host.items()}
    data = template.replace(**host)
    physics = Physics.create(env.mjx_model, data, env.names, model_fields)
    data = env.task.sync(physics).replace(sensordata=host["sensordata"])
    physics = dataclasses.replace(physics, data=data)
    observation = env.task.get_observation(physics, variables)
    reward = env.task.get_reward(physics, variables)
    termination = env.task.get_termination(physics, variables)
    return observation, reward, termination


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """A task's view of one physics state (NumPy, float64).

    Attributes:
      observation: OrderedDict in dm_control's key order.
      reward: the reward.
      discount: None where the state is not terminal, else the terminal discount.
    """

    observation: dict
    reward: np.float64
    discount: float | None


def evaluate(env: Env, host, model_fields, variables, precision: str = "float64") -> Evaluation:
    """The task's observation, reward and termination at the host's fields (`host.read`),
    computed in `precision` and returned in float64."""
    with options.numerics(precision):
        observation, reward, termination = _evaluate(env, host, model_fields, variables)
    observation = type(observation)(
        (key, np.array(value, np.float64)) for key, value in observation.items()
    )
    discount = None
    if termination is not None and bool(termination[0]):
        discount = float(termination[1])
    return Evaluation(observation, np.float64(reward), discount)

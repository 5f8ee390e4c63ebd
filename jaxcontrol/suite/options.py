"""`load`'s arguments as dm_control reads them: the task's `random`, and the
environment's keyword arguments.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np

from jaxcontrol.registry import unknown_name

ENVIRONMENT_KWARGS = (
    "time_limit",
    "control_timestep",
    "n_sub_steps",
    "flat_observation",
    "legacy_step",
)


@dataclasses.dataclass(frozen=True)
class EnvironmentOptions:
    """dm_control's `control.Environment` arguments that `load` accepts.

    Attributes:
      time_limit: seconds per episode; None keeps the task's.
      control_timestep: seconds per control step; None keeps the task's.
      n_sub_steps: physics steps per control step, instead of `control_timestep`.
      flat_observation: one float64 vector under the key "observations".
      legacy_step: dm_control's stepping with positions and velocities current
        after each step; True is the only value supported.
    """

    time_limit: float | None = None
    control_timestep: float | None = None
    n_sub_steps: int | None = None
    flat_observation: bool = False
    legacy_step: bool = True


def environment_options(environment_kwargs) -> EnvironmentOptions:
    """`environment_kwargs` checked: an unknown key is a ValueError naming the valid ones.

    Raises:
      ValueError: for an unknown key, for both `n_sub_steps` and
        `control_timestep` (as dm_control), or for `legacy_step=False`.
    """
    kwargs = dict(environment_kwargs or {})
    for key in kwargs:
        if key not in ENVIRONMENT_KWARGS:
            raise unknown_name("environment argument", key, ENVIRONMENT_KWARGS)
    options = EnvironmentOptions(**kwargs)
    if options.n_sub_steps is not None and options.control_timestep is not None:
        raise ValueError("Both n_sub_steps and control_timestep were supplied.")
    if not options.legacy_step:
        raise ValueError(
            "legacy_step=False is not supported: jaxcontrol's tasks read positions and "
            "velocities current after each step, as dm_control's default legacy_step=True "
            "leaves them"
        )
    return options


PRECISIONS = ("float64", "float32")


def check_precision(precision: str, backend: str) -> None:
    """`precision` is one of `PRECISIONS`, and float32 goes with MJX.

    Raises:
      ValueError: naming the valid precisions, or for float32 on the C backend.
    """
    if precision not in PRECISIONS:
        raise unknown_name("precision", precision, PRECISIONS)
    if precision == "float32" and backend != "mjx":
        raise ValueError(
            "precision='float32' is MJX's: the C backend computes in float64 "
            "(pass backend='mjx' for float32)"
        )


def numerics(precision: str):
    """The context the JAX side computes in: `jax.enable_x64` on for float64."""
    return jax.enable_x64(precision == "float64")


def step_limit(time_limit: float, control_timestep: float) -> float:
    """dm_control's step limit: a float, inf for an endless episode."""
    return math.inf if math.isinf(time_limit) else time_limit / control_timestep


def random_state(random) -> tuple[np.random.RandomState, int]:
    """The task's `random` and the seed of its first JAX key, from `task_kwargs['random']`.

    An int seeds both (the first episode's key is `jax.random.key(seed)`); a
    `np.random.RandomState` is kept and a seed is drawn from it; None draws both
    from fresh entropy.
    """
    if random is None:
        random = np.random.RandomState()
    elif not isinstance(random, np.random.RandomState):
        seed = int(random)
        return np.random.RandomState(seed), seed
    return random, int(random.randint(0, 2**31 - 1))

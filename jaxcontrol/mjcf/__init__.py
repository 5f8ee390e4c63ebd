"""Our own MuJoCo models of the suite's domains, built with `mujoco.MjSpec`.

Each domain module exposes `make_spec(...)` and `make_model(...)`; the models
compile to the same physics as dm_control's XML (see `model_diff.compare_models`
and tests/physics/test_models.py). `compat` adapts them for `mujoco.mjx.put_model`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mujoco

from jaxcontrol.mjcf import (
    acrobot,
    ball_in_cup,
    cartpole,
    cheetah,
    common,
    compare,
    compat,
    dog,
    finger,
    fish,
    hopper,
    humanoid,
    humanoid_cmu,
    lqr,
    manipulator,
    pendulum,
    point_mass,
    quadruped,
    reacher,
    stacker,
    swimmer,
    walker,
)
from jaxcontrol.mjcf.compat import put_model, to_mjx_compatible
from jaxcontrol.mjcf.model_diff import compare_models

_BUILDERS: dict[str, Callable[..., mujoco.MjModel]] = {
    "acrobot": acrobot.make_model,
    "ball_in_cup": ball_in_cup.make_model,
    "cartpole": cartpole.make_model,
    "cheetah": cheetah.make_model,
    "dog": dog.make_model,
    "finger": finger.make_model,
    "fish": fish.make_model,
    "hopper": hopper.make_model,
    "humanoid": humanoid.make_model,
    "humanoid_CMU": humanoid_cmu.make_model,
    "lqr": lqr.make_model,
    "manipulator": manipulator.make_model,
    "pendulum": pendulum.make_model,
    "point_mass": point_mass.make_model,
    "quadruped": quadruped.make_model,
    "reacher": reacher.make_model,
    "stacker": stacker.make_model,
    "swimmer": swimmer.make_model,
    "walker": walker.make_model,
}

DOMAINS: tuple[str, ...] = tuple(sorted(_BUILDERS))


def build(domain: str, **kwargs: Any) -> mujoco.MjModel:
    """Builds and compiles the model of `domain`.

    Args:
        domain: A domain name, one of `DOMAINS`.
        **kwargs: Passed to the domain's `make_model` (e.g. `num_poles=2` for
            cartpole).

    Returns:
        The compiled model.

    Raises:
        ValueError: If `domain` is unknown.
    """
    try:
        builder = _BUILDERS[domain]
    except KeyError:
        raise ValueError(
            f"Unknown domain {domain!r}; valid domains: {', '.join(DOMAINS)}"
        ) from None
    return builder(**kwargs)


__all__ = [
    "DOMAINS",
    "acrobot",
    "ball_in_cup",
    "build",
    "cartpole",
    "cheetah",
    "common",
    "compare",
    "compare_models",
    "compat",
    "dog",
    "finger",
    "fish",
    "hopper",
    "humanoid",
    "humanoid_cmu",
    "lqr",
    "manipulator",
    "pendulum",
    "point_mass",
    "put_model",
    "quadruped",
    "reacher",
    "stacker",
    "swimmer",
    "to_mjx_compatible",
    "walker",
]

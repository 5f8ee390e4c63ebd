"""`DomainRandomization`: a model of its own for every environment and episode.

At each reset a user function `fn(key, model_fields) -> model_fields` draws
new values of model fields for that environment. `model_fields` is a
read-only mapping from any per-environment field name
(`jaxcontrol.physics.per_env_model_fields()`) to the compiled model's value;
`fn` returns the fields it changes, as full arrays:

    def heavier(key, fields):
        scale = jax.random.uniform(key, (), minval=0.8, maxval=1.2)
        return {"body_mass": fields["body_mass"] * scale}

    env = AutoReset(DomainRandomization(jaxcontrol.load("cheetah", "run"), heavier))

The values enter `State.model_fields`, so the step applies them to the MJX
model of that environment alone, for the whole episode. They are applied
before the task initialises the episode (its initial-state distribution is
drawn on the randomised model), and the task's own per-episode fields
(reacher's target) are written on top, as in dm_control.

Derived constants. When `fn` changes a field that C MuJoCo's `mj_setConst`
derives constants from (masses, inertias, armature, gears, body frames: see
`model_constants.INPUTS`), those constants (inverse weights, subtree masses,
lengths at qpos0, ...) are recomputed for the new model, so the physics is
that of the modified `MjModel` after `mj_setConst`, as tests check against C
MuJoCo. Fields nothing is derived from (friction, damping, ...) cost nothing
more. Fields MJX keeps static (`jaxcontrol.physics.STATIC_MODEL_FIELDS`) have
the limits documented there.

It goes directly on the `Env` (what it randomises is the model), and below
`AutoReset`, whose restarts draw a new model for each new episode.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol import physics as physics_lib
from jaxcontrol.core import Env, State
from jaxcontrol.wrappers import model_constants
from jaxcontrol.wrappers.base import Wrapper

Randomizer = Callable[[jax.Array, Mapping[str, jax.Array]], Mapping[str, jax.Array]]


class ModelFields(Mapping):
    """Read-only: field name -> the compiled model's value (JAX's float dtype)."""

    def __init__(self, env: Env):
        self._env = env
        self._names = physics_lib.per_env_model_fields()

    def __getitem__(self, name: str) -> jax.Array:
        if name not in self._names:
            physics_lib.check_model_fields([name])  # raises, naming the valid fields
        value = np.asarray(getattr(self._env.mj_model, name))
        dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
        return jnp.asarray(value, dtype if np.issubdtype(value.dtype, np.floating) else None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


@dataclasses.dataclass(frozen=True)
class DomainRandomization(Wrapper):
    """Draws this environment's model fields at every reset.

    Attributes:
      env: a bare `Env` (from `jaxcontrol.load`).
      fn: `(key, model_fields) -> model_fields`, pure and jittable; returns the
        changed fields as full arrays of the model's shapes.
    """

    fn: Randomizer
    below_auto_reset: ClassVar[bool] = True

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.env, Env):
            raise TypeError(
                "DomainRandomization goes directly on the Env it randomises: "
                "DomainRandomization(jaxcontrol.load(domain, task), fn), then wrap that; "
                f"got {type(self.env).__name__}. To combine randomisations, compose their "
                "functions into one."
            )
        if not callable(self.fn):
            raise TypeError(
                f"fn must be a function (key, model_fields) -> model_fields, got {self.fn!r}"
            )

    def model_fields(self, key: jax.Array) -> dict[str, jax.Array]:
        """The fields one environment gets from `key`: `fn`'s, plus their derived constants."""
        env = self.env
        drawn = self.fn(key, ModelFields(env))
        if not isinstance(drawn, Mapping):
            raise TypeError(f"fn must return a dict of model fields, got {type(drawn).__name__}")
        physics_lib.check_model_fields(drawn)
        fields = {}
        for name, value in drawn.items():
            expected = np.shape(getattr(env.mj_model, name))
            if np.shape(value) != expected:
                raise ValueError(
                    f"fn returned {name} of shape {np.shape(value)}; the model's is {expected} "
                    "(return full arrays, e.g. fields[name].at[i].multiply(s))"
                )
            fields[name] = jnp.asarray(value, ModelFields(env)[name].dtype)
        if model_constants.INPUTS & set(fields):
            physics = physics_lib.Physics.create(
                env.mjx_model, env.blank_state().data, env.names, fields
            )
            derived = model_constants.derived_constants(physics)
            fields.update({k: v for k, v in derived.items() if k not in fields})
        return fields

    def reset(self, key: jax.Array) -> State:
        key_env, key_fields = jax.random.split(key)
        return self.env.reset(key_env, model_fields=self.model_fields(key_fields))

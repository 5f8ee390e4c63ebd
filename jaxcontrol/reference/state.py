"""A dm_control environment's state, and a state of ours equal to it (`mirror`).

`mirror(env, dm_env)` copies a dm_control environment's current state into a
`State` of ours: physics, the solver's warm start, the step count, the task's
variables and its per-episode model fields. Users can call it too.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jaxcontrol.core import Env, State
from jaxcontrol.reference import overrides


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class DmState:
    """What `mirror` copies from a dm_control environment (NumPy, float64)."""

    qpos: np.ndarray
    qvel: np.ndarray
    act: np.ndarray
    time: float
    warmstart: np.ndarray
    step: int
    variables: dict[str, np.ndarray]
    model_fields: dict[str, np.ndarray]

    @classmethod
    def capture(cls, env: Env, dm_env) -> DmState:
        """The current state of `dm_env`, an environment of `env`'s task."""
        p = dm_env.physics
        variables = overrides.mirror_variables(env.domain, env.task_name, env.task, dm_env)
        return cls(
            qpos=np.array(p.data.qpos),
            qvel=np.array(p.data.qvel),
            act=np.array(p.data.act),
            time=float(p.data.time),
            warmstart=np.array(p.data.qacc_warmstart),
            step=int(dm_env._step_count),
            variables={k: np.asarray(v) for k, v in variables.items()},
            model_fields={
                name: np.array(getattr(p.model, name)) for name in env.task.episode_model_fields
            },
        )


def inject(env: Env, dm_state: DmState, state: State | None = None) -> State:
    """A FIRST state of `env` at `dm_state` (jittable; vmap over stacked DmStates).

    `state` supplies the key (and anything `dm_state` lacks); `env.blank_state()`
    (key 0) when None.
    """
    return env.set_state(
        env.blank_state() if state is None else state,
        dm_state.qpos,
        dm_state.qvel,
        dm_state.act if dm_state.act.size else None,
        dm_state.time,
        model_fields=dm_state.model_fields,
        step=dm_state.step,
        warmstart=dm_state.warmstart,
        **dm_state.variables,
    )


def mirror(env: Env, dm_env, state: State | None = None) -> State:
    """Returns a FIRST state of `env` equal to `dm_env`'s current state.

    It copies the physics (`qpos`, `qvel`, `act`, `time` and the solver's warm
    start), the episode's step count (so LAST comes at the same step), the
    task's variables and its per-episode model fields. Derived quantities and
    the observation are recomputed as after dm_control's `reset_context`: touch
    and force sensors read the state, not the transition dm_control just took
    (`jaxcontrol.suite.mirror` carries those over, into a suite environment).

    Args:
      env: our environment of the same task as `dm_env`.
      dm_env: a `dm_control.suite` environment.
      state: a state of `env` whose key and other values are kept; a reset
        from key 0 when None.
    """
    return inject(env, DmState.capture(env, dm_env), state)

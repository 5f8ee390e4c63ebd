"""Samples of dm_control's own episodes: one-step transitions and resets."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np

from jaxcontrol.core import Env
from jaxcontrol.reference.actions import action_bounds
from jaxcontrol.reference.batched import stack
from jaxcontrol.reference.state import DmState
from jaxcontrol.reference.suite import reference_for


@dataclasses.dataclass
class Transition:
    """A dm_control state, the action taken from it, and what followed."""

    start: DmState
    start_observation: collections.OrderedDict
    action: np.ndarray
    observation: collections.OrderedDict
    reward: float
    next_qpos: np.ndarray
    next_qvel: np.ndarray


def step_transition(env: Env, dm_env, start_observation, action):
    """Steps `dm_env` with `action` from its current state (whose observation is
    `start_observation`); returns that `Transition` and dm_control's new TimeStep."""
    start = DmState.capture(env, dm_env)
    timestep = dm_env.step(action)
    p = dm_env.physics
    transition = Transition(
        start=start,
        start_observation=start_observation,
        action=np.asarray(action, np.float64),
        observation=timestep.observation,
        reward=timestep.reward,
        next_qpos=np.array(p.data.qpos),
        next_qvel=np.array(p.data.qvel),
    )
    return transition, timestep


def reference_transitions(
    env: Env, n: int, seed: int = 0, steps_between: int = 7, overshoot: float = 1.2
) -> list[Transition]:
    """`n` transitions from dm_control's resets and random rollouts of `env`'s task.

    Every `steps_between`-th state starts a new episode, so resets and
    mid-episode states are both covered. Actions are uniform over
    `overshoot` x the action range, so some exceed the bounds (clipping).
    """
    dm_env = reference_for(env, seed)
    low, high = action_bounds(dm_env.action_spec())
    rng = np.random.RandomState(seed + 1)
    centre, half = (high + low) / 2, (high - low) / 2
    transitions = []
    timestep = None
    while len(transitions) < n:
        if timestep is None or timestep.last() or len(transitions) % steps_between == 0:
            timestep = dm_env.reset()
        action = centre + overshoot * half * rng.uniform(-1, 1, centre.shape)
        transition, timestep = step_transition(env, dm_env, timestep.observation, action)
        transitions.append(transition)
    return transitions


def reference_resets(env: Env, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """qpos, qvel, actuator states (where the model has them), task variables and
    model fields of `n` dm_control resets, stacked."""
    dm_env = reference_for(env, seed)
    resets = []
    for _ in range(n):
        dm_env.reset()
        s = DmState.capture(env, dm_env)
        act = {"act": s.act} if s.act.size else {}
        resets.append({"qpos": s.qpos, "qvel": s.qvel, **act, **s.variables, **s.model_fields})
    return stack(resets)

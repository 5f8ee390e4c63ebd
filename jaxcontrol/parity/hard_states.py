"""A spread of dm_control states for one-step parity, the hard ones included.

`state_mix(env, n, seed)` draws `n` dm_control transitions (`reference.Transition`,
captured as `reference_transitions` captures them) from four sources:

  * `reset`: dm_control's resets;
  * `random`: the state reached by 0 to `RANDOM_DEPTH` uniformly random actions from
    a reset (each state from its own episode);
  * `policy`: states along episodes of a trained policy (a run directory of
    ``jaxcontrol train`` for the task; none given or none for the task: these
    states are drawn as `random` ones);
  * `contacts`: the states with the most active contacts (then constraint rows) in a
    pool of `POOL_FACTOR` times as many random-action states.

Every state records its source and its contact and constraint-row counts. Actions
from a state are uniform over `OVERSHOOT` x the action range (some clip), but a
policy's states, where the action is the policy's. The states depend only on the
seed (and the policy's checkpoint), in float32 and float64 alike.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence

import jax
import numpy as np

from jaxcontrol.core import Env
from jaxcontrol.reference.actions import action_bounds
from jaxcontrol.reference.episodes import episode_steps
from jaxcontrol.reference.precision import precision
from jaxcontrol.reference.samples import Transition, step_transition
from jaxcontrol.reference.suite import reference_for

SOURCES = ("reset", "random", "policy", "contacts")
# Shares of the mix, in the order of SOURCES.
SHARES = (0.15, 0.35, 0.2, 0.3)
RANDOM_DEPTH = 50  # the most random actions before a `random` or pool state
POOL_FACTOR = 4
OVERSHOOT = 1.2
POLICY_STATES_PER_EPISODE = 10
# Run directories of trained policies, separated by os.pathsep, for `policy` states.
POLICY_RUNS_VARIABLE = "JAXCONTROL_POLICY_RUNS"


@dataclasses.dataclass
class StateMix:
    """Transitions with, for each, its source and its start's contacts and constraint rows."""

    transitions: list[Transition]
    sources: list[str]
    contacts: list[int]
    rows: list[int]
    policy_runs: list[str]  # the run directories (and checkpoints) policy states came from


def source_counts(n: int, with_policy: bool) -> dict[str, int]:
    """How many of `n` states each source gives; without a policy, its share is random's."""
    counts = {s: round(share * n) for s, share in zip(SOURCES, SHARES)}
    if not with_policy:
        counts["random"] += counts.pop("policy")
    counts["random"] += n - sum(counts.values())
    return counts


def policy_runs_from_environment() -> list[str]:
    """The run directories named by `POLICY_RUNS_VARIABLE` (none when unset)."""
    return [d for d in os.environ.get(POLICY_RUNS_VARIABLE, "").split(os.pathsep) if d]


class _Recorder:
    """A dm_control environment stepped from its current state, captured as transitions."""

    def __init__(self, env: Env, dm_env, rng: np.random.RandomState):
        self.env, self.dm_env, self.rng = env, dm_env, rng
        low, high = action_bounds(dm_env.action_spec())
        self.centre, self.half = (high + low) / 2, (high - low) / 2
        self.timestep = None

    def reset(self):
        self.timestep = self.dm_env.reset()

    def random_action(self) -> np.ndarray:
        return self.centre + OVERSHOOT * self.half * self.rng.uniform(-1, 1, self.centre.shape)

    def step(self, action: np.ndarray, capture: bool = True):
        """One step; the transition from the state before it (and its counts) if `capture`."""
        if not capture:
            self.timestep = self.dm_env.step(action)
            return None
        data = self.dm_env.physics.data
        counts = (int(data.ncon), int(data.nefc))
        transition, self.timestep = step_transition(
            self.env, self.dm_env, self.timestep.observation, action
        )
        return transition, counts

    def random_walk(self, depth: int) -> bool:
        """`depth` random actions from a reset; False if the episode ended on the way."""
        self.reset()
        for _ in range(depth):
            self.step(self.random_action(), capture=False)
            if self.timestep.last():
                return False
        return True


def state_mix(env: Env, n: int, seed: int = 0, policy_runs: Sequence[str] = ()) -> StateMix:
    """`n` dm_control transitions of `env`'s task from the four sources (module doc).

    Args:
      env: the task (its model and variables are what `DmState.capture` reads).
      n: how many transitions.
      seed: dm_control's task seed and the random actions' seed.
      policy_runs: run directories of trained policies; the first one of `env`'s
        task (state observations, any action repeat) gives the `policy` states.
    """
    policy, run_name = _policy_for(env, policy_runs)
    counts = source_counts(n, policy is not None)
    recorder = _Recorder(env, reference_for(env, seed), np.random.RandomState(seed + 1))
    drawn: list[tuple[str, Transition, tuple[int, int]]] = []
    for _ in range(counts["reset"]):
        recorder.reset()
        drawn.append(("reset", *recorder.step(recorder.random_action())))
    for _ in range(counts["random"]):
        while not recorder.random_walk(recorder.rng.randint(RANDOM_DEPTH + 1)):
            pass
        drawn.append(("random", *recorder.step(recorder.random_action())))
    if counts.get("policy"):
        states = _policy_states(env, policy, counts["policy"], seed)
        drawn += [("policy", *state) for state in states]
    drawn += [("contacts", *state) for state in _most_contacts(recorder, counts["contacts"])]
    return StateMix(
        transitions=[t for _, t, _ in drawn],
        sources=[s for s, _, _ in drawn],
        contacts=[c[0] for _, _, c in drawn],
        rows=[c[1] for _, _, c in drawn],
        policy_runs=[run_name] if run_name else [],
    )


def _most_contacts(recorder: _Recorder, k: int) -> list[tuple[Transition, tuple[int, int]]]:
    """The `k` states with the most contacts (then rows) of `POOL_FACTOR * k` states
    along random-action episodes of `RANDOM_DEPTH` steps each."""
    pool: list[tuple[Transition, tuple[int, int]]] = []
    while len(pool) < POOL_FACTOR * k:
        recorder.reset()
        for _ in range(RANDOM_DEPTH):
            pool.append(recorder.step(recorder.random_action()))
            if recorder.timestep.last() or len(pool) == POOL_FACTOR * k:
                break
    order = sorted(range(len(pool)), key=lambda i: pool[i][1], reverse=True)
    return [pool[i] for i in sorted(order[:k])]


@dataclasses.dataclass(frozen=True)
class _Policy:
    """A run's deterministic policy, as dm_control observation -> action (float64)."""

    act: Callable
    params: object
    spec: dict
    repeat: int  # the run's action repeat: control steps per policy action

    def __call__(self, observation) -> np.ndarray:
        batch = {
            k: np.asarray(observation[k], s.dtype).reshape(s.shape)[None]
            for k, s in self.spec.items()
        }
        with jax.enable_x64(False):  # the policy's own precision, in either mode
            return np.asarray(self.act(self.params, batch)[0], np.float64)


def _policy_for(env: Env, runs: Sequence[str]) -> tuple[_Policy | None, str | None]:
    """The policy of the first run in `runs` of `env`'s task with state observations
    and an intact checkpoint, and its name (directory and checkpoint)."""
    if not runs:
        return None, None
    from jaxcontrol.agents.common import run_dir  # pylint: disable=import-outside-toplevel

    for directory in runs:
        info, domain, task, config = run_dir.read_run(directory)
        if (domain, task) != (env.domain, env.task_name) or run_dir.pixels(info):
            continue
        with precision(False):
            run_env, learner, params, _, step = run_dir.restore_policy(
                directory, info, domain, task, config, "parity"
            )
        if step is None:
            continue
        policy = _Policy(
            jax.jit(learner.policy), params, run_env.observation_spec(), run_dir.action_repeat(info)
        )
        return policy, f"{directory} (checkpoint {step})"
    return None, None


def _policy_states(env: Env, policy: _Policy, k: int, seed: int):
    """`k` states along the policy's episodes (`POLICY_STATES_PER_EPISODE` an episode,
    at random steps), each stepped with the policy's action."""
    recorder = _Recorder(env, reference_for(env, seed + 2), np.random.RandomState(seed + 3))
    steps = episode_steps(env)
    states = []
    while len(states) < k:
        wanted = min(POLICY_STATES_PER_EPISODE, k - len(states))
        at = set(recorder.rng.choice(steps, size=wanted, replace=False).tolist())
        recorder.reset()
        action = None
        for step in range(steps):
            if step % policy.repeat == 0:
                action = policy(recorder.timestep.observation)
            captured = recorder.step(action, capture=step in at)
            if captured:
                states.append(captured)
            if recorder.timestep.last():
                break
    return states[:k]

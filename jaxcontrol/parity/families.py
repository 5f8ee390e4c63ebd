"""Rollout families: tasks whose episodes differ only in their reward.

The tasks of a family share MJX physics, resets, observations, terminations and time
limits; only the reward tells them apart. One rollout then measures every member's
long parity pieces (`family_returns`, `family_soak`, `jaxcontrol parity
--one-rollout`), each member's reward computed on it by `step_with_rewards`.

A family names its candidate members, keyed on (domain, task), and the task fields
that members may set apart (`free_fields`): fields only the reward reads, and model
sizes MJX's step ignores (a floor plane's). Two tasks share rollouts exactly when
`rollout_key` is equal for both: the same family, and equal values of every other
field. tests/parity/test_parity_family.py holds each family's MJX rollout to its members'
own (resets bit for bit, the first step to float32 rounding: XLA may round one
physics differently in two programs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp

from jaxcontrol.core import Env, State
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task


@dataclasses.dataclass(frozen=True)
class RolloutFamily:
    """Tasks of one domain that may share rollouts.

    Attributes:
      name: the family's name.
      tasks: its candidate members, (domain, task); those whose fields outside
        `free_fields` differ (cartpole's two_poles) share no rollout.
      free_fields: the task fields members may set apart.
    """

    name: str
    tasks: tuple[tuple[str, str], ...]
    free_fields: tuple[str, ...]


def _of(domain: str, *tasks: str) -> tuple[tuple[str, str], ...]:
    return tuple((domain, task) for task in tasks)


ROLLOUT_FAMILIES: tuple[RolloutFamily, ...] = (
    RolloutFamily("acrobot", _of("acrobot", "swingup", "swingup_sparse"), ("sparse",)),
    # balance and balance_sparse (swingup and swingup_sparse) differ only in the reward.
    RolloutFamily(
        "cartpole",
        _of(
            "cartpole",
            "balance",
            "balance_sparse",
            "swingup",
            "swingup_sparse",
            "two_poles",
            "three_poles",
        ),
        ("sparse",),
    ),
    # stand, walk, trot and run differ only in the reward (and floor size, which MJX's
    # step never reads): one rollout serves all four. The family's program rounds the
    # physics differently from dog-walk's own from the second step on (measured, 8
    # envs x 20 float32 steps); tests/parity/test_parity_family.py's full tier holds the
    # family to each member's resets, step types and first step (docs/parity.md).
    # Not fetch: the ball makes another model.
    RolloutFamily(
        "locomotion", _of("dog", "stand", "walk", "trot", "run"), ("floor_size", "move_speed")
    ),
    RolloutFamily("hopper", _of("hopper", "stand", "hop"), ("hopping",)),
    # stand, walk and run (not run_pure_state: its observations differ).
    RolloutFamily(
        "humanoid", _of("humanoid", "stand", "walk", "run", "run_pure_state"), ("move_speed",)
    ),
    RolloutFamily("humanoid_CMU", _of("humanoid_CMU", "stand", "walk", "run"), ("move_speed",)),
    # walk and run: their floors differ in size only, which MJX's step never reads.
    RolloutFamily("move", _of("quadruped", "walk", "run"), ("desired_speed", "floor_size")),
    RolloutFamily("walker", _of("walker", "stand", "walk", "run"), ("move_speed",)),
)

_FAMILY_OF: dict[tuple[str, str], RolloutFamily] = {
    task: family for family in ROLLOUT_FAMILIES for task in family.tasks
}


def rollout_key(domain: str, name: str, task: Task) -> tuple | None:
    """Equal for two tasks exactly when they share rollouts (the family and every field
    outside its `free_fields`); None if (domain, name) is in no family.

    Args:
      domain, name: the registered task's names.
      task: the task itself (a registered prototype, or one with other arguments).
    """
    family = _FAMILY_OF.get((domain, name))
    if family is None:
        return None
    kept = tuple(
        (f.name, getattr(task, f.name))
        for f in dataclasses.fields(task)
        if f.name not in family.free_fields
    )
    return (family.name, kept)


def env_rollout_key(env: Env) -> tuple | None:
    """`rollout_key` of an environment's task."""
    return rollout_key(env.domain, env.task_name, env.task)


def rollout_siblings(domain: str, name: str) -> tuple[str, ...]:
    """The other registered tasks of `domain` that share `name`'s rollouts, as
    DOMAIN-TASK ids in registration order."""
    key = rollout_key(domain, name, REGISTRY.prototype(domain, name))
    if key is None:
        return ()
    return tuple(
        f"{d}-{t}"
        for d, t in REGISTRY.tasks()
        if d == domain and t != name and rollout_key(d, t, REGISTRY.prototype(d, t)) == key
    )


def check_siblings(env: Env, siblings: Sequence[Env]) -> None:
    """Raises ValueError unless every one of `siblings` shares `env`'s rollouts."""
    key = env_rollout_key(env)
    strangers = [
        f"{s.domain}-{s.task_name}"
        for s in siblings
        if key is None or (s.domain, env_rollout_key(s)) != (env.domain, key)
    ]
    if strangers:
        registered = rollout_siblings(env.domain, env.task_name)
        raise ValueError(
            f"{', '.join(strangers)} do not share {env.domain}-{env.task_name}'s rollouts "
            f"(same domain, rollout family and fields but for the family's free fields); "
            f"its registered siblings: {', '.join(registered) or 'none'}"
        )


def step_with_rewards(
    env: Env, state: State, action: jax.Array, siblings: Sequence[Env]
) -> tuple[State, jax.Array]:
    """`env.step`, and the rewards that `siblings` give the same transition (a vector
    in their order), each as its own `step` computes it.

    Siblings share `env`'s rollouts (`rollout_key`); any other env is refused. Each
    sibling's reward reads the stepped physics after its own task's `sync` (a sibling
    may read more than `env`'s task syncs: walker-walk's velocity sensor, beside
    walker-stand), and is 0 where the step was not finite, as `step` zeroes the
    reward: there `step` keeps the last finite data, so its time did not advance.
    """
    check_siblings(env, siblings)
    stepped = env.step(state, action)
    finite = stepped.data.time != state.data.time
    physics = env._physics(stepped.data, stepped.model_fields)  # pylint: disable=protected-access
    rewards = [
        jnp.where(
            finite,
            task.get_reward(dataclasses.replace(physics, data=task.sync(physics)), state.variables),
            0,
        )
        for task in (s.task for s in siblings)
    ]
    return stepped, jnp.asarray(rewards, stepped.reward.dtype)

"""The suite's task lists, with dm_control's names and meanings.

Each is a tuple of `(domain, task)` pairs in dm_control's order (domains sorted,
tasks in the order each domain defines them), read from jaxcontrol's registry
and its tags.
"""

from __future__ import annotations

from jaxcontrol.registry import REGISTRY


def _tagged(tag: str | None) -> tuple[tuple[str, str], ...]:
    return REGISTRY.tasks(tag)


def _by_domain(tasks) -> dict[str, tuple[str, ...]]:
    domains: dict[str, list[str]] = {}
    for domain, task in tasks:
        domains.setdefault(domain, []).append(task)
    return {domain: tuple(names) for domain, names in domains.items()}


ALL_TASKS = _tagged(None)
BENCHMARKING = _tagged("benchmarking")
EASY = _tagged("easy")
HARD = _tagged("hard")
EXTRA = tuple(sorted(set(ALL_TASKS) - set(BENCHMARKING)))
# Tasks whose bodies carry no reward colours (dm_control's "no_reward_visualization").
NO_REWARD_VIZ = _tagged("no_reward_visualization")
REWARD_VIZ = tuple(sorted(set(ALL_TASKS) - set(NO_REWARD_VIZ)))
TASKS_BY_DOMAIN = _by_domain(ALL_TASKS)

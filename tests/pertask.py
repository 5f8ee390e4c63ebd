"""Per-task result caches for the tests (see conftest.py).

Module fixtures may be torn down between a task's tests under xdist; a
`task_cache` keeps a task's expensive results (rollouts, reports) for all its
tests, and conftest clears every such cache when a worker moves on to the next
task, together with JAX's compiled executables.
"""

import functools

_CACHES: list = []


def task_cache(function):
    """`functools.cache` for per-task results, cleared between tasks."""
    cached = functools.cache(function)
    _CACHES.append(cached)
    return cached


def clear_task_caches() -> None:
    for cached in _CACHES:
        cached.cache_clear()

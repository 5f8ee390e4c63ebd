"""The task registry, tagged as dm_control's suite is ('benchmarking')."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable

from jaxcontrol.task import Task


def unknown_name(kind: str, name: str, valid: Iterable[str], where: str = "") -> ValueError:
    """A ValueError for an unknown name: close matches first, then every valid one."""
    valid = sorted(valid)
    close = difflib.get_close_matches(name, valid, n=3, cutoff=0.5)
    rest = [v for v in valid if v not in close]
    hint = f"did you mean {', '.join(map(repr, close))}? " if close else ""
    return ValueError(
        f"unknown {kind} {name!r}{where}; {hint}valid {kind}s: {', '.join(close + rest)}"
    )


class Registry:
    """Maps (domain, task) to a task prototype and its tags.

    Domains are added explicitly; a duplicate (domain, task) is an error.
    """

    def __init__(self):
        self._tasks: dict[tuple[str, str], tuple[Task, frozenset[str]]] = {}

    def add(self, domain: str, name: str, task: Task, tags: Iterable[str] = ()) -> None:
        if (domain, name) in self._tasks:
            raise ValueError(f"task {domain}-{name} is already registered")
        self._tasks[(domain, name)] = (task, frozenset(tags))

    def domains(self) -> tuple[str, ...]:
        return tuple(sorted({d for d, _ in self._tasks}))

    def tasks(self, tag: str | None = None) -> tuple[tuple[str, str], ...]:
        """(domain, task) pairs: domains sorted, tasks in registration order."""
        order = {key: i for i, key in enumerate(self._tasks)}
        chosen = [k for k, (_, tags) in self._tasks.items() if tag is None or tag in tags]
        return tuple(sorted(chosen, key=lambda k: (k[0], order[k])))

    def prototype(self, domain: str, name: str) -> Task:
        if domain not in self.domains():
            raise unknown_name("domain", domain, self.domains())
        if (domain, name) not in self._tasks:
            names = [t for d, t in self._tasks if d == domain]
            raise unknown_name("task", name, names, where=f" in domain {domain!r}")
        return self._tasks[(domain, name)][0]

    def build(self, domain: str, name: str, **task_kwargs) -> Task:
        """The registered task with `task_kwargs` applied (unknown ones raise)."""
        task = self.prototype(domain, name)
        fields = {f.name for f in dataclasses.fields(task) if f.init}
        for kwarg in task_kwargs:
            if kwarg not in fields:
                raise unknown_name("argument", kwarg, fields, where=f" for {domain}-{name}")
        return dataclasses.replace(task, **task_kwargs) if task_kwargs else task


REGISTRY = Registry()


def parse_task_id(task_id: str, registry: Registry = REGISTRY) -> tuple[str, str]:
    """'point_mass-easy' -> ('point_mass', 'easy'): a registered task's DOMAIN-TASK id.

    Neither names of the suite holds a '-', so the id splits at its one '-'. Every
    command line flag and helper that takes a task as one string reads it here.

    Raises:
      ValueError: for anything but a registered task's id, naming the valid ids
        with close matches first.
    """
    domain, sep, task = str(task_id).partition("-")
    if not sep or (domain, task) not in registry.tasks():
        valid = [f"{d}-{t}" for d, t in registry.tasks()]
        raise unknown_name("task", str(task_id), valid, where=" (DOMAIN-TASK)")
    return domain, task

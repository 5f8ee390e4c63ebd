"""Aggregates over sets of tasks: our IQM with its interval beside the published ones.

Each `TaskSet` is a set of tasks at one step count, with the published results it is
compared with. Ours is rliable's IQM of every run's score, with its stratified-bootstrap
interval (`stats.iqm`), and the IQM of our task means; a published result is only known as
task means, so its aggregate is the IQM of those (`stats.iqm_of_means`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from jaxcontrol.results import published, stats
from jaxcontrol.results.records import RunRecord

Task = tuple[str, str]


class TaskSet(NamedTuple):
    """Tasks at one step count, and the published (name, source, agent) set beside them."""

    label: str
    tasks: tuple[Task, ...]
    control_steps: int
    published: tuple[tuple[str, str, str], ...]


class Aggregate(NamedTuple):
    """Our aggregate over a `TaskSet`, and the published ones."""

    task_set: TaskSet
    measured: int  # tasks with at least one run at the step count
    runs: int  # runs per task in the IQM (the fewest any task has)
    iqm: stats.Interval | None  # None until every task is measured
    iqm_of_means: float | None
    published: tuple[tuple[str, float], ...]  # (name, IQM of its task means)


def task_sets(ran: Sequence[Task]) -> list[TaskSet]:
    """Every task run at 1M; the TD-MPC2 repository's 22 at 1M; the PlaNet six at 100k and
    500k."""
    tdmpc2 = published.tasks("tdmpc2_repo", "sac")
    planet = tuple(sorted(published.PLANET_TASKS))
    state_sac = (("CURL", "curl", "sac"), ("DrQ", "drq", "sac"))
    return [
        TaskSet(f"all {len(ran)} tasks run", tuple(sorted(ran)), 1_000_000, ()),
        TaskSet(
            f"the TD-MPC2 repository's {len(tdmpc2)}",
            tdmpc2,
            1_000_000,
            (("SAC", "tdmpc2_repo", "sac"), ("TD-MPC2", "tdmpc2_repo", "tdmpc2")),
        ),
        TaskSet("the 6 PlaNet tasks", planet, 100_000, state_sac),
        TaskSet("the 6 PlaNet tasks", planet, 500_000, state_sac),
    ]


def task_means(runs: Sequence[RunRecord], tasks: Sequence[Task], steps: int) -> dict[Task, float]:
    """{task: mean over its runs at `steps`} for the tasks that have a run there."""
    means = {}
    for key in tasks:
        values = [stats.return_at(r, steps) for r in runs if (r.domain, r.task) == key]
        values = [v for v in values if v is not None]
        if values:
            means[key] = sum(values) / len(values)
    return means


def aggregate(runs: Sequence[RunRecord], task_set: TaskSet, reps: int) -> Aggregate:
    """Our IQM over `task_set` (from `runs`, one agent's) and the published ones."""
    theirs = tuple(
        (
            name,
            stats.iqm_of_means(
                [
                    published.figure(source, agent, *k, task_set.control_steps).mean
                    for k in task_set.tasks
                ]
            ),
        )
        for name, source, agent in task_set.published
    )
    means = task_means(runs, task_set.tasks, task_set.control_steps)
    scores = (
        stats.score_matrix(runs, task_set.tasks, task_set.control_steps) if task_set.tasks else None
    )
    if scores is None:
        return Aggregate(task_set, len(means), 0, None, None, theirs)
    return Aggregate(
        task_set,
        len(means),
        scores.shape[0],
        stats.iqm(scores, reps=reps),
        stats.iqm_of_means([means[k] for k in task_set.tasks]),
        theirs,
    )

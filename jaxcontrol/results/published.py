"""Published learning results on the suite's tasks, from state observations.

``data/learning_reference.csv`` holds, per (source, agent, task, step count), the mean and
standard deviation over seeds of the final return:

* ``curl``: CURL (Srinivas, Laskin and Abbeel, ICML 2020), Table 1, the "State SAC"
  column: SAC on the six PlaNet tasks after 100k and 500k environment steps.
* ``drq``: DrQ (Kostrikov, Yarats and Fergus, ICLR 2021), Table 1, the "SAC State"
  column: the same tasks and step counts, from a separate set of SAC runs.
* ``tdmpc2_repo``: the TD-MPC2 repository (Hansen, Su and Wang, ICLR 2024),
  ``results/sac/<task>.csv`` and ``results/tdmpc2/<task>.csv``: SAC and TD-MPC2 on 22
  benchmarking tasks, mean and sample standard deviation over its 3 seeds at the rows it
  labels "500k" and "1M".

Both papers count DMC control steps. The TD-MPC2 code repeats each action twice and counts
agent steps, so its "500k" is 1M control steps and its "1M" is 2M: ``control_steps`` holds
the control steps, ``label`` the source's own name for the column.

The suite report's D4PG after 1e8 steps comes from `jaxcontrol.baselines` (the tech report,
Tassa et al. 2018, Tables 1 and 2), not from this file.
"""

from __future__ import annotations

import csv
import functools
import os
from typing import NamedTuple

from jaxcontrol import baselines

SOURCES = ("curl", "drq", "tdmpc2_repo")
_PATH = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "learning_reference.csv")

# The six tasks of PlaNet's benchmark, on which CURL and DrQ report State SAC.
PLANET_TASKS = (
    ("finger", "spin"),
    ("cartpole", "swingup"),
    ("reacher", "easy"),
    ("cheetah", "run"),
    ("walker", "walk"),
    ("ball_in_cup", "catch"),
)


class Figure(NamedTuple):
    """One published result: mean and standard deviation over seeds after `control_steps`."""

    source: str
    agent: str
    domain: str
    task: str
    label: str  # the source's own name for the step count ("500k")
    control_steps: int
    mean: float
    std: float


@functools.cache
def figures() -> tuple[Figure, ...]:
    """Every row of the reference file, in file order."""
    with open(_PATH) as f:
        return tuple(
            Figure(
                row["source"],
                row["agent"],
                row["domain"],
                row["task"],
                row["label"],
                int(row["control_steps"]),
                float(row["mean"]),
                float(row["std"]),
            )
            for row in csv.DictReader(f)
        )


def figure(source: str, agent: str, domain: str, task: str, control_steps: int) -> Figure | None:
    """The published figure of `agent` in `source` on a task after `control_steps`, or None."""
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}; valid sources: {', '.join(SOURCES)}")
    for row in figures():
        if (row.source, row.agent, row.domain, row.task, row.control_steps) == (
            source,
            agent,
            domain,
            task,
            control_steps,
        ):
            return row
    return None


def tasks(source: str, agent: str = "sac") -> tuple[tuple[str, str], ...]:
    """The (domain, task) pairs that `source` reports for `agent`, sorted."""
    return tuple(
        sorted({(r.domain, r.task) for r in figures() if (r.source, r.agent) == (source, agent)})
    )


def d4pg(domain: str, task: str) -> baselines.Score | None:
    """The suite report's D4PG after 1e8 steps (mean, standard error), or None if not reported."""
    if (domain, task) not in baselines.tasks():
        return None
    return baselines.score(domain, task, "d4pg", "after_1e8_steps")

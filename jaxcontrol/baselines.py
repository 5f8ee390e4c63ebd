"""Published scores of the suite's benchmarking tasks, to compare our evaluations with.

``data/dmc_baselines.csv`` holds Tables 1 and 2 of the 2018 Control Suite tech report: the mean
and standard error over seeds of 100 evaluation episodes of 1000 steps, for A3C, D4PG, D4PG from
pixels and DDPG, after 1e8 environment steps and after 24 hours of training. The report's HTML
version swaps two row labels (cartpole swingup_sparse and cheetah run); the file has them right.

    >>> from jaxcontrol import baselines
    >>> baselines.score("cartpole", "swingup", "d4pg")
    Score(mean=845.5, stderr=1.2)
"""

from __future__ import annotations

import csv
import functools
import os
from typing import NamedTuple

TABLES = ("after_1e8_steps", "after_24_hours")
AGENTS = ("a3c", "d4pg", "d4pg_pixels", "ddpg")
_PATH = os.path.join(os.path.dirname(__file__), "data", "dmc_baselines.csv")


class Score(NamedTuple):
    """A published mean episode return and its standard error over seeds."""

    mean: float
    stderr: float


@functools.cache
def _table() -> dict[tuple[str, str, str], dict[str, Score]]:
    rows = {}
    with open(_PATH) as f:
        for row in csv.DictReader(f):
            rows[row["table"], row["domain"], row["task"]] = {
                agent: Score(float(row[f"{agent}_mean"]), float(row[f"{agent}_se"]))
                for agent in AGENTS
            }
    return rows


def tasks() -> list[tuple[str, str]]:
    """The (domain, task) pairs that have published scores, sorted."""
    return sorted({(domain, task) for _, domain, task in _table()})


def scores(domain: str, task: str, table: str = "after_1e8_steps") -> dict[str, Score]:
    """Every agent's published score on a task, ``{agent: Score}``.

    Raises:
      ValueError: for an unknown table, or a task the report did not benchmark; the message
        names the valid choices.
    """
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; valid tables: {', '.join(TABLES)}")
    try:
        return dict(_table()[table, domain, task])
    except KeyError:
        valid = ", ".join(f"{d}-{t}" for d, t in tasks())
        raise ValueError(f"no published scores for {domain}-{task}; tasks with scores: {valid}")


def score(domain: str, task: str, agent: str = "d4pg", table: str = "after_1e8_steps") -> Score:
    """One agent's published score on a task (by default D4PG's after 1e8 steps)."""
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}; valid agents: {', '.join(AGENTS)}")
    return scores(domain, task, table)[agent]


def reference(domain: str, task: str) -> dict[str, dict[str, dict[str, float]]] | None:
    """Both tables for a task as plain dicts (for eval.json), or None if it has no scores."""
    if (domain, task) not in tasks():
        return None
    return {
        table: {agent: s._asdict() for agent, s in scores(domain, task, table).items()}
        for table in TABLES
    }

"""Statistics of the records: per task over seeds, and over tasks through rliable.

Per task, the mean over seeds carries a 95 % Student t interval (``mean ± t(0.975, n-1) ·
s/√n``, s the sample standard deviation); with one seed there is no interval. A run's
return after N control steps is its first evaluation at or after N (`return_at`).

Over tasks, scores are returns divided by 1000, the suite's maximum. The interquartile mean
(IQM) and its 95 % interval come from rliable's stratified bootstrap (seeds resampled within
each task), and the performance profile from rliable's score distributions (Agarwal et al.,
"Deep RL at the Edge of the Statistical Precipice", NeurIPS 2021). rliable draws its
resamples from NumPy's global generator, whatever ``random_state`` it is given, so
`iqm` and `profile` seed that generator for the call and restore it after: the same
records give the same intervals.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from jaxcontrol.results.records import RunRecord

MILESTONES = (100_000, 500_000, 1_000_000)  # control steps of the per-task table
SUITE_MAX = 1000.0  # an episode's largest return: 1000 steps of reward at most 1
CONFIDENCE = 0.95
TRANSFER_FRACTION = 0.05  # the transfer check's relative allowance
BOOTSTRAP_SEED = 0


class Interval(NamedTuple):
    """A mean over `n` values with its confidence interval (None for one value)."""

    mean: float
    low: float | None
    high: float | None
    n: int


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """The mean of `values` and its Student t interval (none for one value).

    Raises:
      ValueError: for no values.
    """
    from scipy import stats  # pylint: disable=import-outside-toplevel

    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("no values to summarise")
    mean = float(data.mean())
    if data.size == 1:
        return Interval(mean, None, None, 1)
    half = float(
        stats.t.ppf(0.5 + confidence / 2, data.size - 1) * data.std(ddof=1) / math.sqrt(data.size)
    )
    return Interval(mean, mean - half, mean + half, int(data.size))


def return_at(record: RunRecord, control_steps: int) -> float | None:
    """A run's mean evaluation return at its first evaluation at or after `control_steps`
    (the final, 100-episode one where it comes at the same step count as a periodic one),
    or None if the run stopped before."""
    candidates = [e for e in record.evals() if e.control_steps >= control_steps]
    if not candidates:
        return None
    first = min(e.control_steps for e in candidates)
    same = [e for e in candidates if e.control_steps == first]
    return float(same[-1].mean_return)


class Transfer(NamedTuple):
    """A final policy's return in jaxcontrol and in dm_control, and whether they agree."""

    ours: float
    dm_control: float
    difference: float  # dm_control - ours
    allowed: float  # max(5 % of |ours|, 2 standard errors of the difference)

    @property
    def within(self) -> bool:
        return abs(self.difference) <= self.allowed


def transfer(record: RunRecord) -> Transfer | None:
    """The transfer check of a run's final policy, or None if it was not run in dm_control."""
    theirs = record.eval_dm_control
    if theirs is None:
        return None
    ours = record.eval
    se = math.hypot(ours.get("stderr") or 0.0, theirs.get("stderr") or 0.0)
    allowed = max(TRANSFER_FRACTION * abs(ours["mean_return"]), 2.0 * se)
    difference = theirs["mean_return"] - ours["mean_return"]
    return Transfer(
        float(ours["mean_return"]), float(theirs["mean_return"]), float(difference), allowed
    )


class TaskSummary(NamedTuple):
    """One task's runs of one agent, summarised over seeds."""

    domain: str
    task: str
    seeds: tuple[int, ...]
    at: dict[int, Interval | None]  # milestone (control steps) -> mean over the seeds there
    final: Interval  # the final evaluations in jaxcontrol
    dm_control: Interval | None  # the same policies in dm_control (None if none was run there)
    transfers: tuple[Transfer | None, ...]  # per seed
    wall_seconds: tuple[float, ...]  # per seed, from sweep_run.json
    cpu_seconds: tuple[float, ...]


def summarise(runs: Iterable[RunRecord], milestones: Sequence[int] = MILESTONES) -> TaskSummary:
    """A `TaskSummary` of one task's runs (one agent). A milestone's interval covers the
    seeds that reached it (None if none did)."""
    runs = sorted(runs, key=lambda r: r.seed)
    if not runs:
        raise ValueError("no runs to summarise")
    at = {}
    for steps in milestones:
        values = [v for v in (return_at(r, steps) for r in runs) if v is not None]
        at[steps] = t_interval(values) if values else None
    dmc = [r.eval_dm_control["mean_return"] for r in runs if r.eval_dm_control is not None]
    return TaskSummary(
        domain=runs[0].domain,
        task=runs[0].task,
        seeds=tuple(r.seed for r in runs),
        at=at,
        final=t_interval([r.eval["mean_return"] for r in runs]),
        dm_control=t_interval(dmc) if dmc else None,
        transfers=tuple(transfer(r) for r in runs),
        wall_seconds=tuple(float(r.sweep_run.get("wall_seconds", 0.0)) for r in runs),
        cpu_seconds=tuple(float(r.sweep_run.get("cpu_seconds", 0.0)) for r in runs),
    )


def by_task(records: Iterable[RunRecord], agent: str) -> dict[tuple[str, str], TaskSummary]:
    """{(domain, task): TaskSummary} of one agent's records."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for r in records:
        if r.agent == agent:
            groups.setdefault((r.domain, r.task), []).append(r)
    return {key: summarise(runs) for key, runs in sorted(groups.items())}


def score_matrix(
    records: Iterable[RunRecord], tasks: Sequence[tuple[str, str]], control_steps: int
) -> np.ndarray | None:
    """Normalised scores (return / 1000), shape (runs, tasks), for rliable.

    Every task needs the same number of runs: each task contributes the returns at
    `control_steps` of its lowest seeds, as many as the task with fewest such runs has.
    None if a task has no run there.
    """
    per_task = []
    records = list(records)
    for domain, task in tasks:
        runs = sorted(
            (r for r in records if (r.domain, r.task) == (domain, task)), key=lambda r: r.seed
        )
        values = [v for v in (return_at(r, control_steps) for r in runs) if v is not None]
        if not values:
            return None
        per_task.append(values)
    if not per_task:
        return None
    n = min(len(v) for v in per_task)
    return np.array([v[:n] for v in per_task], dtype=np.float64).T / SUITE_MAX


@contextlib.contextmanager
def _seeded(seed: int):
    """NumPy's global generator seeded for the block, its state restored afterwards."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def iqm(scores: np.ndarray, reps: int = 10_000, seed: int = BOOTSTRAP_SEED) -> Interval:
    """The interquartile mean of `scores` (runs, tasks) and its 95 % stratified-bootstrap
    interval (rliable, percentile method)."""
    from rliable import library, metrics  # pylint: disable=import-outside-toplevel

    def aggregate(x):
        return np.array([metrics.aggregate_iqm(x)])

    with _seeded(seed):
        point, interval = library.get_interval_estimates(
            {"ours": scores}, aggregate, reps=reps, confidence_interval_size=CONFIDENCE
        )
    low, high = interval["ours"][:, 0]
    return Interval(float(point["ours"][0]), float(low), float(high), int(scores.size))


def iqm_of_means(means: Sequence[float]) -> float:
    """The interquartile mean of per-task means (normalised), one value per task: how a
    published table of task means compares with ours (rliable's IQM of a one-row matrix)."""
    from rliable import metrics  # pylint: disable=import-outside-toplevel

    return float(metrics.aggregate_iqm(np.asarray(means, dtype=np.float64)[None, :] / SUITE_MAX))


def profile(
    scores: np.ndarray, taus: np.ndarray, reps: int = 2000, seed: int = BOOTSTRAP_SEED
) -> tuple[np.ndarray, np.ndarray]:
    """The performance profile of `scores` (runs, tasks): the fraction of runs scoring
    above each tau, and its 95 % band, shape (2, len(taus)) (rliable)."""
    from rliable import library  # pylint: disable=import-outside-toplevel

    with _seeded(seed):
        point, band = library.create_performance_profile(
            {"ours": scores}, taus, reps=reps, confidence_interval_size=CONFIDENCE
        )
    return point["ours"], band["ours"]

"""The learning targets, each evaluated from the records with the figure it is held to.

(a) At 500k control steps, on each of the six PlaNet tasks, our SAC's mean over seeds is at
    least CURL's State SAC mean minus its standard deviation.
(b) At 1M control steps, our SAC's mean reaches the TD-MPC2 repository's SAC "500k" figure
    (1M control steps: its agent steps repeat each action twice) on at least 18 of the 22
    tasks it covers, and the IQM of our 22 task means exceeds the IQM of its 22.
(c) At 1M control steps, our SAC's mean reaches the suite report's D4PG score after 1e8
    steps on at least 14 of the 28 benchmarking tasks.
(d) Every final policy's dm_control return agrees with its jaxcontrol return within
    max(5 % of the latter, 2 standard errors of the difference) (`stats.transfer`).
(e) The whole SAC sweep (28 tasks x 3 seeds) costs at most 12 hours of the 2-core box:
    the sum of the runs' CPU seconds, each divided by its machine's cores.

Each target is met, missed, or pending (not enough runs yet to tell). A task's mean is
final once it has the sweep's seeds (`planned_seeds`: five on the PlaNet tasks, three on
the others); with fewer it is provisional, shown but counted as not measured, since more
seeds can move it either way. A count target is missed as soon as the tasks still to run
could not bring it to its count, and met as soon as its count is reached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import jaxcontrol
from jaxcontrol.results import published, stats
from jaxcontrol.results.records import RunRecord

MET, MISSED, PENDING = "met", "missed", "pending"
AGENT = "sac"  # the records' agent every target is about
SEEDS = 3  # per task in the sweep that target (e) prices
PLANET_SEEDS = 5  # per PlaNet task
BOX_HOURS = 12.0
TDMPC2_COUNT = 18
D4PG_COUNT = 14

Summaries = Mapping[tuple[str, str], stats.TaskSummary]


class Result(NamedTuple):
    """One target's verdict."""

    key: str  # "a" to "e"
    title: str  # what is held to what
    status: str  # MET, MISSED or PENDING
    summary: str  # one line: what was measured against the figure
    misses: tuple[str, ...]  # one line per shortfall, saying by how much
    provisional: tuple[str, ...] = ()  # one line per task short of its planned seeds


def _name(domain: str, task: str) -> str:
    return f"{domain}-{task}"


def planned_seeds(key: tuple[str, str]) -> int:
    """How many seeds the sweep gives a task (`key`: domain, task)."""
    return PLANET_SEEDS if tuple(key) in published.PLANET_TASKS else SEEDS


def _final(
    summaries: Summaries, key: tuple[str, str], steps: int, figure: float, provisional: list
) -> float | None:
    """The task's mean at `steps` where it is final (all its planned seeds are in), else
    None; a mean short of its seeds is added to `provisional`, with its side of `figure`."""
    summary = summaries.get(key)
    interval = None if summary is None else summary.at.get(steps)
    if interval is None:
        return None
    seeds, planned = len(summary.seeds), planned_seeds(key)
    if seeds >= planned:
        return interval.mean
    side = "above" if interval.mean >= figure else "below"
    provisional.append(
        f"{_name(*key)}: {interval.mean:.1f}, {side} {figure:.1f} so far "
        f"(provisional: {seeds} of {planned} seeds)"
    )
    return None


def _short(key: tuple[str, str], ours: float, figure: float, what: str) -> str:
    return f"{_name(*key)}: {ours:.1f} < {what} {figure:.1f} (short by {figure - ours:.1f})"


def _count_status(reached: int, pending: int, needed: int) -> str:
    if reached >= needed:
        return MET
    return MISSED if reached + pending < needed else PENDING


def planet_500k(summaries: Summaries) -> Result:
    """Target (a)."""
    misses, provisional, pending, reached = [], [], 0, 0
    for key in published.PLANET_TASKS:
        curl = published.figure("curl", "sac", *key, 500_000)
        figure = curl.mean - curl.std
        ours = _final(summaries, key, 500_000, figure, provisional)
        if ours is None:
            pending += 1
        elif ours >= figure:
            reached += 1
        else:
            misses.append(_short(key, ours, figure, "CURL's mean - std"))
    status = MISSED if misses else (PENDING if pending else MET)
    return Result(
        "a",
        "500k steps: SAC ≥ CURL's State SAC mean - std on each of the 6 PlaNet tasks",
        status,
        f"{reached} of 6 reached, {len(misses)} missed, {pending} not final yet"
        + _of_which(provisional),
        tuple(misses),
        tuple(provisional),
    )


def _of_which(provisional: list[str]) -> str:
    return f" ({len(provisional)} of them provisional)" if provisional else ""


def tdmpc2_sac_1m(summaries: Summaries) -> Result:
    """Target (b)."""
    tasks = published.tasks("tdmpc2_repo", "sac")
    misses, provisional, pending, reached, means = [], [], 0, 0, []
    theirs = [published.figure("tdmpc2_repo", "sac", *key, 1_000_000).mean for key in tasks]
    for key, figure in zip(tasks, theirs):
        ours = _final(summaries, key, 1_000_000, figure, provisional)
        if ours is None:
            pending += 1
            continue
        means.append(ours)
        if ours >= figure:
            reached += 1
        else:
            misses.append(_short(key, ours, figure, "SAC"))
    status = _count_status(reached, pending, TDMPC2_COUNT)
    their_iqm = stats.iqm_of_means(theirs) * stats.SUITE_MAX
    iqm_text = f"IQM of the task means: theirs {their_iqm:.1f}"
    if pending:
        iqm_text += ", ours pending"
        if status == MET:
            status = PENDING
    else:
        our_iqm = stats.iqm_of_means(means) * stats.SUITE_MAX
        iqm_text += f", ours {our_iqm:.1f}"
        if our_iqm <= their_iqm:
            status = MISSED
            misses.append(
                f"IQM: {our_iqm:.1f} ≤ SAC's {their_iqm:.1f} (short by {their_iqm - our_iqm:.1f})"
            )
    return Result(
        "b",
        f'1M steps: SAC ≥ TD-MPC2 repository\'s SAC "500k" on ≥ {TDMPC2_COUNT} of its '
        f"{len(tasks)} tasks, and a higher IQM",
        status,
        f"{reached} of {len(tasks)} reached (need {TDMPC2_COUNT}), {pending} not final yet"
        + _of_which(provisional)
        + "; "
        + iqm_text,
        tuple(misses),
        tuple(provisional),
    )


def d4pg_within_1m(summaries: Summaries) -> Result:
    """Target (c)."""
    misses, provisional, pending, reached = [], [], 0, 0
    for key in jaxcontrol.BENCHMARKING:
        figure = published.d4pg(*key).mean
        ours = _final(summaries, key, 1_000_000, figure, provisional)
        if ours is None:
            pending += 1
        elif ours >= figure:
            reached += 1
        else:
            misses.append(_short(key, ours, figure, "D4PG"))
    total = len(jaxcontrol.BENCHMARKING)
    return Result(
        "c",
        f"1M steps: SAC ≥ the suite report's D4PG (1e8 steps) on ≥ {D4PG_COUNT} of the "
        f"{total} benchmarking tasks",
        _count_status(reached, pending, D4PG_COUNT),
        f"{reached} of {total} reached (need {D4PG_COUNT}), {pending} not final yet"
        + _of_which(provisional),
        tuple(misses),
        tuple(provisional),
    )


def transfer_all(records: Sequence[RunRecord]) -> Result:
    """Target (d), over every collected SAC run."""
    runs = [r for r in records if r.agent == AGENT]
    misses, unchecked, within = [], 0, 0
    for r in runs:
        check = stats.transfer(r)
        if check is None:
            unchecked += 1
        elif check.within:
            within += 1
        else:
            misses.append(
                f"{_name(r.domain, r.task)} seed {r.seed}: dm_control {check.dm_control:.1f} vs "
                f"{check.ours:.1f} (off by {abs(check.difference):.1f}, allowed "
                f"{check.allowed:.1f})"
            )
    status = MISSED if misses else (PENDING if unchecked or not runs else MET)
    return Result(
        "d",
        "every final policy's dm_control return within max(5 %, 2 standard errors) of ours",
        status,
        f"{within} of {len(runs)} policies within, {len(misses)} outside, "
        f"{unchecked} not run in dm_control",
        tuple(misses),
    )


def box_hours(records: Iterable[RunRecord]) -> float:
    """The runs' CPU seconds, each over its machine's cores, in hours."""
    return (
        sum(
            float(r.sweep_run.get("cpu_seconds", 0.0))
            / max(1, int(r.sweep_run.get("machine", {}).get("cores", 1)))
            for r in records
        )
        / 3600.0
    )


def cost(records: Sequence[RunRecord]) -> Result:
    """Target (e)."""
    runs = [r for r in records if r.agent == AGENT]
    expected = len(jaxcontrol.BENCHMARKING) * SEEDS
    hours = box_hours(runs)
    misses = []
    if hours > BOX_HOURS:
        status = MISSED
        misses.append(f"{hours:.2f} box-hours > {BOX_HOURS:.0f} (over by {hours - BOX_HOURS:.2f})")
    else:
        status = MET if len(runs) >= expected else PENDING
    projected = ""
    if runs and status == PENDING:
        whole = hours * expected / len(runs)
        projected = f", {whole:.2f} projected for {expected}" + (
            f" (on course to miss by {whole - BOX_HOURS:.2f})" if whole > BOX_HOURS else ""
        )
    return Result(
        "e",
        f"the SAC sweep ({expected} runs) in ≤ {BOX_HOURS:.0f} hours of the 2-core box",
        status,
        f"{hours:.2f} box-hours over {len(runs)} of {expected} runs{projected}",
        tuple(misses),
    )


def evaluate(records: Sequence[RunRecord]) -> list[Result]:
    """Every target, (a) to (e), from the records."""
    summaries = stats.by_task(records, AGENT)
    return [
        planet_500k(summaries),
        tdmpc2_sac_1m(summaries),
        d4pg_within_1m(summaries),
        transfer_all(records),
        cost(records),
    ]

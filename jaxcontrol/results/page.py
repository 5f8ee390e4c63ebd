"""docs/results.md and its figures, from the records.

`render` is a pure function of the records: the same records give the same Markdown, byte
for byte (bootstrap intervals included: `stats` seeds them). `write` loads a records tree,
writes the page, and draws the figures it links into a folder named after the page
(``docs/results/``), removing figures of an earlier render that the page no longer links.
"""

from __future__ import annotations

import pathlib
import textwrap
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

import jaxcontrol
from jaxcontrol.results import aggregates, published, stats, targets
from jaxcontrol.results import records as records_lib
from jaxcontrol.results.records import RunRecord

PROFILE_STEPS = 1_000_000
PROFILE_TAUS = np.linspace(0.0, 1.0, 101)
PROFILE_MARKS = (0.25, 0.5, 0.75, 0.9)
IQM_REPS = 10_000
PROFILE_REPS = 2_000
_LABELS = {100_000: "100k", 500_000: "500k", 1_000_000: "1M"}
_FIGURE_GLOBS = ("curves-*.png", "profile-*.png")


class Plot(NamedTuple):
    """A figure the page links: its file name and what to draw."""

    name: str
    kind: str  # "curves" or "profile"
    agent: str
    tasks: tuple[tuple[str, str], ...]


def _agents(runs: Sequence[RunRecord]) -> list[str]:
    return sorted({targets.AGENT, *(r.agent for r in runs)}, key=lambda a: (a != targets.AGENT, a))


def _tasks(runs: Sequence[RunRecord], agent: str) -> list[tuple[str, str]]:
    """The benchmarking tasks, then any other task the agent has runs of."""
    ran = {(r.domain, r.task) for r in runs if r.agent == agent}
    return [*jaxcontrol.BENCHMARKING, *sorted(ran - set(jaxcontrol.BENCHMARKING))]


def _runs_by_task(runs: Sequence[RunRecord], agent: str) -> dict[tuple[str, str], list[RunRecord]]:
    grouped: dict[tuple[str, str], list[RunRecord]] = {}
    for r in runs:
        if r.agent == agent:
            grouped.setdefault((r.domain, r.task), []).append(r)
    return grouped


def _title(agent: str) -> str:
    """A records' agent directory as a heading: "sac" -> "SAC from states"."""
    name, _, pixels = agent.partition("-")
    return f"{name.upper()} from {'pixels' if pixels else 'states'}"


def _prose(text: str) -> str:
    """A paragraph wrapped at 95 columns."""
    return textwrap.fill(text, width=95, break_long_words=False, break_on_hyphens=False)


def _seed_list(seeds) -> str:
    """How many seeds, and which: "1 (seed 0)", "3 (seeds 0, 1, 2)"."""
    seeds = list(seeds)
    return f"{len(seeds)} (seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))})"


def _interval(i: stats.Interval | None, digits: int = 1) -> str:
    if i is None:
        return "—"
    if i.low is None:
        return f"{i.mean:.{digits}f}"
    return f"{i.mean:.{digits}f} [{i.low:.{digits}f}, {i.high:.{digits}f}]"


def _pm(mean: float, spread: float) -> str:
    return f"{mean:.0f}±{spread:.0f}"


def _published_cells(key: tuple[str, str]) -> list[str]:
    cells = []
    for steps in (100_000, 500_000):
        pair = [published.figure(source, "sac", *key, steps) for source in ("curl", "drq")]
        cells.append(" / ".join(_pm(f.mean, f.std) for f in pair) if pair[0] else "—")
    for agent in ("sac", "tdmpc2"):
        f = published.figure("tdmpc2_repo", agent, *key, 1_000_000)
        cells.append(_pm(f.mean, f.std) if f else "—")
    d4pg = published.d4pg(*key)
    cells.append(f"{d4pg.mean:.1f}±{d4pg.stderr:.1f}" if d4pg else "—")
    return cells


def _task_table(runs: Sequence[RunRecord], agent: str) -> list[str]:
    summaries = stats.by_task(runs, agent)
    lines = [
        (
            "| task | seeds | 100k | 500k | 1M | final: ours / dm_control | transfer "
            '| CURL / DrQ SAC 100k | CURL / DrQ SAC 500k | TD-MPC2 repo SAC "500k" (1M) '
            '| TD-MPC2 "500k" (1M) | D4PG 1e8 |'
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in _tasks(runs, agent):
        s = summaries.get(key)
        if s is None:
            ours = ["not run", "—", "—", "—", "—", "—"]
        else:
            checked = [t for t in s.transfers if t is not None]
            ours = [
                _seed_list(s.seeds),
                *(_interval(s.at[m]) for m in stats.MILESTONES),
                f"{s.final.mean:.1f} / "
                + ("—" if s.dm_control is None else f"{s.dm_control.mean:.1f}"),
                f"{sum(t.within for t in checked)} of {len(checked)}" if checked else "—",
            ]
        lines.append(f"| {key[0]}-{key[1]} | " + " | ".join([*ours, *_published_cells(key)]) + " |")
    return lines


def _iqm_rows(runs: Sequence[RunRecord], agent: str, reps: int) -> list[str]:
    mine = [r for r in runs if r.agent == agent]
    lines = [
        (
            "| tasks | steps | runs per task | IQM [95 % CI] | IQM of task means "
            "| published (IQM of task means) |"
        ),
        "|---|---|---|---|---|---|",
    ]
    for task_set in aggregates.task_sets(sorted({(r.domain, r.task) for r in mine})):
        if not task_set.tasks:
            continue
        a = aggregates.aggregate(mine, task_set, reps)
        if a.iqm is None:
            ours = [f"{a.measured} of {len(task_set.tasks)} tasks measured", "—", "—"]
        else:
            ours = [
                str(a.runs),
                f"{a.iqm.mean:.3f} [{a.iqm.low:.3f}, {a.iqm.high:.3f}]",
                f"{a.iqm_of_means:.3f}",
            ]
        theirs = ", ".join(f"{name} {value:.3f}" for name, value in a.published) or "—"
        steps = _LABELS[task_set.control_steps]
        lines.append(f"| {task_set.label} | {steps} | " + " | ".join([*ours, theirs]) + " |")
    return lines


def _cost(runs: Sequence[RunRecord], agent: str) -> list[str]:
    mine = [r for r in runs if r.agent == agent]
    if not mine:
        return ["No runs yet."]
    lines = [
        "| task | seeds | wall-clock hours per seed | CPU-hours per seed |",
        "|---|---|---|---|",
    ]
    for key, group in sorted(_runs_by_task(mine, agent).items()):
        group = sorted(group, key=lambda r: r.seed)
        wall = " / ".join(f"{r.sweep_run.get('wall_seconds', 0.0) / 3600:.2f}" for r in group)
        cpu = " / ".join(f"{r.sweep_run.get('cpu_seconds', 0.0) / 3600:.2f}" for r in group)
        seeds = _seed_list([r.seed for r in group])
        lines.append(f"| {key[0]}-{key[1]} | {seeds} | {wall} | {cpu} |")
    wall = sum(r.sweep_run.get("wall_seconds", 0.0) for r in mine) / 3600
    cpu = sum(r.sweep_run.get("cpu_seconds", 0.0) for r in mine) / 3600
    lines += [
        "",
        _prose(
            f"In total: {len(mine)} runs, {wall:.2f} wall-clock hours, {cpu:.2f} CPU-hours, "
            f"{targets.box_hours(mine):.2f} box-hours (CPU-hours over the machine's cores)."
        ),
        "",
        "Machines:",
        "",
    ]
    machines: dict[tuple, int] = {}
    for r in mine:
        m, s = r.sweep_run.get("machine", {}), r.sweep_run
        key = (
            m.get("cpu", "?"),
            m.get("cores", "?"),
            m.get("platform", "?"),
            s.get("jax_version", "?"),
            s.get("jaxcontrol_version", "?"),
            s.get("code_version", "?"),
        )
        machines[key] = machines.get(key, 0) + 1
    for (cpu_name, cores, platform, jax_v, ours_v, code), count in sorted(
        machines.items(), key=str
    ):
        lines.append(
            f"- {cpu_name}, {cores} cores, JAX on the {platform}: {count} runs "
            f"(jax {jax_v}, jaxcontrol {ours_v}, code {code})"
        )
    return lines


def plots(runs: Sequence[RunRecord]) -> list[Plot]:
    """The figures that the page of these records links."""
    found = []
    for agent in _agents(runs):
        grouped = _runs_by_task(runs, agent)
        if grouped:
            found.append(Plot(f"curves-{agent}.png", "curves", agent, tuple(sorted(grouped))))
            mine = [r for r in runs if r.agent == agent]
            if stats.score_matrix(mine, sorted(grouped), PROFILE_STEPS) is not None:
                found.append(Plot(f"profile-{agent}.png", "profile", agent, tuple(sorted(grouped))))
    return found


def _targets(runs: Sequence[RunRecord]) -> list[str]:
    results = targets.evaluate(runs)
    lines = ["| target | status | measured |", "|---|---|---|"]
    for t in results:
        lines.append(f"| ({t.key}) {t.title} | **{t.status}** | {t.summary} |")
    lines.append("")
    missed = [t for t in results if t.status == targets.MISSED]
    if not missed:
        lines.append("No target is missed.")
    for t in missed:
        lines.append(f"Missed, ({t.key}):")
        lines.append("")
        lines += [f"- {m}" for m in t.misses]
        lines.append("")
    pending = [f"({t.key})" for t in results if t.status == targets.PENDING]
    if pending:
        if lines[-1]:
            lines.append("")
        lines.append(f"Not decided yet, for want of runs: {', '.join(pending)}.")
        lines.append("")
    for t in results:
        if t.provisional:
            lines += [f"Provisional, ({t.key}): tasks with fewer seeds than planned so far.", ""]
            lines += [f"- {p}" for p in t.provisional]
            lines.append("")
    while not lines[-1]:
        lines.pop()
    return lines


def render(runs: Sequence[RunRecord], figures_dir: str = "results", reps: int = IQM_REPS) -> str:
    """The Markdown of docs/results.md for `runs`; `figures_dir` is the figures' folder
    relative to the page, `reps` the bootstrap's resamples for each IQM interval."""
    runs = list(runs)
    linked = {(p.kind, p.agent): p for p in plots(runs)}
    out = [
        "# Learning results",
        "",
        _prose(
            "Generated by `jaxcontrol results` from the run records in `results/` (one directory "
            "per agent, task and seed); do not edit it by hand. What is measured, and why: "
            "[the design page](design/learning-results.md)."
        ),
        "",
        _prose(
            "Steps are control steps of the task (learner steps × action repeat). A return is the "
            "mean over evaluation episodes of 1000 steps of the deterministic policy: 10 episodes "
            "at each periodic evaluation, 100 for the final policy. Over seeds, a mean carries its "
            "95 % Student t interval in brackets (none for one seed)."
        ),
        "",
        "## Targets",
        "",
        *_targets(runs),
    ]
    for agent in _agents(runs):
        mine = [r for r in runs if r.agent == agent]
        tasks_run = len({(r.domain, r.task) for r in mine})
        out += [
            "",
            f"## {_title(agent)}",
            "",
            f"{len(mine)} runs of {tasks_run} tasks.",
            "",
            "### Per task",
            "",
            _prose(
                "Ours at 100k, 500k and 1M steps; the final policy's return in jaxcontrol and in "
                "dm_control (mean over seeds) and how many seeds pass the transfer check. "
                "Published, as mean±std over seeds: CURL's and DrQ's State SAC; the TD-MPC2 "
                'repository\'s SAC and TD-MPC2 at its "500k", which is 1M control steps (it '
                "repeats each action twice); and the suite report's D4PG after 1e8 steps "
                "(mean±standard error)."
            ),
            "",
            *_task_table(runs, agent),
            "",
            "### Learning curves",
            "",
        ]
        curves = linked.get(("curves", agent))
        out.append(
            f"![learning curves of {agent}]({figures_dir}/{curves.name})"
            if curves
            else "No runs yet."
        )
        out += [
            "",
            "### Over tasks",
            "",
            _prose(
                "Scores are returns over 1000. The IQM's interval is rliable's stratified "
                "bootstrap over seeds within each task (95 %, percentile); a task set counts "
                "once every task in it has a run there, each task with as many seeds as the "
                "fewest. Published figures are only known as task means, so they are compared "
                "through the IQM of task means."
            ),
            "",
            *_iqm_rows(runs, agent, reps),
            "",
        ]
        profile = linked.get(("profile", agent))
        if profile:
            scores = stats.score_matrix(mine, list(profile.tasks), PROFILE_STEPS)
            point, band = stats.profile(
                scores, np.array(PROFILE_MARKS), reps=min(reps, PROFILE_REPS)
            )
            marks = ", ".join(
                f"τ = {tau}: {point[i]:.2f} [{band[0][i]:.2f}, {band[1][i]:.2f}]"
                for i, tau in enumerate(PROFILE_MARKS)
            )
            out += [
                _prose(
                    f"Performance profile at 1M steps over the {len(profile.tasks)} tasks run: "
                    f"the fraction of runs scoring above τ ({marks})."
                ),
                "",
                f"![performance profile of {agent}]({figures_dir}/{profile.name})",
                "",
            ]
        out += ["### Cost", "", *_cost(runs, agent)]
    return "\n".join(out) + "\n"


def draw(runs: Sequence[RunRecord], plot: Plot, path: str | pathlib.Path) -> None:
    """Draws one of the page's figures."""
    from jaxcontrol.results import figures  # pylint: disable=import-outside-toplevel

    mine = [r for r in runs if r.agent == plot.agent]
    if plot.kind == "curves":
        figures.learning_curves(_runs_by_task(mine, plot.agent), path)
    else:
        scores = stats.score_matrix(mine, list(plot.tasks), PROFILE_STEPS)
        point, band = stats.profile(scores, PROFILE_TAUS, reps=PROFILE_REPS)
        figures.performance_profile(
            PROFILE_TAUS, point, band, path, f"{plot.agent}, 1M steps, {len(plot.tasks)} tasks"
        )


def write(
    records: str | pathlib.Path,
    out: str | pathlib.Path,
    reps: int = IQM_REPS,
    draw_figures: bool = True,
) -> list[pathlib.Path]:
    """Writes the page of the records under `records` to `out` and its figures beside it
    (``out``'s name without ``.md``); returns the paths written."""
    runs = records_lib.load(records)
    out = pathlib.Path(out)
    folder = out.with_suffix("")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(runs, folder.name, reps=reps))
    written = [out]
    wanted = plots(runs)
    if folder.is_dir():
        keep = {p.name for p in wanted}
        for pattern in _FIGURE_GLOBS:
            for stale in sorted(folder.glob(pattern)):
                if stale.name not in keep:
                    stale.unlink()
    if draw_figures:
        for plot in wanted:
            draw(runs, plot, folder / plot.name)
            written.append(folder / plot.name)
    return written

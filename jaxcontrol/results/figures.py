"""The results page's figures: learning curves per task, and the performance profile.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no global backend), as PNG.
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence

import numpy as np

from jaxcontrol.results import published, stats
from jaxcontrol.results.records import RunRecord

_COLUMNS = 4


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # pylint: disable=import-outside-toplevel
    from matplotlib.figure import Figure  # pylint: disable=import-outside-toplevel

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: str | pathlib.Path) -> None:
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90, metadata={"Software": None})


def mean_curve(runs: Sequence[RunRecord]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(control steps, mean, low, high) over the seeds' evaluations at each step count that
    any seed evaluated (low = high = mean where only one seed did)."""
    values: dict[int, list[float]] = {}
    for r in runs:
        for e in r.evals():
            values.setdefault(e.control_steps, {})[r.seed] = e.mean_return  # last one wins
    steps = np.array(sorted(values), dtype=np.int64)
    rows = [stats.t_interval(list(values[s].values())) for s in steps]
    mean = np.array([i.mean for i in rows])
    low = np.array([i.mean if i.low is None else i.low for i in rows])
    high = np.array([i.mean if i.high is None else i.high for i in rows])
    return steps, mean, low, high


def learning_curves(
    runs_by_task: dict[tuple[str, str], list[RunRecord]], path: str | pathlib.Path
) -> None:
    """A grid of learning curves, one panel per task: the mean over seeds with its 95 %
    t interval, CURL's and DrQ's State SAC (100k, 500k), the TD-MPC2 repository's SAC at
    1M control steps, and the suite report's D4PG after 1e8 steps as a dashed line."""
    tasks = sorted(runs_by_task)
    rows = -(-len(tasks) // _COLUMNS)
    fig = _figure(3.2 * min(len(tasks), _COLUMNS), 2.4 * rows)
    axes = fig.subplots(rows, min(len(tasks), _COLUMNS), squeeze=False).ravel()
    marks = (
        ("curl", "sac", "^", "CURL State SAC"),
        ("drq", "sac", "v", "DrQ State SAC"),
        ("tdmpc2_repo", "sac", "s", "TD-MPC2 repo SAC"),
    )
    for ax, key in zip(axes, tasks):
        steps, mean, low, high = mean_curve(runs_by_task[key])
        ax.plot(steps / 1e6, mean, color="C0", label="ours (mean over seeds)")
        ax.fill_between(steps / 1e6, low, high, color="C0", alpha=0.25, linewidth=0)
        for color, (source, agent, marker, label) in enumerate(marks, start=1):
            for fig_row in (
                published.figure(source, agent, *key, s) for s in (100_000, 500_000, 1_000_000)
            ):
                if fig_row is not None:
                    ax.errorbar(
                        fig_row.control_steps / 1e6,
                        fig_row.mean,
                        yerr=fig_row.std,
                        fmt=marker,
                        color=f"C{color}",
                        markersize=5,
                        capsize=2,
                        label=label,
                    )
        d4pg = published.d4pg(*key)
        if d4pg is not None:
            ax.axhline(d4pg.mean, color="k", linestyle="--", linewidth=1, label="D4PG, 1e8 steps")
        ax.set_title(f"{key[0]}-{key[1]}", fontsize=9)
        ax.set_ylim(0, 1000)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("control steps (millions)", fontsize=7)
    for ax in axes[len(tasks) :]:
        ax.set_visible(False)
    handles = {}
    for ax in axes[: len(tasks)]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(handles.values(), handles.keys(), loc="outside lower center", ncols=3, fontsize=7)
    _save(fig, path)


def performance_profile(
    taus: np.ndarray, profile: np.ndarray, band: np.ndarray, path: str | pathlib.Path, title: str
) -> None:
    """The performance profile (fraction of runs above each normalised score) with its
    95 % band, drawn by rliable's ``plot_utils``."""
    from rliable import plot_utils  # pylint: disable=import-outside-toplevel

    fig = _figure(5.0, 3.2)
    ax = fig.subplots()
    plot_utils.plot_performance_profiles(
        {"ours": profile},
        taus,
        performance_profile_cis={"ours": band},
        ax=ax,
        colors={"ours": "C0"},
        xlabel="normalised score (return / 1000), τ",
        ylabel="fraction of runs with score > τ",
        labelsize="small",
        ticklabelsize="small",
    )
    ax.set_title(title, fontsize=9)
    _save(fig, path)

"""A sweep's finished runs into the committed records tree.

A sweep directory holds ``sweep.json`` and one run directory per (task, seed),
``SWEEP/DOMAIN-TASK/seed-S/``, as ``jaxcontrol train`` writes it, plus ``sweep_run.json``
once the sweep has finished that run. Collecting copies a finished run's small records into
``RECORDS/AGENT/DOMAIN-TASK/seed-S/`` (`records.record_dir`):

* ``run.json``, ``eval.json``, ``sweep_run.json`` and, when the run was checked in
  dm_control, ``eval_dm_control.json``, byte for byte;
* ``curve.json``, extracted from ``metrics.jsonl``: the periodic evaluations and the last
  chunk's step count and wall-clock seconds.

Checkpoints and ``metrics.jsonl`` stay behind. A run is finished when ``run.json``,
``metrics.jsonl``, ``eval.json`` and ``sweep_run.json`` are all there; an unfinished run is
reported and not copied, so the records only ever hold finished runs (a record collected
earlier stays as it is until its run finishes again).
"""

from __future__ import annotations

import json
import pathlib
import shutil
from collections.abc import Iterable
from typing import NamedTuple

from jaxcontrol.results.records import CURVE, OPTIONAL_FILES, REQUIRED_FILES, record_dir

SWEEP_SPEC = "sweep.json"
METRICS = "metrics.jsonl"
EVAL_FIELDS = ("env_steps", "mean_return", "stderr", "episodes")


class Unfinished(NamedTuple):
    """A run directory that was not collected, and why."""

    path: str
    reason: str


class Collected(NamedTuple):
    """What one sweep gave: the record directories written and the runs left out."""

    written: tuple[str, ...]
    unfinished: tuple[Unfinished, ...]


def curve(lines: Iterable[str], action_repeat: int = 1, source: str = METRICS) -> dict:
    """``curve.json``'s content from the lines of a run's ``metrics.jsonl``.

    Args:
      lines: the file's lines, one JSON object each (blank lines are skipped).
      action_repeat: the run's action repeat (control steps per learner step).
      source: the file's name, for error messages.

    Returns:
      ``{"action_repeat", "evals": [{"env_steps", "mean_return", "stderr", "episodes"}],
      "env_steps", "wall_seconds", "chunks"}``, where ``env_steps`` counts learner steps
      and the last three describe the last chunk (None without chunks).

    Raises:
      ValueError: a line that is not a JSON object, naming the file and line.
    """
    evals, last, chunks = [], None, 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{source}: line {number} is not JSON ({e.msg})") from e
        if not isinstance(entry, dict):
            raise ValueError(f"{source}: line {number} is not a JSON object")  # noqa: TRY004
        chunks, last = chunks + 1, entry
        if "eval_mean_return" in entry:
            evals.append(
                {
                    "env_steps": entry["env_steps"],
                    "mean_return": entry["eval_mean_return"],
                    "stderr": entry.get("eval_stderr"),
                    "episodes": entry.get("eval_episodes"),
                }
            )
    return {
        "action_repeat": action_repeat,
        "evals": evals,
        "env_steps": None if last is None else last.get("env_steps"),
        "wall_seconds": None if last is None else last.get("wall_seconds"),
        "chunks": chunks,
    }


def run_dirs(sweep_dir: str | pathlib.Path) -> list[pathlib.Path]:
    """The run directories of a sweep, ``DOMAIN-TASK/seed-S``, sorted.

    Raises:
      ValueError: `sweep_dir` holds no ``sweep.json``.
    """
    sweep = pathlib.Path(sweep_dir)
    if not (sweep / SWEEP_SPEC).is_file():
        raise ValueError(f"{sweep} is not a sweep directory (no {SWEEP_SPEC})")
    return sorted(p for p in sweep.glob("*/seed-*") if p.is_dir())


def unfinished_reason(run_dir: pathlib.Path) -> str | None:
    """Why `run_dir` cannot be collected yet, or None when it is finished."""
    missing = [name for name in (*REQUIRED_FILES, METRICS) if not (run_dir / name).is_file()]
    if missing:
        return f"no {', '.join(missing)}"
    return None


def collect_run(run_dir: str | pathlib.Path, records: str | pathlib.Path) -> pathlib.Path:
    """Copies one finished run's records under `records`; returns the record directory.

    The record directory is emptied of record files first, so a run collected again never
    keeps a file (say ``eval_dm_control.json``) from its earlier collection.
    """
    run_dir = pathlib.Path(run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    target = record_dir(records, run)
    target.mkdir(parents=True, exist_ok=True)
    for name in (*REQUIRED_FILES, *OPTIONAL_FILES, CURVE):
        (target / name).unlink(missing_ok=True)
    for name in (*REQUIRED_FILES, *OPTIONAL_FILES):
        if (run_dir / name).is_file():
            shutil.copyfile(run_dir / name, target / name)
    with open(run_dir / METRICS) as f:
        content = curve(f, int(run.get("action_repeat", 1)), str(run_dir / METRICS))
    (target / CURVE).write_text(json.dumps(content, indent=1, sort_keys=True) + "\n")
    return target


def collect_sweep(sweep_dir: str | pathlib.Path, records: str | pathlib.Path) -> Collected:
    """Collects every finished run of a sweep; reports the others (`Collected`)."""
    written, unfinished = [], []
    for run_dir in run_dirs(sweep_dir):
        reason = unfinished_reason(run_dir)
        if reason is None:
            written.append(str(collect_run(run_dir, records)))
        else:
            unfinished.append(Unfinished(str(run_dir), reason))
    return Collected(tuple(written), tuple(unfinished))

"""The committed records tree, ``RECORDS/AGENT/DOMAIN-TASK/seed-S/``, read back.

``AGENT`` is the run's agent (``sac``), with ``-pixels`` appended for a run from pixels.
Each seed's directory holds ``run.json``, ``eval.json`` (the final evaluation in
jaxcontrol), ``sweep_run.json`` (wall-clock, CPU time, versions, machine), ``curve.json``
(the periodic evaluations), ``attempts.jsonl`` (each process's seconds on the run) and,
for a policy checked in dm_control, ``eval_dm_control.json``.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, NamedTuple

REQUIRED_FILES = ("run.json", "eval.json", "sweep_run.json")
OPTIONAL_FILES = ("eval_dm_control.json", "attempts.jsonl")
CURVE = "curve.json"


class Eval(NamedTuple):
    """One evaluation of a run's policy after `control_steps` control steps of the task."""

    control_steps: int
    mean_return: float
    stderr: float | None
    episodes: int | None
    final: bool  # the run's final evaluation (eval.json), not a periodic one


class RunRecord(NamedTuple):
    """One collected run."""

    agent: str  # the records' agent directory: "sac", "sac-pixels"
    domain: str
    task: str
    seed: int
    run: dict[str, Any]
    eval: dict[str, Any]
    eval_dm_control: dict[str, Any] | None
    sweep_run: dict[str, Any]
    curve: dict[str, Any]

    @property
    def action_repeat(self) -> int:
        return int(self.run.get("action_repeat", 1))

    def evals(self) -> list[Eval]:
        """The periodic evaluations and the final one, by control steps (the final one
        last among evaluations at the same step count)."""
        repeat = self.action_repeat
        found = [
            Eval(
                e["env_steps"] * repeat, e["mean_return"], e.get("stderr"), e.get("episodes"), False
            )
            for e in self.curve.get("evals", ())
        ]
        found.append(
            Eval(
                self.eval["env_steps"] * repeat,
                self.eval["mean_return"],
                self.eval.get("stderr"),
                self.eval.get("episodes"),
                True,
            )
        )
        return sorted(found, key=lambda e: (e.control_steps, e.final))


def agent_name(run: dict[str, Any]) -> str:
    """The records' agent directory of a run: its agent, ``-pixels`` for a pixel run."""
    return run["agent"] + ("-pixels" if run.get("pixels") else "")


def record_dir(records: str | pathlib.Path, run: dict[str, Any]) -> pathlib.Path:
    """Where a run's records go: ``RECORDS/AGENT/DOMAIN-TASK/seed-S``."""
    return pathlib.Path(records) / agent_name(run) / run["env"] / f"seed-{int(run['seed'])}"


# What a run.json means by a key it omits (`agents.common.run_dir.run_info`).
_OMITTED = {"backend": "mjx"}


def holds(records: str | pathlib.Path, run: dict[str, Any], with_dm_control: bool) -> bool:
    """Whether `records` holds `run` finished: its record directory has the required files
    (and ``eval_dm_control.json`` when `with_dm_control`), and its ``run.json`` equals
    `run` on every key that `run` gives, an omitted ``backend`` reading as ``"mjx"`` (a
    run.json written by another config does not count).
    """
    target = record_dir(records, run)
    needed = (*REQUIRED_FILES, *(("eval_dm_control.json",) if with_dm_control else ()))
    if not all((target / name).is_file() for name in needed):
        return False
    saved = json.loads((target / "run.json").read_text())
    return all(saved.get(key, _OMITTED.get(key)) == value for key, value in run.items())


def _read(path: pathlib.Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def load(records: str | pathlib.Path) -> list[RunRecord]:
    """Every run under `records`, sorted by agent, task and seed (none if it is absent).

    Raises:
      ValueError: a record directory that lacks a required file, naming it.
    """
    from jaxcontrol import registry  # pylint: disable=import-outside-toplevel

    found = []
    for seed_dir in sorted(pathlib.Path(records).glob("*/*/seed-*")):
        if not seed_dir.is_dir():
            continue
        missing = [n for n in (*REQUIRED_FILES, CURVE) if not (seed_dir / n).is_file()]
        if missing:
            raise ValueError(f"{seed_dir}: incomplete record (no {', '.join(missing)})")
        run = _read(seed_dir / "run.json")
        domain, task = registry.parse_task_id(run["env"])
        found.append(
            RunRecord(
                agent=seed_dir.parent.parent.name,
                domain=domain,
                task=task,
                seed=int(run["seed"]),
                run=run,
                eval=_read(seed_dir / "eval.json"),
                eval_dm_control=_read(seed_dir / "eval_dm_control.json"),
                sweep_run=_read(seed_dir / "sweep_run.json"),
                curve=_read(seed_dir / CURVE),
            )
        )
    return sorted(found, key=lambda r: (r.agent, r.domain, r.task, r.seed))

"""Measuring tasks' parity records piece by piece, resumably, and rendering PARITY.md.

`measure_tasks` and `measure_family` are what ``jaxcontrol parity`` runs. The
pieces and resumable parts are read from their modules when they run
(`records.PIECES`, `settings.RESUMABLE`), so that tests may stand in their own."""

from __future__ import annotations

import functools
import os
import pathlib
from typing import Any

from jaxcontrol.parity import records
from jaxcontrol.parity.markdown import render
from jaxcontrol.parity.progress import PartsLeft
from jaxcontrol.parity.records import (
    current_piece,
    load_records,
    measure_piece,
    missed_targets,
    mjx_fixes_of,
    piece_progress,
    provenance,
    read_record,
    solver_caps,
    write_record,
)


def measure_tasks(
    tasks: list[tuple[str, str]],
    pieces: list[str],
    directory: str,
    *,
    missing: bool = False,
    parts: list[str] | None = None,
) -> int:
    """Measures `pieces` of each task into its record in `directory`; prints each
    task's missed targets. Returns 1 if a task misses one, else 0.

    With `missing`, only the pieces a record lacks or holds from other physics or
    another JAX (`needs`). With `parts` (of one resumable piece), only those parts:
    the process that finds the rest saved completes the piece.
    """
    status = 0
    for domain, task in tasks:
        name = f"{domain}-{task}"
        # Each piece is written as soon as it is measured, so a stopped run loses at
        # most the piece in progress (and the long pieces keep their finished parts).
        done = read_record(directory, name) if missing else {}
        for piece in pieces:
            if needs(done, domain, task, piece):
                result = _measure_shared(domain, task, piece, directory, parts)
                if result is None:
                    break
                write_record(directory, {"task": name, **provenance(), piece: result})
        else:
            status |= _report(directory, domain, task, pieces)
    return status


def _report(directory: str, domain: str, task: str, pieces: list[str]) -> int:
    """Prints the targets a task's record misses; 1 if it misses one."""
    name = f"{domain}-{task}"
    caps, fixes = solver_caps(domain, task), mjx_fixes_of(domain, task)
    missed = missed_targets(read_record(directory, name), pieces, caps, fixes)
    print(f"{name}: {'; '.join(missed) if missed else 'all targets met'}", flush=True)
    return int(bool(missed))


def render_page(directory: str, out: str) -> None:
    """Writes PARITY.md (to `out`) from the records in `directory`."""
    pathlib.Path(out).write_text(render(load_records(directory)))
    print(f"wrote {out}")


def family_error(tasks: list[tuple[str, str]], pieces: list[str]) -> str | None:
    """Why `measure_family` cannot take these tasks and pieces, or None."""
    domains = {domain for domain, _ in tasks}
    wrong = [p for p in pieces if p not in records.FAMILY_PIECES]
    if len(tasks) < 2 or len(domains) != 1 or wrong:
        return (
            "--one-rollout needs two or more tasks of one domain and only "
            f"the pieces {', '.join(records.FAMILY_PIECES)} (got tasks "
            f"{[f'{d}-{t}' for d, t in tasks]}, pieces {pieces})"
        )
    try:
        records.check_family(tasks[0][0], [task for _, task in tasks])
    except ValueError as error:
        return str(error)
    return None


def measure_family(
    tasks: list[tuple[str, str]],
    pieces: list[str],
    directory: str,
    *,
    missing: bool = False,
    parts: list[str] | None = None,
) -> int:
    """`measure_tasks` for the long pieces of one rollout family (tasks whose episodes
    differ only in the reward), each piece measured on one rollout for the tasks that
    need it. `family_error` must have passed."""
    domain = tasks[0][0]
    names = [task for _, task in tasks]
    for piece in pieces:
        needed = [
            task
            for task in names
            if not missing or needs(read_record(directory, f"{domain}-{task}"), domain, task, piece)
        ]
        if not needed:
            continue
        results = _by_the_last_run(
            functools.partial(records.measure_family_piece, domain, needed, piece, directory),
            [piece_progress(domain, task, piece, directory) for task in needed],
            f"{domain}-{'/'.join(needed)}",
            piece,
            parts,
        )
        if results is None:
            return 0
        for task, result in zip(needed, results):
            write_record(directory, {"task": f"{domain}-{task}", **provenance(), piece: result})
    status = 0
    for task in names:
        status |= _report(directory, domain, task, pieces)
    return status


def needs(record: dict[str, Any], domain: str, task: str, piece: str) -> bool:
    """Whether `piece` of `task` is measured: its record (empty without `--missing`)
    lacks it, or holds it from other physics or another JAX (`current_piece`)."""
    caps, fixes = solver_caps(domain, task), mjx_fixes_of(domain, task)
    return current_piece(record, piece, caps, fixes) is None


def _measure_shared(domain, task, piece, directory, parts) -> dict[str, Any] | None:
    """`measure_piece`; with `parts`, None while other runs' parts are still missing."""
    return _by_the_last_run(
        lambda only: measure_piece(domain, task, piece, directory, only),
        [piece_progress(domain, task, piece, directory)],
        f"{domain}-{task}",
        piece,
        parts,
    )


def _by_the_last_run(measure, progresses, who: str, piece: str, parts):
    """`measure(parts)`; where other runs' parts are still missing, None.

    The run that finds every part saved (for every task in `progresses`)
    completes the piece from them, once: it claims the completion with a marker
    file first, so two runs that finish together do not both complete it."""
    try:
        return measure(parts)
    except PartsLeft as left:
        missing = sorted(
            {p for progress in progresses for p in left.parts if p not in progress.saved()[0]}
        )
        if missing:
            print(
                f"{who}: {piece} parts {', '.join(parts)} measured; "
                f"left to other runs: {', '.join(missing)}",
                flush=True,
            )
            return None
        try:
            os.close(os.open(progresses[0].completing, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            print(f"{who}: {piece} is being completed by another run", flush=True)
            return None
        return measure(None)  # every part is saved

"""`jaxcontrol parity`: measure tasks' records, or render PARITY.md.

The pieces and resumable parts are read from their modules when a command runs
(`records.PIECES`, `settings.RESUMABLE`), so that tests may stand in their own."""

from __future__ import annotations

import functools
import os
import pathlib
from typing import Any

import jaxcontrol
from jaxcontrol.parity import records, settings
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
from jaxcontrol.parity.settings import parts_error


def main(argv: list[str] | None = None) -> int:
    """`jaxcontrol parity`: measure tasks into records, or render PARITY.md."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="jaxcontrol parity",
        description="Measure tasks' full parity records, or render PARITY.md from them.",
    )
    parser.add_argument("tasks", nargs="*", help="DOMAIN-TASK ids to measure (default: none)")
    parser.add_argument("--records", default="parity_records", help="records directory")
    parser.add_argument(
        "--pieces", help=f"comma-separated pieces (default: all, {','.join(records.PIECES)})"
    )
    parser.add_argument(
        "--missing",
        action="store_true",
        help="measure only the pieces that a task's record lacks, or holds from other physics "
        "(solver caps, MJX fixes) or another JAX than this one: to finish a stopped run, or "
        "to bring records up to date (the full tier's --reuse-records takes the same pieces)",
    )
    listed = "; ".join(
        f"{piece}: {','.join(settings.piece_parts(piece))}" for piece in settings.RESUMABLE
    )
    parser.add_argument(
        "--parts",
        help="comma-separated parts of one resumable piece to measure in this process (run "
        "several at once, one core each, with the same records; the last one to finish "
        f"writes the record): {listed} (shard0 to shard31 where a task has 32 soak shards)",
    )
    parser.add_argument(
        "--one-rollout",
        action="store_true",
        help="measure the long pieces (returns, soak) of the tasks given, all of one rollout "
        "family (their episodes differ only in the reward: Task.rollout_family), on one rollout",
    )
    parser.add_argument("--render", action="store_true", help="write PARITY.md from the records")
    parser.add_argument("--out", default="PARITY.md", help="where --render writes")
    args = parser.parse_args(argv)
    valid = {f"{d}-{t}": (d, t) for d, t in jaxcontrol.ALL_TASKS}
    unknown = [t for t in args.tasks if t not in valid]
    pieces = [p for p in (args.pieces or ",".join(records.PIECES)).split(",") if p]
    bad = [p for p in pieces if p not in records.PIECES]
    if unknown or bad:
        what = f"unknown tasks {unknown}" if unknown else f"unknown pieces {bad}"
        print(
            f"jaxcontrol parity: {what}; valid: {', '.join(valid if unknown else records.PIECES)}"
        )
        return 2
    if args.render and args.tasks and args.pieces is None and not args.missing:
        # Named tasks are measured before PARITY.md is written: with no piece named,
        # that is every piece, overwriting records that may have taken days.
        print(
            "jaxcontrol parity: --render with tasks named would first measure every piece of "
            f"{', '.join(args.tasks)} again. To render the records as they are, run "
            "'jaxcontrol parity --render' with no task; to measure and then render, name the "
            f"pieces (--pieces, of {', '.join(records.PIECES)}) or add --missing"
        )
        return 2
    parts = None if args.parts is None else [p for p in args.parts.split(",") if p]
    if parts is not None:
        error = parts_error(pieces, parts, [valid[name] for name in args.tasks])
        if error:
            print(f"jaxcontrol parity: {error}")
            return 2
    if args.one_rollout:
        return _one_rollout(args, [valid[name] for name in args.tasks], pieces, parts)
    status = 0
    for name in args.tasks:
        # Each piece is written as soon as it is measured, so a stopped run loses at
        # most the piece in progress (and the long pieces keep their finished parts).
        done = read_record(args.records, name) if args.missing else {}
        for piece in pieces:
            if _needs(done, *valid[name], piece):
                result = _measure_shared(*valid[name], piece, args.records, parts)
                if result is None:
                    break
                write_record(args.records, {"task": name, **provenance(), piece: result})
        else:
            record = read_record(args.records, name)
            caps, fixes = solver_caps(*valid[name]), mjx_fixes_of(*valid[name])
            missed = missed_targets(record, pieces, caps, fixes)
            print(f"{name}: {'; '.join(missed) if missed else 'all targets met'}", flush=True)
            status |= bool(missed)
    return status | _render(args)


def _render(args) -> int:
    if args.render:
        pathlib.Path(args.out).write_text(render(load_records(args.records)))
        print(f"wrote {args.out}")
    return 0


def _one_rollout(args, tasks: list[tuple[str, str]], pieces: list[str], parts) -> int:
    """`--one-rollout`: each piece on one rollout for the tasks that need it."""
    domains = {domain for domain, _ in tasks}
    wrong = [p for p in pieces if p not in records.FAMILY_PIECES]
    if len(tasks) < 2 or len(domains) != 1 or wrong:
        print(
            "jaxcontrol parity: --one-rollout needs two or more tasks of one domain and only "
            f"the pieces {', '.join(records.FAMILY_PIECES)} (got tasks "
            f"{[f'{d}-{t}' for d, t in tasks]}, pieces {pieces})"
        )
        return 2
    (domain,) = domains
    names = [task for _, task in tasks]
    try:
        records.check_family(domain, names)
    except ValueError as error:
        print(f"jaxcontrol parity: {error}")
        return 2
    for piece in pieces:
        needed = [
            task
            for task in names
            if not args.missing
            or _needs(read_record(args.records, f"{domain}-{task}"), domain, task, piece)
        ]
        if not needed:
            continue
        results = _by_the_last_run(
            functools.partial(records.measure_family_piece, domain, needed, piece, args.records),
            [piece_progress(domain, task, piece, args.records) for task in needed],
            f"{domain}-{'/'.join(needed)}",
            piece,
            parts,
        )
        if results is None:
            return 0
        for task, result in zip(needed, results):
            write_record(args.records, {"task": f"{domain}-{task}", **provenance(), piece: result})
    status = 0
    for task in names:
        name = f"{domain}-{task}"
        caps, fixes = solver_caps(domain, task), mjx_fixes_of(domain, task)
        missed = missed_targets(read_record(args.records, name), pieces, caps, fixes)
        print(f"{name}: {'; '.join(missed) if missed else 'all targets met'}", flush=True)
        status |= bool(missed)
    return status | _render(args)


def _needs(record: dict[str, Any], domain: str, task: str, piece: str) -> bool:
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

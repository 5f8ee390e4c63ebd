"""``jaxcontrol parity``: measure tasks' full parity records, or render PARITY.md.

    jaxcontrol parity --env humanoid-walk --missing    # one task: resumes it, or updates old pieces
    jaxcontrol parity --env manipulator-bring_ball --pieces soak --parts shard0,shard1
    jaxcontrol parity --env humanoid_CMU-stand,humanoid_CMU-walk,humanoid_CMU-run \\
        --pieces soak --one-rollout
    jaxcontrol parity --render                          # writes PARITY.md

Needs dm-control (``jaxcontrol[test]``), the reference every figure is measured against.
"""

from __future__ import annotations

import argparse

from jaxcontrol.cli import args as args_lib
from jaxcontrol.cli.args import UsageError, fail

SUMMARY = "measure tasks' parity records against dm_control, or render PARITY.md"


def parser() -> args_lib.Parser:
    """The command line of ``jaxcontrol parity``."""
    from jaxcontrol.parity import records, settings  # pylint: disable=import-outside-toplevel

    p = args_lib.Parser(
        prog="jaxcontrol parity",
        description="Measure tasks' full parity records, or render PARITY.md from them.",
    )
    args_lib.add_env(
        p,
        action="append",
        default=[],
        help="DOMAIN-TASK ids to measure, comma-separated or repeated (default: none)",
    )
    # Positional task ids: the older form of --env, still read (with a warning).
    p.add_argument("tasks", nargs="*", help=argparse.SUPPRESS)
    p.add_argument("--records", default="parity_records", help="records directory")
    p.add_argument(
        "--pieces",
        help=f"comma-separated pieces (default: {','.join(records.default_pieces())}; also "
        f"{','.join(records.FLOAT64_REMEDY_PIECES)}: resets and returns with ours in float64; "
        f"{','.join(records.C_BACKEND_REMEDY_PIECES)}: the hard states on the C backend)",
    )
    p.add_argument(
        "--missing",
        action="store_true",
        help="measure only the pieces that a task's record lacks, or holds from other physics "
        "(solver caps, MJX fixes) or another JAX than this one: to finish a stopped run, or "
        "to bring records up to date (the full tier's --reuse-records takes the same pieces)",
    )
    listed = "; ".join(
        f"{piece}: {','.join(settings.piece_parts(piece))}" for piece in settings.RESUMABLE
    )
    p.add_argument(
        "--parts",
        help="comma-separated parts of one resumable piece to measure in this process (run "
        "several at once, one core each, with the same records; the last one to finish "
        f"writes the record): {listed} (shard0 to shard31 where a task has 32 soak shards)",
    )
    p.add_argument(
        "--one-rollout",
        action="store_true",
        help="measure the long pieces (returns, soak) of the tasks given, all of one rollout "
        "family (their episodes differ only in the reward), on one rollout",
    )
    p.add_argument("--render", action="store_true", help="write PARITY.md from the records")
    p.add_argument("--out", default="PARITY.md", help="where --render writes")
    return p


def _tasks(args) -> list[tuple[str, str]]:
    """The tasks of --env (and of the older positional ids), in order, each once."""
    if args.tasks:
        args_lib.warn(
            "jaxcontrol parity: task ids as positional arguments are deprecated; "
            f"use --env {','.join(args.tasks)}"
        )
    ids = [i for value in [*args.env, *args.tasks] for i in value.split(",") if i]
    return list(dict.fromkeys(args_lib.parse_env(i) for i in ids))


def main(argv: list[str]) -> int:
    """Entry point of ``jaxcontrol parity``; returns the exit status."""
    from jaxcontrol.parity import campaign, records  # pylint: disable=import-outside-toplevel
    from jaxcontrol.parity.settings import parts_error  # pylint: disable=import-outside-toplevel

    try:
        args = parser().parse_args(argv)
        tasks = _tasks(args)
        pieces = [p for p in (args.pieces or ",".join(records.default_pieces())).split(",") if p]
        bad = [p for p in pieces if p not in records.PIECES]
        if bad:
            raise UsageError(f"unknown pieces {bad}; valid: {', '.join(records.PIECES)}")
        if args.render and tasks and args.pieces is None and not args.missing:
            # Named tasks are measured before PARITY.md is written: with no piece named,
            # that is every piece, overwriting records that may have taken days.
            names = ", ".join(f"{d}-{t}" for d, t in tasks)
            raise UsageError(
                f"--render with tasks named would first measure every piece of {names} "
                "again. To render the records as they are, run 'jaxcontrol parity --render' "
                "with no task; to measure and then render, name the pieces (--pieces, of "
                f"{', '.join(records.PIECES)}) or add --missing"
            )
        parts = None if args.parts is None else [p for p in args.parts.split(",") if p]
        error = None if parts is None else parts_error(pieces, parts, tasks)
        if error is None and args.one_rollout:
            error = campaign.family_error(tasks, pieces)
        if error:
            raise UsageError(error)
    except UsageError as e:
        return fail(str(e))
    measure = campaign.measure_family if args.one_rollout else campaign.measure_tasks
    status = measure(tasks, pieces, args.records, missing=args.missing, parts=parts)
    if args.render:
        campaign.render_page(args.records, args.out)
    return status

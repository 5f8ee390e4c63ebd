"""``jaxcontrol results``: collect sweeps' run records, and write docs/results.md from them.

    jaxcontrol results --collect runs/sac-sweep          # copy finished runs, then render
    jaxcontrol results                                    # render from the committed records
    jaxcontrol results --collect A --collect B --no-render

Collecting copies each finished run's small records (no checkpoints, no metrics.jsonl) to
``RECORDS/AGENT/DOMAIN-TASK/seed-S/`` and names the runs not finished yet; rendering writes
the page and its figures (``docs/results/``). Needs rliable (``jaxcontrol[results]``).
"""

from __future__ import annotations

import pathlib
import sys

from jaxcontrol.cli import args as args_lib
from jaxcontrol.cli.args import UsageError, fail

SUMMARY = "collect sweeps' run records and write docs/results.md"


def parser() -> args_lib.Parser:
    """The command line of ``jaxcontrol results``."""
    p = args_lib.Parser(
        prog="jaxcontrol results",
        description="Collect sweeps' finished runs into the records, and write the results "
        "page from the records.",
    )
    p.add_argument(
        "--collect",
        metavar="SWEEP_DIR",
        action="append",
        default=[],
        help="a sweep directory (holding sweep.json) whose finished runs to copy into the "
        "records first; repeat for several",
    )
    p.add_argument("--records", default="results", help="the records tree (default: results)")
    p.add_argument("--out", default="docs/results.md", help="the page to write")
    p.add_argument("--no-render", action="store_true", help="collect only; write no page")
    p.add_argument(
        "--no-figures", action="store_true", help="write the page but leave its figures as they are"
    )
    p.add_argument(
        "--reps",
        type=args_lib.integer(100, 1_000_000),
        default=10_000,
        help="bootstrap resamples per IQM interval (default: 10000)",
    )
    return p


def _check(args) -> None:
    for sweep in args.collect:
        if not (pathlib.Path(sweep) / "sweep.json").is_file():
            raise UsageError(f"--collect {sweep}: not a sweep directory (no sweep.json)")
    records = pathlib.Path(args.records)
    if records.exists() and not records.is_dir():
        raise UsageError(f"--records {args.records}: not a directory")
    if not args.out.endswith(".md"):
        raise UsageError(f"--out {args.out}: expected a Markdown file (.md)")
    if args.no_render and not args.collect:
        raise UsageError("--no-render without --collect does nothing")
    if not args.no_render:
        try:  # the library module, which imports arch: it fails under pandas 3
            import rliable.library  # noqa: F401  # pylint: disable=import-outside-toplevel,unused-import
        except Exception as e:  # an ImportError, or arch's TypeError under pandas 3
            raise UsageError(
                f"jaxcontrol results needs the results extra (rliable: {type(e).__name__}: "
                f"{e}): pip install 'jaxcontrol[results]'"
            ) from e


def main(argv: list[str]) -> int:
    """Entry point of ``jaxcontrol results``; returns the exit status."""
    try:
        args = parser().parse_args(argv)
        _check(args)
    except UsageError as e:
        return fail(str(e))
    from jaxcontrol.results import collect, page  # pylint: disable=import-outside-toplevel

    try:
        for sweep in args.collect:
            done = collect.collect_sweep(sweep, args.records)
            print(f"{sweep}: {len(done.written)} finished runs collected into {args.records}")
            for run in done.unfinished:
                print(f"  not finished, not collected: {run.path} ({run.reason})")
        if not args.no_render:
            written = page.write(
                args.records, args.out, reps=args.reps, draw_figures=not args.no_figures
            )
            for path in written:
                print(f"wrote {path}")
    except (OSError, ValueError, KeyError) as e:
        return fail(f"{type(e).__name__}: {e}" if isinstance(e, KeyError) else str(e), status=1)
    sys.stdout.flush()
    return 0

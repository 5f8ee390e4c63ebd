"""``jaxcontrol check``: measure a task's one-step parity with dm_control.

    jaxcontrol check --env cheetah-run --states 20 --episode --amplitude 0.3

Needs dm-control (``jaxcontrol[test]``).
"""

from __future__ import annotations

import json

from jaxcontrol.cli import args as args_lib
from jaxcontrol.cli.args import UsageError, fail, integer

SUMMARY = "measure a task's parity with dm_control (needs jaxcontrol[test])"


def parser() -> args_lib.Parser:
    """The command line of ``jaxcontrol check``."""
    p = args_lib.Parser(
        prog="jaxcontrol check", description="Measure a task's parity with dm_control."
    )
    args_lib.add_env(p)
    # DOMAIN TASK as two positional words: the older form of --env, still read (with a warning).
    p.add_argument("words", nargs="*", metavar="DOMAIN TASK", help="deprecated: use --env")
    p.add_argument(
        "--states", type=integer(1, 100_000), default=20, help="dm_control states to step from"
    )
    p.add_argument("--seed", type=integer(0, args_lib.SEED_MAX), default=0)
    p.add_argument("--float32", action="store_true", help="compare in float32 (default 64)")
    p.add_argument("--episode", action="store_true", help="also compare a whole episode")
    p.add_argument("--amplitude", type=float, default=1.0, help="episode action scale")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def _task(args) -> tuple[str, str]:
    if args.words:
        if len(args.words) != 2 or args.env is not None:
            raise UsageError("give the task as --env DOMAIN-TASK")
        task_id = "-".join(args.words)
        args_lib.warn(f"jaxcontrol check DOMAIN TASK is deprecated; use --env {task_id}")
        return args_lib.parse_env(task_id)
    if args.env is None:
        raise UsageError("give the task as --env DOMAIN-TASK, e.g. --env cartpole-balance")
    return args_lib.parse_env(args.env)


def main(argv: list[str]) -> int:
    """Entry point of ``jaxcontrol check``: 0 within tolerance, 1 outside, 2 a usage error."""
    try:
        args = parser().parse_args(argv)
        domain, task = _task(args)
    except UsageError as e:
        return fail(str(e))
    return _run(domain, task, args)


def _run(domain: str, task: str, args) -> int:
    """Measures and prints the report; 0 within tolerance, else 1."""
    from jaxcontrol.parity import report as parity_report  # pylint: disable=import-outside-toplevel

    report = parity_report.check(
        domain,
        task,
        n_states=args.states,
        seed=args.seed,
        x64=not args.float32,
        episode=args.episode,
        amplitude=args.amplitude,
    )
    tolerance = report.tolerance()
    misses = report.misses()
    if args.json:
        print(json.dumps(report.to_dict()))
    else:
        print(report)
        kind = "relative" if args.float32 else "absolute"
        print(f"one-step parity {'within' if not misses else 'OUTSIDE'} {tolerance:g} ({kind})")
        for name, (worst, limit) in misses.items():
            print(f"  {name}: {worst:.3e} > {limit:.3e}")
    return 0 if not misses else 1

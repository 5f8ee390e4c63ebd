"""Command line: `python -m jaxcontrol COMMAND ...` (also the `jaxcontrol` script).

Commands:
  list                      the suite's tasks and tags
  rollout --env D-T ...     vectorised random-policy rollout: throughput and return
  check DOMAIN TASK ...     parity with dm_control (needs jaxcontrol[test])
  parity [D-T ...] ...      full parity records and PARITY.md (needs jaxcontrol[test])
  train ... / evaluate ...  learners (PPO, SAC, D4PG)
  video --env D-T ...       an mp4 of a run's policy or a random one (needs jaxcontrol[video])
"""

from __future__ import annotations

import argparse
import importlib
import sys

_COMMANDS = {
    "list": ("jaxcontrol.__main__", "list_main"),
    "rollout": ("jaxcontrol.demo", "main"),
    "check": ("jaxcontrol.__main__", "check_main"),
    "parity": ("jaxcontrol.parity", "main"),
    "train": ("jaxcontrol.agents.cli", "train_main"),
    "evaluate": ("jaxcontrol.agents.cli", "evaluate_main"),
    "video": ("jaxcontrol.render.video", "main"),
}


def list_main(argv: list[str]) -> int:
    argparse.ArgumentParser(prog="jaxcontrol list").parse_args(argv)
    import jaxcontrol

    for domain, task in jaxcontrol.ALL_TASKS:
        tag = "benchmarking" if (domain, task) in jaxcontrol.BENCHMARKING else "extra"
        print(f"{domain}-{task}\t{tag}")
    return 0


def check_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="jaxcontrol check", description="Measure a task's parity with dm_control."
    )
    parser.add_argument("domain")
    parser.add_argument("task")
    parser.add_argument("--states", type=int, default=20, help="dm_control states to step from")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--float32", action="store_true", help="compare in float32 (default 64)")
    parser.add_argument("--episode", action="store_true", help="also compare a whole episode")
    parser.add_argument("--amplitude", type=float, default=1.0, help="episode action scale")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    import jaxcontrol
    from jaxcontrol import equivalence

    try:
        jaxcontrol.load(args.domain, args.task)
    except ValueError as e:
        print(f"jaxcontrol check: {e}", file=sys.stderr)
        return 2
    report = equivalence.check(
        args.domain,
        args.task,
        n_states=args.states,
        seed=args.seed,
        x64=not args.float32,
        episode=args.episode,
        amplitude=args.amplitude,
    )
    tolerance = report.tolerance()
    misses = report.misses()
    ok = not misses
    if args.json:
        import json

        print(json.dumps(report.to_dict()))
    else:
        print(report)
        kind = "relative" if args.float32 else "absolute"
        print(f"one-step parity {'within' if ok else 'OUTSIDE'} {tolerance:g} ({kind})")
        for name, (worst, limit) in misses.items():
            print(f"  {name}: {worst:.3e} > {limit:.3e}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in _COMMANDS:
        print(
            __doc__.strip(),
            file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout,
        )
        if argv and argv[0] not in ("-h", "--help"):
            print(
                f"\njaxcontrol: unknown command {argv[0]!r}; valid commands: "
                f"{', '.join(_COMMANDS)}",
                file=sys.stderr,
            )
            return 2
        return 0
    module, function = _COMMANDS[argv[0]]
    return getattr(importlib.import_module(module), function)(argv[1:])


if __name__ == "__main__":
    sys.exit(main())

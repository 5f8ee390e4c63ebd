"""``jaxcontrol list``: the suite's tasks and their tags."""

from __future__ import annotations

from jaxcontrol.cli import args as args_lib

SUMMARY = "the suite's tasks (DOMAIN-TASK) and their tags"


def main(argv: list[str]) -> int:
    """Prints one ``DOMAIN-TASK<TAB>tag`` line per task; returns the exit status."""
    p = args_lib.Parser(prog="jaxcontrol list", description="List the suite's tasks.")
    p.add_argument("--tag", choices=("benchmarking", "extra"), help="only the tasks of this tag")
    try:
        args = p.parse_args(argv)
    except args_lib.UsageError as e:
        return args_lib.fail(str(e))
    import jaxcontrol  # pylint: disable=import-outside-toplevel

    for domain, task in jaxcontrol.ALL_TASKS:
        tag = "benchmarking" if (domain, task) in jaxcontrol.BENCHMARKING else "extra"
        if args.tag in (None, tag):
            print(f"{domain}-{task}\t{tag}")
    return 0

"""The command line: ``jaxcontrol COMMAND ...`` (or ``python -m jaxcontrol COMMAND ...``).

One module per command, each with ``main(argv) -> exit status`` and a one-line
``SUMMARY``; `args` is the toolkit they share (the parser, usage errors, ranges and
the one ``--env DOMAIN-TASK`` reader). A command's module is imported only when it
runs, so ``jaxcontrol --help`` and ``jaxcontrol list`` start quickly.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys

COMMANDS = ("list", "rollout", "check", "parity", "train", "evaluate", "sweep", "results", "video")
PROG = "jaxcontrol"
# A command's module is named for the command, but `list`'s would shadow the builtin
# inside this package.
_RENAMED = {"list": "list_tasks"}


def command_module(name: str):
    """The module of command `name` (imported now)."""
    return importlib.import_module(f"jaxcontrol.cli.{_RENAMED.get(name, name)}")


def _summaries() -> dict[str, str]:
    return {name: command_module(name).SUMMARY for name in COMMANDS}


def usage() -> str:
    """The top-level help: every command with its one-line summary."""
    rows = "\n".join(f"  {name:<10}{summary}" for name, summary in _summaries().items())
    return (
        f"usage: {PROG} COMMAND [ARGS...]\n\n"
        "The DeepMind Control Suite as pure JAX on MuJoCo MJX.\n\n"
        f"commands:\n{rows}\n\n"
        f"`{PROG} COMMAND --help` describes a command. Every command names a task as "
        "--env DOMAIN-TASK (`jaxcontrol list` shows them)."
    )


# Set by a process that runs a command as its child (`jaxcontrol sweep`) to its own pid:
# the child then gets SIGTERM, and checkpoints and stops, when that process dies.
STOP_WITH_PARENT = "JAXCONTROL_STOP_WITH_PARENT"


def _stop_with_parent() -> None:
    parent = os.environ.get(STOP_WITH_PARENT)
    if parent is None or not sys.platform.startswith("linux"):
        return
    import ctypes  # pylint: disable=import-outside-toplevel

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if str(os.getppid()) != parent:  # the parent died before the line above
        sys.exit(128 + signal.SIGTERM)


def main(argv: list[str] | None = None) -> int:
    """Runs one command; returns the process exit status (2 for a bad command line)."""
    _stop_with_parent()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] not in COMMANDS:
        from jaxcontrol.registry import unknown_name  # pylint: disable=import-outside-toplevel

        print(usage(), file=sys.stderr)
        print(f"\n{PROG}: {unknown_name('command', argv[0], COMMANDS)}", file=sys.stderr)
        return 2
    return command_module(argv[0]).main(argv[1:])

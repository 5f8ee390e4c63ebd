"""The command line's argument toolkit, shared by every command.

A bad command line is one line ``error: ...`` on stderr and exit status 2, raised
before anything is written; each message names the valid values or range.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from jaxcontrol import registry
from jaxcontrol.user_input import parse_whole_number

INT_MAX = 2**31 - 1  # JAX's default integers are 32-bit
SEED_MAX = 2**32 - 1


class UsageError(Exception):
    """A bad command line; reported as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises UsageError instead of exiting, refuses
    abbreviated flags, and answers an unknown flag with close matches."""

    def __init__(self, **kwargs):
        super().__init__(allow_abbrev=False, **kwargs)

    def error(self, message):
        raise UsageError(message)

    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            if not extras[0].startswith("-") or extras[0] == "-":
                raise UsageError(f"unexpected argument {extras[0]!r}")
            flags = [f for a in self._actions for f in a.option_strings if f.startswith("--")]
            raise UsageError(str(registry.unknown_name("flag", extras[0].split("=")[0], flags)))
        return parsed


def integer(low: int, high: int) -> Any:
    """An argparse type: an integer in [low, high] ('1e6' allowed), else a message naming it."""

    def parse(text: str) -> int:
        value = parse_whole_number(text)
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected an integer in [{low}, {high}], got {text!r}"
            )
        return value

    return parse


def parse_env(task_id: str) -> tuple[str, str]:
    """A ``--env DOMAIN-TASK`` value as (domain, task) (`registry.parse_task_id`).

    Raises:
      UsageError: an unknown task, naming the valid ids with close matches first.
    """
    try:
        return registry.parse_task_id(task_id)
    except ValueError as e:
        raise UsageError(str(e)) from e


def add_env(parser: argparse.ArgumentParser, **kwargs) -> None:
    """Adds ``--env DOMAIN-TASK``, the one way every command names a task."""
    kwargs.setdefault("help", "the task as DOMAIN-TASK, e.g. cartpole-balance")
    parser.add_argument("--env", metavar="DOMAIN-TASK", **kwargs)


def fail(message: str, status: int = 2) -> int:
    """Prints ``error: message`` as one line on stderr; returns ``status``."""
    flat = " ".join(str(message).splitlines())
    print(f"error: {flat}", file=sys.stderr)
    return status


def warn(message: str) -> None:
    """Prints ``warning: message`` on stderr: a command line that still works but is
    deprecated (a DeprecationWarning would be hidden by Python's default filters)."""
    print(f"warning: {message}", file=sys.stderr)

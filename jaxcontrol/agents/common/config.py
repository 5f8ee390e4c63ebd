"""Helpers for the learners' frozen config dataclasses."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, TypeVar

C = TypeVar("C")


def config_from_dict(cls: type[C], values: Mapping[str, Any]) -> C:
    """Builds a config dataclass, rejecting unknown fields by name.

    Args:
      cls: a frozen dataclass type.
      values: field values; lists are turned into tuples (JSON round trip).

    Returns:
      An instance of ``cls``.

    Raises:
      ValueError: if ``values`` names a field ``cls`` does not have.
    """
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(
            f"unknown {cls.__name__} field(s): {', '.join(unknown)}; "
            f"valid fields are: {', '.join(sorted(names))}"
        )
    fixed = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    return cls(**fixed)


def replace(config: C, **changes: Any) -> C:
    """Like ``dataclasses.replace`` but with a clear error for unknown fields."""
    return config_from_dict(type(config), {**dataclasses.asdict(config), **changes})


def to_dict(config: Any) -> dict[str, Any]:
    """A JSON-friendly dict of a config dataclass."""
    return {
        k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()
    }


def check_positive(config: Any, *names: str) -> None:
    """Raises ValueError unless each named field is > 0."""
    for name in names:
        value = getattr(config, name)
        if not value > 0:
            raise ValueError(f"{type(config).__name__}.{name} must be > 0, got {value!r}")


def check_between(config: Any, name: str, low: float, high: float) -> None:
    """Raises ValueError unless ``low <= field <= high``, naming the range."""
    value = getattr(config, name)
    if not low <= value <= high:
        raise ValueError(
            f"{type(config).__name__}.{name} must be in [{low}, {high}], got {value!r}"
        )


INT_MAX = 2**31 - 1  # JAX's default integers are 32-bit


def check_numbers(config: Any) -> None:
    """Raises ValueError for a non-finite float, or a size past ``INT_MAX``.

    ``total_env_steps`` may exceed ``INT_MAX``: it is counted in Python.
    """
    for field in dataclasses.fields(config):
        value, where = getattr(config, field.name), f"{type(config).__name__}.{field.name}"
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where} must be a finite number, got {value!r}")
        if isinstance(value, tuple) and not all(0 < v <= INT_MAX for v in value):
            raise ValueError(f"{where} must hold integers in [1, {INT_MAX}], got {value!r}")
        big = isinstance(value, int) and not isinstance(value, bool) and value > INT_MAX
        if big and field.name != "total_env_steps":
            raise ValueError(f"{where} must be at most {INT_MAX}, got {value!r}")

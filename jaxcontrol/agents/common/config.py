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


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig:
    """What the off-policy skeleton reads: replay, acting, n-step returns, chunking.

    SAC and D4PG configs extend it with their losses' settings (and their own
    defaults). Each iteration steps all ``num_envs`` environments once, then
    takes ``grad_steps_per_iteration`` gradient steps on batches from the replay.

    Attributes:
      total_env_steps: training budget (rounded up to whole chunks).
      num_envs: parallel environments E.
      replay_capacity: transitions kept (rounded to whole rows of E).
      batch_size: transitions per gradient step.
      learning_starts: env steps collected (random actions) before learning.
      grad_steps_per_iteration: gradient steps per env step of all envs.
      gamma: discount.
      n_step: transitions per return.
      prioritized: prioritized replay (Schaul et al., 2016).
      priority_alpha: priority exponent.
      priority_beta: importance-sampling exponent.
      normalize_observations: standardise observations with running statistics.
      iterations_per_chunk: iterations per jitted chunk.
      random_shift: from pixels, move each sampled image by up to this many pixels
        (``augment.random_shift``; DrQ uses 4); 0 is off, the suite paper's method.
    """

    total_env_steps: int = 1_000_000
    num_envs: int = 32
    replay_capacity: int = 1_000_000
    batch_size: int = 256
    learning_starts: int = 5_000
    grad_steps_per_iteration: int = 4
    gamma: float = 0.99
    n_step: int = 1
    prioritized: bool = False
    priority_alpha: float = 0.6
    priority_beta: float = 0.4
    normalize_observations: bool = False
    iterations_per_chunk: int = 250
    random_shift: int = 0

    def __post_init__(self):
        check_positive(self, "total_env_steps", "num_envs", "replay_capacity", "batch_size")
        check_positive(self, "grad_steps_per_iteration", "n_step", "iterations_per_chunk")
        check_between(self, "learning_starts", 0, math.inf)
        check_between(self, "random_shift", 0, math.inf)
        check_between(self, "gamma", 0.0, 1.0)
        check_between(self, "priority_alpha", 0.0, math.inf)
        check_between(self, "priority_beta", 0.0, 1.0)
        check_numbers(self)
        if self.replay_capacity // self.num_envs < self.n_step + 1:
            raise ValueError(
                f"{type(self).__name__}.replay_capacity must hold at least n_step + 1 = "
                f"{self.n_step + 1} rows of num_envs = {self.num_envs} transitions, "
                f"got {self.replay_capacity}"
            )

    def budget_fixed_by(self) -> str | None:
        """Why training depends on ``total_env_steps`` (None: it does not, and a
        resumed run may be given a larger budget). Nothing here is scheduled over it."""
        return None

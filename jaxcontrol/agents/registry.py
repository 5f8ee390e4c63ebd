"""Agent name -> (config class, make_learner)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, NamedTuple


class AgentSpec(NamedTuple):
    config_cls: type
    make_learner: Callable[..., Any]


_MODULES = {"ppo": ("PPOConfig",), "sac": ("SACConfig",), "d4pg": ("D4PGConfig",)}
AGENTS = tuple(_MODULES)


def get_agent(name: str) -> AgentSpec:
    """The config class and learner factory of agent ``name``.

    Raises:
      ValueError: for an unknown agent.
    """
    if name not in _MODULES:
        raise ValueError(f"unknown agent {name!r}; choose from {', '.join(AGENTS)}")
    module = importlib.import_module(f"jaxcontrol.agents.{name}")
    return AgentSpec(getattr(module, _MODULES[name][0]), module.make_learner)

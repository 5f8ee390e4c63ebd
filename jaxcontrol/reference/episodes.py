"""How many steps a whole episode of a task takes."""

from __future__ import annotations

from jaxcontrol.core import Env

# Steps of an episode where the time limit is infinite (LQR): the suite paper's 1000.
EPISODE_STEPS = 1000


def episode_steps(env: Env) -> int:
    """Steps in a whole episode of `env`: its `episode_length`, or `EPISODE_STEPS`
    where the time limit is infinite (there an episode may still end sooner, at a
    terminal state)."""
    return env.episode_length or EPISODE_STEPS

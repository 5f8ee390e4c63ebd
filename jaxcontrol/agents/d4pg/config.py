"""D4PG configuration; defaults follow the Control Suite report."""

from __future__ import annotations

import dataclasses
import math

from jaxcontrol.agents.common.config import check_between, check_numbers, check_positive


@dataclasses.dataclass(frozen=True)
class D4PGConfig:
    """D4PG hyperparameters; an unknown field is a TypeError at construction.

    Each iteration steps all ``num_envs`` environments (the "actors", each
    with its own exploration sigma) once, then takes
    ``grad_steps_per_iteration`` learner steps.

    Attributes:
      total_env_steps: training budget (rounded up to whole chunks).
      num_envs: parallel environments E (actors).
      sigma_min, sigma_max: exploration noise std, log-spaced across actors.
      replay_capacity: transitions kept (rounded to whole rows of E).
      batch_size: transitions per learner step (paper: 256).
      learning_starts: env steps collected with random actions before learning.
      grad_steps_per_iteration: learner steps per env step of all envs.
      learning_rate: Adam step size of actor and critic (paper: 1e-4).
      gamma: discount.
      n_step: return length (paper: 5).
      num_atoms: critic support size (paper: 101).
      v_min, v_max: critic support range (paper: [-150, 150]).
      target_update_period: learner steps between hard target copies (paper: 100).
      prioritized: prioritized replay (paper: alpha 0.6).
      priority_alpha: priority exponent.
      priority_beta: importance-sampling exponent.
      actor_hidden_sizes, critic_hidden_sizes: MLP widths.
      iterations_per_chunk: iterations per jitted chunk.
    """

    total_env_steps: int = 1_000_000
    num_envs: int = 32
    sigma_min: float = 1.0 / 32.0
    sigma_max: float = 1.0
    replay_capacity: int = 1_000_000
    batch_size: int = 256
    learning_starts: int = 5_000
    grad_steps_per_iteration: int = 4
    learning_rate: float = 1e-4
    gamma: float = 0.99
    n_step: int = 5
    num_atoms: int = 101
    v_min: float = -150.0
    v_max: float = 150.0
    target_update_period: int = 100
    prioritized: bool = False
    priority_alpha: float = 0.6
    priority_beta: float = 0.4
    actor_hidden_sizes: tuple[int, ...] = (256, 256)
    critic_hidden_sizes: tuple[int, ...] = (256, 256)
    iterations_per_chunk: int = 250

    def __post_init__(self):
        check_positive(
            self,
            "total_env_steps",
            "num_envs",
            "sigma_min",
            "sigma_max",
            "replay_capacity",
            "batch_size",
            "grad_steps_per_iteration",
            "learning_rate",
            "n_step",
            "target_update_period",
            "iterations_per_chunk",
        )
        if self.num_atoms < 2 or not self.v_min < self.v_max:
            raise ValueError(
                "D4PGConfig needs num_atoms >= 2 and v_min < v_max, got "
                f"num_atoms={self.num_atoms}, v_min={self.v_min}, v_max={self.v_max}"
            )
        if self.sigma_min > self.sigma_max:
            raise ValueError("D4PGConfig.sigma_min must be <= sigma_max")
        check_between(self, "learning_starts", 0, math.inf)
        check_between(self, "gamma", 0.0, 1.0)
        check_between(self, "priority_alpha", 0.0, math.inf)
        check_between(self, "priority_beta", 0.0, 1.0)
        check_numbers(self)

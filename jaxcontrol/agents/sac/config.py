"""SAC configuration."""

from __future__ import annotations

import dataclasses
import math

from jaxcontrol.agents.common.config import check_between, check_numbers, check_positive


@dataclasses.dataclass(frozen=True)
class SACConfig:
    """SAC hyperparameters; an unknown field is a TypeError at construction.

    Each iteration steps all ``num_envs`` environments once and then takes
    ``grad_steps_per_iteration`` gradient steps on batches from the replay.

    Attributes:
      total_env_steps: training budget (rounded up to whole chunks).
      num_envs: parallel environments E.
      replay_capacity: transitions kept (rounded to whole rows of E).
      batch_size: transitions per gradient step.
      learning_starts: env steps collected (random actions) before learning.
      grad_steps_per_iteration: gradient steps per env step of all envs.
      actor_learning_rate: Adam step size of the policy.
      critic_learning_rate: Adam step size of the critics.
      alpha_learning_rate: Adam step size of the log temperature.
      init_alpha: initial temperature.
      target_entropy_scale: target entropy = scale * action size (negative).
      gamma: discount.
      tau: Polyak rate of the target critics.
      n_step: transitions per return (1 = standard SAC).
      hidden_sizes: MLP widths of actor and critics.
      normalize_observations: standardise observations with running stats.
      iterations_per_chunk: iterations per jitted chunk.
    """

    total_env_steps: int = 200_000
    num_envs: int = 16
    replay_capacity: int = 1_000_000
    batch_size: int = 256
    learning_starts: int = 5_000
    grad_steps_per_iteration: int = 4
    actor_learning_rate: float = 3e-4
    critic_learning_rate: float = 3e-4
    alpha_learning_rate: float = 3e-4
    init_alpha: float = 1.0
    target_entropy_scale: float = -1.0
    gamma: float = 0.99
    tau: float = 0.005
    n_step: int = 1
    hidden_sizes: tuple[int, ...] = (256, 256)
    normalize_observations: bool = False
    iterations_per_chunk: int = 500

    def __post_init__(self):
        check_positive(
            self,
            "total_env_steps",
            "num_envs",
            "replay_capacity",
            "batch_size",
            "grad_steps_per_iteration",
            "actor_learning_rate",
            "critic_learning_rate",
            "init_alpha",
            "tau",
            "n_step",
            "iterations_per_chunk",
        )
        check_positive(self, "alpha_learning_rate")
        check_between(self, "gamma", 0.0, 1.0)
        check_between(self, "tau", 0.0, 1.0)
        check_between(self, "learning_starts", 0, math.inf)
        check_numbers(self)
        if self.replay_capacity // self.num_envs < self.n_step + 1:
            raise ValueError("replay_capacity too small for num_envs and n_step")

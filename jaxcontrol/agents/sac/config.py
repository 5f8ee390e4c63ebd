"""SAC configuration."""

from __future__ import annotations

import dataclasses

from jaxcontrol.agents.common.config import OffPolicyConfig, check_between, check_positive


@dataclasses.dataclass(frozen=True)
class SACConfig(OffPolicyConfig):
    """SAC hyperparameters; an unknown field is a TypeError at construction.

    The replay, acting and chunking fields are ``OffPolicyConfig``'s; SAC's
    defaults: 200k steps, 16 envs, 1-step returns (standard SAC), chunks of
    500 iterations.

    Attributes:
      actor_learning_rate: Adam step size of the policy.
      critic_learning_rate: Adam step size of the critics.
      alpha_learning_rate: Adam step size of the log temperature.
      init_alpha: initial temperature.
      target_entropy_scale: target entropy = scale * action size (negative).
      tau: Polyak rate of the target critics, applied every gradient step.
      hidden_sizes: MLP widths of actor and critics.
    """

    total_env_steps: int = 200_000
    num_envs: int = 16
    iterations_per_chunk: int = 500
    actor_learning_rate: float = 3e-4
    critic_learning_rate: float = 3e-4
    alpha_learning_rate: float = 3e-4
    init_alpha: float = 1.0
    target_entropy_scale: float = -1.0
    tau: float = 0.005
    hidden_sizes: tuple[int, ...] = (256, 256)

    def __post_init__(self):
        super().__post_init__()
        check_positive(self, "actor_learning_rate", "critic_learning_rate")
        check_positive(self, "alpha_learning_rate", "init_alpha", "tau")
        check_between(self, "tau", 0.0, 1.0)

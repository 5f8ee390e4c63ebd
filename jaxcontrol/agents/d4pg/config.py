"""D4PG configuration; defaults follow the Control Suite report."""

from __future__ import annotations

import dataclasses

from jaxcontrol.agents.common.config import OffPolicyConfig, check_positive


@dataclasses.dataclass(frozen=True)
class D4PGConfig(OffPolicyConfig):
    """D4PG hyperparameters; an unknown field is a TypeError at construction.

    The replay, acting and chunking fields are ``OffPolicyConfig``'s; D4PG's
    defaults are the paper's: 5-step returns, batch 256, 32 actors (each
    environment is one, with its own exploration sigma).

    Attributes:
      sigma_min, sigma_max: exploration noise std, log-spaced across actors.
      learning_rate: Adam step size of actor and critic (paper: 1e-4).
      num_atoms: critic support size (paper: 101).
      v_min, v_max: critic support range (paper: [-150, 150], for rewards in [0, 1]
        per step; `jaxcontrol train --action-repeat K` scales the default by K).
      target_update_period: learner steps between hard target copies (paper: 100).
      actor_hidden_sizes, critic_hidden_sizes: MLP widths.
    """

    n_step: int = 5
    sigma_min: float = 1.0 / 32.0
    sigma_max: float = 1.0
    learning_rate: float = 1e-4
    num_atoms: int = 101
    v_min: float = -150.0
    v_max: float = 150.0
    target_update_period: int = 100
    actor_hidden_sizes: tuple[int, ...] = (256, 256)
    critic_hidden_sizes: tuple[int, ...] = (256, 256)

    def __post_init__(self):
        super().__post_init__()
        check_positive(self, "sigma_min", "sigma_max", "learning_rate", "target_update_period")
        if self.num_atoms < 2 or not self.v_min < self.v_max:
            raise ValueError(
                "D4PGConfig needs num_atoms >= 2 and v_min < v_max, got "
                f"num_atoms={self.num_atoms}, v_min={self.v_min}, v_max={self.v_max}"
            )
        if self.sigma_min > self.sigma_max:
            raise ValueError(
                f"D4PGConfig.sigma_min must be <= sigma_max = {self.sigma_max}, "
                f"got {self.sigma_min}"
            )

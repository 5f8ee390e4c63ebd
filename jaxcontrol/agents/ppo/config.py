"""PPO configuration."""

from __future__ import annotations

import dataclasses
import math

from jaxcontrol.agents.common.config import check_between, check_numbers, check_positive


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO hyperparameters; an unknown field is a TypeError at construction.

    Attributes:
      total_env_steps: training budget (rounded up to whole chunks).
      num_envs: parallel environments E.
      unroll_length: rollout length T per update; an update uses T * E steps.
      num_minibatches: minibatches per epoch (must divide T * E).
      update_epochs: passes over each rollout.
      learning_rate: Adam step size (the initial one, when annealed).
      anneal_learning_rate: decay the step size linearly to 0 over the run.
      max_grad_norm: global gradient-norm clip.
      gamma: discount.
      gae_lambda: GAE lambda.
      clip_eps: policy ratio clip.
      clip_value: also clip the value loss around the old values.
      value_clip_eps: clip range for the value loss when ``clip_value``.
      value_coef: weight of the value loss.
      entropy_coef: weight of the entropy bonus.
      reward_scale: rewards are multiplied by this before learning.
      normalize_observations: standardise observations with running stats.
      normalize_advantages: standardise advantages per minibatch.
      hidden_sizes: MLP widths of both policy and value networks.
      init_log_std: initial log standard deviation of the policy.
      state_dependent_std: the policy network also outputs the log std (per
        state), instead of one learned log std per action dimension.
      stagger_episodes: start each environment's first episode at a different
        point of its time limit, so that every rollout covers every phase of an
        episode (``TrainingEnv.reset``); off, the environments of a task that
        never terminates run in lock-step.
      updates_per_chunk: updates per jitted chunk (progress/checkpoint grain).
    """

    total_env_steps: int = 1_000_000
    num_envs: int = 128
    unroll_length: int = 32
    num_minibatches: int = 4
    update_epochs: int = 8
    learning_rate: float = 1e-3
    anneal_learning_rate: bool = False
    max_grad_norm: float = 0.5
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    clip_value: bool = False
    value_clip_eps: float = 0.2
    value_coef: float = 0.5
    entropy_coef: float = 0.0
    reward_scale: float = 0.1
    normalize_observations: bool = True
    normalize_advantages: bool = True
    hidden_sizes: tuple[int, ...] = (64, 64)
    init_log_std: float = -0.5
    state_dependent_std: bool = False
    stagger_episodes: bool = True
    updates_per_chunk: int = 10

    def __post_init__(self):
        check_positive(
            self,
            "total_env_steps",
            "num_envs",
            "unroll_length",
            "num_minibatches",
            "update_epochs",
            "learning_rate",
            "updates_per_chunk",
        )
        check_positive(self, "max_grad_norm", "clip_eps", "value_clip_eps", "reward_scale")
        for name in ("gamma", "gae_lambda"):
            check_between(self, name, 0.0, 1.0)
        for name in ("value_coef", "entropy_coef"):
            check_between(self, name, 0.0, math.inf)
        check_numbers(self)
        if (self.num_envs * self.unroll_length) % self.num_minibatches:
            raise ValueError("num_envs * unroll_length must be divisible by num_minibatches")

    def budget_fixed_by(self) -> str | None:
        """Why training depends on ``total_env_steps`` (None: it does not, and a
        resumed run may be given a larger budget)."""
        if self.anneal_learning_rate:
            return "anneal_learning_rate decays the step size to 0 over that budget"
        return None

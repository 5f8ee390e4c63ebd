"""Proximal policy optimisation (Schulman et al., 2017) with GAE."""

from jaxcontrol.agents.ppo.config import PPOConfig
from jaxcontrol.agents.ppo.train import make_learner, make_train

__all__ = ["PPOConfig", "make_learner", "make_train"]

"""Soft actor-critic (Haarnoja et al., 2018) with twin critics and automatic temperature."""

from jaxcontrol.agents.sac.config import SACConfig
from jaxcontrol.agents.sac.train import make_learner, make_train

__all__ = ["SACConfig", "make_learner", "make_train"]

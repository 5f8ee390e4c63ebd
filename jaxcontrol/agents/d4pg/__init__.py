"""D4PG (Barth-Maron et al., 2018) as in the Control Suite report: categorical critic,
n-step returns, hard target updates, Gaussian exploration spread across actors."""

from jaxcontrol.agents.d4pg.config import D4PGConfig
from jaxcontrol.agents.d4pg.train import make_learner, make_train

__all__ = ["D4PGConfig", "make_learner", "make_train"]

"""Pieces shared by the learners: replay, running statistics, returns, evaluation."""

from jaxcontrol.agents import extras as _extras

_extras.require()

"""Wrappers over the pure `Env`, each acting on one environment (vmap from outside).

Every wrapper satisfies `EnvLike`, the protocol of `Env` itself, so they stack:

    env = RecordEpisodeStatistics(AutoReset(ActionRepeat(jaxcontrol.load("walker", "walk"), 2)))

`DmEnv`, `GymnasiumVectorEnv` and `BraxEnv` adapt any of them to dm_env,
Gymnasium and Brax.
"""

from jaxcontrol.wrappers.action_repeat import ActionRepeat
from jaxcontrol.wrappers.auto_reset import AutoReset
from jaxcontrol.wrappers.base import EnvLike, Wrapper
from jaxcontrol.wrappers.dm_env_adapter import DmEnv
from jaxcontrol.wrappers.domain_randomization import DomainRandomization, ModelFields
from jaxcontrol.wrappers.episode_statistics import RecordEpisodeStatistics
from jaxcontrol.wrappers.flatten import FlattenObservation
from jaxcontrol.wrappers.frame_stack import FrameStack
from jaxcontrol.wrappers.observables import AGGREGATORS, GaussianNoise, Observable, Observables
from jaxcontrol.wrappers.pixels import Pixels

__all__ = [
    "AGGREGATORS",
    "ActionRepeat",
    "AutoReset",
    "BraxEnv",
    "DmEnv",
    "DomainRandomization",
    "EnvLike",
    "FlattenObservation",
    "FrameStack",
    "GaussianNoise",
    "GymnasiumEnv",
    "GymnasiumVectorEnv",
    "ModelFields",
    "Observable",
    "Observables",
    "Pixels",
    "RecordEpisodeStatistics",
    "Wrapper",
    "clip_normalized_observations",
]

_GYMNASIUM = ("GymnasiumEnv", "GymnasiumVectorEnv")
_BRAX = ("BraxEnv", "clip_normalized_observations")


def __getattr__(name):
    # The Gymnasium adapters import gymnasium (the jaxcontrol[gymnasium] extra),
    # so they load on first use and `import jaxcontrol.wrappers` never needs it.
    if name in _GYMNASIUM:
        from jaxcontrol.wrappers import gymnasium_adapter

        return getattr(gymnasium_adapter, name)
    if name in _BRAX:  # brax (the jaxcontrol[brax] extra), likewise on first use
        from jaxcontrol.wrappers import brax_adapter

        return getattr(brax_adapter, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

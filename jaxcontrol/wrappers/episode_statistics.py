"""`RecordEpisodeStatistics`: each episode's return and length in `State.info`.

`info["episode_return"]` is the sum of the rewards of the current episode so
far and `info["episode_length"]` the number of steps it has taken, both
including the step just taken. On a LAST step they are the finished episode's
totals; the step after a LAST starts counting again from that step (the first
step of the next episode under `AutoReset`). FIRST states carry 0 and 0.

It counts across `AutoReset`'s restarts, so it goes above `AutoReset`:
`RecordEpisodeStatistics(AutoReset(env))` (the other order is refused).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from jaxcontrol.core import State
from jaxcontrol.wrappers.base import Wrapper

RETURN = "episode_return"
LENGTH = "episode_length"


@dataclasses.dataclass(frozen=True)
class RecordEpisodeStatistics(Wrapper):
    """Keeps the running episode return and length in `info`.

    Attributes:
      env: the environment to wrap.
    """

    info_keys: ClassVar[tuple[str, ...]] = (RETURN, LENGTH)
    above_auto_reset: ClassVar[bool] = True

    def reset(self, key: jax.Array) -> State:
        state = self.env.reset(key)
        zero = jnp.zeros((), state.reward.dtype)
        return state.replace(info={**state.info, RETURN: zero, LENGTH: jnp.int32(0)})

    def step(self, state: State, action: jax.Array) -> State:
        ended = state.last()  # the previous step closed an episode: start again
        episode_return = jnp.where(ended, 0, state.info[RETURN])
        episode_length = jnp.where(ended, 0, state.info[LENGTH])
        stepped = self.env.step(self.inner_state(state), action)
        info = {
            **stepped.info,
            RETURN: (episode_return + stepped.reward).astype(stepped.reward.dtype),
            LENGTH: (episode_length + 1).astype(jnp.int32),
        }
        return stepped.replace(info=info)

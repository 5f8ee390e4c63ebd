"""`FlattenObservation`: one flat vector instead of dm_control's observation dict.

The observation becomes the concatenation of every entry, each raveled, in
`observation_spec()` key order (dm_control's order, as its own
`flat_observation=True` concatenates them), in the env's float dtype.
`info["final_observation"]`, left by an `AutoReset` below, is flattened too, so
a learner bootstraps from the same layout it acts on.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping

import jax
import jax.numpy as jnp
from dm_env import specs

from jaxcontrol.core import State
from jaxcontrol.wrappers.base import Wrapper

_FINAL = "final_observation"


@dataclasses.dataclass(frozen=True)
class FlattenObservation(Wrapper):
    """Concatenates the observation dict into one vector of shape (D,).

    Attributes:
      env: the environment to wrap; its observation must be a dict of arrays.
    """

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.env.observation_spec(), Mapping):
            raise TypeError(
                "FlattenObservation needs a dict observation; this one is already a single "
                f"array ({self.env.observation_spec()}). Wrap the env with it once."
            )

    def observation_spec(self) -> specs.Array:
        inner = self.env.observation_spec()
        size = sum(math.prod(spec.shape) for spec in inner.values())
        dtype = jnp.result_type(*(spec.dtype for spec in inner.values()))
        return specs.Array((size,), dtype, name="observations")

    def flatten(self, observation: Mapping[str, jax.Array]) -> jax.Array:
        """One environment's observation dict as a vector, in spec order."""
        dtype = self.observation_spec().dtype
        parts = [jnp.ravel(observation[key]).astype(dtype) for key in self.env.observation_spec()]
        return jnp.concatenate(parts)

    def _flat(self, state: State) -> State:
        info = dict(state.info)
        if _FINAL in info:
            info[_FINAL] = self.flatten(info[_FINAL])
        return state.replace(observation=self.flatten(state.observation), info=info)

    def reset(self, key: jax.Array) -> State:
        return self._flat(self.env.reset(key))

    def step(self, state: State, action: jax.Array) -> State:
        return self._flat(self.env.step(self._unflat(state), action))

    def set_state(self, state: State, *args, **kwargs) -> State:
        """The wrapped env's `set_state`, flattened (`Env.set_state`'s arguments)."""
        return self._flat(self.env.set_state(self._unflat(state), *args, **kwargs))

    def _unflat(self, state: State) -> State:
        """`state` in the wrapped env's layout (dict observations), for its `step`."""
        info = dict(state.info)
        if _FINAL in info:
            info[_FINAL] = self.unflatten(info[_FINAL])
        return state.replace(observation=self.unflatten(state.observation), info=info)

    def unflatten(self, vector: jax.Array) -> Mapping[str, jax.Array]:
        """The inverse of `flatten`: the wrapped env's observation dict."""
        inner = self.env.observation_spec()
        ends = list(itertools.accumulate(math.prod(spec.shape) for spec in inner.values()))
        pieces = jnp.split(vector, ends[:-1])
        return type(inner)(
            (key, piece.reshape(spec.shape).astype(spec.dtype))
            for (key, spec), piece in zip(inner.items(), pieces, strict=True)
        )

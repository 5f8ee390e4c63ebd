"""The environment protocol that `Env` and every wrapper satisfy, and `Wrapper`.

A wrapper acts on ONE environment, exactly like `Env`: `reset(key)` returns a
`State` and `step(state, action)` returns the next, both pure and jittable.
Batches come from `jax.vmap` outside, so wrappers stack in any order a
semantics allows and a stack is vmapped once:

    env = RecordEpisodeStatistics(AutoReset(ActionRepeat(jaxcontrol.load(...), 2)))
    states = jax.vmap(env.reset)(jax.random.split(key, 1024))
    states = jax.jit(jax.vmap(env.step))(states, actions)

A wrapper keeps its own per-environment data in `State.info` under keys it
declares in `info_keys` (a stack refuses two wrappers that claim one key), and
strips them (`inner_state`) before it hands a state to the env it wraps.
Wrappers are immutable and hashable (frozen dataclasses), so a stack can be
closed over or passed as a static argument to `jit`, like `Env`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

import jax
from dm_env import specs

from jaxcontrol.core import Env, State


@runtime_checkable
class EnvLike(Protocol):
    """What every environment offers: a bare `Env` and any stack of wrappers.

    Attributes:
      control_timestep: seconds of simulated time per `step`.
      episode_length: `step`s per episode at the time limit (None: no limit).
      unwrapped: the bare `Env` at the bottom of the stack.
    """

    def reset(self, key: jax.Array) -> State:
        """Starts an episode from `key`: a FIRST state."""
        ...

    def step(self, state: State, action: jax.Array) -> State:
        """The state after applying `action` to `state`."""
        ...

    def action_spec(self) -> specs.BoundedArray:
        """The spec of one environment's action."""
        ...

    def observation_spec(self) -> Mapping[str, specs.Array] | specs.Array:
        """The spec of one environment's `State.observation`."""
        ...

    @property
    def control_timestep(self) -> float: ...

    @property
    def episode_length(self) -> int | None: ...

    @property
    def unwrapped(self) -> Env: ...


@dataclasses.dataclass(frozen=True)
class Wrapper:
    """Base class of wrappers: forwards everything it does not override.

    Any attribute not found on the wrapper is read from `env` (so
    `wrapped.mj_model`, `wrapped.time_limit` and `wrapped.set_state` reach the
    bare `Env`); a subclass overrides what it changes. A subclass that changes
    the layout of `State` (its observation, its `info`) must also override
    `set_state` where it keeps it meaningful, or refuse it.

    Attributes:
      env: the environment this wrapper wraps (an `Env` or another wrapper).
      info_keys: (class attribute) the `State.info` keys this wrapper owns.
    """

    env: EnvLike
    info_keys: ClassVar[tuple[str, ...]] = ()
    # Placement around `AutoReset` (whose restart runs the reset of what it wraps):
    # a wrapper with per-episode state must sit below it, one that counts across
    # its restarts (episode statistics) above it.
    resets_episodes: ClassVar[bool] = False
    below_auto_reset: ClassVar[bool] = False
    above_auto_reset: ClassVar[bool] = False

    def __post_init__(self):
        if not isinstance(self.env, EnvLike):
            raise TypeError(
                f"{type(self).__name__} wraps an environment (a jaxcontrol Env or Wrapper), "
                f"got {type(self.env).__name__}; build one with jaxcontrol.load(domain, task)"
            )
        below = self.stack()[1:-1]
        name = type(self).__name__
        if self.below_auto_reset and any(w.resets_episodes for w in below):
            raise ValueError(
                f"{name} keeps per-episode state, so it goes below AutoReset, "
                f"whose restart must reset it: AutoReset({name}(env, ...))"
            )
        if self.resets_episodes:
            misplaced = [type(w).__name__ for w in below if w.above_auto_reset]
            if misplaced:
                raise ValueError(
                    f"{misplaced[0]} counts across episodes, so it goes above {name}: "
                    f"{misplaced[0]}({name}(env))"
                )
        taken = {key: type(w).__name__ for w in below for key in w.info_keys}
        clash = sorted(set(self.info_keys) & set(taken))
        if clash:
            raise ValueError(
                f"{name} keeps State.info{clash} but "
                f"{taken[clash[0]]} below it in the stack already does; "
                "wrap the environment with it once"
            )

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails. `env` itself is absent while a
        # copy or unpickle builds the object; never recurse then.
        if name == "env" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.env, name)

    # ----- the protocol, forwarded ---------------------------------------------------

    def reset(self, key: jax.Array) -> State:
        return self.env.reset(key)

    def step(self, state: State, action: jax.Array) -> State:
        return self.env.step(state, action)

    def action_spec(self) -> specs.BoundedArray:
        return self.env.action_spec()

    def observation_spec(self) -> Mapping[str, specs.Array] | specs.Array:
        return self.env.observation_spec()

    @property
    def control_timestep(self) -> float:
        return self.env.control_timestep

    @property
    def episode_length(self) -> int | None:
        return self.env.episode_length

    @property
    def unwrapped(self) -> Env:
        return self.env.unwrapped

    def inner_state(self, state: State) -> State:
        """`state` as the wrapped env knows it: without this wrapper's `info` keys.

        Every wrapper hands this, not `state`, to `self.env.step`, so that a
        state's `info` holds exactly the keys of the wrappers below the one
        that produced it (what `AutoReset` relies on to swap in a new episode).
        """
        if not self.info_keys:
            return state
        info = {k: v for k, v in state.info.items() if k not in self.info_keys}
        return state.replace(info=info)

    def stack(self) -> tuple[EnvLike, ...]:
        """This wrapper and everything below it, outermost first, the `Env` last."""
        layers: list[EnvLike] = [self]
        while isinstance(layers[-1], Wrapper):
            layers.append(layers[-1].env)
        return tuple(layers)


def check_resettable(env: Any, adapter: str) -> None:
    """Refuses what an adapter cannot drive: not an env, or one that resets itself.

    The adapters (dm_env, Gymnasium) reset environments themselves, each by its
    own API's rules, so an `AutoReset` in the stack is an error that says so.
    """
    if not isinstance(env, EnvLike):
        raise TypeError(
            f"{adapter} wraps a jaxcontrol Env or wrapper (jaxcontrol.load(domain, task)), "
            f"got {type(env).__name__}"
        )
    layers = env.stack() if isinstance(env, Wrapper) else (env,)
    if any(getattr(layer, "resets_episodes", False) for layer in layers):
        raise ValueError(f"{adapter} resets episodes itself; pass the env without AutoReset")

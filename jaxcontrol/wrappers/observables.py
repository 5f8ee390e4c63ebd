"""`Observables`: dm_control Composer's observation pipeline, vectorised.

Each configured observation entry gets Composer's observable options, with
Composer's semantics (`dm_control/composer/observation`):

* `update_interval`: the entry is observed every `update_interval` steps
  (times interval, 2 x interval, ... after the reset, which observes at 0);
* `corruptor`: applied to each value as it is observed, before it enters the
  buffer (so the aggregator sees corrupted values);
* `delay`: a value observed at time t arrives at t + delay;
* `buffer_size`: the observation is the last `buffer_size` arrived values,
  oldest first, shape (buffer_size, *shape). Before enough values have
  arrived the buffer is padded with zeros, or with the first observed value
  (`pad_with_initial_value`, Composer's `ObservationPadding.INITIAL_VALUE`);
* `aggregator`: "min", "max", "mean", "median", "sum" or a function,
  reducing the buffer over its first axis.

`update_interval` and `delay` may be functions of a key returning an integer
(Composer's variations): the interval is drawn for each scheduled
observation, the delay for each observed value (then `max_delay` bounds it).

Time. Composer counts these options in physics steps and observes after
every physics substep. Our env computes observations once per control step
(per `step` of the wrapped env), so the options here count the wrapped env's
steps. That is exactly Composer's behaviour with one physics step per control
step (cartpole, acrobot, cheetah, pendulum, point_mass, reacher); for a
finer clock, wrap a task loaded with `control_timestep` equal to its physics
timestep. A test drives dm_control's own `Updater` beside this wrapper.

Keys. The reset splits its key between the wrapped env and this wrapper;
each step splits this wrapper's key again, one fresh key per entry and use,
so every environment of a batch draws its own noise and no key is used twice.
`strip_singleton_buffer_dim=True` (the default; Composer's default is False)
keeps a buffer of one without its leading axis, so an entry with the default
options is the wrapped env's observation unchanged.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

from jaxcontrol.core import State
from jaxcontrol.wrappers.base import Wrapper

INFO = "observables"
AGGREGATORS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "min": lambda buffer: jnp.min(buffer, axis=0),
    "max": lambda buffer: jnp.max(buffer, axis=0),
    "mean": lambda buffer: jnp.mean(buffer, axis=0),
    "median": lambda buffer: jnp.median(buffer, axis=0),
    "sum": lambda buffer: jnp.sum(buffer, axis=0),
}
_NEVER = int(np.iinfo(np.int32).max)  # arrival time of an empty pending slot

IntOrDraw = int | Callable[[jax.Array], jax.Array]


@dataclasses.dataclass(frozen=True)
class Observable:
    """Composer's options for one observation entry (defaults: unchanged).

    Attributes:
      update_interval: steps between observations (>= 1), or a function of a
        key drawing it for each scheduled observation.
      buffer_size: how many arrived values the observation holds (>= 1).
      delay: steps between observing a value and its arrival (>= 0), or a
        function of a key drawing it for each value (then give `max_delay`).
      aggregator: None (the whole buffer), one of `AGGREGATORS`, or a function
        reducing a buffer (buffer_size, *shape) over axis 0.
      corruptor: None, or a function `(key, value) -> value` applied to each
        observed value, e.g. `GaussianNoise(0.01)`.
      max_delay: the largest delay a drawn delay is clipped to.
    """

    update_interval: IntOrDraw = 1
    buffer_size: int = 1
    delay: IntOrDraw = 0
    aggregator: str | Callable[[jax.Array], jax.Array] | None = None
    corruptor: Callable[[jax.Array, jax.Array], jax.Array] | None = None
    max_delay: int | None = None

    def __post_init__(self):
        if not _is_int(self.buffer_size) or self.buffer_size < 1:
            raise ValueError(f"buffer_size must be an integer >= 1, got {self.buffer_size!r}")
        if not callable(self.update_interval) and (
            not _is_int(self.update_interval) or self.update_interval < 1
        ):
            raise ValueError(
                "update_interval must be an integer >= 1 or a function of a key, "
                f"got {self.update_interval!r}"
            )
        if callable(self.delay):
            if not _is_int(self.max_delay) or self.max_delay < 0:
                raise ValueError("a drawn delay needs max_delay, an integer >= 0")
        elif not _is_int(self.delay) or self.delay < 0:
            raise ValueError(
                f"delay must be an integer >= 0 or a function of a key, got {self.delay!r}"
            )
        if isinstance(self.aggregator, str) and self.aggregator not in AGGREGATORS:
            raise ValueError(
                f"unknown aggregator {self.aggregator!r}; valid names: {', '.join(AGGREGATORS)}"
                " (or a function of the buffer)"
            )
        if not (self.aggregator is None or isinstance(self.aggregator, str)) and not callable(
            self.aggregator
        ):
            raise TypeError(f"aggregator must be a name or a function, got {self.aggregator!r}")
        if self.corruptor is not None and not callable(self.corruptor):
            raise TypeError("corruptor must be a function (key, value) -> value")

    @property
    def capacity(self) -> int:
        """Pending slots enough for every value in flight."""
        most = self.max_delay if callable(self.delay) else self.delay
        return most + 1

    def reduce(self, buffer: jax.Array, strip: bool) -> jax.Array:
        """The observation an arrived buffer (buffer_size, *shape) gives."""
        if self.aggregator is None:
            return buffer[0] if strip and self.buffer_size == 1 else buffer
        if isinstance(self.aggregator, str):
            return AGGREGATORS[self.aggregator](buffer)
        return self.aggregator(buffer)


@dataclasses.dataclass(frozen=True)
class GaussianNoise:
    """A corruptor adding independent N(0, std^2) noise to each element.

    A value (not a closure), so two equal configurations compare and hash
    equal and `jit` reuses its compiled step.
    """

    std: float

    def __post_init__(self):
        if not self.std >= 0:
            raise ValueError(f"std must be >= 0, got {self.std!r}")

    def __call__(self, key: jax.Array, value: jax.Array) -> jax.Array:
        noise = jax.random.normal(key, jnp.shape(value), jnp.result_type(value))
        return value + self.std * noise


@dataclasses.dataclass(frozen=True)
class Observables(Wrapper):
    """Composer-style update interval, delay, buffer, aggregation and noise.

    Attributes:
      env: the environment to wrap (a dict observation).
      observables: observation key -> `Observable`. Keys not given pass through.
        A dict is accepted and kept as a tuple of pairs (hashable).
      pad_with_initial_value: pad unfilled buffers with the first observed
        value instead of zeros.
      strip_singleton_buffer_dim: drop the buffer axis of a buffer of one.
    """

    observables: Any = ()
    pad_with_initial_value: bool = False
    strip_singleton_buffer_dim: bool = True
    info_keys: ClassVar[tuple[str, ...]] = (INFO,)
    below_auto_reset: ClassVar[bool] = True

    def __post_init__(self):
        super().__post_init__()
        items = tuple(dict(self.observables).items())
        object.__setattr__(self, "observables", items)
        inner = self.env.observation_spec()
        if not isinstance(inner, Mapping):
            raise TypeError("Observables needs a dict observation; put it below FlattenObservation")
        for name, config in items:
            if name not in inner:
                raise ValueError(f"no observation named {name!r}; valid names: {', '.join(inner)}")
            if not isinstance(config, Observable):
                raise TypeError(f"{name!r}: expected an Observable, got {type(config).__name__}")

    def observation_spec(self) -> Mapping[str, specs.Array]:
        inner = self.env.observation_spec()
        spec = type(inner)(inner)
        for name, config in self.observables:
            buffer = jax.ShapeDtypeStruct(
                (config.buffer_size,) + inner[name].shape, inner[name].dtype
            )
            out = jax.eval_shape(
                lambda b, c=config: c.reduce(b, self.strip_singleton_buffer_dim), buffer
            )
            spec[name] = specs.Array(out.shape, out.dtype, name=name)
        return spec

    # ----- reset and step ---------------------------------------------------------

    def reset(self, key: jax.Array) -> State:
        key_env, key_own = jax.random.split(key)
        state = self.env.reset(key_env)
        key_next, keys = self._keys(key_own)
        buffers = {}
        for (name, config), (key_corrupt, key_delay, key_interval) in zip(
            self.observables, keys, strict=True
        ):
            value = _corrupt(config, key_corrupt, state.observation[name])
            fill = value if self.pad_with_initial_value else jnp.zeros_like(value)
            buffer = {
                "arrived": jnp.broadcast_to(fill, (config.buffer_size,) + value.shape),
                "value": jnp.zeros((config.capacity,) + value.shape, value.dtype),
                "arrival": jnp.full((config.capacity,), _NEVER, jnp.int32),
                "taken": jnp.zeros((config.capacity,), jnp.int32),
                "next_update": _draw(config.update_interval, key_interval, 1, None),
            }
            delay = _draw(config.delay, key_delay, 0, config.max_delay)
            buffers[name] = _deliver(_insert(buffer, jnp.int32(0), delay, value), jnp.int32(0))
        own = {"time": jnp.int32(0), "key": key_next, "buffers": buffers}
        return self._observe(state, own)

    def step(self, state: State, action: jax.Array) -> State:
        own = state.info[INFO]
        stepped = self.env.step(self.inner_state(state), action)
        now = own["time"] + 1
        key_next, keys = self._keys(own["key"])
        buffers = {}
        for (name, config), (key_corrupt, key_delay, key_interval) in zip(
            self.observables, keys, strict=True
        ):
            buffer = own["buffers"][name]
            due = now == buffer["next_update"]
            value = _corrupt(config, key_corrupt, stepped.observation[name])
            delay = _draw(config.delay, key_delay, 0, config.max_delay)
            observed = _insert(buffer, now, delay, value)
            observed["next_update"] = buffer["next_update"] + _draw(
                config.update_interval, key_interval, 1, None
            )
            buffer = jax.tree.map(functools.partial(jnp.where, due), observed, buffer)
            buffers[name] = _deliver(buffer, now)
        return self._observe(stepped, {"time": now, "key": key_next, "buffers": buffers})

    def _keys(self, key: jax.Array):
        """The next key, and (corrupt, delay, interval) keys per entry: all distinct."""
        keys = jax.random.split(key, 1 + 3 * len(self.observables))
        return keys[0], [tuple(keys[1 + 3 * i : 4 + 3 * i]) for i in range(len(self.observables))]

    def _observe(self, state: State, own: dict) -> State:
        observation = type(state.observation)(state.observation)
        for name, config in self.observables:
            arrived = own["buffers"][name]["arrived"]
            observation[name] = config.reduce(arrived, self.strip_singleton_buffer_dim)
        return state.replace(observation=observation, info={**state.info, INFO: own})


def _insert(buffer: dict, now: jax.Array, delay: jax.Array, value: jax.Array) -> dict:
    """Puts `value`, observed at `now`, into a free pending slot (arrival now + delay)."""
    slot = jnp.argmax(buffer["arrival"] == _NEVER)
    return {
        **buffer,
        "value": buffer["value"].at[slot].set(value),
        "arrival": buffer["arrival"].at[slot].set(now + delay),
        "taken": buffer["taken"].at[slot].set(now),
    }


def _deliver(buffer: dict, now: jax.Array) -> dict:
    """Moves every pending value due by `now` into the arrived buffer.

    In order of arrival, then of observation (Composer's pending queue); the
    arrived buffer keeps the last `buffer_size` (a deque with maxlen).
    """
    due = buffer["arrival"] <= now
    order = jnp.lexsort((buffer["taken"], jnp.where(due, buffer["arrival"], _NEVER)))
    queue = jnp.concatenate([buffer["arrived"], buffer["value"][order]])
    size = buffer["arrived"].shape[0]
    arrived = jax.lax.dynamic_slice_in_dim(queue, jnp.sum(due), size)
    return {**buffer, "arrived": arrived, "arrival": jnp.where(due, _NEVER, buffer["arrival"])}


def _corrupt(config: Observable, key: jax.Array, value: jax.Array) -> jax.Array:
    if config.corruptor is None:
        return value
    return jnp.asarray(config.corruptor(key, value), jnp.result_type(value))


def _draw(option: IntOrDraw, key: jax.Array, low: int, high: int | None) -> jax.Array:
    value = option(key) if callable(option) else option
    value = jnp.asarray(value, jnp.int32)
    return jnp.clip(value, low, high) if high is not None else jnp.maximum(value, low)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)

"""`BraxEnv`: any jaxcontrol environment as a `brax.envs.Env`, for Brax's trainers.

    from brax.training.agents.ppo import train as ppo
    env = BraxEnv(jaxcontrol.load("cartpole", "balance"))
    make_policy, params, metrics = ppo.train(
        environment=env, episode_length=env.episode_length, num_timesteps=..., ...)

Brax's trainers wrap the environment themselves (`brax.envs.training.wrap`):
a vmap, an episode counter that ends an episode after `episode_length` steps
(marking it `info["truncation"]`), and an auto-reset. The adapter therefore
acts on ONE environment, resets nothing itself, and reports as `done` only a
true terminal state (a LAST step with discount 0). A time limit is Brax's
truncation, so Brax's PPO masks it out of its advantages rather than treating
it as a terminal; pass `episode_length=env.episode_length` (the task's own, 1000
in the suite) so the two agree.

Semantics of the Brax `State`:

* `pipeline_state` is the jaxcontrol `State` itself (physics, observation dict,
  per-episode variables, model fields), so Brax's auto-reset, which puts back
  each environment's FIRST state where it is done, restores all of it;
* `obs` is the observation flattened in `observation_spec()` order (float32);
* `reward` is the step's reward, `done` 1.0 at a terminal state, else 0.0;
* `metrics` and `info` start empty, for Brax's wrappers.

Brax's auto-reset restarts an environment from the state its first reset
drew, not from a fresh draw (that is how Brax's wrappers work), so across
`num_envs` environments Brax samples `num_envs` initial states in all.

Observation normalisation: Brax's running-statistics normaliser divides by
the running std, floored at 1e-6, and does not clip. A feature that barely
varies at first (cartpole's cosine of the pole angle has a std of 1.7e-4
over the initial states) then reaches hundreds of standard deviations once
the pole tilts, and Brax's PPO with `normalize_observations=True` learns
cartpole-balance slowly, if at all. `clip_normalized_observations(factory)`
clips the normalised observation to +-5, as our learners do. With it and
networks like ours (a Gaussian with a state-independent std, tanh layers, a
small initial mean: `benchmarks/brax_ppo.py --brax-networks ours`), Brax's
PPO learns cartpole-balance in 200k steps; Brax's default tanh-squashed
policy still drifts to bang-bang control there (docs/benchmarks.md, "Brax's PPO through BraxEnv").

Needs the extra: `pip install 'jaxcontrol[brax]'` (brax 0.14.2, whose trainers
run on jax 0.9, the version jaxcontrol pins).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

try:
    from brax.envs import base as brax_base
    from brax.training.acme import running_statistics
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "jaxcontrol.wrappers.BraxEnv and clip_normalized_observations need Brax: "
        "pip install 'jaxcontrol[brax]'"
    ) from error

from jaxcontrol.core import State, StepType
from jaxcontrol.wrappers.base import EnvLike, check_resettable


def _flatten(observation: Any, spec: Any) -> jax.Array:
    """One float32 vector of an observation (a dict in spec order, or one array)."""
    if not hasattr(spec, "items"):
        return jnp.ravel(jnp.asarray(observation, jnp.float32))
    return jnp.concatenate([jnp.ravel(jnp.asarray(observation[k], jnp.float32)) for k in spec])


class BraxEnv(brax_base.Env):
    """A jaxcontrol environment (an `Env` or a stack of wrappers) as a `brax.envs.Env`.

    Args:
      env: the environment; one environment, as Brax's `Env` is (Brax's
        trainers vmap it). A stack with an `AutoReset` is refused: Brax resets.

    Raises:
      TypeError: if `env` is not a jaxcontrol environment.
      ValueError: if it resets itself, or its action is not a vector.
    """

    def __init__(self, env: EnvLike):
        check_resettable(env, "BraxEnv")
        action_shape = env.action_spec().shape
        if len(action_shape) != 1:
            raise ValueError(f"BraxEnv needs a vector action, got shape {action_shape}")
        self._env = env
        self._spec = env.observation_spec()
        entries = self._spec.values() if hasattr(self._spec, "values") else [self._spec]
        self._obs_size = sum(int(math.prod(spec.shape)) for spec in entries)
        self._action_size = int(action_shape[0])

    @property
    def env(self) -> EnvLike:
        """The wrapped jaxcontrol environment."""
        return self._env

    @property
    def episode_length(self) -> int | None:
        """Steps per episode at the task's time limit: pass it to Brax's `train`."""
        return self._env.episode_length

    def _observe(self, state: State) -> jax.Array:
        return _flatten(state.observation, self._spec)

    def reset(self, rng: jax.Array) -> brax_base.State:
        """The env's FIRST state from `rng` (a PRNG key, as Brax passes)."""
        state = self._env.reset(rng)
        zero = jnp.zeros((), jnp.float32)
        return brax_base.State(
            pipeline_state=state, obs=self._observe(state), reward=zero, done=zero
        )

    def step(self, state: brax_base.State, action: jax.Array) -> brax_base.State:
        """One step of the env; `done` is 1.0 only at a terminal state (discount 0)."""
        stepped = self._env.step(state.pipeline_state, action)
        terminal = (stepped.step_type == StepType.LAST) & (stepped.discount == 0)
        return state.replace(
            pipeline_state=stepped,
            obs=self._observe(stepped),
            reward=stepped.reward.astype(jnp.float32),
            done=terminal.astype(jnp.float32),
        )

    @property
    def observation_size(self) -> int:
        return self._obs_size

    @property
    def action_size(self) -> int:
        return self._action_size

    @property
    def backend(self) -> str:
        return "mjx"


def clip_normalized_observations(network_factory: Callable, limit: float = 5.0) -> Callable:
    """A Brax network factory whose normalised observations are clipped to [-limit, limit].

    Brax's trainers call `network_factory(observation_size, action_size,
    preprocess_observations_fn=...)`, passing its running-statistics
    normaliser when `normalize_observations=True`. The returned factory
    passes on that normaliser with its output clipped (Brax's own
    `max_abs_value`), so a feature whose running std is tiny cannot reach the
    network at hundreds of standard deviations:

        factory = clip_normalized_observations(ppo_networks.make_ppo_networks)
        ppo.train(environment=BraxEnv(env), network_factory=factory,
                  normalize_observations=True, ...)

    Raises (when Brax builds the networks):
      ValueError: if the trainer does not normalise observations (there is
        nothing to clip; train with `normalize_observations=True`).
    """
    if not limit > 0:
        raise ValueError(f"limit must be positive, got {limit}")

    @functools.wraps(network_factory)
    def factory(*args, preprocess_observations_fn=None, **kwargs):
        if preprocess_observations_fn is not running_statistics.normalize:
            raise ValueError(
                "clip_normalized_observations clips Brax's observation normaliser, but the "
                "trainer passed none: train with normalize_observations=True"
            )
        clipped = functools.partial(running_statistics.normalize, max_abs_value=limit)
        return network_factory(*args, preprocess_observations_fn=clipped, **kwargs)

    return factory

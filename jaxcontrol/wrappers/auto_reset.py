"""Batched auto-reset: step thousands of environments without episode bookkeeping.

`Env.step` never resets. `AutoReset` steps a *batch* of states and, for each
environment whose episode ended on this step, starts its next episode at once:
the returned state holds the new episode's first observation (and physics),
while `reward`, `discount` and `step_type` still describe the finished
transition, and `info["final_observation"]` holds the observation that
transition really ended in. Bootstrapping through a time-limit end therefore
reads `info["final_observation"]`, never `observation`.

Efficiency: the reset runs under one `lax.cond` over the whole batch, only on
steps where some episode ended. Suite episodes end together (fixed time
limits), so resets cost one batched reset per episode length, not per step.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxcontrol.core import Env, State


@dataclasses.dataclass(frozen=True)
class AutoReset:
    """Batched `reset`/`step` with automatic episode restarts.

    Attributes:
      env: the environment to wrap.
    """

    env: Env

    def reset(self, key: jax.Array, num_envs: int) -> State:
        """Resets `num_envs` environments from one key (split per environment)."""
        states = jax.vmap(self.env.reset)(jax.random.split(key, num_envs))
        return _with_final_observation(states, states.observation)

    def step(self, states: State, actions: jax.Array) -> State:
        """Steps every environment; restarts those whose episode just ended."""
        stepped = jax.vmap(self.env.step)(states, actions)
        done = stepped.last()

        def restart(stepped: State) -> State:
            fresh = jax.vmap(self.env.reset)(stepped.key)

            def pick(new, old):
                mask = done.reshape(done.shape + (1,) * (old.ndim - 1))
                return jnp.where(mask, new, old)

            return stepped.replace(
                data=jax.tree.map(pick, fresh.data, stepped.data),
                observation=jax.tree.map(pick, fresh.observation, stepped.observation),
                variables=jax.tree.map(pick, fresh.variables, stepped.variables),
                model_fields=jax.tree.map(pick, fresh.model_fields, stepped.model_fields),
                key=jax.tree.map(pick, fresh.key, stepped.key),
                step=jnp.where(done, fresh.step, stepped.step),
                diverged=jnp.where(done, fresh.diverged, stepped.diverged),
            )

        final_observation = stepped.observation
        restarted = jax.lax.cond(jnp.any(done), restart, lambda s: s, stepped)
        return _with_final_observation(restarted, final_observation)


def _with_final_observation(states: State, final_observation) -> State:
    return states.replace(info={**states.info, "final_observation": final_observation})

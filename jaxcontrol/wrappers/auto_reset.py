"""Auto-reset: start the next episode as soon as one ends, inside `step`.

`Env.step` never resets. `AutoReset(env)` is a per-environment wrapper: when
the step it takes ends an episode, it returns the next episode's first state
at once. The returned state holds the new episode's observation, physics and
`info`, while `reward`, `discount` and `step_type` still describe the finished
transition (LAST), and `info["final_observation"]` holds the observation that
transition really ended in. Bootstrapping through a time-limit end therefore
reads `info["final_observation"]`, never `observation`.

Cost. A reset costs about as much as a step or more (rejection sampling), and
most steps end no episode, so the restart sits in a `lax.cond`. Under `vmap`
a cond whose predicate differs across the batch becomes a `select` that runs
the reset on every step. The predicate here is therefore "did any episode of
the whole batch end", computed by a tiny `jax.custom_batching.custom_vmap`
function: for one environment it is `done` itself; vmapped, its rule reduces
`done` over the vmapped axis and calls itself again, so each vmap level
(seeds around environments, as in `jax.jit(jax.vmap(train))`) is reduced in
turn and the predicate reaches the cond unbatched. The cond then stays a
cond under any number of vmaps; inside it, each environment takes its fresh
state only where its own episode ended. Suite episodes end together (fixed
time limits), so a batch pays one batched reset per episode length, not per
step. Only the predicate passes through `custom_vmap`: the step and the reset
stay ordinary traced code that XLA and JAX optimise as usual.
docs/design/auto-reset.md measures the alternatives.

Staggered episodes (PPO starts each environment at another phase of its first
episode) end one or two at a time, so the batch-level restart above would reset the
whole batch every few steps. `AutoReset.step_batch` steps an explicit batch and, when
few episodes ended, resets only those environments, a block of them at a time
(at most four blocks; more resets the batch whole, as above);
`jaxcontrol.agents` steps its environments through it.

Place `AutoReset` above the wrappers that keep per-episode state
(`Observables`, `DomainRandomization`): their `reset` runs inside the restart.
`RecordEpisodeStatistics` goes above it.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from jaxcontrol.core import State
from jaxcontrol.wrappers.base import Wrapper

_FINAL = "final_observation"
_FEW_BLOCKS = 4  # step_batch's most rounds of `block` resets before it resets the whole batch


@dataclasses.dataclass(frozen=True)
class AutoReset(Wrapper):
    """Restarts an environment in the step that ends its episode.

    Attributes:
      env: the environment to wrap (an `Env` or a wrapper).
    """

    info_keys: ClassVar[tuple[str, ...]] = (_FINAL,)
    resets_episodes: ClassVar[bool] = True

    def reset(self, key: jax.Array) -> State:
        """The inner reset, with `info["final_observation"]` set to its observation."""
        state = self.env.reset(key)
        return _with_final_observation(state, state.observation)

    def step(self, state: State, action: jax.Array) -> State:
        """Steps; if the episode ended, returns the next episode's first state.

        `reward`, `discount` and `step_type` are the finished transition's;
        everything else is the new episode's. Under `vmap` (any depth) the
        restart runs in one `lax.cond`, taken when any environment of the
        whole batch finished.
        """
        stepped = self.env.step(self.inner_state(state), action)
        done = stepped.last()

        def restart(stepped: State) -> State:
            fresh = self.env.reset(stepped.key)
            restarted = jax.tree.map(lambda new, old: jnp.where(done, new, old), fresh, stepped)
            return _after_restart(restarted, stepped)

        # The final observation is set inside both branches: nothing of
        # `stepped` outlives the cond, so XLA can update the state in place.
        return jax.lax.cond(any_in_batch(done), restart, _kept, stepped)

    def step_batch(self, states: State, actions: jax.Array, block: int | None = None) -> State:
        """`jax.vmap(self.step)` over a batch [E], paying for finished environments only.

        Where at most 4 * `block` episodes ended (in every vmapped copy of the batch,
        e.g. seeds), only those environments reset, `block` of them at a time (default
        max(1, E // 128)); where more ended, the whole batch resets as in `step`, so a
        restart never takes more than four rounds. Each environment gets the state `step`
        would give it: its reset draws from its own key.

        Args:
          states: a batched state, leading axis E.
          actions: [E, ...] actions.
          block: environments reset together on the few-finished path.
        """
        stepped = jax.vmap(lambda s, a: self.env.step(self.inner_state(s), a))(states, actions)
        done = stepped.last()
        n = done.shape[0]
        k = max(1, n // 128) if block is None else block
        if not 1 <= k <= n:
            raise ValueError(f"block must be in [1, {n}] for a batch of {n}, got {block}")

        def restart_all(stepped: State) -> State:
            fresh = jax.vmap(self.env.reset)(stepped.key)
            return _take_where(done, fresh, stepped)

        def restart_few(stepped: State) -> State:
            order = jnp.nonzero(done, size=n + k, fill_value=n)[0]  # finished first, then n

            def one_block(carry):
                i, current = carry
                lanes = jax.lax.dynamic_slice(order, (i * k,), (k,))
                keys = jnp.take(current.key, lanes, axis=0, mode="clip")  # past the end: unused
                fresh = jax.vmap(self.env.reset)(keys)
                return i + 1, jax.tree.map(
                    lambda x, new: x.at[lanes].set(new, mode="drop"), current, fresh
                )

            blocks = (jnp.sum(done) + k - 1) // k
            start = (jnp.zeros((), jnp.int32), stepped)
            return jax.lax.while_loop(lambda c: c[0] < blocks, one_block, start)[1]

        def restart(stepped: State) -> State:
            many = any_in_batch(jnp.sum(done) > _FEW_BLOCKS * k)
            restarted = jax.lax.cond(many, restart_all, restart_few, stepped)
            return _after_restart(restarted, stepped)

        return jax.lax.cond(any_in_batch(jnp.any(done)), restart, _kept, stepped)


@custom_vmap
def any_in_batch(flag: jax.Array) -> jax.Array:
    """`flag` for one environment; under vmap, whether it holds for any of the batch.

    The result is never batched: each vmap level around the call reduces its
    own axis (the rule calls this function again on the reduced flag, which
    the next level out batches in turn), so a `lax.cond` on it stays a cond.
    """
    return flag


@any_in_batch.def_vmap
def _any_in_batch_rule(axis_size, in_batched, flag):
    del axis_size
    (batched,) = in_batched
    reduced = jnp.any(flag, axis=0) if batched else flag
    return any_in_batch(reduced), False


def _after_restart(restarted: State, stepped: State) -> State:
    """`restarted` (new episodes where they began) with the finished transition's reward,
    discount, step type and final observation, which `stepped` holds."""
    restarted = restarted.replace(
        reward=stepped.reward, discount=stepped.discount, step_type=stepped.step_type
    )
    return _with_final_observation(restarted, stepped.observation)


def _kept(stepped: State) -> State:
    """`stepped` where no episode ended: its observation is its final one."""
    return _with_final_observation(stepped, stepped.observation)


def _take_where(done: jax.Array, new: State, old: State) -> State:
    """`new` for the environments where `done`, `old` elsewhere (leading axis E)."""

    def pick(a, b):
        return jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), a, b)

    return jax.tree.map(pick, new, old)


def _with_final_observation(state: State, final_observation) -> State:
    return state.replace(info={**state.info, _FINAL: final_observation})

"""`ActionRepeat`: apply each action for k control steps of the wrapped env.

The semantics are those of the action-repeat wrappers written for dm_env
(Acme's `ActionRepeatWrapper`): the k inner steps' rewards are summed, each
weighted by the product of the discounts before it, the returned discount is
the product of the k discounts, and the repeat stops at the first LAST step.
In the suite a discount is 1 except at a true terminal state, so the reward
is the plain sum and the discount is 0 only if the episode terminated.

In JAX the k steps always run (a `lax.scan`); the steps after a LAST are
discarded (`lax.cond`, a select under vmap), so the state returned is the
state of that LAST step. `State.step` keeps counting the wrapped env's steps.
The episode lasts ceil(n / k) steps of the wrapper where the wrapped env's
lasts n, and `control_timestep` is k times the wrapped env's.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from jaxcontrol.core import State
from jaxcontrol.wrappers.base import Wrapper


@dataclasses.dataclass(frozen=True)
class ActionRepeat(Wrapper):
    """Repeats each action `k` times (k >= 1), summing the rewards.

    Attributes:
      env: the environment to wrap.
      k: how many of the wrapped env's steps one step takes.
    """

    k: int

    def __post_init__(self):
        super().__post_init__()
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"ActionRepeat needs an integer k >= 1, got {self.k!r}")

    @property
    def control_timestep(self) -> float:
        return self.env.control_timestep * self.k

    @property
    def episode_length(self) -> int | None:
        inner = self.env.episode_length
        return None if inner is None else math.ceil(inner / self.k)

    def step(self, state: State, action: jax.Array) -> State:
        """k steps of the wrapped env with `action` (fewer if the episode ends)."""
        first = self.env.step(state, action)
        if self.k == 1:
            return first

        def repeat(carry, _):
            state, reward, discount = carry

            def advance(state, reward, discount):
                nxt = self.env.step(state, action)
                return nxt, reward + discount * nxt.reward, discount * nxt.discount

            ended = state.last()
            carry = jax.lax.cond(ended, lambda *c: c, advance, state, reward, discount)
            return carry, None

        start = (first, first.reward, first.discount)
        (last, reward, discount), _ = jax.lax.scan(repeat, start, None, length=self.k - 1)
        return last.replace(
            reward=reward.astype(first.reward.dtype),
            discount=jnp.asarray(discount, first.discount.dtype),
        )

"""Return estimators that keep truncation apart from termination.

Conventions shared by every function here, for a transition ``t``
(``obs_t``, ``action_t``) -> (``reward_t``, ``discount_t``, ``next_obs_t``):

* ``discount_t`` is the environment's discount: 0.0 only at a true terminal
  state, 1.0 otherwise (including a time-limit end).
* ``done_t`` is True when the episode ended on this transition, for any
  reason (terminal or time limit). It only stops the accumulation across the
  episode boundary; whether to bootstrap is decided by ``discount_t`` alone.
* ``next_obs_t`` is the observation the transition really ended in (the
  AutoReset wrapper's ``info["final_observation"]``), so its value is the
  right bootstrap even when the environment was reset right after.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def gae(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    discounts: jax.Array,
    dones: jax.Array,
    gamma: float,
    lam: float,
) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimation (Schulman et al., 2016).

    delta_t = r_t + gamma * d_t * V(next_obs_t) - V(obs_t)
    A_t     = delta_t + gamma * lam * d_t * (1 - done_t) * A_{t+1}

    A time-limit end has d_t = 1 and done_t = True: its delta bootstraps from
    V(next_obs_t), and the recursion does not leak into the next episode.

    Args:
      rewards: [T, B] rewards r_t.
      values: [T, B] V(obs_t).
      next_values: [T, B] V(next_obs_t) (value of the true next observation).
      discounts: [T, B] environment discounts d_t.
      dones: [T, B] bool, episode ended on transition t.
      gamma: discount factor.
      lam: GAE lambda.

    Returns:
      advantages [T, B] and value targets (advantages + values) [T, B].
    """
    not_done = 1.0 - dones.astype(jnp.float32)
    deltas = rewards + gamma * discounts * next_values - values
    carry_coef = gamma * lam * discounts * not_done

    def backward(next_adv, xs):
        delta, coef = xs
        adv = delta + coef * next_adv
        return adv, adv

    _, advantages = jax.lax.scan(
        backward, jnp.zeros_like(rewards[0]), (deltas, carry_coef), reverse=True
    )
    return advantages, advantages + values


def n_step_return(
    rewards: jax.Array, discounts: jax.Array, dones: jax.Array, gamma: float
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """n-step return over a window, cut at the first episode end.

    With k the first index at which done_k (or n - 1 if none):

      G = sum_{i <= k} gamma^i (prod_{j < i} d_j) r_i
      target = G + bootstrap_discount * Q(next_obs_k)
      bootstrap_discount = gamma^(k + 1) prod_{j <= k} d_j

    A time-limit end (d = 1) therefore keeps its bootstrap; a true terminal
    (d = 0) drops it.

    Args:
      rewards: [N, B] rewards of N consecutive transitions.
      discounts: [N, B] environment discounts.
      dones: [N, B] bool episode ends.
      gamma: discount factor.

    Returns:
      returns G [B], bootstrap_discount [B], and bootstrap_index k [B]
      (int32, the transition whose next_obs to bootstrap from).
    """
    n = rewards.shape[0]
    dones = dones.astype(bool)
    # alive_i: no episode end strictly before step i within the window.
    ended_before = jnp.concatenate(
        [jnp.zeros_like(dones[:1]), jnp.cumsum(dones, axis=0)[:-1] > 0], axis=0
    )
    alive = (~ended_before).astype(jnp.float32)
    # weight_i = gamma^i * prod_{j<i} d_j for alive steps.
    disc_before = jnp.concatenate(
        [jnp.ones_like(discounts[:1]), jnp.cumprod(gamma * discounts, axis=0)[:-1]], axis=0
    )
    returns = jnp.sum(alive * disc_before * rewards, axis=0)
    first_done = jnp.argmax(dones, axis=0)
    k = jnp.where(jnp.any(dones, axis=0), first_done, n - 1).astype(jnp.int32)
    all_disc = jnp.cumprod(gamma * discounts, axis=0)
    bootstrap_discount = jnp.take_along_axis(all_disc, k[None], axis=0)[0]
    return returns, bootstrap_discount, k

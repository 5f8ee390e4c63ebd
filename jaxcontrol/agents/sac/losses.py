"""SAC losses as pure functions of arrays (shapes in the docstrings)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def tanh_gaussian_sample(
    mean: jax.Array, log_std: jax.Array, noise: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Reparameterised sample a = tanh(mean + std * noise) and its log density.

    log pi(a) = log N(u; mean, std) - sum log(1 - tanh(u)^2), with the stable
    form log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2 u)).

    Args:
      mean: [B, A] pre-tanh mean.
      log_std: [B, A] pre-tanh log std.
      noise: [B, A] standard normal draws.

    Returns:
      action [B, A] in (-1, 1) and log_prob [B].
    """
    u = mean + jnp.exp(log_std) * noise
    gaussian = jnp.sum(-0.5 * noise**2 - log_std - 0.5 * math.log(2 * math.pi), axis=-1)
    log_det = jnp.sum(2.0 * (math.log(2.0) - u - jax.nn.softplus(-2.0 * u)), axis=-1)
    return jnp.tanh(u), gaussian - log_det


def soft_td_target(
    reward: jax.Array,
    bootstrap_discount: jax.Array,
    next_q: jax.Array,
    next_log_prob: jax.Array,
    alpha: jax.Array,
) -> jax.Array:
    """y = r + discount * (min_i Q'_i(s', a') - alpha * log pi(a'|s')).

    Args:
      reward: [B] (n-step) reward.
      bootstrap_discount: [B] gamma^n times environment discounts (0 at a
        true terminal, gamma^n at a time-limit end).
      next_q: [2, B] target critics at (s', a'), a' ~ pi(s').
      next_log_prob: [B] log pi(a'|s').
      alpha: scalar temperature.

    Returns:
      [B] targets (no gradient should flow through them).
    """
    return reward + bootstrap_discount * (jnp.min(next_q, axis=0) - alpha * next_log_prob)


def critic_loss(q: jax.Array, target: jax.Array, weight: jax.Array | None = None) -> jax.Array:
    """0.5 * mean over batch of w * sum over the twin critics of (Q_i - y)^2.

    Args:
      q: [2, B] online critics at (s, a).
      target: [B] TD targets.
      weight: [B] importance weights (prioritized replay), or None for all ones.

    Returns:
      Scalar loss.
    """
    per_example = jnp.sum(jnp.square(q - target[None]), axis=0)
    if weight is not None:
        per_example = weight * per_example
    return 0.5 * jnp.mean(per_example)


def actor_loss(q: jax.Array, log_prob: jax.Array, alpha: jax.Array) -> jax.Array:
    """mean(alpha * log pi(a|s) - min_i Q_i(s, a)), a ~ pi(s) reparameterised.

    Args:
      q: [2, B] critics at the policy's actions.
      log_prob: [B].
      alpha: scalar temperature (no gradient).

    Returns:
      Scalar loss.
    """
    return jnp.mean(alpha * log_prob - jnp.min(q, axis=0))


def temperature_loss(log_alpha: jax.Array, log_prob: jax.Array, target_entropy: float) -> jax.Array:
    """-mean(log_alpha * (log pi + target_entropy)); log_prob [B] has no gradient."""
    return -jnp.mean(log_alpha * (jax.lax.stop_gradient(log_prob) + target_entropy))


def polyak(target: object, online: object, tau: float) -> object:
    """target <- (1 - tau) target + tau online, leaf by leaf."""
    return jax.tree.map(lambda t, o: (1.0 - tau) * t + tau * o, target, online)

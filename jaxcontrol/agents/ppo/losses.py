"""PPO losses as pure functions of arrays (shapes in the docstrings)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


def gaussian_log_prob(mean: jax.Array, log_std: jax.Array, x: jax.Array) -> jax.Array:
    """Log density of a diagonal Gaussian.

    Args:
      mean: [B, A].
      log_std: [A] or [B, A].
      x: [B, A].

    Returns:
      [B], summed over action dimensions.
    """
    z = (x - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z**2 - log_std - 0.5 * math.log(2 * math.pi), axis=-1)


def gaussian_entropy(log_std: jax.Array) -> jax.Array:
    """Entropy of a diagonal Gaussian with log std [A] (scalar)."""
    return jnp.sum(log_std + 0.5 * math.log(2 * math.pi * math.e), axis=-1)


def gaussian_kl(
    mean_p: jax.Array, log_std_p: jax.Array, mean_q: jax.Array, log_std_q: jax.Array
) -> jax.Array:
    """KL(p || q) of two diagonal Gaussians.

    KL = sum over dimensions of log(s_q / s_p) + (s_p^2 + (m_p - m_q)^2) / (2 s_q^2) - 1/2.

    Args:
      mean_p, log_std_p: [B, A] (log stds may be [A]).
      mean_q, log_std_q: [B, A] (likewise).

    Returns:
      [B], summed over action dimensions.
    """
    var_p, var_q = jnp.exp(2.0 * log_std_p), jnp.exp(2.0 * log_std_q)
    per_dim = log_std_q - log_std_p + (var_p + jnp.square(mean_p - mean_q)) / (2.0 * var_q) - 0.5
    return jnp.sum(per_dim, axis=-1)


def clipped_policy_loss(
    log_prob: jax.Array, old_log_prob: jax.Array, advantages: jax.Array, clip_eps: float
) -> jax.Array:
    """PPO's clipped surrogate, to minimise.

    loss = -mean(min(rho * A, clip(rho, 1 - eps, 1 + eps) * A)), rho = exp(lp - lp_old)

    Args:
      log_prob: [B] log pi(a|s) under the current policy.
      old_log_prob: [B] log pi_old(a|s) (no gradient).
      advantages: [B].
      clip_eps: eps.

    Returns:
      Scalar loss.
    """
    ratio = jnp.exp(log_prob - old_log_prob)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    return -jnp.mean(jnp.minimum(unclipped, clipped))


def value_loss(
    values: jax.Array, old_values: jax.Array, targets: jax.Array, clip_eps: float | None
) -> jax.Array:
    """Half mean squared error, optionally clipped around the old values.

    Clipped form: 0.5 * mean(max((V - G)^2, (V_old + clip(V - V_old, -eps, eps) - G)^2)).

    Args:
      values: [B] current V(s).
      old_values: [B] V(s) before this update.
      targets: [B] returns G.
      clip_eps: eps, or None for the plain loss.

    Returns:
      Scalar loss.
    """
    err = jnp.square(values - targets)
    if clip_eps is not None:
        clipped = old_values + jnp.clip(values - old_values, -clip_eps, clip_eps)
        err = jnp.maximum(err, jnp.square(clipped - targets))
    return 0.5 * jnp.mean(err)


def normalize(x: jax.Array, eps: float = 1e-8) -> jax.Array:
    """(x - mean) / (std + eps) over all elements."""
    return (x - jnp.mean(x)) / (jnp.std(x) + eps)

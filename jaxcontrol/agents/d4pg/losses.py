"""D4PG losses as pure functions of arrays (shapes in the docstrings)."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def categorical_projection(atoms: jax.Array, probs: jax.Array, support: jax.Array) -> jax.Array:
    """Projects a distribution on arbitrary atoms onto a fixed, evenly spaced support.

    Each source atom z_j (clipped into [support[0], support[-1]]) gives its
    probability to its two neighbours on the support, in proportion to
    closeness: weight_ij = max(0, 1 - |z_j - s_i| / dz) (Bellemare et al., 2017).

    Args:
      atoms: [B, J] source atom locations (e.g. r + discount * support).
      probs: [B, J] their probabilities.
      support: [K] evenly spaced target support.

    Returns:
      [B, K] projected probabilities.
    """
    dz = support[1] - support[0]
    clipped = jnp.clip(atoms, support[0], support[-1])
    weights = jnp.clip(
        1.0 - jnp.abs(clipped[:, None, :] - support[None, :, None]) / dz, 0.0, 1.0
    )  # [B, K, J]
    return jnp.sum(weights * probs[:, None, :], axis=-1)


def categorical_td_target(
    reward: jax.Array, bootstrap_discount: jax.Array, next_probs: jax.Array, support: jax.Array
) -> jax.Array:
    """Target distribution of r + discount * Z(s', pi'(s')), projected onto the support.

    Args:
      reward: [B] n-step returns.
      bootstrap_discount: [B] gamma^n times environment discounts (gamma^k at
        a time-limit end inside the window, 0 at a true terminal).
      next_probs: [B, K] target critic's probabilities at the bootstrap state.
      support: [K].

    Returns:
      [B, K] target probabilities.
    """
    atoms = reward[:, None] + bootstrap_discount[:, None] * support[None, :]
    return categorical_projection(atoms, next_probs, support)


def categorical_cross_entropy(logits: jax.Array, target_probs: jax.Array) -> jax.Array:
    """Per-example cross-entropy -sum_k p_k log softmax(logits)_k.

    Args:
      logits: [B, K] online critic logits.
      target_probs: [B, K] target probabilities (no gradient).

    Returns:
      [B] losses.
    """
    return -jnp.sum(target_probs * jax.nn.log_softmax(logits, axis=-1), axis=-1)


def expected_value(logits: jax.Array, support: jax.Array) -> jax.Array:
    """Mean of the categorical distribution: [B, K] logits -> [B]."""
    return jnp.sum(jax.nn.softmax(logits, axis=-1) * support, axis=-1)


def exploration_sigmas(num_envs: int, sigma_min: float, sigma_max: float) -> jax.Array:
    """[E] noise std per actor, log-spaced from sigma_min to sigma_max."""
    if num_envs == 1:
        return jnp.asarray([sigma_max], jnp.float32)
    return jnp.exp(jnp.linspace(jnp.log(sigma_min), jnp.log(sigma_max), num_envs))

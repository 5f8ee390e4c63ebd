"""PPO loss arithmetic on hand-worked values."""

import math

import jax.numpy as jnp
import numpy as np

from jaxcontrol.agents.ppo import losses

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)  # 0.918938...


def test_clipped_policy_loss():
    # ratio 1.5, eps .2: A=+2 -> min(3, 2.4) = 2.4; A=-2 -> min(-3, -2.4) = -3.
    # ratio .5: A=+1 -> min(.5, .8) = .5; A=-1 -> min(-.5, -.8) = -.8.
    # loss = -mean(2.4, -3, .5, -.8) = .225
    log_prob = jnp.log(jnp.array([1.5, 1.5, 0.5, 0.5]))
    loss = losses.clipped_policy_loss(
        log_prob, jnp.zeros(4), jnp.array([2.0, -2.0, 1.0, -1.0]), 0.2
    )
    np.testing.assert_allclose(loss, 0.225, rtol=1e-6)


def test_value_loss_plain_and_clipped():
    values, old, targets = jnp.array([3.0, 2.5]), jnp.array([1.0, 1.0]), jnp.array([0.0, 3.0])
    # plain: 0.5 * mean(9, .25) = 2.3125
    np.testing.assert_allclose(losses.value_loss(values, old, targets, None), 2.3125)
    # clipped (eps .5): V_clip = [1.5, 1.5]; errors max(9, 2.25) = 9 and
    # max(.25, 2.25) = 2.25 -> 0.5 * mean(9, 2.25) = 2.8125
    np.testing.assert_allclose(losses.value_loss(values, old, targets, 0.5), 2.8125)


def test_gaussian_log_prob_and_entropy():
    # N(0, 1) at x = 1, two dims: 2 * (-.5 - HALF_LOG_2PI)
    lp = losses.gaussian_log_prob(jnp.zeros((1, 2)), jnp.zeros(2), jnp.ones((1, 2)))
    np.testing.assert_allclose(lp, [2 * (-0.5 - HALF_LOG_2PI)], rtol=1e-6)
    # std e (log_std 1) at x = mean + e: z = 1 -> -.5 - 1 - HALF_LOG_2PI
    lp = losses.gaussian_log_prob(jnp.array([[2.0]]), jnp.array([1.0]), jnp.array([[2.0 + math.e]]))
    np.testing.assert_allclose(lp, [-1.5 - HALF_LOG_2PI], rtol=1e-6)
    np.testing.assert_allclose(
        losses.gaussian_entropy(jnp.zeros(3)), 3 * (0.5 + HALF_LOG_2PI), rtol=1e-6
    )


def test_normalize():
    np.testing.assert_allclose(losses.normalize(jnp.array([1.0, 3.0])), [-1.0, 1.0], rtol=1e-6)


def test_gaussian_kl():
    # One dimension, p = N(0, 1), q = N(1, 2): log 2 + (1 + 1) / 8 - 1/2 = log 2 - 0.25.
    # A second dimension with p = q adds 0.
    kl = losses.gaussian_kl(
        jnp.array([[0.0, 3.0]]),
        jnp.array([0.0, -1.0]),
        jnp.array([[1.0, 3.0]]),
        jnp.array([[math.log(2.0), -1.0]]),
    )
    np.testing.assert_allclose(kl, [math.log(2.0) - 0.25], rtol=1e-6)

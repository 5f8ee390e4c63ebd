"""SAC loss arithmetic on hand-worked values."""

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol.agents.sac import losses

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def test_tanh_gaussian_sample():
    # noise 0 -> u = 0, a = 0, log pi = log N(0; 0, 1) - log(1 - 0) = -HALF_LOG_2PI.
    a, lp = losses.tanh_gaussian_sample(jnp.zeros((1, 1)), jnp.zeros((1, 1)), jnp.zeros((1, 1)))
    np.testing.assert_allclose(a, [[0.0]], atol=1e-7)
    np.testing.assert_allclose(lp, [-HALF_LOG_2PI], rtol=1e-6)
    # noise 1 -> u = 1, a = tanh 1 = 0.7615942; 1 - a^2 = 0.4199743;
    # log pi = (-0.5 - HALF_LOG_2PI) - ln 0.4199743 = -1.4189385 + 0.8675616.
    a, lp = losses.tanh_gaussian_sample(jnp.zeros((1, 1)), jnp.zeros((1, 1)), jnp.ones((1, 1)))
    np.testing.assert_allclose(a, [[0.7615942]], rtol=1e-6)
    np.testing.assert_allclose(lp, [-1.4189385 + 0.8675616], rtol=1e-5)


def test_tanh_gaussian_log_det_is_stable_far_out():
    _, lp = losses.tanh_gaussian_sample(
        jnp.full((1, 1), 30.0), jnp.zeros((1, 1)), jnp.zeros((1, 1))
    )
    # log(1 - tanh(30)^2) = 2 (log 2 - 30 - softplus(-60)) ~= 2 log 2 - 60
    np.testing.assert_allclose(lp, [-HALF_LOG_2PI - (2 * math.log(2) - 60.0)], rtol=1e-5)


def test_soft_td_target():
    # min Q' = [2, 4]; y0 = 1 + .99 (2 - .5 * -1) = 3.475;
    # y1 (true terminal, discount 0) = 1.
    y = losses.soft_td_target(
        jnp.array([1.0, 1.0]),
        jnp.array([0.99, 0.0]),
        jnp.array([[2.0, 5.0], [3.0, 4.0]]),
        jnp.array([-1.0, 0.5]),
        jnp.asarray(0.5),
    )
    np.testing.assert_allclose(y, [3.475, 1.0], rtol=1e-6)


def test_critic_loss():
    # batch 0: (1-2)^2 + (3-2)^2 = 2; batch 1: 0 -> 0.5 * mean(2, 0) = 0.5
    loss = losses.critic_loss(jnp.array([[1.0, 2.0], [3.0, 2.0]]), jnp.array([2.0, 2.0]))
    np.testing.assert_allclose(loss, 0.5)


def test_actor_loss():
    # min Q = [1, 0]; .5 * -1 - 1 = -1.5; .5 * 2 - 0 = 1 -> mean -0.25
    loss = losses.actor_loss(
        jnp.array([[1.0, 2.0], [3.0, 0.0]]), jnp.array([-1.0, 2.0]), jnp.asarray(0.5)
    )
    np.testing.assert_allclose(loss, -0.25)


def test_temperature_loss_and_gradient():
    # -(0.5 * mean(-1 - 1, -3 - 1)) = 1.5; d/dlog_alpha = -mean(logp + H) = 3 > 0,
    # so gradient descent lowers alpha when entropy (-logp = 2) exceeds target (1).
    loss, grad = jax.value_and_grad(losses.temperature_loss)(
        jnp.asarray(0.5), jnp.array([-1.0, -3.0]), -1.0
    )
    np.testing.assert_allclose([loss, grad], [1.5, 3.0])


def test_polyak():
    out = losses.polyak({"w": jnp.zeros(2)}, {"w": jnp.ones(2)}, 0.1)
    np.testing.assert_allclose(out["w"], [0.1, 0.1])

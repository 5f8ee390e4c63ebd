"""D4PG's categorical projection and losses on hand-computed cases."""

import math

import jax.numpy as jnp
import numpy as np

from jaxcontrol.agents.d4pg import losses
from jaxcontrol.agents.d4pg.config import D4PGConfig

SUPPORT = jnp.array([0.0, 1.0, 2.0])
PROBS = jnp.array([[0.2, 0.3, 0.5]])


def test_projection_splits_between_neighbours_and_clips():
    # r = .5, discount 1: atoms [.5, 1.5, 2.5].
    # .5 -> half to 0 and half to 1: .1, .1; 1.5 -> .15 to 1, .15 to 2;
    # 2.5 clips to 2 -> .5 to 2.  Result [.1, .25, .65].
    out = losses.categorical_td_target(jnp.array([0.5]), jnp.array([1.0]), PROBS, SUPPORT)
    np.testing.assert_allclose(out, [[0.1, 0.25, 0.65]], rtol=1e-6)


def test_projection_below_range_and_shrinking():
    # r = -1, discount .5: atoms [-1, -.5, 0] all clip to 0 -> [1, 0, 0].
    out = losses.categorical_td_target(jnp.array([-1.0]), jnp.array([0.5]), PROBS, SUPPORT)
    np.testing.assert_allclose(out, [[1.0, 0.0, 0.0]], atol=1e-7)


def test_projection_terminal_collapses_to_reward():
    # discount 0 (true terminal): every atom at r = 1.25 -> .75 to 1, .25 to 2.
    out = losses.categorical_td_target(jnp.array([1.25]), jnp.array([0.0]), PROBS, SUPPORT)
    np.testing.assert_allclose(out, [[0.0, 0.75, 0.25]], atol=1e-7)


def test_projection_on_paper_support_preserves_mass_and_mean():
    support = jnp.linspace(-150.0, 150.0, 101)  # dz = 3
    probs = jnp.full((1, 101), 1 / 101)
    out = losses.categorical_td_target(jnp.array([1.0]), jnp.array([0.99**5]), probs, support)
    np.testing.assert_allclose(jnp.sum(out), 1.0, rtol=1e-5)
    # Atoms 1 + .951 z stay inside [-150, 150], so nothing clips and the
    # projection keeps the mean: 1 + .951 * mean(support) = 1 + .951 * 0 = 1.
    np.testing.assert_allclose(jnp.sum(out * support), 1.0, atol=1e-3)


def test_cross_entropy_and_expected_value():
    logits = jnp.log(jnp.array([[0.25, 0.25, 0.5]]))
    # -(.5 ln .25 + .5 ln .5) = .5 (1.386294) + .5 (.693147) = 1.0397208
    ce = losses.categorical_cross_entropy(logits, jnp.array([[0.5, 0.0, 0.5]]))
    np.testing.assert_allclose(ce, [0.5 * math.log(4) + 0.5 * math.log(2)], rtol=1e-6)
    # E = .25 * 0 + .25 * 1 + .5 * 2 = 1.25
    np.testing.assert_allclose(losses.expected_value(logits, SUPPORT), [1.25], rtol=1e-6)


def test_exploration_sigmas_log_spaced():
    sigmas = losses.exploration_sigmas(6, 1 / 32, 1.0)
    np.testing.assert_allclose(sigmas, [1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0], rtol=1e-5)


def test_paper_defaults():
    config = D4PGConfig()
    assert (config.num_atoms, config.v_min, config.v_max) == (101, -150.0, 150.0)
    assert (config.n_step, config.learning_rate, config.batch_size) == (5, 1e-4, 256)
    assert config.target_update_period == 100 and config.priority_alpha == 0.6

"""Hand-worked checks of GAE and n-step returns, truncation kept apart from termination."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxcontrol.agents.common.returns import gae, n_step_return


def _col(*xs, dtype=jnp.float32):
    return jnp.asarray(xs, dtype)[:, None]  # [T, B=1]


class TestGAE:
    # gamma = lam = 0.5, so gamma * lam = 0.25. Values of the next observation
    # are V(obs_{t+1}) except at an episode end, where they are V(final obs).
    rewards = _col(1.0, 2.0, 3.0)
    values = _col(10.0, 20.0, 30.0)
    next_values = _col(20.0, 40.0, 8.0)  # 40 = V(final obs of episode 1).

    def test_time_limit_end_bootstraps(self):
        # Transition 1 ends the episode by time limit: discount 1, done True.
        # delta = [1 + .5*20 - 10, 2 + .5*40 - 20, 3 + .5*8 - 30] = [1, 2, -23]
        # A2 = -23; A1 = 2 (recursion cut by done); A0 = 1 + .25*2 = 1.5
        adv, targets = gae(
            self.rewards,
            self.values,
            self.next_values,
            _col(1.0, 1.0, 1.0),
            _col(False, True, False, dtype=bool),
            gamma=0.5,
            lam=0.5,
        )
        np.testing.assert_allclose(adv[:, 0], [1.5, 2.0, -23.0])
        np.testing.assert_allclose(targets[:, 0], [11.5, 22.0, 7.0])

    def test_terminal_end_drops_bootstrap(self):
        # Same but transition 1 is a true terminal: discount 0.
        # delta1 = 2 - 20 = -18; A1 = -18; A0 = 1 + .25*(-18) = -3.5
        adv, _ = gae(
            self.rewards,
            self.values,
            self.next_values,
            _col(1.0, 0.0, 1.0),
            _col(False, True, False, dtype=bool),
            gamma=0.5,
            lam=0.5,
        )
        np.testing.assert_allclose(adv[:, 0], [-3.5, -18.0, -23.0])

    def test_no_end_is_plain_recursion(self):
        # next_values chained: [20, 30, 8]; deltas [1, -3, -23]
        # A2 = -23; A1 = -3 + .25*-23 = -8.75; A0 = 1 + .25*-8.75 = -1.1875
        adv, _ = gae(
            self.rewards,
            self.values,
            _col(20.0, 30.0, 8.0),
            _col(1.0, 1.0, 1.0),
            _col(False, False, False, dtype=bool),
            gamma=0.5,
            lam=0.5,
        )
        np.testing.assert_allclose(adv[:, 0], [-1.1875, -8.75, -23.0])

    def test_batch_columns_are_independent(self):
        rewards = jnp.ones((4, 3))
        adv, _ = gae(
            rewards,
            jnp.zeros((4, 3)),
            jnp.zeros((4, 3)),
            jnp.ones((4, 3)),
            jnp.zeros((4, 3), bool),
            gamma=1.0,
            lam=1.0,
        )
        assert adv.shape == (4, 3)
        np.testing.assert_allclose(adv[:, 1], [4.0, 3.0, 2.0, 1.0])


class TestNStep:
    rewards = _col(1.0, 2.0, 4.0)

    def test_full_window(self):
        # G = 1 + .5*2 + .25*4 = 3; bootstrap gamma^3 = .125 from transition 2.
        g, disc, k = n_step_return(
            self.rewards, _col(1.0, 1.0, 1.0), _col(False, False, False, dtype=bool), gamma=0.5
        )
        np.testing.assert_allclose([g[0], disc[0], k[0]], [3.0, 0.125, 2])

    def test_time_limit_inside_window_keeps_bootstrap(self):
        # Episode ends (truncation) on transition 1: G = 1 + .5*2 = 2,
        # bootstrap gamma^2 * 1 = .25 from next_obs of transition 1.
        g, disc, k = n_step_return(
            self.rewards, _col(1.0, 1.0, 1.0), _col(False, True, False, dtype=bool), gamma=0.5
        )
        np.testing.assert_allclose([g[0], disc[0], k[0]], [2.0, 0.25, 1])

    def test_terminal_inside_window_drops_bootstrap(self):
        g, disc, k = n_step_return(
            self.rewards, _col(1.0, 0.0, 1.0), _col(False, True, False, dtype=bool), gamma=0.5
        )
        np.testing.assert_allclose([g[0], disc[0], k[0]], [2.0, 0.0, 1])

    def test_end_on_first_transition(self):
        g, disc, k = n_step_return(
            self.rewards, _col(1.0, 1.0, 1.0), _col(True, False, True, dtype=bool), gamma=0.5
        )
        np.testing.assert_allclose([g[0], disc[0], k[0]], [1.0, 0.5, 0])

    @pytest.mark.parametrize("gamma", [0.9, 0.99])
    def test_one_step_is_td(self, gamma):
        g, disc, k = n_step_return(_col(0.7), _col(1.0), _col(True, dtype=bool), gamma)
        np.testing.assert_allclose([g[0], disc[0], k[0]], [0.7, gamma, 0], rtol=1e-6)


def test_replay_windows_bootstrap_from_the_final_observation():
    """The off-policy batch for a window crossing a time-limit end (SAC, D4PG)."""
    from jaxcontrol.agents.common.offpolicy import batch_from_windows  # pylint: disable=import-outside-toplevel

    # One window of 3 transitions, B = 1. The episode ends by time limit on
    # transition 1, whose true next observation is [7.]; transition 2 belongs
    # to the next episode (starting from [0.]).
    windows = {
        "obs": jnp.array([[[1.0]], [[2.0]], [[0.0]]]),
        "action": jnp.array([[[0.1]], [[0.2]], [[0.3]]]),
        "reward": _col(1.0, 2.0, 4.0),
        "discount": _col(1.0, 1.0, 1.0),
        "done": _col(False, True, False, dtype=bool),
        "next_obs": jnp.array([[[2.0]], [[7.0]], [[0.5]]]),
    }
    batch = batch_from_windows(windows, gamma=0.5)
    # G = 1 + .5 * 2 = 2; bootstrap .25 * Q([7.]) -- not Q([0.]) of the next episode.
    np.testing.assert_allclose(batch["reward"], [2.0])
    np.testing.assert_allclose(batch["bootstrap_discount"], [0.25])
    np.testing.assert_allclose(batch["next_obs"], [[7.0]])
    np.testing.assert_allclose(batch["obs"], [[1.0]])
    np.testing.assert_allclose(batch["action"], [[0.1]])

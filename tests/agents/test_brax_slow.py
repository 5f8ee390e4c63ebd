"""Brax's trainers on jaxcontrol tasks through ``BraxEnv`` (slow tier: ``pytest -m slow``).

Brax's PPO learns cartpole-balance with hyperparameters and network design
matched to ours (benchmarks/brax_ppo.py, which docs/benchmarks.md's comparison ran
at a larger budget, also with Brax's own network design, which learns it
slowly); Brax's SAC runs a short budget end to end. The adapter's contract
without training is tested in tests/wrappers/test_brax_adapter.py.
"""

import os
import sys

import jax
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol.agents.common.evaluation import evaluate, summarize

pytestmark = pytest.mark.slow

pytest.importorskip("brax", reason="needs the jaxcontrol[brax] extra")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "benchmarks"))

import brax_ppo


def test_brax_ppo_learns_cartpole_balance():
    env = jaxcontrol.load("cartpole", "balance")
    # Brax's trainer with our network design and Brax's normaliser clipped
    # (clip_normalized_observations): 991 after 205k steps, 997 after 410k
    # (seed 0, 20 episodes). Unclipped, it stays near a random policy's ~350.
    policy, params, seconds, steps, _ = brax_ppo.brax(env, 400_000, seed=0, networks="ours")
    returns = jax.jit(lambda k: evaluate(env, policy, params, k, 20))(jax.random.key(1))
    result = summarize(np.asarray(returns))
    print("brax ppo cartpole-balance", steps, result["mean_return"], f"{seconds:.0f} s")
    assert result["mean_return"] >= 900.0


def test_brax_sac_runs_on_a_task():
    from brax.training.agents.sac import train as sac  # pylint: disable=import-outside-toplevel

    from jaxcontrol.wrappers import BraxEnv  # pylint: disable=import-outside-toplevel

    env = BraxEnv(jaxcontrol.load("pendulum", "swingup"))
    make_policy, params, metrics = sac.train(
        environment=env,
        num_timesteps=4_000,
        episode_length=env.episode_length,
        num_envs=8,
        num_eval_envs=2,
        min_replay_size=1_000,
        batch_size=64,
        seed=0,
    )
    assert np.isfinite(metrics["eval/episode_reward"])
    action, _ = make_policy(params, deterministic=True)(np.zeros((1, 3), np.float32), None)
    assert action.shape == (1, 1)

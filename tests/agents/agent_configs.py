"""Tiny learner configs for the toy env, shared by tests and multidevice_check.py.

(A uniquely named module: ``from conftest import ...`` would be ambiguous
with several conftest.py files in the tree.)
"""

from jaxcontrol.agents.d4pg import D4PGConfig
from jaxcontrol.agents.ppo import PPOConfig
from jaxcontrol.agents.sac import SACConfig

# Tiny configs that learn the toy env in seconds (see test_learners.py).
TINY = {
    "ppo": PPOConfig(
        total_env_steps=40_000,
        num_envs=16,
        unroll_length=16,
        num_minibatches=2,
        hidden_sizes=(16, 16),
        updates_per_chunk=25,
    ),
    "sac": SACConfig(
        total_env_steps=12_000,
        num_envs=8,
        hidden_sizes=(32, 32),
        learning_starts=1_000,
        iterations_per_chunk=250,
        grad_steps_per_iteration=1,
        batch_size=64,
    ),
    "d4pg": D4PGConfig(
        total_env_steps=20_000,
        num_envs=8,
        actor_hidden_sizes=(32, 32),
        critic_hidden_sizes=(32, 32),
        learning_starts=1_000,
        iterations_per_chunk=250,
        grad_steps_per_iteration=1,
        batch_size=64,
        learning_rate=3e-4,
    ),
}

# `jaxcontrol train` flags for 2 chunks of 4 PPO updates of 16 envs x 16 steps on
# the real cartpole (the CLI and multi-host tests).
TINY_PPO_CLI = [
    "--agent",
    "ppo",
    "--env",
    "cartpole-balance",
    "--steps",
    "2048",
    "--set",
    "num_envs=16",
    "--set",
    "unroll_length=16",
    "--set",
    "num_minibatches=2",
    "--set",
    "updates_per_chunk=4",
    "--set",
    "hidden_sizes=8,8",
    "--no-progress",
]

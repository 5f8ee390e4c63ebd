"""``jaxcontrol train`` (`jaxcontrol.cli.train`) on the toy env, for the fault tests.

``python toy_cli.py ARGS...`` runs the real command line (flags, run directory,
checkpoints, signals, evaluation) with ``--env toy-line`` standing for the toy
env, which compiles in about a second; ``use_toy_env`` does the same in-process.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from toy_env import ToyEnv

import jaxcontrol
from jaxcontrol import registry
from jaxcontrol.cli import train

# 6 chunks of 2 PPO updates of 16 envs x 16 steps (512 env steps); a checkpoint every 2
# chunks; an evaluation of 3 episodes after chunks 2, 4 and 6 (1024, 2048, 3072 steps).
TOY_ARGS = [
    "--env",
    "toy-line",
    "--agent",
    "ppo",
    "--steps",
    "3072",
    "--seed",
    "5",
    "--set",
    "num_envs=16",
    "--set",
    "unroll_length=16",
    "--set",
    "num_minibatches=2",
    "--set",
    "updates_per_chunk=2",
    "--set",
    "hidden_sizes=8,8",
    "--checkpoint-every",
    "4",
    "--eval-episodes",
    "2",
    "--eval-every",
    "1000",
    "--eval-every-episodes",
    "3",
    "--no-progress",
]


def use_toy_env(monkeypatch) -> None:
    """Makes ``--env toy-line`` load the toy env (a pytest MonkeyPatch)."""
    real = registry.parse_task_id
    monkeypatch.setattr(
        registry, "parse_task_id", lambda n: ("toy", "line") if n == "toy-line" else real(n)
    )
    monkeypatch.setattr(
        jaxcontrol, "load", lambda domain, task, backend="mjx": ToyEnv(episode_length=50)
    )


class _Patch:
    """The one MonkeyPatch method ``use_toy_env`` needs, without importing pytest."""

    setattr = staticmethod(setattr)


if __name__ == "__main__":
    use_toy_env(_Patch())
    sys.exit(train.main(sys.argv[1:]))

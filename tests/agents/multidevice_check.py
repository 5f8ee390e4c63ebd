"""Run in a subprocess with XLA_FLAGS=--xla_force_host_platform_device_count=4.

For each agent, trains the tiny toy config with envs sharded over 4 devices,
and its first chunk on 1 device, and prints one JSON line per agent: the per-chunk metrics of
both runs, the 4-device run's evaluation and the shardings seen.
"""

import json
import os
import sys

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from agent_configs import TINY
from toy_env import ToyEnv

from jaxcontrol.agents.common import sharding
from jaxcontrol.agents.common.evaluation import evaluate
from jaxcontrol.agents.registry import get_agent


def run(name, mesh, chunks=None):
    env = ToyEnv(episode_length=50)
    learner = get_agent(name).make_learner(TINY[name], env, mesh=mesh)
    state = jax.jit(learner.init)(jax.random.PRNGKey(0))
    run_chunk = jax.jit(learner.run_chunk)
    history = []
    for _ in range(chunks or learner.num_chunks):
        state, metrics = run_chunk(state)
        history.append({k: float(v) for k, v in jax.device_get(metrics).items()})
    returns = jax.jit(lambda p, k: evaluate(env, learner.policy, p, k, 20))(
        learner.policy_params(state), jax.random.PRNGKey(7)
    )
    obs_leaf = jax.tree.leaves(state.env_state.observation)[0]
    return history, float(np.mean(returns)), len(obs_leaf.sharding.device_set)


def main():
    assert jax.device_count() == 4, jax.devices()
    for name in sys.argv[1:]:
        one, eval_one, devices_one = run(name, None, chunks=1)
        four, eval_four, devices_four = run(name, sharding.make_mesh(4))
        print(
            json.dumps(
                {
                    "agent": name,
                    "one": one,
                    "four": four,
                    "eval_one": eval_one,
                    "eval_four": eval_four,
                    "devices_one": devices_one,
                    "devices_four": devices_four,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()

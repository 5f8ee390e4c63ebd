"""Several seeds of one task in one jitted program (`jax.vmap`), against one after another.

For one agent on one task, times K seeds' chunks two ways, after one warm-up chunk each:

* one after another: one seed's compiled ``run_chunk``, called K times per round;
* together: ``jax.vmap(run_chunk)`` over K stacked train states, called once per round.

Prints one JSON object: the env steps per second of each way (over all K seeds) and
their ratio. ``jaxcontrol sweep`` runs seeds one after another; this measures whether
vmapping them would be faster on the machine at hand.

    python benchmarks/seed_vmap.py --agent sac --env cartpole-swingup --seeds 3 --chunks 2
    python benchmarks/seed_vmap.py --agent sac --env walker-walk --backend mujoco --seeds 3
"""

from __future__ import annotations

import argparse
import json
import time

import jax

import jaxcontrol
from jaxcontrol.agents.common.run_dir import build_config
from jaxcontrol.agents.registry import get_agent


def _timed(step, state, rounds: int) -> tuple[float, object]:
    state = jax.block_until_ready(step(state))  # warm-up round (compiles)
    start = time.perf_counter()
    for _ in range(rounds):
        state = jax.block_until_ready(step(state))
    return time.perf_counter() - start, state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agent", default="sac")
    parser.add_argument("--env", default="cartpole-swingup")
    parser.add_argument("--backend", default=None, help="mjx or mujoco (default: the CPU's)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=2, help="timed chunks per seed")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()

    from jaxcontrol import cpu_physics

    backend = args.backend or cpu_physics.default_backend()
    domain, task = jaxcontrol.registry.parse_task_id(args.env)
    env = jaxcontrol.load(domain, task, backend=backend)
    config = build_config(args.agent, 10**9, args.set)
    learner = get_agent(args.agent).make_learner(config, env)
    keys = jax.random.split(jax.random.key(0), args.seeds)

    run_one = jax.jit(lambda s: learner.run_chunk(s)[0], donate_argnums=0)
    states = [jax.jit(learner.init)(k) for k in keys]

    def one_after_another(states):
        return [run_one(s) for s in states]

    run_all = jax.jit(jax.vmap(lambda s: learner.run_chunk(s)[0]), donate_argnums=0)
    stacked = jax.jit(jax.vmap(learner.init))(keys)

    sequential_s, _ = _timed(one_after_another, states, args.chunks)
    together_s, _ = _timed(run_all, stacked, args.chunks)
    steps = args.seeds * args.chunks * learner.env_steps_per_chunk
    print(
        json.dumps(
            {
                "agent": args.agent,
                "env": args.env,
                "backend": backend,
                "seeds": args.seeds,
                "env_steps_per_chunk": learner.env_steps_per_chunk,
                "one_after_another_steps_per_s": steps / sequential_s,
                "vmapped_steps_per_s": steps / together_s,
                "vmapped_over_one_after_another": sequential_s / together_s,
                "devices": [str(d) for d in jax.devices()],
            }
        )
    )


if __name__ == "__main__":
    main()

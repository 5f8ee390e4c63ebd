"""How close an off-policy learner's gradient steps come to what the machine's matmuls allow.

For one agent on one task (C MuJoCo physics, so that XLA's cost analysis of a training
chunk counts the learner's arithmetic and not the physics'):

* the FLOPs of one gradient step: XLA's cost analysis of the compiled ``run_chunk`` of
  the same learner cut to one iteration of one gradient step (cost analysis counts a
  loop's body once, not once per trip, so a whole chunk cannot be costed);
* the chunk's measured time, the environment's share of it (the same batched steps
  timed alone, as ``train_speed.py`` does), and the rest: acting and learning;
* the float32 matmul rates of the machine: at the learner's own shape (a batch of
  ``batch_size`` rows through a ``hidden`` x ``hidden`` layer) and at 2048 x 2048;
* gradient steps per second measured, and what the learner's FLOPs at those rates allow.

Prints one JSON object.

    python benchmarks/update_flops.py --agent sac --env cheetah-run
    python benchmarks/update_flops.py --agent d4pg --env walker-walk --chunks 3
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from train_speed import env_only_seconds  # noqa: E402

import jaxcontrol  # noqa: E402
from jaxcontrol.agents.common.run_dir import build_config  # noqa: E402
from jaxcontrol.agents.registry import get_agent  # noqa: E402


def matmul_flops_per_second(rows: int, inner: int, cols: int, seconds: float = 2.0) -> float:
    """Float32 FLOP/s of an (rows x inner) @ (inner x cols) product, repeated for ``seconds``."""
    a = jnp.ones((rows, inner), jnp.float32)
    b = jnp.ones((inner, cols), jnp.float32)
    repeat = 64
    product = jax.jit(lambda a, b: jax.lax.fori_loop(0, repeat, lambda _, x: (x @ b) * 1e-3 + a, a))
    jax.block_until_ready(product(a, b))
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        jax.block_until_ready(product(a, b))
        calls += 1
    return 2.0 * rows * inner * cols * repeat * calls / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agent", default="sac")
    parser.add_argument("--env", default="cheetah-run")
    parser.add_argument("--chunks", type=int, default=2, help="timed chunks")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()

    env = jaxcontrol.load(args.env, backend="mujoco")
    config = build_config(args.agent, 10**9, args.set)
    learner = get_agent(args.agent).make_learner(config, env)
    one = [*args.set, "iterations_per_chunk=1", "grad_steps_per_iteration=1"]
    single = get_agent(args.agent).make_learner(build_config(args.agent, 10**9, one), env)
    abstract = jax.eval_shape(single.init, jax.random.key(0))
    analysis = jax.jit(single.run_chunk).lower(abstract).compile().cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    step_flops = float(analysis.get("flops", 0.0))  # one act step and one gradient step

    state = jax.block_until_ready(jax.jit(learner.init)(jax.random.key(0)))
    compiled = jax.jit(learner.run_chunk, donate_argnums=0).lower(state).compile()
    state, metrics = compiled(state)  # warm-up
    jax.block_until_ready(metrics)
    start = time.perf_counter()
    for _ in range(args.chunks):
        state, metrics = compiled(state)
    jax.block_until_ready(metrics)
    chunk_seconds = (time.perf_counter() - start) / args.chunks
    iterations = learner.env_steps_per_chunk // config.num_envs
    env_seconds = env_only_seconds(env, config.num_envs, iterations)
    learn_seconds = max(chunk_seconds - env_seconds, 1e-9)
    hidden = max(config.hidden_sizes)
    at_shape = matmul_flops_per_second(config.batch_size, hidden, hidden)
    large = matmul_flops_per_second(2048, 2048, 2048)
    updates = learner.updates_per_chunk
    print(
        json.dumps(
            {
                "agent": args.agent,
                "env": args.env,
                "batch_size": config.batch_size,
                "hidden_sizes": list(config.hidden_sizes),
                "gradient_steps_per_chunk": updates,
                "flops_per_gradient_step": step_flops,
                "chunk_seconds": chunk_seconds,
                "env_seconds": env_seconds,
                "gradient_steps_per_second": updates / chunk_seconds,
                "learner_flops_per_second": step_flops * updates / learn_seconds,
                "matmul_flops_per_second_at_learner_shape": at_shape,
                "matmul_flops_per_second_2048": large,
                "gradient_steps_per_second_at_learner_shape_rate": (
                    at_shape / step_flops if step_flops else None
                ),
                "devices": [str(d) for d in jax.devices()],
                "cpus": len(os.sched_getaffinity(0)),
            }
        )
    )


if __name__ == "__main__":
    main()

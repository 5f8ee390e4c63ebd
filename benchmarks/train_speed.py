"""Training throughput of the learners, and wall-clock time to a published score.

Measures, for one agent on one task:

* env steps/s during training (compiled chunks, after one warm-up chunk);
* the fraction of a chunk's time spent stepping the environments: the same
  number of batched AutoReset steps (uniform random actions) timed alone,
  divided by the chunk's time; the rest is policy inference and learning;
* with ``--time-to-score``: wall-clock seconds until the deterministic policy's
  mean return over ``--eval-episodes`` reaches the D4PG ``after_1e8_steps``
  score of ``jaxcontrol.baselines`` (the suite report) for the task (845.5 on
  cartpole-swingup), evaluating every ``--eval-every`` chunks. Compile time is
  included; evaluation time is reported apart and excluded.

    python benchmarks/train_speed.py --agent ppo --env cartpole-balance
    XLA_FLAGS=--xla_force_host_platform_device_count=2 \\
        python benchmarks/train_speed.py --agent ppo --env cartpole-balance --devices 2
    python benchmarks/train_speed.py --agent ppo --env cartpole-swingup --time-to-score \\
        --max-minutes 30 --set num_envs=256
    python benchmarks/train_speed.py --agent ppo --env cheetah-run --backend mujoco

Prints one JSON object per measurement (and appends it to ``--out`` if given).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import jax
import numpy as np

import jaxcontrol
from jaxcontrol import baselines
from jaxcontrol.agents.common import sharding
from jaxcontrol.agents.common.evaluation import evaluate, summarize
from jaxcontrol.agents.common.run_dir import build_config
from jaxcontrol.agents.common.venv import training_env
from jaxcontrol.agents.registry import get_agent


def env_only_seconds(env, num_envs: int, steps: int, mesh=None, repeats: int = 3) -> float:
    """Seconds to take ``steps`` batched AutoReset steps of ``num_envs`` envs (best of repeats).

    The steps go through the learners' own ``TrainingEnv.step`` (so transition recording and
    sharding are counted as env work). Actions are uniform on [-1, 1], drawn inside the scan like
    a stochastic policy's: zero actions would understate the cost of tasks whose solver works
    harder when the system moves (cartpole's rail limits).
    """
    tenv = training_env(env, num_envs, mesh)
    shape = (num_envs, tenv.action_size)

    def env_step(carry, _):
        state, returns, key = carry
        key, key_action = jax.random.split(key)
        action = sharding.constrain(jax.random.uniform(key_action, shape, minval=-1.0), mesh)
        state, returns, *_ = tenv.step(state, returns, action)
        return (state, returns, key), None

    run = jax.jit(lambda c: jax.lax.scan(env_step, c, None, length=steps)[0])
    start = jax.jit(lambda k: (tenv.reset(k), tenv.zero_returns(), k))
    carry = jax.block_until_ready(run(start(jax.random.PRNGKey(0))))
    best = float("inf")
    for _ in range(repeats):
        begin = time.perf_counter()
        carry = jax.block_until_ready(run(carry))
        best = min(best, time.perf_counter() - begin)
    return best


def measure_speed(agent: str, env, config, chunks: int, mesh=None) -> dict:
    """Steps/s of training chunks and the env's share of their time."""
    learner = get_agent(agent).make_learner(config, env, mesh=mesh)
    start = time.perf_counter()
    state = jax.block_until_ready(jax.jit(learner.init)(jax.random.PRNGKey(0)))
    run_chunk = jax.jit(learner.run_chunk, donate_argnums=0).lower(state).compile()
    compile_seconds = time.perf_counter() - start
    state, _ = run_chunk(state)  # warm-up
    jax.block_until_ready(state)
    start = time.perf_counter()
    for _ in range(chunks):
        state, metrics = run_chunk(state)
    jax.block_until_ready(metrics)
    chunk_seconds = (time.perf_counter() - start) / chunks
    steps_per_iteration = config.num_envs
    env_seconds = env_only_seconds(
        env, config.num_envs, learner.env_steps_per_chunk // steps_per_iteration, mesh
    )
    return {
        "measure": "speed",
        "agent": agent,
        "num_envs": config.num_envs,
        "env_steps_per_chunk": learner.env_steps_per_chunk,
        "steps_per_second": learner.env_steps_per_chunk / chunk_seconds,
        "env_only_steps_per_second": learner.env_steps_per_chunk / env_seconds,
        "env_fraction": min(1.0, env_seconds / chunk_seconds),
        "init_and_compile_seconds": compile_seconds,
    }


def time_to_score(
    agent: str, env, config, target: float, eval_every: int, episodes: int, max_minutes: float
) -> dict:
    """Trains until the evaluation mean reaches ``target`` or time runs out.

    The clock runs from before initialisation and compilation; evaluations are timed apart and
    subtracted. Each evaluation uses fresh keys, so reaching the target is judged on episodes the
    previous checks did not see.
    """
    learner = get_agent(agent).make_learner(config, env)
    evaluate_fn = jax.jit(lambda p, k: evaluate(env, learner.policy, p, k, episodes))
    start = time.perf_counter()
    eval_seconds, history = 0.0, []
    state = jax.jit(learner.init)(jax.random.PRNGKey(0))
    run_chunk = jax.jit(learner.run_chunk, donate_argnums=0).lower(state).compile()
    reached = None
    for chunk in range(learner.num_chunks):
        state, _ = run_chunk(state)
        if (chunk + 1) % eval_every and chunk + 1 != learner.num_chunks:
            continue
        jax.block_until_ready(state)
        eval_start = time.perf_counter()
        returns = np.asarray(
            evaluate_fn(learner.policy_params(state), jax.random.PRNGKey(1000 + chunk))
        )
        eval_seconds += time.perf_counter() - eval_start
        steps = learner.env_steps_at_init + (chunk + 1) * learner.env_steps_per_chunk
        train_seconds = time.perf_counter() - start - eval_seconds
        summary = summarize(returns)
        mean, stderr = summary["mean_return"], summary["stderr"]
        history.append((steps, mean, stderr, train_seconds))
        print(
            f"  {steps:>10d} steps  {train_seconds:7.1f} s  eval {mean:7.1f} +- {stderr:.1f}",
            file=sys.stderr,
            flush=True,
        )
        if mean >= target:
            reached = history[-1]
            break
        if train_seconds > 60 * max_minutes:
            break
    return {
        "measure": "time_to_score",
        "agent": agent,
        "target": target,
        "reached": reached is not None,
        "seconds": reached[3] if reached else None,
        "mean_return": reached[1] if reached else None,
        "stderr": reached[2] if reached else None,
        "env_steps": reached[0] if reached else history[-1][0],
        "best_eval": max(h[1] for h in history),
        "eval_seconds": eval_seconds,
        "eval_episodes": episodes,
        "history": [dict(zip(("env_steps", "mean", "stderr", "seconds"), h)) for h in history],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--agent", default="ppo")
    p.add_argument("--env", default="cartpole-balance")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--steps", type=float, default=1e6, help="budget (time-to-score)")
    p.add_argument("--chunks", type=int, default=3, help="timed chunks (speed)")
    p.add_argument(
        "--devices", type=int, default=1, help="shard over this many local devices (speed)"
    )
    p.add_argument("--time-to-score", action="store_true")
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--eval-episodes", type=int, default=20)
    p.add_argument("--max-minutes", type=float, default=30.0)
    p.add_argument("--target", type=float, help="score to reach (default: D4PG after 1e8 steps)")
    p.add_argument("--out", help="append JSON lines here")
    p.add_argument("--backend", default="mjx", help="physics: mjx or mujoco (C MuJoCo)")
    args = p.parse_args(argv)
    domain, task = args.env.split("-")
    env = jaxcontrol.load(domain, task, backend=args.backend)
    config = build_config(args.agent, int(args.steps), args.set)
    info = {
        "env": args.env,
        "backend": args.backend,
        "device": str(jax.devices()[0].platform),
        "device_count": jax.device_count(),
        "devices_used": args.devices,
        "cpu_count": os.cpu_count(),
        "config": dataclasses.asdict(config),
    }
    if args.time_to_score:
        result = time_to_score(
            args.agent,
            env,
            config,
            args.target if args.target is not None else baselines.score(domain, task).mean,
            args.eval_every,
            args.eval_episodes,
            args.max_minutes,
        )
    else:
        mesh = sharding.make_mesh(args.devices) if args.devices > 1 else None
        result = measure_speed(args.agent, env, config, args.chunks, mesh)
    line = json.dumps({**result, **info})
    print(line)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Vectorised rollout demo: `python -m jaxcontrol rollout --env cartpole-swingup`.

Runs `--num-envs` environments for `--steps` control steps (default: one full
episode) under uniform random actions, as ONE jitted program: a batched reset
followed by a `lax.scan` over `jax.vmap(env.step)`. Prints the compile time,
the env steps per second and the random policy's episode return.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxcontrol
from jaxcontrol import cpu_physics


def _parse_env(name: str) -> tuple[str, str]:
    """'point_mass-easy' -> ('point_mass', 'easy'): split at the first '-'."""
    domain, sep, task = name.partition("-")
    if not sep:
        valid = ", ".join(f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS)
        raise ValueError(f"expected --env DOMAIN-TASK, got {name!r}; valid names: {valid}")
    return domain, task


def make_rollout(env: jaxcontrol.Env, num_envs: int, steps: int):
    """Returns a jittable `key -> (returns, states)` running one batched rollout.

    A return sums each environment's rewards up to the end of its first episode
    (steps taken after a LAST state are not counted).
    """
    spec = env.action_spec()
    low = jnp.asarray(np.clip(spec.minimum, -1, 1), spec.dtype)
    high = jnp.asarray(np.clip(spec.maximum, -1, 1), spec.dtype)

    def rollout(key):
        reset_key, action_key = jax.random.split(key)
        states = jax.vmap(env.reset)(jax.random.split(reset_key, num_envs))

        def body(carry, key):
            states, returns = carry
            actions = jax.random.uniform(key, (num_envs,) + low.shape, spec.dtype, low, high)
            stepped = jax.vmap(env.step)(states, actions)
            returns = returns + jnp.where(states.last(), 0, stepped.reward)
            return (stepped, returns), None

        returns = jnp.zeros((num_envs,), spec.dtype)
        (states, returns), _ = jax.lax.scan(
            body, (states, returns), jax.random.split(action_key, steps)
        )
        return returns, states

    return rollout


def main(argv: list[str] | None = None) -> int:
    """Runs the demo; returns the process exit status (2 on a usage error)."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxcontrol rollout", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--env", default="cartpole-swingup", help="DOMAIN-TASK")
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument(
        "--steps", type=int, default=None, help="control steps (default: one episode)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--backend",
        help="physics: mjx or mujoco (C MuJoCo); default: mujoco when JAX runs on the CPU, "
        "else mjx",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help or a malformed option
        return int(exit_.code or 0)
    try:
        backend = args.backend or cpu_physics.default_backend()
        env = jaxcontrol.load(*_parse_env(args.env), backend=backend)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    steps = args.steps if args.steps is not None else (env.episode_length or 1000)
    if args.num_envs < 1 or steps < 1:
        print("error: --num-envs and --steps must be positive", file=sys.stderr)
        return 2

    key = jax.random.key(args.seed)
    start = time.perf_counter()
    compiled = jax.jit(make_rollout(env, args.num_envs, steps)).lower(key).compile()
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    returns, _ = jax.block_until_ready(compiled(key))
    run_s = time.perf_counter() - start
    returns = np.asarray(returns)

    device = jax.devices()[0]
    episode = "" if steps >= (env.episode_length or 0) else f" (first {steps} steps only)"
    print(f"task:        {env.domain}-{env.task_name} ({env.backend} physics)")
    print(f"device:      {jax.default_backend()} ({device.device_kind})")
    print(f"num envs:    {args.num_envs}")
    print(f"steps:       {steps} per env (episode length {env.episode_length})")
    print(f"compile:     {compile_s:.1f} s")
    print(
        f"throughput:  {args.num_envs * steps / run_s:,.0f} env steps/s "
        f"({run_s:.2f} s, reset included)"
    )
    print(
        f"return:      mean {returns.mean():.2f}, std {returns.std():.2f} "
        f"(uniform random policy{episode})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

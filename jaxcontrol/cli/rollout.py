"""``jaxcontrol rollout``: a vectorised random-policy rollout, timed.

    jaxcontrol rollout --env cartpole-swingup --num-envs 1024

Runs ``--num-envs`` environments for ``--steps`` control steps (default: one full
episode) under uniform random actions, as ONE jitted program: a batched reset
followed by a `lax.scan` over `jax.vmap(env.step)`. Prints the compile time,
the env steps per second and the random policy's episode return.
"""

from __future__ import annotations

import time

from jaxcontrol.cli import args as args_lib
from jaxcontrol.cli.args import INT_MAX, SEED_MAX, UsageError, fail, integer

SUMMARY = "time a vectorised random-policy rollout of a task"


def make_rollout(env, num_envs: int, steps: int):
    """Returns a jittable `key -> (returns, states)` running one batched rollout.

    A return sums each environment's rewards up to the end of its first episode
    (steps taken after a LAST state are not counted).
    """
    import jax  # pylint: disable=import-outside-toplevel
    import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
    import numpy as np  # pylint: disable=import-outside-toplevel

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


def parser() -> args_lib.Parser:
    """The command line of ``jaxcontrol rollout``."""
    p = args_lib.Parser(prog="jaxcontrol rollout", description=__doc__.split("\n")[0])
    args_lib.add_env(p, default="cartpole-swingup")
    p.add_argument("--num-envs", type=integer(1, INT_MAX), default=1024)
    p.add_argument(
        "--steps",
        type=integer(1, INT_MAX),
        default=None,
        help="control steps (default: one episode)",
    )
    p.add_argument("--seed", type=integer(0, SEED_MAX), default=0)
    p.add_argument(
        "--backend",
        help="physics: mjx or mujoco (C MuJoCo); default: mujoco when JAX runs on the CPU, "
        "else mjx",
    )
    return p


def main(argv: list[str]) -> int:
    """Runs the rollout; returns the process exit status (2 on a usage error)."""
    try:
        args = parser().parse_args(argv)
        domain, task = args_lib.parse_env(args.env)
        import jaxcontrol  # pylint: disable=import-outside-toplevel
        from jaxcontrol import cpu_physics  # pylint: disable=import-outside-toplevel

        backend = args.backend or cpu_physics.default_backend()
        env = jaxcontrol.load(domain, task, backend=backend)
    except (UsageError, ValueError) as e:
        return fail(str(e))
    import jax  # pylint: disable=import-outside-toplevel
    import numpy as np  # pylint: disable=import-outside-toplevel

    steps = args.steps if args.steps is not None else (env.episode_length or 1000)
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

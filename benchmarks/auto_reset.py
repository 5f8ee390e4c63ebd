"""What auto-reset costs per step, with and without an outer vmap over seeds.

Training several seeds at once is `jax.jit(jax.vmap(train))(keys)`: the seeds'
vmap sits outside the learner's own vmap over environments. Under it, a
`lax.cond` whose predicate depends on the batch becomes a `select`, and both
branches (the reset included) run on every step. This script times, in one
process, a scan of random-action steps with no episode ending (the usual
step: 999 of 1000 suite steps end nothing), for each way to auto-reset:

* **none**: `vmap(env.step)` alone, the floor;
* **batch cond**: the old batch-level `AutoReset`: `vmap(env.step)`, then one
  `lax.cond(any(done))` around `vmap(env.reset)`;
* **per-env cond**: a per-environment `lax.cond(done, reset, ...)`, vmapped;
* **AutoReset**: `jaxcontrol.wrappers.AutoReset`, whose `custom_vmap` rule
  merges every vmap level into one batch and keeps one real cond;
* **step_batch**: `AutoReset.step_batch` on the explicit batch, which resets only
  the environments that finished when few did.

With `--stagger`, environment i of N starts at step floor(i * L / N) of its episode,
as PPO's staggered episodes do, so that episodes end one or a few at a time
during the scan instead of never.

and two layouts of the same number of environments: one seed of S*N
environments, and S seeds of N environments under an outer `jax.vmap`.
Timings alternate between the variants; the best of `--repeats` is kept.

Example:
  python benchmarks/auto_reset.py --tasks cartpole-balance reacher-easy --seeds 4 --envs 256
"""

from __future__ import annotations

import argparse
import datetime
import functools
import platform
import time

import jax
import jax.numpy as jnp

import jaxcontrol
from jaxcontrol.wrappers import AutoReset


def _batch_cond_step(env):
    """An AutoReset as a batch-level cond over any(done), without `any_in_batch`."""

    def step(states, actions):
        stepped = jax.vmap(env.step)(states, actions)
        done = stepped.last()

        def restart(stepped):
            fresh = jax.vmap(env.reset)(stepped.key)

            def pick(new, old):
                return jnp.where(done.reshape(done.shape + (1,) * (old.ndim - 1)), new, old)

            kept = {"reward": stepped.reward, "discount": stepped.discount}
            return jax.tree.map(pick, fresh, stepped).replace(step_type=stepped.step_type, **kept)

        return jax.lax.cond(jnp.any(done), restart, lambda s: s, stepped)

    return step


def _per_env_cond_step(env):
    def one(state, action):
        stepped = env.step(state, action)

        def restart(stepped):
            fresh = env.reset(stepped.key)
            return fresh.replace(
                reward=stepped.reward, discount=stepped.discount, step_type=stepped.step_type
            )

        return jax.lax.cond(stepped.last(), restart, lambda s: s, stepped)

    return jax.vmap(one)


def variants(env):
    """name -> (reset of [N] envs from [N] keys, step of [N] envs)."""
    auto = AutoReset(env)
    plain = jax.vmap(env.reset)
    return {
        "none": (plain, jax.vmap(env.step)),
        "batch cond": (plain, _batch_cond_step(env)),
        "per-env cond": (plain, _per_env_cond_step(env)),
        "AutoReset": (jax.vmap(auto.reset), jax.vmap(auto.step)),
        "step_batch": (jax.vmap(auto.reset), auto.step_batch),
    }


def make_run(env, reset, step, steps: int, seeds: int, envs: int, stagger: bool = False):
    """A jitted function of a key that resets and scans `steps` random steps.

    seeds == 1: one batch of `envs` environments; else `seeds` x `envs` under
    an outer vmap (the way `jax.vmap(train)` batches a learner). With `stagger`,
    the environments start at evenly spread steps of their episodes.
    """
    shape = env.action_spec().shape
    offsets = (jnp.arange(envs) * (env.episode_length or 0)) // envs

    def one_seed(key):
        key_reset, key_act = jax.random.split(key)
        states = reset(jax.random.split(key_reset, envs))
        if stagger:
            states = states.replace(step=offsets.astype(states.step.dtype))

        def body(carry, key):
            actions = jax.random.uniform(key, (envs,) + shape, minval=-1.0)
            return step(carry, actions), None

        states, _ = jax.lax.scan(body, states, jax.random.split(key_act, steps))
        return states.reward.sum()

    if seeds == 1:
        return jax.jit(one_seed)
    return jax.jit(lambda key: jax.vmap(one_seed)(jax.random.split(key, seeds)))


def time_calls(calls: dict, repeats: int, seconds: float) -> dict[str, tuple[float, float]]:
    """{name: (best wall s, best CPU s) per call} of zero-argument jitted calls.

    The calls alternate, so load changes on a shared machine hit them alike.
    CPU time (`time.process_time`, every thread of this process) counts the
    work done whatever else runs on the machine; on a box shared with other
    jobs it is the steadier figure of the two.
    """
    for fn in calls.values():
        jax.block_until_ready(fn())  # compile
    warm = {}
    for name, fn in calls.items():
        start = time.perf_counter()
        jax.block_until_ready(fn())
        warm[name] = time.perf_counter() - start
    count = max(1, int(seconds / max(warm.values())))
    best = {name: (float("inf"), float("inf")) for name in calls}
    for _ in range(repeats):
        for name, fn in calls.items():
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(count):
                jax.block_until_ready(fn())
            wall, cpu = (time.perf_counter() - wall) / count, (time.process_time() - cpu) / count
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["cartpole-balance", "reacher-easy"])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--envs", type=int, default=256, help="environments per seed")
    parser.add_argument("--steps", type=int, default=50, help="steps per timed call")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="aim of each timing")
    parser.add_argument("--stagger", action="store_true", help="staggered episode starts")
    parser.add_argument("--backend", default="mjx", help="physics: mjx or mujoco")
    args = parser.parse_args(argv)

    print(
        f"# {datetime.date.today()}, {platform.node()}, {jax.devices()[0].device_kind}, "
        f"jax {jax.__version__}; {args.steps} steps per call, best of {args.repeats}"
        f"{', staggered' if args.stagger else ''}, {args.backend}"
    )
    print("| task | layout | variant | µs per step (wall) | × none | µs per step (CPU) | × none |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    total = args.seeds * args.envs
    layouts = {
        f"1 seed × {total} envs": (1, total),
        f"vmap over {args.seeds} seeds × {args.envs} envs": (args.seeds, args.envs),
    }
    for task in args.tasks:
        domain, name = task.split("-", 1)
        env = jaxcontrol.load(domain, name, backend=args.backend)
        for layout, (seeds, envs) in layouts.items():
            key = jax.random.key(0)
            calls = {
                label: functools.partial(
                    make_run(env, reset, step, args.steps, seeds, envs, args.stagger), key
                )
                for label, (reset, step) in variants(env).items()
            }
            best = time_calls(calls, args.repeats, args.seconds)
            wall_none, cpu_none = best["none"]
            for label, (wall, cpu) in best.items():
                print(
                    f"| {task} | {layout} | {label} | {wall / args.steps * 1e6:,.0f} "
                    f"| {wall / wall_none:.2f} | {cpu / args.steps * 1e6:,.0f} "
                    f"| {cpu / cpu_none:.2f} |",
                    flush=True,
                )
        jax.clear_caches()


if __name__ == "__main__":
    main()

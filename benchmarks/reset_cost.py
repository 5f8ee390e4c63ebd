"""What a reset costs against the 1000 control steps of the episode it starts.

For each task, in one process: a batch of `jax.jit(jax.vmap(env.reset))` (fresh keys
each call) and a jitted `lax.scan` of `--steps` control steps of `jax.vmap(env.step)`
with uniform random actions, each the best of `--repeats` after a warm-up call. The
episode's cost is the scan's time scaled to 1000 steps; the target is a reset at
no more than 5 % of it.

With `--mjx-reset-steps` the C backend's resets step their physics on MJX, as before
`Physics.step_in_reset` existed (cheetah's settle): the before of the comparison,
measured beside the after in the same run.

Example:
  JAXCONTROL_MUJOCO_THREADS=2 python benchmarks/reset_cost.py --tasks cheetah-run \
      walker-walk --batch 256 --mjx-reset-steps
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("MUJOCO_GL", "disable")

import jax

import jaxcontrol
from jaxcontrol import reference, registry

try:  # run as a script: benchmarks/ is on sys.path
    from envpool_speed import best
    from throughput import make_rollout
except ImportError:
    from benchmarks.envpool_speed import best
    from benchmarks.throughput import make_rollout

TARGET = 0.05  # a reset's cost over its episode's 1000 control steps
EPISODE_STEPS = 1000


def load(task: str, backend: str, mjx_reset_steps: bool):
    env = jaxcontrol.load(task, backend=backend)
    if mjx_reset_steps:
        env._cache["step_in_reset"] = None  # Env._physics then builds Physics without it
    return env


def measure(env, batch: int, steps: int, repeats: int) -> dict[str, float]:
    """Seconds of one reset of `batch` environments and of 1000 control steps, each the
    best of `repeats` single calls after a compiling one."""
    reset = jax.jit(jax.vmap(env.reset))
    keys = iter(jax.random.split(jax.random.key(0), 10_000))
    reset_s = best(
        lambda: reset(jax.random.split(next(keys), batch)).step.block_until_ready(), 0.0, repeats
    )
    low, high = reference.action_bounds(env.action_spec())
    rollout = make_rollout(env.step, batch, steps, low, high)
    states = reset(jax.random.split(next(keys), batch))
    scan_s = best(lambda: rollout(states, next(keys))[0].step.block_until_ready(), 0.0, repeats)
    episode_s = scan_s * EPISODE_STEPS / steps
    return {"reset_s": reset_s, "episode_s": episode_s, "ratio": reset_s / episode_s}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["cheetah-run"], help="ids, or 'all'")
    parser.add_argument("--backend", default="mujoco", choices=["mujoco", "mjx"])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=100, help="control steps timed per scan")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--mjx-reset-steps", action="store_true", help="also time resets that step on MJX"
    )
    args = parser.parse_args()
    every = [f"{d}-{t}" for d, t in registry.REGISTRY.tasks()]
    tasks = every if args.tasks == ["all"] else args.tasks
    threads = os.environ.get("JAXCONTROL_MUJOCO_THREADS", str(os.cpu_count()))
    print(
        f"jax {jax.__version__}, {os.cpu_count()} CPUs, backend {args.backend}, "
        f"{threads} C threads, batch {args.batch}, best of {args.repeats}"
    )
    variants = [False, True] if args.mjx_reset_steps else [False]
    print("| task | reset steps on | reset (s) | 1000 steps (s) | reset / 1000 steps | ≤ 5 % |")
    print("|---|---|---:|---:|---:|---|")
    for task in tasks:
        for mjx_steps in variants:
            if mjx_steps and args.backend != "mujoco":
                continue
            env = load(task, args.backend, mjx_steps)
            r = measure(env, args.batch, args.steps, args.repeats)
            where = "MJX" if mjx_steps or args.backend == "mjx" else "C"
            met = "yes" if r["ratio"] <= TARGET else "no"
            print(
                f"| {task} | {where} | {r['reset_s']:.3f} | {r['episode_s']:.2f} | "
                f"{100 * r['ratio']:.1f} % | {met} |",
                flush=True,
            )


if __name__ == "__main__":
    main()

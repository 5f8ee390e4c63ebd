"""What per-environment model fields cost: a step with each environment's own fields
against the same step with the compiled model's values.

Tasks such as reacher and finger write model fields at every reset (a target's
position and size). `State.model_fields` carries them per environment and the
step applies them to `env.mjx_model`, so under `vmap` the model's leaves that
they replace become batched. This times, in one process with the calls
alternating (`throughput.time_interleaved`):

* **fields**: `jax.vmap(env.step)` on states from our resets, every
  environment with its own fields (what users run);
* **shared**: the same states with `model_fields` emptied, so every
  environment reads the compiled model's values (the model stays unbatched);
* **raw**: stock `mjx.step` on the model with the first environment's fields
  written in (`throughput.raw_step_fn`, `throughput.episode_model`).

fields/shared is the cost of the mechanism; fields/raw is the issue's ours/raw.

Example:
  python benchmarks/model_fields.py --tasks reacher-easy finger-turn_hard --batch-sizes 256 1024
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("MUJOCO_GL", "disable")

import jax
import numpy as np

import jaxcontrol

sys.path.insert(0, os.path.dirname(__file__))
import throughput  # the shared timing and rollout helpers


def bench(env: jaxcontrol.Env, batch: int, args: argparse.Namespace) -> dict:
    """Steps/s with per-environment fields, with shared fields, and of raw MJX."""
    spec = env.action_spec()
    low, high = np.clip(spec.minimum, -1, 1), np.clip(spec.maximum, -1, 1)
    key = jax.random.key(0)
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(key, batch))
    shared = states.replace(model_fields={})
    steps = throughput.scan_length(batch, args)
    ours = throughput.make_rollout(env.step, batch, steps, low, high)
    model = throughput.episode_model(env, states)
    raw = throughput.make_rollout(throughput.raw_step_fn(env, model), batch, steps, low, high)
    times = throughput.time_interleaved(
        {
            "fields": lambda: ours(states, key),
            "shared": lambda: ours(shared, key),
            "raw": lambda: raw(states.data, key),
        },
        args.repeats,
        args.seconds,
    )
    rate = {name: batch * steps / best for name, (_, best) in times.items()}
    return {
        "fields": sorted(states.model_fields),
        **{f"{name}_steps_per_s": r for name, r in rate.items()},
        "fields_over_shared": rate["fields"] / rate["shared"],
        "fields_over_raw": rate["fields"] / rate["raw"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["reacher-easy", "finger-turn_hard"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[256, 1024])
    parser.add_argument("--steps", type=int, default=200, help="most steps per compiled call")
    parser.add_argument("--env-steps", type=int, default=4096, help="env steps per call")
    parser.add_argument("--seconds", type=float, default=1.0, help="aim of each timing")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    info = throughput.machine_info()
    print("\n".join(f"{k:>8}: {v}" for k, v in info.items()), flush=True)
    print("| task | batch | fields | with fields | shared | raw | fields/shared | fields/raw |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for name in throughput.expand_tasks(args.tasks):
        env = jaxcontrol.load(*throughput.split_name(name))
        if not env.task.episode_model_fields:
            print(f"{name}: no per-episode model fields; nothing to measure", file=sys.stderr)
            continue
        for batch in args.batch_sizes:
            r = bench(env, batch, args)
            print(
                f"| {name} | {batch} | {', '.join(r['fields'])} | {r['fields_steps_per_s']:,.0f} "
                f"| {r['shared_steps_per_s']:,.0f} | {r['raw_steps_per_s']:,.0f} "
                f"| {r['fields_over_shared']:.3f} | {r['fields_over_raw']:.3f} |",
                flush=True,
            )
        jax.clear_caches()
    return 0


if __name__ == "__main__":
    sys.exit(main())

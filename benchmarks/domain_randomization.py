"""What domain randomisation costs at batch 1024: a step, and a reset.

`DomainRandomization(env, fn)` gives every environment its own model fields
(plus the constants `mj_setConst` derives from them), carried in
`State.model_fields` and applied by each step, so the MJX model's randomised
leaves become batched under vmap. This times, in one process with the calls
alternating (`auto_reset.time_calls`: best wall and best CPU time), for each
randomisation:

* **step**: `jax.vmap(wrapped.step)` scanned over random actions, against the
  bare env's step from the same physics states;
* **reset**: `jax.vmap(wrapped.reset)` (the draw, the derived constants, the
  task's reset on the randomised model) against the bare env's reset.

Randomisations (each scaled per environment, uniform in [0.5, 1.5]):
  mass: body_mass and body_inertia (derived constants recomputed);
  friction: geom_friction (nothing derived);
  all: mass, inertia, friction, dof_damping, actuator_gear.

Example:
  python benchmarks/domain_randomization.py --tasks cartpole-swingup cheetah-run --batch 1024
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("MUJOCO_GL", "disable")

import jax
import numpy as np

import jaxcontrol
from jaxcontrol.wrappers import DomainRandomization

sys.path.insert(0, os.path.dirname(__file__))
import auto_reset  # time_calls: wall and CPU time, interleaved
import throughput  # the shared rollout helpers

_FIELDS = {
    "mass": ("body_mass", "body_inertia"),
    "friction": ("geom_friction",),
    "all": ("body_mass", "body_inertia", "geom_friction", "dof_damping", "actuator_gear"),
}


def randomizer(names):
    """fn(key, fields): each named field scaled per environment, row by row."""

    def fn(key, fields):
        out = {}
        for key_i, name in zip(jax.random.split(key, len(names)), names, strict=True):
            value = fields[name]
            scale = jax.random.uniform(key_i, value.shape[:1], minval=0.5, maxval=1.5)
            out[name] = value * scale.reshape(scale.shape + (1,) * (value.ndim - 1))
        return out

    return fn


def bench(env, kind: str, batch: int, args) -> dict:
    wrapped = DomainRandomization(env, randomizer(_FIELDS[kind]))
    spec = env.action_spec()
    low, high = np.clip(spec.minimum, -1, 1), np.clip(spec.maximum, -1, 1)
    key = jax.random.key(0)
    keys = jax.random.split(key, batch)
    randomised = jax.jit(jax.vmap(wrapped.reset))(keys)
    # The bare env from the same physics: its states with the compiled model's fields.
    bare = randomised.replace(model_fields=jax.jit(jax.vmap(env.reset))(keys).model_fields)
    steps = throughput.scan_length(batch, args)
    ours = throughput.make_rollout(wrapped.step, batch, steps, low, high)
    plain = throughput.make_rollout(env.step, batch, steps, low, high)
    reset_ours = jax.jit(jax.vmap(wrapped.reset))
    reset_plain = jax.jit(jax.vmap(env.reset))
    best = auto_reset.time_calls(
        {
            "step_dr": lambda: ours(randomised, key),
            "step_bare": lambda: plain(bare, key),
            "reset_dr": lambda: reset_ours(keys),
            "reset_bare": lambda: reset_plain(keys),
        },
        args.repeats,
        args.seconds,
    )
    wall = {name: w for name, (w, _) in best.items()}
    cpu = {name: c for name, (_, c) in best.items()}
    return {
        "fields": len(randomised.model_fields),
        "step_dr": batch * steps / wall["step_dr"],
        "step_bare": batch * steps / wall["step_bare"],
        "step_cpu_ratio": cpu["step_dr"] / cpu["step_bare"],
        "reset_dr_ms": wall["reset_dr"] * 1e3,
        "reset_bare_ms": wall["reset_bare"] * 1e3,
        "reset_cpu_ratio": cpu["reset_dr"] / cpu["reset_bare"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["cartpole-swingup", "cheetah-run"])
    parser.add_argument("--kinds", nargs="+", default=list(_FIELDS), choices=list(_FIELDS))
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=50, help="most steps per compiled call")
    parser.add_argument("--env-steps", type=int, default=20480, help="env steps per call")
    parser.add_argument("--seconds", type=float, default=1.0, help="aim of each timing")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    info = throughput.machine_info()
    print("\n".join(f"{k:>8}: {v}" for k, v in info.items()), flush=True)
    print(
        "| task | randomised | per-env fields | step/s DR | step/s bare | DR/bare (wall) "
        "| DR/bare (CPU) | reset ms DR | reset ms bare | reset DR/bare (CPU) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in throughput.expand_tasks(args.tasks):
        env = jaxcontrol.load(*throughput.split_name(name))
        for kind in args.kinds:
            r = bench(env, kind, args.batch, args)
            print(
                f"| {name} | {kind} | {r['fields']} | {r['step_dr']:,.0f} | {r['step_bare']:,.0f} "
                f"| {r['step_bare'] / r['step_dr']:.3f} | {r['step_cpu_ratio']:.3f} "
                f"| {r['reset_dr_ms']:.1f} | {r['reset_bare_ms']:.1f} | {r['reset_cpu_ratio']:.2f} |",
                flush=True,
            )
        jax.clear_caches()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a C backend `State` carries: the whole `mjx.Data`, or no constraint rows.

On the C backend, MuJoCo keeps its own constraint and contact rows; MJX's
(`efc_*`, `contact`) are never read, yet a `State` carried them through every
step, reset and `jnp.where`. `cpu_physics.without_constraint_rows` cuts them from
the states that an Env returns. For each task and batch size, in one process and
on `JAXCONTROL_MUJOCO_THREADS` threads (default here: 1), this script:

* resets both ways from the same keys and steps both under the same uniform
  random actions, `--steps` control steps in one jitted `lax.scan`, and checks
  that observations, rewards and the physics state (qpos, qvel, act, the warm
  start) are equal, bit for bit;
* reports the state's bytes per environment both ways;
* times both, alternating: environment steps per second, the best of `--repeats`.

Example:
  python benchmarks/carried_state.py --tasks dog-stand humanoid_CMU-walk cheetah-run
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("MUJOCO_GL", "disable")
os.environ.setdefault("JAXCONTROL_MUJOCO_THREADS", "1")

import jax
import numpy as np

import jaxcontrol
from jaxcontrol import reference

try:  # run as a script: benchmarks/ is on sys.path
    from throughput import expand_tasks, machine_info, make_rollout, split_name, time_interleaved
except ImportError:
    from benchmarks.throughput import (
        expand_tasks,
        machine_info,
        make_rollout,
        split_name,
        time_interleaved,
    )

WAYS = ("whole", "carried")


def load(name: str, way: str) -> jaxcontrol.Env:
    env = jaxcontrol.load(*split_name(name), backend="mujoco")
    if way == "whole":  # the State before the cut: all of mjx.Data
        object.__setattr__(env, "_carried", lambda data: data)
    return env


def compared(state) -> dict:
    data = state.data
    physics = {k: getattr(data, k) for k in ("qpos", "qvel", "act", "qacc_warmstart")}
    return {"observation": dict(state.observation), "reward": state.reward, **physics}


def measure(name: str, batch: int, args: argparse.Namespace) -> dict:
    envs = {way: load(name, way) for way in WAYS}
    low, high = reference.action_bounds(envs["carried"].action_spec())
    keys = jax.random.split(jax.random.key(args.seed), batch)
    states = {way: jax.jit(jax.vmap(env.reset))(keys) for way, env in envs.items()}
    rollouts = {
        way: make_rollout(env.step, batch, args.steps, low, high) for way, env in envs.items()
    }
    key = jax.random.key(args.seed + 1)
    ends = {way: rollouts[way](states[way], key)[0] for way in WAYS}
    equal = all(
        np.array_equal(a, b, equal_nan=True)
        for a, b in zip(
            jax.tree.leaves(compared(ends["whole"])), jax.tree.leaves(compared(ends["carried"]))
        )
    )
    size = {way: sum(x.nbytes for x in jax.tree.leaves(states[way])) / batch for way in WAYS}
    times = time_interleaved(
        {way: (lambda w=way: rollouts[w](states[w], key)) for way in WAYS},
        args.repeats,
        args.seconds,
    )
    rate = {way: batch * args.steps / times[way][1] for way in WAYS}
    return {"task": name, "batch": batch, "bytes": size, "rate": rate, "equal": equal}


def to_markdown(rows: list[dict]) -> str:
    lines = [
        (
            "| task | batch | state per env, whole | carried | env steps/s, whole | carried "
            "| carried / whole | outputs |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        b, v = r["bytes"], r["rate"]
        lines.append(
            f"| {r['task']} | {r['batch']} | {b['whole'] / 1e6:.2f} MB | {b['carried'] / 1e6:.3f} MB "
            f"| {v['whole']:,.0f} | {v['carried']:,.0f} | {v['carried'] / v['whole']:.2f}x "
            f"| {'equal' if r['equal'] else 'DIFFER'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["dog-stand", "cheetah-run"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[64, 256])
    parser.add_argument("--steps", type=int, default=20, help="control steps per timed call")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    info = machine_info()
    print(f"{info}; JAXCONTROL_MUJOCO_THREADS={os.environ['JAXCONTROL_MUJOCO_THREADS']}")
    rows = []
    for name in expand_tasks(args.tasks):
        for batch in args.batch_sizes:
            rows.append(measure(name, batch, args))
            print(to_markdown(rows[-1:]).splitlines()[-1], flush=True)
    print(to_markdown(rows))
    return 0 if all(r["equal"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

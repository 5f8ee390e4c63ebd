"""Long soak: 1e7 random-action steps per task, counting what goes wrong (issue 14).

Per task, `--envs` environments step under uniform random actions inside one
compiled loop of `--chunk` control steps; an environment whose episode ends
(time limit, terminal state or divergence) starts its next episode in the same
step, from its own reset key. Chunks repeat until `--steps` environment steps.
The counts, per task:

* **non-finite**: environment steps after which the observation, the reward or
  the physics state (qpos, qvel, act) holds a NaN or infinity. `Env.step`
  reverts a diverged physics state to its last finite one, so any count here
  is a bug in our step or task code, not physics;
* **diverged**: steps in which the physics went non-finite (`State.diverged`
  set). Each ended its episode and cost a reset;
* **episodes** ended (each followed by a reset), of which **terminal** ended
  at a terminal state (discount < 1);
* the largest |qvel| seen, a hint of a near-divergence.

Each task's result is written to `--out/TASK.json`; a task whose record
already holds `--steps` steps on the same backend is skipped, so a stopped run
goes on where it was. `--table` prints the Markdown table of the records.

Examples:
  python benchmarks/soak.py --tasks all --backend mujoco --out soak_records
  python benchmarks/soak.py --table --out soak_records
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time

os.environ.setdefault("MUJOCO_GL", "disable")

import jax
import jax.numpy as jnp

import jaxcontrol
from jaxcontrol import cpu_physics, equivalence

try:  # run as a script: benchmarks/ is on sys.path
    from throughput import expand_tasks, machine_info, split_name
except ImportError:  # imported as benchmarks.soak
    from benchmarks.throughput import expand_tasks, machine_info, split_name

COUNTS = ("nonfinite", "diverged", "episodes", "terminal")


def _select(mask: jax.Array, new, old):
    """Per environment (leading axis): `new` where `mask`, else `old`."""

    def pick(a, b):
        return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)

    return jax.tree.map(pick, new, old)


def _finite(state) -> jax.Array:
    """Per environment: observation, reward and physics state are all finite."""
    parts = [state.reward[:, None], state.data.qpos, state.data.qvel, state.data.act]
    parts += [x.reshape(x.shape[0], -1) for x in state.observation.values()]
    return jnp.stack([jnp.all(jnp.isfinite(x), axis=1) for x in parts]).all(axis=0)


def make_chunk(env: jaxcontrol.Env, num_envs: int, steps: int):
    """A jitted `(states, key) -> (states, counts)` of `steps` control steps of
    `num_envs` environments, each restarted in the step that ends its episode."""
    low, high = equivalence.action_bounds(env.action_spec())
    shape = (num_envs,) + env.action_spec().shape

    def body(carry, key):
        states, counts = carry
        action = jax.random.uniform(key, shape, minval=low, maxval=high)
        stepped = jax.vmap(env.step)(states, action)
        ended = stepped.last()
        counts = {
            "nonfinite": counts["nonfinite"] + jnp.sum(~_finite(stepped)),
            "diverged": counts["diverged"] + jnp.sum(stepped.diverged & ~states.diverged),
            "episodes": counts["episodes"] + jnp.sum(ended),
            "terminal": counts["terminal"] + jnp.sum(ended & (stepped.discount < 1)),
            "qvel_max": jnp.maximum(
                counts["qvel_max"],
                jnp.max(jnp.where(jnp.isfinite(stepped.data.qvel), jnp.abs(stepped.data.qvel), 0)),
            ),
        }
        # One batched reset, only in the steps where some episode ended.
        states = jax.lax.cond(
            jnp.any(ended),
            lambda s: _select(ended, jax.vmap(env.reset)(s.key), s),
            lambda s: s,
            stepped,
        )
        return (states, counts), None

    @jax.jit
    def chunk(states, key):
        counts = {count: jnp.int32(0) for count in COUNTS}
        counts["qvel_max"] = jnp.zeros((), states.data.qvel.dtype)
        (states, counts), _ = jax.lax.scan(body, (states, counts), jax.random.split(key, steps))
        return states, counts

    return chunk


def soak_task(name: str, args: argparse.Namespace) -> dict:
    """Soaks one task for `args.steps` environment steps; returns its record."""
    env = jaxcontrol.load(*split_name(name), backend=args.backend)
    chunk = make_chunk(env, args.envs, args.chunk)
    key = jax.random.key(args.seed)
    reset_key, key = jax.random.split(key)
    start = time.perf_counter()
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(reset_key, args.envs))
    totals = dict.fromkeys(COUNTS, 0) | {"qvel_max": 0.0}
    done, compile_s, calls = 0, None, 0
    while done < args.steps:
        key, chunk_key = jax.random.split(key)
        states, counts = chunk(states, chunk_key)
        counts = jax.device_get(counts)
        if compile_s is None:
            compile_s = time.perf_counter() - start
            run_start = time.perf_counter()
        for count in COUNTS:
            totals[count] += int(counts[count])
        totals["qvel_max"] = max(totals["qvel_max"], float(counts["qvel_max"]))
        done += args.envs * args.chunk
        calls += 1
        if args.verbose:
            print(f"  {name}: {done:.3g} steps {totals}", file=sys.stderr, flush=True)
    run_s = time.perf_counter() - run_start
    # The first call (compile included) is not timed; its steps are counted.
    timed_steps = (calls - 1) * args.envs * args.chunk
    return {
        "task": name,
        "backend": args.backend,
        "dtype": "float64" if jax.config.jax_enable_x64 else "float32",
        "envs": args.envs,
        "chunk": args.chunk,
        "seed": args.seed,
        "steps": done,
        **totals,
        "compile_s": round(compile_s, 1),
        "steps_per_s": round(timed_steps / run_s) if timed_steps else None,
        "machine": machine_info(),
    }


def read_records(out: pathlib.Path) -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(out.glob("*.json"))]


def to_markdown(records: list[dict]) -> str:
    lines = [
        (
            "| task | backend | envs | steps | episodes (terminal) | diverged | non-finite "
            "| largest \\|qvel\\| | steps/s | date |"
        ),
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in records:
        rate = f"{r['steps_per_s']:,}" if r["steps_per_s"] else "—"
        lines.append(
            f"| {r['task']} | {r['backend']} | {r['envs']} | {r['steps']:.2g} "
            f"| {r['episodes']:,} ({r['terminal']:,}) | {r['diverged']} | {r['nonfinite']} "
            f"| {r['qvel_max']:.3g} | {rate} | {r['machine']['date']} |"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["all"], help="DOMAIN-TASK ids or 'all'")
    parser.add_argument(
        "--backend",
        choices=("mjx", "mujoco"),
        default=None,
        help="physics (default: C MuJoCo when JAX runs on the CPU, else MJX)",
    )
    parser.add_argument("--steps", type=float, default=1e7, help="environment steps per task")
    parser.add_argument("--envs", type=int, default=1024)
    parser.add_argument("--chunk", type=int, default=100, help="control steps per compiled call")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="soak_records", help="records directory")
    parser.add_argument("--table", action="store_true", help="print the records' table")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    for name in ("envs", "chunk"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps:g}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = pathlib.Path(args.out)
    if args.table:
        print(to_markdown(read_records(out)))
        return 0
    args.backend = args.backend or cpu_physics.default_backend()
    out.mkdir(parents=True, exist_ok=True)
    for name in expand_tasks(args.tasks):
        path = out / f"{name}.json"
        if path.exists():
            old = json.loads(path.read_text())
            if old["backend"] == args.backend and old["steps"] >= args.steps:
                print(f"{name}: done ({old['steps']:.3g} steps), skipped", flush=True)
                continue
        record = soak_task(name, args)
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(
            f"{name}: {record['steps']:.3g} steps, non-finite {record['nonfinite']}, "
            f"diverged {record['diverged']}, episodes {record['episodes']} "
            f"({record['terminal']} terminal), {record['steps_per_s']} steps/s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

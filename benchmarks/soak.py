"""Long soak: 1e7 random-action steps per task, counting what goes wrong.

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

Each task's record, `--out/TASK.json`, is rewritten after every chunk, so a
stopped soak keeps what it counted. A task whose record already holds
`--steps` steps is skipped; a shorter record of the same run settings
(backend, dtype, envs, chunk, seed) is resumed: its counts go on from where
they stopped, from fresh resets (the episodes under way when it stopped are
not counted, and each resumed segment draws its own keys). A larger `--steps`
extends a finished record the same way. `--table` prints the Markdown table.

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
from jaxcontrol import cpu_physics, reference

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
    low, high = reference.action_bounds(env.action_spec())
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


# A record is resumed only by a run with the same settings.
RUN_SETTINGS = ("backend", "dtype", "envs", "chunk", "seed")


def segment_keys(seed: int, segment: int) -> tuple[jax.Array, jax.Array]:
    """(reset key, step key) of a soak's `segment`-th run. Segment 0 has the keys of
    an uninterrupted soak; each resumed segment draws its own."""
    key = jax.random.key(seed)
    if segment:
        key = jax.random.fold_in(key, segment)
    reset_key, key = jax.random.split(key)
    return reset_key, key


def run_settings(args: argparse.Namespace) -> dict:
    dtype = "float64" if jax.config.jax_enable_x64 else "float32"
    return {
        "backend": args.backend,
        "dtype": dtype,
        "envs": args.envs,
        "chunk": args.chunk,
        "seed": args.seed,
    }


def soak_task(name: str, args: argparse.Namespace, earlier: dict | None = None, save=None) -> dict:
    """Soaks one task up to `args.steps` environment steps; returns its record.

    `earlier` is a stopped soak's record of the same settings, which this one
    continues; `save(record)` is called with the record so far after every chunk.
    """
    env = jaxcontrol.load(*split_name(name), backend=args.backend)
    chunk = make_chunk(env, args.envs, args.chunk)
    record = {
        "task": name,
        **run_settings(args),
        "steps": 0,
        **dict.fromkeys(COUNTS, 0),
        "qvel_max": 0.0,
        "compile_s": None,
        "timed_steps": 0,
        "run_s": 0.0,
        "segments": 0,
    }
    if earlier is not None:
        record |= {k: v for k, v in earlier.items() if k in record}
        if "timed_steps" not in earlier:  # written before records were resumable
            record["timed_steps"] = earlier["steps"] - args.envs * args.chunk
            record["run_s"] = record["timed_steps"] / earlier["steps_per_s"]
            record["segments"] = 1
    reset_key, key = segment_keys(args.seed, record["segments"])
    record["segments"] += 1
    record["target"] = int(args.steps)
    record["machine"] = machine_info()
    start = time.perf_counter()
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(reset_key, args.envs))
    first = True
    while record["steps"] < args.steps:
        key, chunk_key = jax.random.split(key)
        t0 = time.perf_counter()
        states, counts = chunk(states, chunk_key)
        counts = jax.device_get(counts)
        # The first call of each segment (compile included) is not timed; its steps count.
        if first:
            record["compile_s"] = record["compile_s"] or round(time.perf_counter() - start, 1)
        else:
            record["timed_steps"] += args.envs * args.chunk
            record["run_s"] += time.perf_counter() - t0
        first = False
        for count in COUNTS:
            record[count] += int(counts[count])
        record["qvel_max"] = max(record["qvel_max"], float(counts["qvel_max"]))
        record["steps"] += args.envs * args.chunk
        timed = record["timed_steps"]
        record["steps_per_s"] = round(timed / record["run_s"]) if timed else None
        if save is not None:
            save(record)
        if args.verbose:
            shown = {k: record[k] for k in (*COUNTS, "qvel_max")}
            print(f"  {name}: {record['steps']:.3g} steps {shown}", file=sys.stderr, flush=True)
    return record


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
        steps = f"{r['steps']:.2g}"
        if r["steps"] < r.get("target", 0):
            steps += f" of {r['target']:.2g} (stopped)"
        lines.append(
            f"| {r['task']} | {r['backend']} | {r['envs']} | {steps} "
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
    settings = run_settings(args)
    for name in expand_tasks(args.tasks):
        path = out / f"{name}.json"
        earlier = json.loads(path.read_text()) if path.exists() else None
        if earlier is not None:
            differ = [k for k in RUN_SETTINGS if earlier.get(k) != settings[k]]
            if differ:
                print(
                    f"{name}: the record's {', '.join(differ)} differ: starting afresh", flush=True
                )
                earlier = None
            elif earlier["steps"] >= args.steps:
                print(f"{name}: done ({earlier['steps']:.3g} steps), skipped", flush=True)
                continue
            else:
                print(f"{name}: resuming at {earlier['steps']:.3g} steps", flush=True)

        def save(record, path=path):
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(record, indent=1) + "\n")
            os.replace(tmp, path)

        record = soak_task(name, args, earlier, save)  # saved after every chunk
        print(
            f"{name}: {record['steps']:.3g} steps, non-finite {record['nonfinite']}, "
            f"diverged {record['diverged']}, episodes {record['episodes']} "
            f"({record['terminal']} terminal), {record['steps_per_s']} steps/s",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

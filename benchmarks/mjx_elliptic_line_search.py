"""How often stock MJX's elliptic line search meets a NaN point, and what it costs.

For each task, `--envs` environments from the soak's own resets step `--steps`
control steps in float32 under uniform random actions (one compiled scan), once
under stock MJX (`JAXCONTROL_STOCK_MJX=1`) and once under jaxcontrol's fix
(`jaxcontrol.mjx_fixes`), each in its own process: the fix patches the solver
module, and traces made under one setting would otherwise be reused under the
other. The two runs see the same keys and the same batch layout, so their
trajectories are bit-identical up to the first physics step in which stock MJX's
line search met a negative `tsqr`. Per task the table gives:

* **differ**: environments whose two trajectories differ at any step, and the
  median control step at which they first do;
* **max |qvel|** under each physics, with C MuJoCo's largest over its 1e7-step
  soak (soak_records/TASK.json, when there) beside them;
* **> C**: environments whose |qvel| passes 2x C's soak maximum at some step.

A task without elliptic cones is the control: the fix leaves its physics alone, so
none of its environments may differ.

Example (one core per run; the two runs of a task go side by side):
  python benchmarks/mjx_elliptic_line_search.py --tasks stacker-stack_2 \
      --envs 32 --steps 300 --json /tmp/elliptic.json

`--speed` measures what the fixes in effect cost instead (`jaxcontrol.mjx_fixes`; with
`JAXCONTROL_MJX_CAPSULE_FRAME=1` that includes the plane–capsule frame's, the only one
that touches humanoid or quadruped): in one process, our env's batched
step (`--envs` environments, `--steps` control steps per compiled call) is compiled
twice, under the fix and under stock MJX (`mjx_fixes.stock()`), from the same
reset states, and the two programs' timed calls alternate (throughput.py's
`time_interleaved`), so their ratio holds on a shared machine:
  taskset -c 1 python benchmarks/mjx_elliptic_line_search.py --speed \
      --tasks finger-spin stacker-stack_2 --envs 64 --steps 4
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import functools
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ELLIPTIC = (
    "finger-spin", "finger-turn_easy", "finger-turn_hard",
    "manipulator-bring_ball", "manipulator-bring_peg",
    "manipulator-insert_ball", "manipulator-insert_peg",
    "stacker-stack_2", "stacker-stack_4",
)  # fmt: skip
ROOT = pathlib.Path(__file__).resolve().parent.parent


def rollout(task: str, envs: int, steps: int, seed: int, out: str) -> None:
    """One physics' rollout: per step and environment, max |qvel| and a checksum
    of the state's bits; saved to `out` (.npz)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxcontrol
    from jaxcontrol import mjx_fixes, reference

    domain, name = task.split("-", 1)
    with reference.precision(False):
        env = jaxcontrol.load(domain, name)
        low, high = reference.action_bounds(env.action_spec())

        def bits(x):
            return jnp.sum(jax.lax.bitcast_convert_type(x, jnp.uint32), axis=-1, dtype=jnp.uint32)

        @jax.jit
        def run(key):
            reset_key, action_key = jax.random.split(key)
            states = jax.vmap(env.reset)(jax.random.split(reset_key, envs))

            def one(states, k):
                a = jax.random.uniform(k, (envs, *low.shape), minval=low, maxval=high)
                states = jax.vmap(env.step)(states, a)
                qpos, qvel = states.data.qpos, states.data.qvel
                return states, (jnp.max(jnp.abs(qvel), axis=-1), bits(qpos) ^ bits(qvel))

            return jax.lax.scan(one, states, jax.random.split(action_key, steps))[1]

        qvel_max, checksum = jax.tree.map(np.asarray, run(jax.random.key(seed)))
    np.savez(out, qvel_max=qvel_max, checksum=checksum, fixes=np.array(mjx_fixes.applied()))


def measure(task: str, envs: int, steps: int, seed: int, keep: str | None = None) -> dict:
    """Both physics' rollouts of `task` (side by side) and their comparison; with
    `keep`, each rollout's arrays stay there as TASK.stock.npz and TASK.fixed.npz."""
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        where = keep or tmp
        os.makedirs(where, exist_ok=True)
        outs = {v: f"{where}/{task}.{v}.npz" for v in ("stock", "fixed")}

        def child(variant: str) -> None:
            env = {**os.environ, "JAXCONTROL_STOCK_MJX": "1" if variant == "stock" else "0"}
            args = [sys.executable, __file__, "--rollout", task, "--envs", str(envs)]
            args += ["--steps", str(steps), "--seed", str(seed), "--out", outs[variant]]
            subprocess.run(args, env=env, check=True, cwd=ROOT)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(child, outs))
        runs = {v: dict(np.load(path)) for v, path in outs.items()}
    if list(runs["fixed"]["fixes"]) == list(runs["stock"]["fixes"]):
        raise RuntimeError(
            f"{task}: both runs had the same MJX fixes {list(runs['fixed']['fixes'])}"
        )
    differs = runs["stock"]["checksum"] != runs["fixed"]["checksum"]  # (steps, envs)
    split = differs.any(axis=0)
    first = differs.argmax(axis=0)[split] + 1
    record = ROOT / "soak_records" / f"{task}.json"
    c_max = json.loads(record.read_text())["qvel_max"] if record.exists() else None
    over = {
        v: int((r["qvel_max"].max(axis=0) > 2 * c_max).sum()) if c_max else None
        for v, r in runs.items()
    }
    return {
        "task": task,
        "envs": envs,
        "steps": steps,
        "seed": seed,
        "differ": int(split.sum()),
        "first_differ_median": float(np.median(first)) if first.size else None,
        "qvel_max_stock": float(runs["stock"]["qvel_max"].max()),
        "qvel_max_fixed": float(runs["fixed"]["qvel_max"].max()),
        "qvel_max_c_soak": c_max,
        "over_2x_c_stock": over["stock"],
        "over_2x_c_fixed": over["fixed"],
    }


def speed(
    task: str, envs: int, steps: int, seed: int, repeats: int, seconds: float, warmup: int = 0
) -> dict:
    """Env steps per second of our batched step under the fix and under stock MJX,
    timed alternately in this process (see the module's docstring), each from the
    states that `warmup` random-action steps under it reach from the same resets
    (rounded up to whole calls). Each physics keeps its own states: a fix may change
    the data's shapes (C's capsule-capsule pair has two contact slots)."""
    import jax

    import jaxcontrol
    from jaxcontrol import mjx_fixes, reference

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import throughput  # the shared rollout and timing helpers

    if not mjx_fixes.applied():
        raise RuntimeError(f"no MJX fix is in effect ({mjx_fixes.STOCK_ENV} set?)")
    domain, name = task.split("-", 1)
    with reference.precision(False):
        env = jaxcontrol.load(domain, name)
        low, high = reference.action_bounds(env.action_spec())
        reset_key, key = jax.random.split(jax.random.key(seed))
        resets = jax.random.split(reset_key, envs)

        def lower():
            env._cache.clear()  # the model and data built under this physics' collision
            states = jax.block_until_ready(jax.jit(jax.vmap(env.reset))(resets))
            rollout = throughput.make_rollout(env.step, envs, steps, low, high)
            return states, rollout.lower(states, key)

        states, lowered = {}, {}
        states["fixed"], lowered["fixed"] = lower()
        with mjx_fixes.stock():  # traced anew: stock() releases the cached traces
            states["stock"], lowered["stock"] = lower()
        if lowered["fixed"].as_text() == lowered["stock"].as_text():
            raise RuntimeError(f"{task}: the fixed and stock programs are the same")
        compiled = {v: low_.compile() for v, low_ in lowered.items()}
        calls = {}
        for v, fn in compiled.items():
            at, k = states[v], key
            for _ in range(-(-warmup // steps)):  # mid-episode states: contacts, not a drop
                at, k = fn(at, k)
            calls[v] = functools.partial(fn, at, k)
        best = {v: t for v, (_, t) in throughput.time_interleaved(calls, repeats, seconds).items()}
    rate = {v: envs * steps / t for v, t in best.items()}
    return {
        "task": task,
        "envs": envs,
        "steps": steps,
        "warmup": -(-warmup // steps) * steps,
        "fixed_steps_per_s": rate["fixed"],
        "stock_steps_per_s": rate["stock"],
        "fixed_over_stock": rate["fixed"] / rate["stock"],
    }


def speed_table(rows: list[dict]) -> str:
    lines = [
        "| task | envs x steps per call | from step | fixed env steps/s | stock | fixed / stock |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['envs']} x {r['steps']} | {r.get('warmup', 0)} "
            f"| {r['fixed_steps_per_s']:.3g} "
            f"| {r['stock_steps_per_s']:.3g} | {r['fixed_over_stock']:.3f} |"
        )
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    lines = [
        (
            "| task | envs x steps | differ (median first step) | max \\|qvel\\| stock | fixed "
            "| C soak | > 2x C stock / fixed |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        first = "" if r["first_differ_median"] is None else f" ({r['first_differ_median']:.0f})"
        c = "" if r["qvel_max_c_soak"] is None else f"{r['qvel_max_c_soak']:.0f}"
        lines.append(
            f"| {r['task']} | {r['envs']} x {r['steps']} | {r['differ']}{first} "
            f"| {r['qvel_max_stock']:.0f} | {r['qvel_max_fixed']:.0f} | {c} "
            f"| {r['over_2x_c_stock']} / {r['over_2x_c_fixed']} |"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--tasks", nargs="+", default=list(ELLIPTIC), help="task ids (default: all elliptic)"
    )
    p.add_argument("--envs", type=int, default=16)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="append each task's row to this JSON-lines file")
    p.add_argument(
        "--speed", action="store_true", help="time fixed against stock MJX instead (one process)"
    )
    p.add_argument("--repeats", type=int, default=5, help="--speed: timed rounds")
    p.add_argument("--seconds", type=float, default=5.0, help="--speed: about this long a timing")
    p.add_argument(
        "--warmup", type=int, default=0, help="--speed: time from the states after this many steps"
    )
    p.add_argument("--keep", help="keep each rollout's per-step arrays in this directory")
    p.add_argument("--rollout", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.rollout:
        rollout(args.rollout, args.envs, args.steps, args.seed, args.out)
        return
    import jaxcontrol  # the task ids, after the child processes are set up

    valid = [f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS]
    unknown = sorted(set(args.tasks) - set(valid))
    if unknown:
        raise SystemExit(f"unknown tasks {unknown}; valid: {', '.join(valid)}")
    rows = []
    for task in args.tasks:
        if args.speed:
            row = speed(
                task, args.envs, args.steps, args.seed, args.repeats, args.seconds, args.warmup
            )
        else:
            row = measure(task, args.envs, args.steps, args.seed, args.keep)
        row["date"] = datetime.date.today().isoformat()
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row) + "\n")
    print(speed_table(rows) if args.speed else table(rows))


if __name__ == "__main__":
    main()

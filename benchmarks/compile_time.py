"""Compile time of one env step: jaxcontrol vs plain MJX, per task, each in a fresh process.

For each task a new Python process (nothing compiled before it, as at the start
of a training run or a test worker) builds the env, then times for
`jax.jit(jax.vmap(env.step))` on a batch of reset states, in float32 or float64:

* **trace**: tracing and lowering to StableHLO (`jit(...).lower`);
* **compile**: XLA's compile of the lowered program (`.compile()`);
* **step**: the best of 5 calls of the compiled batch step afterwards, in
  milliseconds (what a compiler setting costs at run time);
* the same three for **raw** MJX: `mjx.step` repeated `n_sub_steps` times in a
  `lax.scan` on the same model (what `benchmarks/throughput.py` runs as raw).

`--xla-flags` is put in `XLA_FLAGS` of the child processes, to measure
compiler settings (for example `--xla_backend_optimization_level=0`).

Example:
  python benchmarks/compile_time.py --tasks humanoid-walk cheetah-run \
      --markdown /tmp/compile.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

COLUMNS = (
    "task",
    "dtype",
    "ours_trace_s",
    "ours_compile_s",
    "ours_step_ms",
    "raw_trace_s",
    "raw_compile_s",
    "raw_step_ms",
)


def measure(task: str, batch: int, x64: bool) -> dict:
    """Runs in the child process: trace and compile times of ours and raw."""
    os.environ.setdefault("MUJOCO_GL", "disable")
    import jax

    jax.config.update("jax_enable_x64", x64)
    from mujoco import mjx

    import jaxcontrol

    env = jaxcontrol.load(*task.split("-", 1))
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), batch))
    spec = env.action_spec()
    actions = jax.random.uniform(  # random, not zero: zero actions flatter the solver
        jax.random.key(1), (batch,) + spec.shape, states.data.qpos.dtype, spec.minimum, spec.maximum
    )
    model = env.mjx_model

    def raw_step(data, action):
        data = data.replace(ctrl=action)
        data, _ = jax.lax.scan(lambda d, _: (mjx.step(model, d), None), data, None, env.n_sub_steps)
        return data

    row = {"task": task, "dtype": "float64" if x64 else "float32"}
    for name, fn, args in (
        ("ours", env.step, (states, actions)),
        ("raw", raw_step, (states.data, actions)),
    ):
        start = time.perf_counter()
        lowered = jax.jit(jax.vmap(fn)).lower(*args)
        traced = time.perf_counter()
        compiled = lowered.compile()
        row[f"{name}_trace_s"] = traced - start
        row[f"{name}_compile_s"] = time.perf_counter() - traced
        jax.block_until_ready(compiled(*args))
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            jax.block_until_ready(compiled(*args))
            best = min(best, time.perf_counter() - start)
        row[f"{name}_step_ms"] = 1e3 * best
    return row


def run_child(task: str, batch: int, x64: bool, xla_flags: str | None) -> dict:
    env = dict(os.environ)
    if xla_flags:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + xla_flags).strip()
    command = [sys.executable, __file__, "--child", task, "--batch", str(batch)]
    command += ["--x64"] if x64 else []
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["humanoid-walk"])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--dtypes", nargs="+", default=["float32"], choices=["float32", "float64"])
    parser.add_argument("--xla-flags", default=None, help="added to XLA_FLAGS of each child")
    parser.add_argument("--markdown", default=None, help="also write the table here")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--x64", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child, args.batch, args.x64)))
        return

    import jaxcontrol

    valid = [f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS]
    tasks = valid if args.tasks == ["all"] else args.tasks
    unknown = sorted(set(tasks) - set(valid))
    if unknown:
        parser.error(f"unknown tasks {unknown}; valid: all, {', '.join(valid)}")

    lines = [
        f"XLA_FLAGS extra: {args.xla_flags or '(none)'}; batch {args.batch}",
        "| " + " | ".join(COLUMNS) + " |",
        "|---|---|" + "---:|" * (len(COLUMNS) - 2),
    ]
    print("\n".join(lines), flush=True)
    for task in tasks:
        for dtype in args.dtypes:
            row = run_child(task, args.batch, dtype == "float64", args.xla_flags)
            cells = [row["task"], row["dtype"]] + [f"{row[c]:.1f}" for c in COLUMNS[2:]]
            lines.append("| " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

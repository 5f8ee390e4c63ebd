"""Which program of a task compiles slowly, and which XLA flags help: one at a time.

On an H200, stacker, manipulator, quadruped-escape, humanoid_CMU and dog did not
finish compiling in 4-8 minutes (BENCHMARKS.md, session 32), while the CPU
compiles them in 20-30 s, and `benchmarks/throughput.py` compiles ours, raw MJX
and the batched reset together, so its log cannot say which one was slow. This
probe compiles each program alone, in a fresh process (each as at the start of
a run), under each set of XLA flags given, and stops it after `--timeout`
seconds:

* **raw**: `jax.vmap` of one control step of plain `mjx.step` (the substeps
  scanned), as throughput.py's raw loop steps it;
* **ours**: `jax.vmap(env.step)`;
* **reset**: `jax.vmap(env.reset)` (rejection sampling, settling steps).

Each line of the output (and of `--csv`) is one program under one flag set:
seconds to trace and lower, seconds to compile, or "timeout".

Example (on a lent GPU, through benchmarks/device_throughput.sh's setup):
  python benchmarks/gpu_compile_probe.py --task stacker-stack_2 --batch 256 \\
      --programs raw reset ours --timeout 150 --flags= \\
      --flags=--xla_gpu_autotune_level=0 \\
      --flags='--xla_gpu_autotune_level=0 --xla_gpu_force_compilation_parallelism=16' \\
      --csv $OUT/probe.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time

PROGRAMS = ("raw", "ours", "reset")
FIELDS = ("task", "batch", "program", "xla_flags", "lower_s", "compile_s", "status")


def _child(task: str, batch: int, program: str) -> dict:
    """Lowers and compiles one program in this process; returns its timings."""
    import jax  # pylint: disable=import-outside-toplevel

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import throughput  # pylint: disable=import-outside-toplevel

    import jaxcontrol  # pylint: disable=import-outside-toplevel

    env = jaxcontrol.load(*throughput.split_name(task))
    keys = jax.random.split(jax.random.key(0), batch)
    states = jax.eval_shape(jax.vmap(env.reset), keys)
    actions = jax.ShapeDtypeStruct((batch,) + env.action_spec().shape, states.data.qpos.dtype)
    fn, args = {
        "raw": (jax.vmap(throughput.raw_step_fn(env)), (states.data, actions)),
        "ours": (jax.vmap(env.step), (states, actions)),
        "reset": (jax.vmap(env.reset), (keys,)),
    }[program]
    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    lowered_at = time.perf_counter()
    lowered.compile()
    return {
        "lower_s": round(lowered_at - start, 2),
        "compile_s": round(time.perf_counter() - lowered_at, 2),
        "status": "ok",
    }


def probe(task: str, batch: int, program: str, flags: str, timeout: float) -> dict:
    """`program` compiled alone in a fresh process under XLA_FLAGS=`flags`."""
    row = {"task": task, "batch": batch, "program": program, "xla_flags": flags}
    env = {**os.environ, "XLA_FLAGS": flags, "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, __file__, "--child", "--task", task, "--batch", str(batch)]
    try:
        done = subprocess.run(
            [*argv, "--programs", program],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {**row, "lower_s": "", "compile_s": "", "status": f"timeout {timeout:g} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {
            **row,
            "lower_s": "",
            "compile_s": "",
            "status": f"exit {done.returncode}: {tail[0]}",
        }
    return {**row, **json.loads(lines[-1])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--task", required=True, help="DOMAIN-TASK")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--programs", nargs="+", choices=PROGRAMS, default=list(PROGRAMS))
    parser.add_argument(
        "--flags",
        action="append",
        help="an XLA_FLAGS value to try, given as --flags='...' (repeatable; default: none set)",
    )
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds per compile")
    parser.add_argument("--csv", help="also write the rows here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.task, args.batch, args.programs[0])), flush=True)
        return 0
    rows = []
    for flags in args.flags or [""]:
        for program in args.programs:
            row = probe(args.task, args.batch, program, flags, args.timeout)
            print(" | ".join(str(row[k]) for k in FIELDS), flush=True)
            rows.append(row)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, FIELDS)
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

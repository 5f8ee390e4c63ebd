"""Which program of a task compiles slowly, and which XLA flags help: one at a time.

On an H200, each program of stacker, manipulator, quadruped-escape, humanoid_CMU
and dog compiles for 1-2.5 minutes (docs/benchmarks.md), while the CPU
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
seconds to trace and lower, seconds to compile, or "timeout". `--jobs` runs
several probes at once (a GPU host has the cores). With `--log-dir`, each
child's output is kept there; `--vmodule` turns on XLA's verbose logs (e.g.
`hlo_pass_pipeline=1` names each pass as it starts), and `--pass-timeline`
dumps the module after every HLO pass and keeps only the list of those dumps
with the seconds at which each appeared, so a compile that times out still
shows where its time went.

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
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PROGRAMS = ("raw", "ours", "reset")
FIELDS = ("task", "batch", "program", "xla_flags", "lower_s", "compile_s", "status", "passes")
# XLA's pass pipeline logs these with TF_CPP_VMODULE=hlo_pass_pipeline=1.
PASS_STARTED = re.compile(r"\]\s+HLO pass (\S+)$")
PASS_TIMED = re.compile(r"HLO pass: (\S+) time: ([\d.]+) (us|ms|s) ")
PIPELINE = re.compile(r"Running HLO pass pipeline on module \S+: (\S+)")
UNIT_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


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


def probe(
    task: str,
    batch: int,
    program: str,
    flags: str,
    timeout: float,
    log: str | None = None,
    vmodule: str = "",
    pass_timeline: bool = False,
) -> dict:
    """`program` compiled alone in a fresh process under XLA_FLAGS=`flags`.

    `log`: a file for the child's output (else it is only read for errors);
    `vmodule`: TF_CPP_VMODULE for the child; `pass_timeline`: also write
    `log`.passes, the HLO pass dumps in the order they appeared (needs `log`)."""
    row = {"task": task, "batch": batch, "program": program, "xla_flags": flags}
    if pass_timeline and not log:
        raise ValueError("pass_timeline needs a log file to write the timeline beside")
    dump = Path(f"{log}.dump") if pass_timeline else None
    xla_flags = flags
    if dump:
        xla_flags = f"{flags} --xla_dump_to={dump} --xla_dump_hlo_pass_re=.*".strip()
    env = {**os.environ, "XLA_FLAGS": xla_flags, "PYTHONUNBUFFERED": "1"}
    if vmodule:
        env.update(TF_CPP_MIN_LOG_LEVEL="0", TF_CPP_VMODULE=vmodule)
    argv = [sys.executable, __file__, "--child", "--task", task, "--batch", str(batch)]
    out_path = Path(log) if log else None
    with open(out_path or os.devnull, "w") as out:
        started = time.time()
        try:
            done = subprocess.run(
                [*argv, "--programs", program],
                env=env,
                stdout=subprocess.PIPE,
                stderr=out if out_path else subprocess.PIPE,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            done = None
    if dump:
        _write_timeline(dump, started, Path(f"{log}.passes"))
    row["passes"] = pass_summary(out_path.read_text()) if out_path else ""
    if done is None:
        return {**row, "lower_s": "", "compile_s": "", "status": f"timeout {timeout:g} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        text = out_path.read_text() if out_path else done.stderr
        tail = (text or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {
            **row,
            "lower_s": "",
            "compile_s": "",
            "status": f"exit {done.returncode}: {tail[0]}",
        }
    return {**row, **json.loads(lines[-1])}


def pass_summary(log: str, top: int = 4) -> str:
    """The HLO passes that took longest in an XLA verbose log, and any still running.

    Empty when the log holds no pass timings (no `--vmodule hlo_pass_pipeline=1`)."""
    seconds: dict[str, float] = {}
    pipelines: set[str] = set()  # nested pipelines are timed as passes too
    running = None
    for line in log.splitlines():
        if pipeline := PIPELINE.search(line):
            pipelines.add(pipeline.group(1))
        elif timed := PASS_TIMED.search(line):
            name = timed.group(1)
            seconds[name] = (
                seconds.get(name, 0.0) + float(timed.group(2)) * UNIT_SECONDS[timed.group(3)]
            )
            running = None
        elif started := PASS_STARTED.search(line):
            running = started.group(1)
    if not seconds and running is None:
        return ""
    passes = {name: value for name, value in seconds.items() if name not in pipelines}
    slowest = sorted(passes.items(), key=lambda item: -item[1])[:top]
    text = f"{sum(passes.values()):.1f} s in passes; " + ", ".join(
        f"{name} {value:.1f}" for name, value in slowest
    )
    return f"{text}; still in {running}" if running else text


def _write_timeline(dump: Path, started: float, path: Path) -> None:
    """Lists `dump`'s files by the second they appeared, then removes the dump."""
    files = sorted((f.stat().st_mtime, f.name) for f in dump.glob("*") if f.is_file())
    with open(path, "w") as out:
        out.writelines(f"{mtime - started:9.2f} {name}\n" for mtime, name in files)
    shutil.rmtree(dump, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--task", nargs="+", required=True, help="DOMAIN-TASK (one or more)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--programs", nargs="+", choices=PROGRAMS, default=list(PROGRAMS))
    parser.add_argument(
        "--flags",
        action="append",
        help="an XLA_FLAGS value to try, given as --flags='...' (repeatable; default: none set)",
    )
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds per compile")
    parser.add_argument("--jobs", type=int, default=1, help="probes run at once")
    parser.add_argument("--log-dir", help="keep each child's output here")
    parser.add_argument("--vmodule", default="", help="TF_CPP_VMODULE for the children")
    parser.add_argument(
        "--pass-timeline", action="store_true", help="list HLO pass dumps by time (--log-dir)"
    )
    parser.add_argument("--csv", help="also write the rows here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.task[0], args.batch, args.programs[0])), flush=True)
        return 0
    if args.pass_timeline and not args.log_dir:
        parser.error("--pass-timeline needs --log-dir")
    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
    cases = [
        (task, i, flags, program)
        for i, flags in enumerate(args.flags or [""])
        for task in args.task
        for program in args.programs
    ]

    def run(case):
        task, i, flags, program = case
        log = f"{args.log_dir}/{task}.{program}.flags{i}.log" if args.log_dir else None
        row = probe(
            task, args.batch, program, flags, args.timeout, log, args.vmodule, args.pass_timeline
        )
        print(" | ".join(str(row[k]) for k in FIELDS), flush=True)
        return row

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = list(pool.map(run, cases))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, FIELDS)
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Environment step throughput: jaxcontrol vs plain MJX vs dm_control.

For each task and batch size this measures, in one process:

* **ours**: `jax.jit` of a loop over `jax.vmap(env.step)`, uniform random
  actions drawn inside the loop;
* **raw**: the identical loop over `jax.vmap` of plain `mjx.step` (repeated
  `n_sub_steps` times, `ctrl` set from the same actions) on the same
  `env.mjx_model`. It skips what our step adds (position sync, observation,
  reward, termination and the divergence check), so it is the upper limit and
  ours/raw is what our dm_control semantics cost. Where a task writes model
  fields at every reset, raw steps the model with the first environment's
  values written in (`episode_model`): the physics of a real episode, not the
  compiled placeholder (quadruped-escape's compiled terrain is flat, and XLA
  folds a constant flat terrain away);
* **dm_control**: one `dm_control.suite` env stepped in Python with random
  actions (the peer; batch size 1 by nature);
* **playground** (with `--playground`, where MuJoCo Playground ports the task):
  the same loop over `jax.vmap` of Playground's port's `step`, on MJX's JAX
  implementation. Its ports change the physics (control and physics steps,
  solver caps), so `playground_model` names those beside its speed;
* compile time: ahead-of-time compilation of each loop (`lower().compile()`;
  ours, raw and the reset compile side by side in threads).

Each compiled call scans about `--env-steps` environment steps (batch x scan
length, at most `--steps` steps): humanoid at batch 1024 takes seconds per
step on a CPU, cartpole microseconds. A timing repeats the call until it
lasts about `--seconds`. Every call is followed by `block_until_ready`; each
function is warmed up first, the timings of ours and raw alternate, and the
best of `--repeats` timings is kept.

Several processes can share one accelerator with `--lock FILE`: each traces
and compiles on the host's cores while another one times, and the timed runs
take turns (on a 16-core GPU machine, about ten processes over disjoint task
lists compile 51 tasks in a few minutes).

Example:
  python benchmarks/throughput.py --tasks all --batch-sizes 64 256 1024 \
      --csv /tmp/throughput.csv --markdown /tmp/throughput.md
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import csv
import datetime
import fcntl
import functools
import os
import platform
import subprocess
import sys
import time

os.environ.setdefault("MUJOCO_GL", "disable")  # before dm_control is imported

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

import jaxcontrol
from jaxcontrol.physics import Physics

try:  # run as a script: benchmarks/ is on sys.path
    import playground_peer
except ImportError:  # imported as benchmarks.throughput
    from benchmarks import playground_peer

DEFAULT_TASKS = (
    "cartpole-swingup",
    "acrobot-swingup",
    "pendulum-swingup",
    "point_mass-easy",
    "cartpole-three_poles",
)
COLUMNS = (
    "task",
    "batch",
    "ours_steps_per_s",
    "raw_steps_per_s",
    "ours_over_raw",
    "ours_compile_s",
    "raw_compile_s",
    "dm_control_steps_per_s",
    "steps",
    "playground_steps_per_s",
    "playground_model",
)


def machine_info() -> dict[str, str]:
    """Describes the host and accelerator the numbers were taken on."""
    cpu = platform.processor() or platform.machine()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in out.splitlines()
            if line.startswith("Model name")
        )
    except (OSError, subprocess.SubprocessError, StopIteration):
        pass
    device = jax.devices()[0]
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "backend": jax.default_backend(),
        "device": f"{device.device_kind} x{jax.device_count()}",
        "jax": jax.__version__,
        "mujoco": mujoco.__version__,
        "python": platform.python_version(),
        "date": datetime.date.today().isoformat(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


def expand_tasks(names: list[str]) -> list[str]:
    """'all' and 'benchmarking' stand for those sets of registered tasks."""
    sets = {"all": jaxcontrol.ALL_TASKS, "benchmarking": jaxcontrol.BENCHMARKING}
    out = []
    for name in names:
        out += [f"{d}-{t}" for d, t in sets[name]] if name in sets else [name]
    return out


def split_name(name: str) -> tuple[str, str]:
    """'point_mass-easy' -> ('point_mass', 'easy'); domains use '_', not '-'."""
    domain, sep, task = name.partition("-")
    if not sep:
        raise ValueError(f"expected DOMAIN-TASK, got {name!r}")
    return domain, task


def raw_step_fn(env: jaxcontrol.Env, model: mjx.Model | None = None):
    """Plain MJX: set ctrl, then `n_sub_steps` `mjx.step`s (scanned like ours).

    `model` defaults to the env's own MJX model."""
    model, n = env.mjx_model if model is None else model, env.n_sub_steps

    def step(data: mjx.Data, action: jax.Array) -> mjx.Data:
        data = data.replace(ctrl=action.astype(data.ctrl.dtype))
        if n == 1:
            return mjx.step(model, data)
        data, _ = jax.lax.scan(lambda d, _: (mjx.step(model, d), None), data, None, length=n)
        return data

    return step


def episode_model(env: jaxcontrol.Env, states) -> mjx.Model:
    """`env.mjx_model` with the first environment's per-episode model fields applied.

    `states` is a batch of states from `jax.vmap(env.reset)`. Tasks without such
    fields get `env.mjx_model` itself."""
    fields = {name: value[0] for name, value in states.model_fields.items()}
    if not fields:
        return env.mjx_model
    first = jax.tree.map(lambda x: x[0], states.data)
    return Physics.create(env.mjx_model, first, env.names, fields).model


def make_rollout(step, batch: int, steps: int, low, high):
    """Jitted scan of `steps` batched steps with uniform actions in [low, high].

    The whole final carry is returned so XLA cannot drop any part of the step.
    """
    low, high = jnp.asarray(low, jnp.float32), jnp.asarray(high, jnp.float32)
    batched = jax.vmap(step)

    def rollout(state, key):
        def body(carry, _):
            state, key = carry
            key, sub = jax.random.split(key)
            action = jax.random.uniform(sub, (batch,) + low.shape, minval=low, maxval=high)
            return (batched(state, action), key), None

        (state, key), _ = jax.lax.scan(body, (state, key), None, length=steps)
        return state, key

    return jax.jit(rollout)


def scan_length(batch: int, args: argparse.Namespace) -> int:
    """Steps per compiled call: about `--env-steps` environment steps, at most `--steps`."""
    return max(1, min(args.steps, args.env_steps // batch))


def _timed(fn, calls: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        jax.block_until_ready(fn())
    return (time.perf_counter() - t0) / calls


def compile_side_by_side(fns: dict[str, tuple]) -> tuple[dict, dict[str, float]]:
    """Compiles `{name: (fn, *args)}` ahead of time, each in its own thread.

    Tracing and lowering hold the GIL and run one after another; XLA's compile
    releases it, so the compiles overlap on a many-core host (on a GPU the
    largest models take minutes each). Returns the executables and each one's
    seconds, lowering plus compiling (wall time, so overlapping compiles slow
    one another)."""
    lowered, seconds = {}, {}
    for name, (fn, *args) in fns.items():
        t0 = time.perf_counter()
        lowered[name] = fn.lower(*args)
        seconds[name] = time.perf_counter() - t0

    def compile_one(name):
        t0 = time.perf_counter()
        compiled = lowered[name].compile()
        return compiled, time.perf_counter() - t0

    with concurrent.futures.ThreadPoolExecutor(len(lowered)) as pool:
        done = dict(zip(lowered, pool.map(compile_one, lowered)))
    return {n: c for n, (c, _) in done.items()}, {n: seconds[n] + t for n, (_, t) in done.items()}


def _renice_threads(niceness: int) -> bool:
    """Sets the niceness of every thread of this process (Linux keeps it per
    thread, and XLA launches device work from its own threads). Returns False
    where that is not allowed (lowering it needs root or CAP_SYS_NICE)."""
    try:
        for tid in os.listdir("/proc/self/task"):
            os.setpriority(os.PRIO_PROCESS, int(tid), niceness)
    except (OSError, ValueError):
        return False
    return True


@contextlib.contextmanager
def exclusive(path: str | None):
    """Holds an exclusive lock on `path` (no-op for None).

    Several benchmark processes can share one accelerator this way: they trace
    and compile side by side on the host's cores, and take turns for the timed
    runs, so that no timing shares the device with another process's work.
    Started under `nice`, the holder also raises its threads to niceness 0
    (where allowed) so that the others' compiles do not slow its launches."""
    if path is None:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        niceness = os.getpriority(os.PRIO_PROCESS, 0)
        raised = niceness > 0 and _renice_threads(0)
        try:
            yield
        finally:
            if raised:
                _renice_threads(niceness)
            fcntl.flock(f, fcntl.LOCK_UN)


def time_interleaved(calls: dict, repeats: int, seconds: float) -> dict[str, tuple[float, float]]:
    """Times zero-argument jitted calls; returns {name: (compile s, best s per call)}.

    Each call is run twice (compile, then warm); the slowest warm call sets how
    many calls make up one timing, about `seconds` long. The timed repeats
    alternate between the calls, so that load changes on a shared machine hit
    all of them alike and their ratio stays meaningful.
    """
    first = {name: _timed(fn) for name, fn in calls.items()}
    warm = {name: _timed(fn) for name, fn in calls.items()}
    per_timing = max(1, int(seconds / max(warm.values())))
    best = dict(warm)
    for _ in range(repeats):
        for name, fn in calls.items():
            best[name] = min(best[name], _timed(fn, per_timing))
    return {name: (max(first[name] - warm[name], 0.0), best[name]) for name in calls}


def bench_jax(env: jaxcontrol.Env, batch: int, args: argparse.Namespace, peer=None) -> dict:
    """Ours and raw MJX throughput for one task and batch size (and `peer`'s, if given).

    `peer` is a MuJoCo Playground environment of the same task. Everything is
    compiled first; the runs on the device happen under `args.lock`."""
    spec = env.action_spec()
    low, high = np.clip(spec.minimum, -1, 1), np.clip(spec.maximum, -1, 1)
    key = jax.random.key(0)
    keys = jax.random.split(key, batch)
    steps = scan_length(batch, args)
    inputs = {}
    reset = jax.jit(jax.vmap(env.reset))
    states = jax.eval_shape(reset, keys)
    model, first = env.mjx_model, None
    if env.task.episode_model_fields:
        # raw steps an episode's model (`episode_model`), so the reset runs first.
        compiled_reset = reset.lower(keys).compile()
        with exclusive(args.lock):
            first = jax.block_until_ready(compiled_reset(keys))
        model = episode_model(env, first)
    fns = {
        "ours": (make_rollout(env.step, batch, steps, low, high), states, key),
        "raw": (make_rollout(raw_step_fn(env, model), batch, steps, low, high), states.data, key),
    }
    if first is None:
        fns["reset"] = (reset, keys)
    if peer is not None:
        # Playground's reset takes a raw uint32 key pair.
        peer_keys = jax.random.split(jax.random.PRNGKey(0), batch)
        peer_states = jax.eval_shape(jax.vmap(peer.reset), peer_keys)
        fns["playground"] = (make_rollout(peer.step, batch, steps, low, high), peer_states, key)
        fns["peer_reset"] = (jax.jit(jax.vmap(peer.reset)), peer_keys)
    compiled, compile_s = compile_side_by_side(fns)
    reset, peer_reset = compiled.pop("reset", None), compiled.pop("peer_reset", None)
    with exclusive(args.lock):
        inputs["ours"] = reset(keys) if first is None else first
        inputs["raw"] = inputs["ours"].data
        if peer is not None:
            inputs["playground"] = peer_reset(peer_keys)
        calls = {name: functools.partial(fn, inputs[name], key) for name, fn in compiled.items()}
        best = {
            name: t for name, (_, t) in time_interleaved(calls, args.repeats, args.seconds).items()
        }
    n = batch * steps
    return {
        "steps": steps,
        "ours_steps_per_s": n / best["ours"],
        "raw_steps_per_s": n / best["raw"],
        "ours_over_raw": best["raw"] / best["ours"],
        "ours_compile_s": compile_s["ours"],
        "raw_compile_s": compile_s["raw"],
        "playground_steps_per_s": n / best["playground"] if peer is not None else float("nan"),
    }


def bench_dm_control(domain: str, task: str, steps: int, repeats: int) -> float:
    """Steps/s of one dm_control env (resets at episode ends are included)."""
    from dm_control import suite  # pylint: disable=import-outside-toplevel

    env = suite.load(domain, task, task_kwargs={"random": 0})
    spec = env.action_spec()
    low, high = np.clip(spec.minimum, -1, 1), np.clip(spec.maximum, -1, 1)
    actions = np.random.default_rng(0).uniform(low, high, (steps,) + spec.shape)
    best = float("inf")
    for _ in range(repeats):
        time_step = env.reset()
        t0 = time.perf_counter()
        for action in actions:
            if time_step.last():
                time_step = env.reset()
            time_step = env.step(action)
        best = min(best, time.perf_counter() - t0)
    return steps / best


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if value < 100 else f"{value:,.0f}"
    return str(value)


def read_csv(path: str) -> list[dict]:
    """The rows of an earlier run's CSV (none if the file does not exist)."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        for column in COLUMNS[1:]:
            if column != "playground_model":
                row[column] = (int if column in ("batch", "steps") else float)(
                    row.get(column) or "nan"
                )
    return rows


def write_csv(path: str, rows: list[dict]) -> None:
    """Writes `rows` to `path` atomically."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def to_markdown(rows: list[dict], info: dict[str, str], command: str) -> str:
    """A Markdown report: machine, command, then one table row per measurement."""
    lines = [
        "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()),
        "",
        f"Command: `{command}`",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(_fmt(row[c]) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--tasks",
        nargs="+",
        default=list(DEFAULT_TASKS),
        help="DOMAIN-TASK names, or 'all' / 'benchmarking' for every registered task of that set",
    )
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 64, 256, 1024, 4096])
    parser.add_argument("--steps", type=int, default=200, help="most steps per compiled call")
    parser.add_argument(
        "--env-steps",
        type=int,
        default=4096,
        help="environment steps per compiled call (batch x scan length), to bound slow tasks",
    )
    parser.add_argument("--seconds", type=float, default=1.0, help="aim of each timing's duration")
    parser.add_argument(
        "--dm-steps",
        type=int,
        default=2000,
        help="dm_control steps per repeat (0 skips dm_control)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--playground",
        action="store_true",
        help="also time MuJoCo Playground's port of each task it ports (pip install playground)",
    )
    parser.add_argument(
        "--lock",
        help="a file whose exclusive lock every timed run holds: lets processes share a device",
    )
    parser.add_argument("--csv", help="write the results as CSV here")
    parser.add_argument("--markdown", help="write a Markdown report here")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the rows already in --csv and measure only the missing (task, batch) pairs",
    )
    args = parser.parse_args(argv)
    if args.resume and not args.csv:
        parser.error("--resume needs --csv, the file that holds the rows measured so far")
    return args


def main(argv: list[str] | None = None) -> int:
    """Runs the benchmark; returns a process exit status."""
    args = parse_args(argv)
    info = machine_info()
    command = " ".join(
        ["python", "benchmarks/throughput.py"] + (sys.argv[1:] if argv is None else list(argv))
    )
    print("\n".join(f"{k:>8}: {v}" for k, v in info.items()), flush=True)
    header = (
        f"{'task':<22} {'batch':>6} {'ours/s':>11} {'raw/s':>11} {'ratio':>6} "
        f"{'compile ours':>12} {'raw':>6} {'dm_control/s':>12} {'playground/s':>11}"
    )
    print(header + "\n" + "-" * len(header), flush=True)
    rows = read_csv(args.csv) if args.resume else []
    done = {(row["task"], row["batch"]) for row in rows}
    for name in expand_tasks(args.tasks):
        domain, task = split_name(name)
        todo = [batch for batch in args.batch_sizes if (name, batch) not in done]
        if not todo:
            continue
        env = jaxcontrol.load(domain, task)
        peer = (
            playground_peer.load(name)
            if args.playground and name in playground_peer.NAMES
            else None
        )
        dm_sps = (
            bench_dm_control(domain, task, args.dm_steps, args.repeats)
            if args.dm_steps > 0
            else float("nan")
        )
        for batch in todo:
            row = {
                "task": name,
                "batch": batch,
                "dm_control_steps_per_s": dm_sps,
                "playground_model": playground_peer.describe(peer) if peer is not None else "",
                **bench_jax(env, batch, args, peer),
            }
            rows.append(row)
            if args.csv:  # after every row, so that a stopped run keeps what it measured
                write_csv(args.csv, rows)
            print(
                f"{name:<22} {batch:>6} {row['ours_steps_per_s']:>11,.0f} "
                f"{row['raw_steps_per_s']:>11,.0f} {row['ours_over_raw']:>6.3f} "
                f"{row['ours_compile_s']:>11.1f}s {row['raw_compile_s']:>5.1f}s "
                f"{dm_sps:>12,.0f} {row['playground_steps_per_s']:>11,.0f} {row['playground_model']}",
                flush=True,
            )
        # One process measures every task: release each task's executables (compiled
        # code piling up in one process once exhausted vm.max_map_count here).
        jax.clear_caches()
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(to_markdown(rows, info, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())

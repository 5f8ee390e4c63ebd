"""The C MuJoCo backend's speed (`backend="mujoco"`) against MJX, raw C and dm_control.

For each task, batch size and thread count, in one process:

* **ours, mujoco**: `jax.jit` of a `lax.scan` over `jax.vmap(env.step)` with
  uniform random actions drawn inside the scan, the physics on C MuJoCo's
  worker threads (`JAXCONTROL_MUJOCO_THREADS`), called through the XLA FFI
  handler (`jaxcontrol.ffi_step`);
* **mj_step1 end**: the handler ending each step with mj_step1 whole instead of its
  lean end stage (`ffi_step.Stepper`'s `lean=False`);
* **callback**: the same through `jax.pure_callback`, the path taken where the
  handler cannot be built (`JAXCONTROL_MUJOCO_FFI=0`);
* **ours, mjx**: the same loop on the MJX backend (XLA's own CPU threads);
* **raw C**: `mujoco.rollout` of the same number of physics steps from the
  same reset states as ours (its own thread pool, `nthread` threads), open loop: the upper
  limit of any C backend, with no observation, reward or JAX around it;
* **EnvPool**: the same task in EnvPool's C++ pool (sync mode, `num_threads`
  threads, random actions drawn by NumPy per step), run by the interpreter
  that `--envpool-python` names, since EnvPool pins its own dependencies (a
  separate venv: `pip install envpool==1.2.5`); "—" without it or where EnvPool
  lacks the task;
* **dm_control**: one `dm_control.suite` environment stepped in Python
  (`--no-dm-control` skips it where dm-control is not installed);
* on an accelerator, **ours, mujoco on the host**: the mujoco loop jitted for
  the CPU device instead. The accelerator's column pays a device-to-host round
  trip of the whole batch's state every step; the ratio of the two is its cost.

Figures are environment (control) steps per second; the best of `--repeats`
timings, each about `--seconds` long, after a warm-up call.

Example:
  python benchmarks/cpu_backend.py --tasks cheetah-run walker-walk humanoid-walk \
      cartpole-swingup --batch-sizes 16 256 1024 --threads 1 2 \
      --envpool-python /tmp/envpool-venv/bin/python
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from unittest import mock

os.environ.setdefault("MUJOCO_GL", "disable")

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import rollout

import jaxcontrol
from jaxcontrol import cpu_physics, ffi_step, reference

try:  # run as a script: benchmarks/ is on sys.path
    from envpool_speed import best as _best
except ImportError:
    from benchmarks.envpool_speed import best as _best


def ours(
    task, backend: str, batch: int, steps: int, seconds: float, repeats: int, device=None
) -> float:
    """Env steps/s of a jitted scan over `jax.vmap(env.step)` (on `device`, else the default)."""
    with jax.default_device(device or jax.devices()[0]):
        return _ours(task, backend, batch, steps, seconds, repeats)


def _ours(task, backend: str, batch: int, steps: int, seconds: float, repeats: int) -> float:
    env = jaxcontrol.load(*task, backend=backend)
    low, high = (jnp.asarray(b) for b in reference.action_bounds(env.action_spec()))
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), batch))

    @jax.jit
    def run(states, key):
        def body(carry, key):
            actions = jax.random.uniform(key, (batch,) + low.shape, minval=low, maxval=high)
            return jax.vmap(env.step)(carry, actions), None

        return jax.lax.scan(body, states, jax.random.split(key, steps))[0]

    keys = iter(jax.random.split(jax.random.key(1), 10_000))
    return (
        batch
        * steps
        / _best(lambda: run(states, next(keys)).step.block_until_ready(), seconds, repeats)
    )


def with_mj_step1_end(*args, **kwargs) -> float:
    """`ours` with the handler ending each step with mj_step1 whole (no lean stage)."""
    with mock.patch.object(ffi_step.Stepper.__init__, "__defaults__", (False,)):
        return ours(*args, **kwargs)


def through_callback(*args, **kwargs) -> float:
    """`ours` with the FFI handler switched off (`JAXCONTROL_MUJOCO_FFI=0`)."""
    os.environ["JAXCONTROL_MUJOCO_FFI"] = "0"
    ffi_step.library.cache_clear()
    try:
        return ours(*args, **kwargs)
    finally:
        del os.environ["JAXCONTROL_MUJOCO_FFI"]
        ffi_step.library.cache_clear()


def raw_c(task, batch: int, steps: int, threads: int, seconds: float, repeats: int) -> float:
    env = jaxcontrol.load(*task)
    model = env.mj_model
    data = mujoco.MjData(model)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    initial = np.empty((batch, mujoco.mj_stateSize(model, spec)))
    resets = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), batch)).data
    for i, row in enumerate(initial):  # ours's initial states (contacts and all)
        for name in ("time", "qpos", "qvel", "act"):
            setattr(data, name, np.asarray(getattr(resets, name)[i], np.float64))
        mujoco.mj_getState(model, data, row, spec)
    low, high = reference.action_bounds(env.action_spec())
    control = np.random.default_rng(0).uniform(
        low, high, (batch, steps * env.n_sub_steps, model.nu)
    )
    datas = [mujoco.MjData(model) for _ in range(threads)]
    with rollout.Rollout(nthread=threads) as runner:
        call = lambda: runner.rollout(model, datas, initial, control)
        return batch * steps / _best(call, seconds, repeats)


def envpool_id(task) -> str:
    """EnvPool's name of a suite task: cheetah-run is CheetahRun-v1."""
    camel = lambda name: "".join(part[:1].upper() + part[1:] for part in name.split("_"))
    return f"{camel(task[0])}{camel(task[1])}-v1"


def envpool(python: str | None, task, batch, steps, threads, seconds, repeats) -> float:
    """Env steps/s of EnvPool's sync pool, timed by `python`; NaN where it cannot run."""
    if not python:
        return float("nan")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "envpool_speed.py")
    flags = {"batch": batch, "steps": steps, "threads": threads}
    flags.update(seconds=seconds, repeats=repeats)
    command = [python, script, envpool_id(task)]
    command += [f"--{name}={value}" for name, value in flags.items()]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode:
        print(f"EnvPool did not run {envpool_id(task)}: {done.stderr.strip().splitlines()[-1:]}")
        return float("nan")
    return float(done.stdout.split()[-1])


def dm_control(task, seconds: float) -> float:
    env = reference.reference_env(*task, seed=0)
    low, high = reference.action_bounds(env.action_spec())
    rng = np.random.default_rng(0)
    env.reset()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        if env.step(rng.uniform(low, high)).last():
            env.reset()
        n += 1
    return n / (time.perf_counter() - start)


def _figure(value: float, form: str = ",.0f") -> str:
    return "—" if np.isnan(value) else format(value, form)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["cheetah-run", "cartpole-swingup"])
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[16, 256])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--steps", type=int, default=20, help="control steps per timed call")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-dm-control", action="store_true", help="skip the dm_control column")
    parser.add_argument("--no-mjx", action="store_true", help="skip the MJX column")
    parser.add_argument(
        "--envpool-python", help="an interpreter with EnvPool installed (else no EnvPool column)"
    )
    args = parser.parse_args()
    accelerator = jax.default_backend() != "cpu"
    host = jax.devices("cpu")[0]
    print(
        f"jax {jax.__version__}, mujoco {mujoco.__version__}, {os.cpu_count()} CPUs, "
        f"default device {jax.devices()[0].device_kind}"
    )
    print(
        "| task | batch | threads | ours, mujoco | mj_step1 end | lean / mj_step1 | callback "
        "| FFI / callback | raw C (rollout) "
        "| ours / raw C | EnvPool | ours / EnvPool | ours, mjx | mujoco / mjx | dm_control (1 env) |"
        + (" ours, mujoco on the host | accelerator / host |" if accelerator else "")
    )
    print(
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        + ("---:|---:|" if accelerator else "")
    )
    for name in args.tasks:
        task = tuple(name.split("-", 1))
        single = float("nan") if args.no_dm_control else dm_control(task, args.seconds)
        for batch in args.batch_sizes:
            mjx_speed = (
                float("nan")
                if args.no_mjx
                else ours(task, "mjx", batch, args.steps, args.seconds, args.repeats)
            )
            for threads in args.threads:
                os.environ["JAXCONTROL_MUJOCO_THREADS"] = str(threads)
                c_speed = ours(task, "mujoco", batch, args.steps, args.seconds, args.repeats)
                full = with_mj_step1_end(
                    task, "mujoco", batch, args.steps, args.seconds, args.repeats
                )
                callback = through_callback(
                    task, "mujoco", batch, args.steps, args.seconds, args.repeats
                )
                raw = raw_c(task, batch, args.steps, threads, args.seconds, args.repeats)
                pool = envpool(
                    args.envpool_python,
                    task,
                    batch,
                    args.steps,
                    threads,
                    args.seconds,
                    args.repeats,
                )
                line = (
                    f"| {name} | {batch} | {threads} | {c_speed:,.0f} | {full:,.0f} | "
                    f"{c_speed / full:.2f} | {callback:,.0f} | "
                    f"{c_speed / callback:.2f} | {raw:,.0f} | "
                    f"{c_speed / raw:.2f} | {_figure(pool)} | {_figure(c_speed / pool, '.2f')} | "
                    f"{_figure(mjx_speed)} | {_figure(c_speed / mjx_speed, '.1f')}x | "
                    f"{_figure(single)} |"
                )
                if accelerator:
                    on_host = ours(
                        task, "mujoco", batch, args.steps, args.seconds, args.repeats, host
                    )
                    line += f" {on_host:,.0f} | {c_speed / on_host:.2f} |"
                print(line, flush=True)
            jax.clear_caches()


if __name__ == "__main__":
    assert cpu_physics.BACKENDS  # the module under test
    main()
